"""The answers of ``git cat-file --batch`` and ``--batch-check`` read back: each object's
header line, its contents and a newline, in the order asked. Parsing only: the processes are
the gateway's (:meth:`loopx.storage.gateway.ObjectReader.read_bulk`). Anything cut short,
padded or of another object is a :class:`GitError` and no partial result; a missing object or
one of another type is the one :class:`DamagedLedger` line that names it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from loopx.errors import DamagedLedger, GitError


@dataclass(frozen=True)
class Oversize:
    """An object over the size a reader asked for: its type and size, from the object header;
    its contents are not returned (and never read when the header came first)."""

    kind: str
    size: int
    oid: str = ""  # the object's full name (the one asked for may have been a revision)


class Died(Exception):
    """The cat-file process ended in the middle of a request."""


def info_header(line: bytes) -> tuple[bytes, str, int] | None:
    """(oid, type, size) from a ``--batch-command`` ``info`` line; None for a missing or
    ambiguous name."""
    if not line:
        raise Died()
    # "<name> missing" or "<name> ambiguous": the name is echoed as asked, and a path in
    # it may hold spaces and tabs ("<tip>:events/a b" from a forged tree split in three)
    if line.endswith((b" missing\n", b" ambiguous\n")):
        return None
    parts = line.split()
    if len(parts) != 3:
        return None
    return parts[0], parts[1].decode(), int(parts[2])


def contents(header: bytes, read: Callable[[int], bytes]) -> tuple[str, bytes] | None:
    """(type, contents) after a ``contents`` request's header line, read with ``read``;
    None for an object pruned between the ``info`` and ``contents`` requests."""
    if not header:
        raise Died()
    parts = header.split()
    if len(parts) != 3:  # pruned between our two requests
        return None
    size = int(parts[2])
    return parts[1].decode(), read(size + 1)[:size]


def checked(name: str, found: tuple[str, bytes] | Oversize | None,
            kind: str) -> bytes | Oversize:
    """The contents (or size) the long-lived reader found for ``name``, if it is a ``kind``."""
    if found is None:  # (read_capped says None for an ambiguous name too)
        raise not_read(name, PLACE[b"missing"])
    got = found.kind if isinstance(found, Oversize) else found[0]
    if got != kind:
        raise not_read(name, f"is a {got}, not a {kind}")
    return found if isinstance(found, Oversize) else found[1]


PLACE = {b"missing": "is missing from this repository",
         b"ambiguous": "is ambiguous in this repository (more than one object has it)"}


def not_read(name: str, what: str) -> DamagedLedger:
    """The one line for an object a bulk read cannot use (``what`` is wrong with it)."""
    return DamagedLedger(f"object {name} {what}; nothing was read: run `git loopx doctor`")


def parse_answers(data: bytes, names: list[str], kind: str,
                  max_size: int | None) -> list[bytes | Oversize]:
    """The contents (an :class:`Oversize` past ``max_size``) of each object
    ``cat-file --batch`` answered in ``data`` for ``names``, asked in that order."""
    found: list[bytes | Oversize] = []
    append, find = found.append, data.find  # (looked up once: a replay reads 100k)
    wanted = kind.encode()
    at = 0
    for name in names:
        ends = find(b"\n", at)
        parts = data[at:ends].split(b" ")
        if len(parts) == 3 and parts[1] == wanted and ends >= 0 and parts[2].isdigit():
            end = ends + 1 + int(parts[2])
            if data[end : end + 1] == b"\n":
                append(data[ends + 1 : end] if max_size is None or end - ends - 1 <= max_size
                       else Oversize(kind, end - ends - 1, parts[0].decode()))
                at = end + 1
                continue
        raise _refusal(data[at:] if ends < 0 else data[at:ends], name, kind, len(found),
                       len(names))
    if at != len(data):
        raise GitError(["cat-file", "--batch"], 0, f"its answer held {len(data) - at} bytes "
                       f"after the {len(names)} objects asked for; nothing was used")
    return found


def _refusal(line: bytes, name: str, kind: str, done: int, asked: int) -> Exception:
    """Why the answer for ``name`` (its header ``line``) cannot be used."""
    said, _, rest = line.rpartition(b" ")
    if rest in PLACE and said == name.encode("utf-8", "surrogateescape"):  # "<name> missing"
        return not_read(name, PLACE[rest])
    parts = line.split(b" ")
    if len(parts) == 3 and parts[2].isdigit() and parts[1] != kind.encode():
        return not_read(name, f"is a {parts[1].decode('utf-8', 'replace')}, not a {kind}")
    return GitError(["cat-file", "--batch"], 0, f"its answer was cut short or damaged at "
                    f"object {name} ({done} of {asked} read); nothing was used")


def by_bytes(headers: list[tuple[bytes, int]],
             limit: int) -> Iterator[list[tuple[bytes, int]]]:
    """``headers`` in consecutive groups of at most ``limit`` bytes of contents (one object
    over it alone)."""
    group: list[tuple[bytes, int]] = []
    held = 0
    for header in headers:
        if group and held + header[1] > limit:
            yield group
            group, held = [], 0
        group.append(header)
        held += header[1]
    if group:
        yield group
