"""Commits post-commit should have recorded and did not: found from the branch reflogs.

A post-commit hook can be killed (SIGKILL, a closed terminal, a reboot) before it has queued
anything: git has made the commit, loopx never heard of it. So when a todo is claimed, the
branch it is claimed on is *watched*: ``<git common dir>/loopx/commits-watch.json`` keeps, per
branch, how far its reflog (``logs/<branch>``, which git appends to for every commit) has
been read and who holds a lease taken there. Every loopx command stats those reflogs (no git
process, no parsing while nothing changed); when one grew, the new lines are read (only
those) and each commit they name (``commit:``, ``commit (merge):``, ``commit (initial):``,
``cherry-pick:``) is handed back to the caller, which compares them with the evidence
recorded and queues the missing ones in the spool, as the hook would have, at the commit's
own time (:func:`loopx.ops.ledgers.apply_spool`).

Derived data: a damaged or foreign watch file is dropped (it is rebuilt by the next claim);
a reflog that shrank (``git reflog expire``) is read again from its start. Amends are
post-rewrite's (not watched); a repository without files reflogs (reftable) watches nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopx.storage import locks

WATCH = "commits-watch.json"
DONE = "hooks.done"  # one sha a line: commits post-commit finished for
_DONE_KEEP = 2000
VERSION = 1
_COMMITS = ("commit:", "commit (merge):", "commit (initial):", "cherry-pick:")
_LOCK_WAIT_S = 2.0


@dataclass(frozen=True)
class Missed:
    """A commit a watched branch's reflog names: who may have work in it, and when."""

    sha: str
    branch: str
    holders: tuple[tuple[str, str], ...]  # (actor, state ref) of the leases taken there
    at: int  # the reflog entry's Unix time


def watch(loopx_dir: Path, branch: str, *, actor: str, state_ref: str) -> None:
    """Watch ``branch`` for ``actor``'s lease (from the reflog's current end, when new)."""
    with _locked(loopx_dir) as doc:
        item = doc["branches"].setdefault(branch, {"offset": _size(loopx_dir, branch),
                                                   "holders": []})
        if [actor, state_ref] not in item["holders"]:
            item["holders"].append([actor, state_ref])


def unwatch(loopx_dir: Path, branch: str, actor: str, state_ref: str) -> None:
    """Stop watching ``branch`` for ``actor`` (their lease there ended)."""
    with _locked(loopx_dir) as doc:
        item = doc["branches"].get(branch)
        if item is not None:
            item["holders"] = [h for h in item["holders"] if h != [actor, state_ref]]
            if not item["holders"]:
                del doc["branches"][branch]


def mark_done(loopx_dir: Path, sha: str) -> None:
    """Note that post-commit finished for ``sha`` (recorded, queued, or nothing to record;
    the shim writes the same line when it decides nothing is to be recorded). Only while a
    branch is watched: the sweep keeps the file short."""
    if not (loopx_dir / WATCH).is_file():
        return
    with open(loopx_dir / DONE, "a", encoding="ascii") as fh:
        fh.write(sha + "\n")


def done(loopx_dir: Path) -> set[str]:
    """The commits post-commit finished for (the file is cut to its last lines when long)."""
    path = loopx_dir / DONE
    try:
        lines = path.read_text("ascii", "replace").split()
    except OSError:
        return set()
    if len(lines) > _DONE_KEEP * 4:
        tmp = loopx_dir / f".{DONE}.{os.getpid()}.tmp"
        tmp.write_text("\n".join(lines[-_DONE_KEEP:]) + "\n", "ascii")
        os.replace(tmp, path)  # (a line appended meanwhile is lost: that commit is checked)
    return set(lines)


def grown(loopx_dir: Path) -> bool:
    """Whether a watched reflog changed since it was read: one small file and one stat per
    watched branch (what every command pays)."""
    doc = _read(loopx_dir)
    return any(_size(loopx_dir, b) != w["offset"] for b, w in doc["branches"].items())


def sweep(loopx_dir: Path) -> tuple[list[Missed], dict[str, int]]:
    """The commits the watched reflogs gained since they were last read, and how far each
    reflog was read. Nothing is marked read here: the caller queues the commits first, then
    calls :func:`mark_read`, so a process killed in between leaves them to the next one."""
    found: list[Missed] = []
    offsets: dict[str, int] = {}
    with _locked(loopx_dir) as doc:
        for branch, item in doc["branches"].items():
            size = _size(loopx_dir, branch)
            if size == item["offset"]:
                continue
            start = item["offset"] if item["offset"] <= size else 0  # expired: from the start
            text, offsets[branch] = _read_from(loopx_dir.parent / "logs" / branch, start)
            holders = tuple((a, r) for a, r in item["holders"])
            found += [Missed(sha, branch, holders, at) for sha, at in _commits(text)]
    return found, offsets


def mark_read(loopx_dir: Path, offsets: dict[str, int]) -> None:
    """Record that the reflogs were read up to ``offsets`` (their commits are queued)."""
    with _locked(loopx_dir) as doc:
        for branch, offset in offsets.items():
            if branch in doc["branches"]:
                doc["branches"][branch]["offset"] = offset


def _commits(text: str) -> Iterator[tuple[str, int]]:
    """(new sha, time) of the reflog lines that record a commit made here."""
    for line in text.splitlines():
        head, _, message = line.partition("\t")
        parts = head.split()
        if len(parts) >= 4 and message.startswith(_COMMITS) and parts[-2].isdigit():
            yield parts[1], int(parts[-2])


def _read_from(path: Path, start: int) -> tuple[str, int]:
    """The complete lines of ``path`` from byte ``start``, and the offset after them."""
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read()
    except OSError:
        return "", start
    end = data.rfind(b"\n") + 1  # a line being written is read next time
    return data[:end].decode("utf-8", "replace"), start + end


def _size(loopx_dir: Path, branch: str) -> int:
    try:
        return os.stat(loopx_dir.parent / "logs" / branch).st_size
    except OSError:
        return 0


def _read(loopx_dir: Path) -> dict[str, Any]:
    try:
        doc = json.loads((loopx_dir / WATCH).read_text("utf-8"))
        if doc.get("v") == VERSION and isinstance(doc.get("branches"), dict) and all(
                isinstance(w.get("offset"), int) and isinstance(w.get("holders"), list)
                for w in doc["branches"].values()):
            return doc  # type: ignore[no-any-return]
    except (OSError, ValueError, AttributeError):
        pass
    return {"v": VERSION, "branches": {}}  # none, or damaged: watch nothing until a claim


@contextlib.contextmanager
def _locked(loopx_dir: Path) -> Iterator[dict[str, Any]]:
    """The watch file, read under its lock and written back (atomically) when the block ends."""
    loopx_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(loopx_dir / f"{WATCH}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        locks.wait_for(fd, _LOCK_WAIT_S)  # held or not: the worst is a commit checked twice
        doc = _read(loopx_dir)
        before = json.dumps(doc, sort_keys=True)
        yield doc
        if json.dumps(doc, sort_keys=True) != before:
            tmp = loopx_dir / f".{WATCH}.{os.getpid()}.tmp"
            tmp.write_text(json.dumps(doc), "utf-8")
            os.replace(tmp, loopx_dir / WATCH)
    finally:
        os.close(fd)
