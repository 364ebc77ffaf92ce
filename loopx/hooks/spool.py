"""The spool: a durable local queue of work that could not be done right away.

A git hook must never stall git: when the state branch is busy (another loopx holds the
clone lock, or keeps the ref's ``.lock``) or cannot be written now (checked out in a work
tree), the hook leaves its work here and git goes on; the next loopx command or hook applies
it. Nothing is lost: an entry is on disk (fsynced) before the hook returns.

An entry is one JSON file in ``<common git dir>/loopx/spool/``, named by a ULID so that
names sort oldest first, written atomically (a temporary file, fsync, rename, fsync of the
directory)::

    {"v": 1, "id": "<ulid>", "hook": "post-commit", "inputs": {...},
     "actor": "agent:codex@devbox", "at": "2026-11-29T12:00:00Z", "state_ref": "refs/..."}

:func:`drain` applies entries oldest first through the caller's handlers (by ``hook``). One
drain runs at a time (an ``flock`` on ``spool/.drain.lock``), so entries go in in the order
they were queued, and a reader that finds entries waits for a drain under way instead of
reading the ledger without them. An entry is claimed by renaming it; a claim whose process
died is taken back. An applied entry is removed; one its handler refuses for good is set
aside in ``spool/failed/`` with the reason, where ``git loopx status``, ``git loopx hooks
status`` and ``git loopx doctor`` report it (``git loopx hooks drain --retry`` queues it
again).

post-commit queues its work here by default (``loopx.hooks.background``), and starts a
detached ``git loopx hooks drain``: the commit returns before the event model is loaded. On
a held lease the shell shim (loopx/data/hook.sh, ``queue_entry``) writes the entry itself,
in this format, without starting Python: a change here is a change there
(tests/hooks/test_queued_commits.py reads what it writes with :func:`pending`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

from loopx.model import clock, ids
from loopx.storage import files, locks

VERSION = 1
ENTRY_MOST = 1 << 24  # bytes: a hook's inputs; a bigger entry is set aside unread
# How long a hook (or a drain) waits for the clone lock, a ref's .lock or a running gc
# before it queues its work instead (docs/hooks.md).
WAIT_S = 2.0
_CLAIMED = ".claimed-"
# Tests set this to "<point>:<pid file>" to stop a hook, or the drain it starts, at one point
# ("start", "queued", "draining") and kill it there with a real signal (docs/reliability.md).
PAUSE_ENV = "LOOPX_HOOK_TEST_PAUSE"


@dataclass(frozen=True)
class Entry:
    """One piece of queued work: which hook, its inputs, who and when."""

    id: str
    hook: str
    inputs: dict[str, Any]
    actor: str
    at: str
    state_ref: Optional[str]
    path: Path

    @property
    def when(self) -> datetime:
        return clock.parse_ts(self.at)


@dataclass
class Drained:
    """What a drain did: ids applied, kept for later, and set aside (with the reason)."""

    applied: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    busy: bool = False  # another drain held the queue for longer than the wait
    found: list[str] = field(default_factory=list)  # commits with no record, queued (ledgers)
    unknown: list[str] = field(default_factory=list)  # of those, made by no one known
    bare: list[str] = field(default_factory=list)  # of those, nothing to record for their maker


class Later(Exception):
    """Raised by a handler when its entry cannot be applied yet (kept, the drain stops)."""


def folder(loopx_dir: Path) -> Path:
    return loopx_dir / "spool"


def append(loopx_dir: Path, *, hook: str, inputs: dict[str, Any], actor: str,
           at: Optional[datetime] = None, state_ref: Optional[str] = None) -> Entry:
    """Queue one piece of work durably; returns the entry written."""
    where = folder(loopx_dir)
    where.mkdir(parents=True, exist_ok=True)
    entry_id = ids.new_event_id()
    doc = {"v": VERSION, "id": entry_id, "hook": hook, "inputs": inputs, "actor": actor,
           "at": clock.format_ts(at or clock.now()), "state_ref": state_ref}
    path = where / f"{entry_id}.json"
    files.replace(path, json.dumps(doc).encode(), durable=True)
    _fsync_dir(where)
    return _entry(doc, path)


def has_pending(loopx_dir: Path) -> bool:
    """Whether any entry waits (one directory listing; nothing else when there is none)."""
    try:
        with os.scandir(folder(loopx_dir)) as found:
            return any(_waits(e.name) for e in found)
    except FileNotFoundError:
        return False


def pending(loopx_dir: Path, *, draining: bool = False) -> list[Entry]:
    """The entries waiting, oldest first. Claims of processes that died are taken back; and
    every claim when the caller holds the drain lock (``draining``): a claim is only ever
    made under it, so its process is gone even if its pid now names another."""
    where = folder(loopx_dir)
    if not where.is_dir():
        return []
    for claimed in where.glob(f"*.json{_CLAIMED}*"):
        pid = claimed.name.rpartition(_CLAIMED)[2]
        if draining or (holder := locks.pid_of(pid)) is None or not locks.alive(holder):
            with contextlib.suppress(OSError):
                os.replace(claimed, where / claimed.name.partition(_CLAIMED)[0])
    entries = []
    for path in sorted(where.glob("*.json")):
        try:
            entries.append(_entry(json.loads(files.read(path, ENTRY_MOST)), path))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            _set_aside(path, f"unreadable entry: {exc}")
    return entries


def failed(loopx_dir: Path) -> list[Path]:
    """Entries set aside because their handler refused them."""
    return sorted((folder(loopx_dir) / "failed").glob("*.json"))


def reason(path: Path) -> str:
    """Why the entry at ``path`` (in ``failed/``) was set aside."""
    try:
        return files.read(path.with_suffix(".reason.txt"), 1 << 16).decode("utf-8", "replace").strip()
    except OSError:
        return "no reason recorded"


def drain(loopx_dir: Path, handlers: Mapping[str, Callable[[Entry], None]], *,
          state_ref: Optional[str] = None, wait: float = WAIT_S) -> Drained:
    """Apply the waiting entries of ``state_ref`` oldest first; never raises for an entry.

    Waits up to ``wait`` seconds for a drain under way in another process (it may be applying
    the entry the caller is about to read); past that, ``busy`` is set and nothing is done.
    """
    done = Drained()
    seen: set[str] = set()
    while True:
        with _drain_lock(loopx_dir, wait) as held:
            if not held:
                done.busy = not seen  # past the first round another drain has the rest
                return done
            for entry in pending(loopx_dir, draining=True):
                seen.add(entry.id)
                if entry.state_ref != state_ref or entry.hook not in handlers:
                    continue
                if not _apply(entry, handlers[entry.hook], done):
                    return done  # keep the order: what follows waits too
        # An entry queued after our listing, by a hook that saw this drain running and so
        # started none, must not wait for the next command: look again once the lock is free.
        if not _unseen(loopx_dir, seen):
            return done


def _unseen(loopx_dir: Path, seen: set[str]) -> bool:
    """Whether an entry waits that a drain has not looked at (one directory listing)."""
    try:
        with os.scandir(folder(loopx_dir)) as found:
            return any(e.name.endswith(".json") and e.name[:-5] not in seen for e in found)
    except FileNotFoundError:
        return False


def _apply(entry: Entry, handler: Callable[[Entry], None], done: Drained) -> bool:
    """Apply one entry; False when it must wait (Later) and the drain stops."""
    claimed = entry.path.with_name(f"{entry.path.name}{_CLAIMED}{os.getpid()}")
    try:
        os.replace(entry.path, claimed)
    except FileNotFoundError:
        return True  # applied by a drain that held the lock before ours
    pause_point("draining")
    try:
        handler(entry)
    except Later:
        os.replace(claimed, entry.path)
        done.kept.append(entry.id)
        return False
    except Exception as exc:  # noqa: BLE001 - one bad entry must not block the rest
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        _set_aside(claimed, reason, name=entry.path.name)
        done.failed[entry.id] = reason
        return True
    claimed.unlink(missing_ok=True)
    done.applied.append(entry.id)
    return True


_PAUSED: list[str] = []  # a process stops once: a test that continues it lets it run on


def pause_point(point: str, environ: Mapping[str, str] = os.environ) -> None:
    """Stop this process at ``point`` if a test asked for it (PAUSE_ENV); else nothing."""
    wanted, _, pid_file = environ.get(PAUSE_ENV, "").partition(":")
    if wanted == point and pid_file and not _PAUSED:
        _PAUSED.append(point)
        Path(pid_file).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGSTOP)


def drain_running(loopx_dir: Path) -> bool:
    """Whether a drain holds the queue right now."""
    with _drain_lock(loopx_dir, 0.0) as held:
        return not held


def retry(loopx_dir: Path) -> list[str]:
    """Queue the set-aside entries again (their reasons are dropped); their names."""
    names = []
    for path in failed(loopx_dir):
        os.replace(path, folder(loopx_dir) / path.name)
        path.with_suffix(".reason.txt").unlink(missing_ok=True)
        names.append(path.name)
    if names:
        _fsync_dir(folder(loopx_dir))
    return names


def summary(loopx_dir: Path) -> dict[str, Any]:
    """What status shows: how many entries wait, and those set aside with the reason. One
    directory listing when the queue was never used."""
    if not folder(loopx_dir).is_dir():
        return {"queued": 0, "set_aside": []}
    with os.scandir(folder(loopx_dir)) as found:
        queued = sum(1 for e in found if _waits(e.name))
    return {"queued": queued, "set_aside": [{"entry": p.name, "reason": reason(p)}
                                            for p in failed(loopx_dir)]}


@contextlib.contextmanager
def _drain_lock(loopx_dir: Path, wait: float) -> Iterator[bool]:
    """Hold the queue's drain lock, waiting up to ``wait`` seconds; yields whether it is held
    (released when the block ends, or when the process dies)."""
    where = folder(loopx_dir)
    where.mkdir(parents=True, exist_ok=True)
    fd = locks.open_file(where / ".drain.lock")
    try:
        yield locks.wait_for(fd, wait)
    finally:
        os.close(fd)


def _waits(name: str) -> bool:
    """Whether a file of the queue's folder is an entry, queued or claimed by a drain."""
    return name.endswith(".json") or _CLAIMED in name


def _entry(doc: dict[str, Any], path: Path) -> Entry:
    if doc.get("v") != VERSION:
        raise ValueError(f"version {doc.get('v')!r} (this loopx reads {VERSION})")
    return Entry(str(doc["id"]), str(doc["hook"]), dict(doc["inputs"]), str(doc["actor"]),
                 str(doc["at"]), doc.get("state_ref"), path)


def _set_aside(path: Path, reason: str, *, name: Optional[str] = None) -> None:
    aside = path.parent / "failed"
    aside.mkdir(exist_ok=True)
    target = aside / (name or path.name)
    with contextlib.suppress(OSError):
        os.replace(path, target)
        # (replaced, never written through a link or waited on as a fifo would be)
        files.replace(target.with_suffix(".reason.txt"), (reason + "\n").encode())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
