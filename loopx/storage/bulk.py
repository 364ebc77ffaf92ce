"""Reads of many objects at once (a cold replay's blobs): short-lived ``cat-file --batch``
processes whose answers go to temporary files, not a pipe, for
:meth:`loopx.storage.gateway.ObjectReader.read_bulk`.

git writes each object by itself, and on a pipe each of those writes is a hand-over to the
reader (at 100k blobs, git's CPU for the same answers was about twice a file's). Each chunk of
names is one ``--batch`` whose answer the kernel caps (:func:`at_once`); a chunk over the cap,
or where the system cannot cap, is read the checked way (sizes first, :func:`_checked`).
Where the machine has the cores, two chunks are read side by side (:func:`_side_by_side`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO

from loopx.errors import GitError
from loopx.storage import batches, gateway
from loopx.storage.batches import Oversize
from loopx.storage.gateway import ObjectReader


def read(reader: ObjectReader, names: list[str], kind: str,
         max_size: int | None) -> list[bytes | Oversize]:
    """Each object of ``names``, in order (:meth:`ObjectReader.read_bulk` says the rest)."""
    chunks = [names[start : start + reader.BULK_NAMES]
              for start in range(0, len(names), reader.BULK_NAMES)]
    jobs = min(reader.BULK_JOBS, len(chunks), os.cpu_count() or 1) if gateway.CAN_LIMIT else 1
    if jobs > 1:
        return _side_by_side(reader, chunks, kind, max_size, jobs)
    found: list[bytes | Oversize] = []
    with tempfile.TemporaryFile() as request, tempfile.TemporaryFile() as answer:
        for chunk in chunks:
            once = at_once(reader, chunk, kind, max_size, answer)
            found += (once if once is not None
                      else _checked(reader, chunk, kind, max_size, request, answer))
    return found


def _side_by_side(reader: ObjectReader, chunks: list[list[str]], kind: str,
                  max_size: int | None, jobs: int) -> list[bytes | Oversize]:
    """:func:`read` with ``jobs`` cat-files at once: worker threads only start git
    and wait for it (each answer into a file of its own), while this thread reads and
    parses the chunk before, in order (so the answers' bytes are allocated here, as one
    at a time does: parsed in the workers, the memory they freed stayed with their
    threads, 18 MB more at the peak of a cold 100k status). At most ``jobs`` answer files
    at once."""
    found: list[bytes | Oversize] = []
    pending: deque[tuple[list[str], list[str], IO[bytes], Future[bool]]] = deque()
    with contextlib.ExitStack() as held, ThreadPoolExecutor(jobs) as pool:
        request, spare = (held.enter_context(tempfile.TemporaryFile()) for _ in range(2))

        def take() -> None:
            chunk, unique, answer, job = pending.popleft()
            with answer:
                found.extend(_answered(chunk, unique, kind, max_size, answer)
                             if job.result() else
                             _checked(reader, chunk, kind, max_size, request, spare))

        for chunk in chunks:
            unique = list(dict.fromkeys(chunk))  # each object once
            answer = held.enter_context(tempfile.TemporaryFile())
            pending.append((chunk, unique, answer, pool.submit(
                _answer, reader, "\n".join([*unique, ""]).encode(), len(unique),
                answer)))
            if len(pending) == jobs:
                take()
        while pending:
            take()
    return found


def at_once(reader: ObjectReader, names: list[str], kind: str, max_size: int | None,
            answer: IO[bytes]) -> list[bytes | Oversize] | None:
    """Each object of ``names`` from one ``cat-file --batch`` whose answer file git may
    not write past :data:`BULK_BYTES` and the header lines (:func:`_answer`): a
    hostile tree's huge blob costs the disk and the memory no more than that, and the
    answer's own headers say each object's type and size, so no ``--batch-check`` runs
    before it (a sixth of git's CPU in a 100k replay). None when git went over the cap
    or failed (a gc deleting a pack as it opened it), for :func:`_checked` to read
    instead."""
    unique = list(dict.fromkeys(names))  # each object once
    if not _answer(reader, "\n".join([*unique, ""]).encode(), len(unique), answer):
        return None
    return _answered(names, unique, kind, max_size, answer)


def _answer(reader: ObjectReader, request: bytes, count: int, answer: IO[bytes]) -> bool:
    """git's answer to ``request`` (``count`` names, a line each) written to ``answer``
    by one ``cat-file --batch`` whose files the kernel caps (:func:`gateway.run`'s
    ``file_limit``); False when git went over the cap or failed, or where nothing caps."""
    if not gateway.CAN_LIMIT:
        return False
    answer.seek(0)
    answer.truncate()
    cap = reader.BULK_BYTES + reader.HEADER_BYTES * count
    try:
        proc = gateway.run(reader.cwd, *reader.DELTA_CACHE, "cat-file", "--buffer",
                           "--batch", input=request, stdout=answer, check=False,
                           file_limit=cap)
    except OSError:  # (prlimit refused)
        return False
    # Over the cap though git succeeded: a git the kernel does not hold (a wrapper that
    # hands the work to another process tree, as flatpak-spawn --host): never read in.
    return proc.returncode == 0 and answer.seek(0, os.SEEK_END) <= cap


def _answered(names: list[str], unique: list[str], kind: str, max_size: int | None,
              answer: IO[bytes]) -> list[bytes | Oversize]:
    """Each object of ``names`` from git's answer for ``unique`` (the same names, each
    once) in the file ``answer``."""
    answer.seek(0)
    found = batches.parse_answers(answer.read(), unique, kind, max_size)
    if len(unique) == len(names):
        return found
    contents = dict(zip(unique, found))
    return [contents[name] for name in names]


def _checked(reader: ObjectReader, names: list[str], kind: str, max_size: int | None,
             request: IO[bytes], answer: IO[bytes]) -> list[bytes | Oversize]:
    """Each object of ``names``, its size asked of ``--batch-check`` first: one over
    ``max_size`` is never read, and the rest are read :data:`BULK_BYTES` at a time."""
    headers = _headers(reader, names, kind, request, answer)
    wanted = list({line: size for line, size in headers  # each object once
                   if max_size is None or size <= max_size}.items())
    contents: dict[bytes, bytes | Oversize] = {}
    for group in batches.by_bytes(wanted, reader.BULK_BYTES):
        oids = [line.split(b" ", 1)[0].decode() for line, _ in group]
        answers = _batch(reader, ["--buffer", "--batch"], oids, request, answer)
        contents.update(zip([line for line, _ in group],
                            batches.parse_answers(answers, oids, kind, None)))
    return [contents[line] if line in contents
            else Oversize(kind, size, line.split(b" ", 1)[0].decode())
            for line, size in headers]


def _headers(reader: ObjectReader, names: list[str], kind: str, request: IO[bytes],
             answer: IO[bytes]) -> list[tuple[bytes, int]]:
    """The header line (``<oid> <type> <size>``) and size of each object in ``names``, in
    order."""
    lines = _batch(reader, ["--buffer", "--batch-check"], names, request, answer).split(b"\n")
    if len(lines) != len(names) + 1 or lines[-1]:
        raise GitError(["cat-file", "--batch-check"], 0, f"its answer was cut short "
                       f"({len(lines) - 1} of {len(names)} lines); nothing was used")
    headers = []
    wanted = kind.encode()
    for name, line in zip(names, lines):
        _, _, rest = line.partition(b" ")
        found, _, size = rest.partition(b" ")
        if found != wanted:  # (no size: "<name> missing" or "<name> ambiguous")
            raise batches.not_read(name, batches.PLACE.get(found, "is unreadable") if not size
                                   else f"is a {found.decode()}, not a {kind}")
        headers.append((line, int(size)))
    return headers


def _batch(reader: ObjectReader, args: list[str], names: list[str], request: IO[bytes],
           answer: IO[bytes]) -> bytes:
    """What ``cat-file ARGS`` answers for ``names``, read from ``request`` and written
    to ``answer`` (both emptied first); asked again when git dies, as a read may."""
    for _ in range(3):
        for file in (request, answer):
            file.seek(0)
            file.truncate()
        request.write("\n".join([*names, ""]).encode())  # each name and a newline
        request.seek(0)
        proc = gateway.run(reader.cwd, *reader.DELTA_CACHE, "cat-file", *args,
                           stdin=request, stdout=answer, check=False)
        if proc.returncode == 0:
            answer.seek(0)
            return answer.read()
        # cat-file dies when a `git gc` deletes a pack it was about to open.
    raise GitError(["cat-file", *args], proc.returncode,
                   proc.stderr.decode("utf-8", "replace"))
