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

A post-commit still running is not killed: git appends the reflog line *before* it starts
the hook, so a foreground command beside a slow hook would see the commit unrecorded and
record it twice (once itself, once the hook). The sweep stops (and reads that line again
next time) at the first commit not yet finished for while a post-commit hook of this clone
is alive (each writes ``hooks.running/<pid>`` while it runs; a killed one leaves a file
whose pid is gone), or while the line is younger than :data:`GRACE_S` (the moment between
git's reflog write and the hook's first act).

Each commit found is credited to who made it (:meth:`Missed.maker`): the actor a dead hook's
mark names for it (a mark holds the hook's actor and, once read, its commit), else the one
actor who can have made it; else no one (said, by the caller), never whoever sweeps.

Derived data: a damaged or foreign watch file is dropped (it is rebuilt by the next claim);
a reflog that shrank (``git reflog expire``) is read again from its start. Amends are
post-rewrite's (not watched); a repository without files reflogs (reftable) watches nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopx.model.limits import ACTOR_PATTERN
from loopx.storage import files, locks

WATCH = "commits-watch.json"
DONE = "hooks.done"  # one sha a line: commits post-commit finished for
_DONE_KEEP = 2000
VERSION = 1
_COMMITS = ("commit:", "commit (merge):", "commit (initial):", "cherry-pick:")
_LOCK_WAIT_S = 2.0
RUNNING = "hooks.running"  # one file per post-commit process alive, named by its pid
MARK_MAGIC = "loopx-running v1"  # a mark's first line; then the actor, then the commit
_MARK_MOST = 1024  # a mark is read up to this size (one larger is no hook's)
_REUSE_SLACK_S = 2  # a live pid started this long after its mark was written is a reuse
GRACE_S = 5  # a reflog line this young may still have its hook starting
GRACE_ENV = "LOOPX_SWEEP_GRACE_S"  # tests that kill hooks set 0 (a live hook still counts)


@dataclass(frozen=True)
class Missed:
    """A commit a watched branch's reflog names: who may have work in it, and when."""

    sha: str
    branch: str
    holders: tuple[tuple[str, str], ...]  # (actor, state ref) of the leases taken there
    at: int  # the reflog entry's Unix time
    named: tuple[str | None, ...] = ()  # who the marks of dead hooks for this commit name
    unsure: tuple[str | None, ...] = ()  # who those of hooks that died before reading it do

    def maker(self, ref: str) -> str | None:
        """Who made the commit, for the ledger at ``ref``: the actor its dead hook's mark
        names, else the one actor who can have (a holder of a lease on the branch, a hook
        that died before it read its commit); None when that is not one actor."""
        can: set[str | None] = set(self.named)
        if not can:
            can = set(self.unsure) | {a for a, r in self.holders if r == ref}
        return can.pop() if len(can) == 1 else None


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
    # A plain file only (a fifo there hung post-commit, and the commit with it, for good; a
    # link is not written through); a mark not written only means the sweep checks that commit.
    with contextlib.suppress(OSError):
        fd = files.open_plain(loopx_dir / DONE, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, (sha + "\n").encode("ascii"))
        finally:
            os.close(fd)


def done(loopx_dir: Path) -> set[str]:
    """The commits post-commit finished for (the file is cut to its last lines when long)."""
    path = loopx_dir / DONE
    try:
        lines = files.read(path, 1 << 20).decode("ascii", "replace").split()
    except OSError:
        return set()
    if len(lines) > _DONE_KEEP * 4:
        # (a line appended meanwhile is lost: that commit is checked)
        files.replace(path, ("\n".join(lines[-_DONE_KEEP:]) + "\n").encode("ascii"))
    return set(lines)


@contextlib.contextmanager
def running(loopx_dir: Path, actor: str | None) -> Iterator[Callable[[str], None]]:
    """Mark this process as a post-commit at work for ``actor`` until the block ends (or it
    is killed); the block names its commit, once read, with the function it is given. A
    killed hook's mark says who made the commit the sweep finds (:func:`mark_text`)."""
    mark = loopx_dir / RUNNING / str(os.getpid())

    def write(sha: str) -> None:
        try:
            fd = files.open_plain(mark, os.O_WRONLY | os.O_TRUNC)
            try:
                os.write(fd, mark_text(actor, sha).encode("utf-8", "replace"))
            finally:
                os.close(fd)
        except OSError:  # no mark (or a partial one, dropped): the sweep's grace protects
            with contextlib.suppress(OSError):  # this hook, and the lease names the maker
                mark.unlink()

    with contextlib.suppress(OSError):
        mark.parent.mkdir(parents=True, exist_ok=True)
    write("")
    try:
        yield write
    finally:
        with contextlib.suppress(OSError):
            mark.unlink()


def mark_text(actor: str | None, sha: str) -> str:
    """A running mark's content, as the shim writes it too: who commits, then the commit
    once known (either line may be empty)."""
    return f"{MARK_MAGIC}\n{actor or ''}\n{sha}\n"


@dataclass(frozen=True)
class _Dead:
    """What the mark of a post-commit that died says: who made which commit (each None when
    it does not say, or says something no hook writes)."""

    path: Path
    actor: str | None
    sha: str | None
    known: bool = True  # a mark as hooks write them (else: garbage, naming no one)


def _marks(loopx_dir: Path) -> tuple[bool, list[_Dead]]:
    """Whether a post-commit hook of this clone is running (this process, when it is one,
    counts; not when it only has a dead hook's pid), and the marks of those that died. A
    mark is data: read bounded, and only an identity and a commit id are taken from it. A live pid that started after its mark was
    written is another process that reused a dead hook's pid: that hook died."""
    alive, dead = False, []
    try:
        marks = list((loopx_dir / RUNNING).iterdir())
    except OSError:
        return False, []
    for mark in marks:
        pid = locks.pid_of(mark.name)
        if pid is not None and locks.alive(pid) and not _reused(pid, mark):
            alive = True
        else:  # (a file not named by a pid is no hook's mark: it names no one)
            dead.append(_read_mark(mark) if pid is not None else _Dead(mark, None, None, False))
    return alive, dead


def _read_mark(mark: Path) -> _Dead:
    try:
        lines = files.read(mark, _MARK_MOST).decode("ascii").split("\n")
    except (OSError, UnicodeDecodeError):
        lines = []
    if len(lines) != 4 or lines[0] != MARK_MAGIC or lines[3]:
        return _Dead(mark, None, None, known=False)
    actor = lines[1] if re.fullmatch(ACTOR_PATTERN, lines[1]) else None
    sha = lines[2] if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", lines[2]) else None
    return _Dead(mark, actor, sha)


def _reused(pid: int, mark: Path) -> bool:
    """Whether process ``pid`` started after ``mark`` was last written (Linux's /proc says;
    elsewhere no process is taken for a reuse)."""
    started = locks.started_at(pid)
    try:
        return started is not None and started > mark.stat().st_mtime + _REUSE_SLACK_S
    except OSError:
        return False


def _grace() -> float:
    try:
        return max(0.0, float(os.environ.get(GRACE_ENV, GRACE_S)))
    except ValueError:
        return GRACE_S


def grown(loopx_dir: Path) -> bool:
    """Whether a watched reflog changed since it was read: one small file and one stat per
    watched branch (what every command pays)."""
    doc = _read(loopx_dir)
    return any(_size(loopx_dir, b) != w["offset"] for b, w in doc["branches"].items())


def sweep(loopx_dir: Path, *, now: float | None = None
          ) -> tuple[list[Missed], dict[str, int], list[Path]]:
    """The commits the watched reflogs gained since they were last read, how far each reflog
    was read, and the marks of dead hooks that are spent once they are queued. Nothing is
    marked read here: the caller queues the commits first, then calls :func:`mark_read`, so
    a process killed in between leaves them to the next one. A commit whose hook may still
    be at work ends the read of its reflog (module doc), and keeps the dead hooks' marks."""
    found: list[Missed] = []
    offsets: dict[str, int] = {}
    now = time.time() if now is None else now
    finished: set[str] | None = None
    hooks: tuple[bool, list[_Dead]] | None = None
    cut = False

    def marks() -> tuple[bool, list[_Dead]]:
        nonlocal hooks
        hooks = _marks(loopx_dir) if hooks is None else hooks
        return hooks

    def settled(sha: str, at: int) -> bool:
        nonlocal finished
        if finished is None:
            finished = done(loopx_dir)
        if sha in finished:
            return True
        if abs(now - at) < _grace():  # (a line dated later than that is not young: its
            return False  # commit's clock was ahead, and it held back every line after it)
        return not marks()[0]

    with _locked(loopx_dir) as doc:
        for branch, item in doc["branches"].items():
            size = _size(loopx_dir, branch)
            if size == item["offset"]:
                continue
            start = item["offset"] if item["offset"] <= size else 0  # expired: from the start
            text, offsets[branch] = _read_from(loopx_dir.parent / "logs" / branch, start)
            holders = tuple((a, r) for a, r in item["holders"])
            for sha, at, end in _commits(text):
                if not settled(sha, at):
                    offsets[branch] = start + end  # read again from this line next time
                    cut = True
                    break
                if finished is not None and sha in finished:
                    found.append(Missed(sha, branch, holders, at))
                    continue
                dead = marks()[1]
                found.append(Missed(sha, branch, holders, at,
                                    tuple(d.actor for d in dead if d.sha == sha),
                                    tuple(d.actor for d in dead if d.sha is None and d.known)))
    swept = {m.sha for m in found}
    spent = [d.path for d in (hooks or (False, []))[1] if not cut or d.sha in swept]
    return found, offsets, spent


def mark_read(loopx_dir: Path, offsets: dict[str, int], spent: Iterable[Path] = ()) -> None:
    """Record that the reflogs were read up to ``offsets`` (their commits are queued), and
    drop the ``spent`` marks of dead hooks."""
    with _locked(loopx_dir) as doc:
        for branch, offset in offsets.items():
            if branch in doc["branches"]:
                doc["branches"][branch]["offset"] = offset
    for path in spent:
        with contextlib.suppress(OSError):
            path.unlink()


def _commits(text: str) -> Iterator[tuple[str, int, int]]:
    """(new sha, time, the line's offset in ``text`` as UTF-8 bytes) of the reflog lines that
    record a commit made here."""
    offset = 0
    for line in text.splitlines(keepends=True):
        head, _, message = line.rstrip("\n").partition("\t")
        parts = head.split()
        if len(parts) >= 4 and message.startswith(_COMMITS) and parts[-2].isascii() and parts[-2].isdigit():
            yield parts[1], int(parts[-2]), offset
        offset += len(line.encode("utf-8", "surrogateescape"))


def _read_from(path: Path, start: int) -> tuple[str, int]:
    """The complete lines of ``path`` from byte ``start``, and the offset after them."""
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read()
    except OSError:
        return "", start
    end = data.rfind(b"\n") + 1  # a line being written is read next time
    return data[:end].decode("utf-8", "surrogateescape"), start + end


def _size(loopx_dir: Path, branch: str) -> int:
    try:
        return os.stat(loopx_dir.parent / "logs" / branch).st_size
    except OSError:
        return 0


def _read(loopx_dir: Path) -> dict[str, Any]:
    try:
        doc = json.loads(files.read(loopx_dir / WATCH, 1 << 24))
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
    fd = locks.open_file(loopx_dir / f"{WATCH}.lock")
    try:
        locks.wait_for(fd, _LOCK_WAIT_S)  # held or not: the worst is a commit checked twice
        doc = _read(loopx_dir)
        before = json.dumps(doc, sort_keys=True)
        yield doc
        if json.dumps(doc, sort_keys=True) != before:
            files.replace(loopx_dir / WATCH, json.dumps(doc).encode())
    finally:
        os.close(fd)
