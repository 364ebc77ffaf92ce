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

:func:`drain` applies entries oldest first through the caller's handlers (by ``hook``). An
entry is claimed by renaming it, so two drains never apply one entry twice; a claim whose
process died is taken back. An applied entry is removed; one its handler refuses for good
is set aside in ``spool/failed/`` with the reason, where ``git loopx doctor`` reports it.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

from loopx.model import clock, ids

VERSION = 1
# How long a hook (or a drain) waits for the clone lock, a ref's .lock or a running gc
# before it queues its work instead (docs/hooks.md).
WAIT_S = 2.0
_CLAIMED = ".claimed-"


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
    tmp = where / f".{entry_id}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(doc, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_dir(where)
    return _entry(doc, path)


def has_pending(loopx_dir: Path) -> bool:
    """Whether any entry waits (one directory listing; nothing else when there is none)."""
    try:
        with os.scandir(folder(loopx_dir)) as found:
            return any(e.name.endswith(".json") or _CLAIMED in e.name for e in found)
    except FileNotFoundError:
        return False


def pending(loopx_dir: Path) -> list[Entry]:
    """The entries waiting, oldest first (claims of processes that died are taken back)."""
    where = folder(loopx_dir)
    if not where.is_dir():
        return []
    for claimed in where.glob(f"*.json{_CLAIMED}*"):
        pid = claimed.name.rpartition(_CLAIMED)[2]
        if not pid.isdigit() or not _alive(int(pid)):
            with contextlib.suppress(OSError):
                os.replace(claimed, where / claimed.name.partition(_CLAIMED)[0])
    entries = []
    for path in sorted(where.glob("*.json")):
        try:
            entries.append(_entry(json.loads(path.read_text("utf-8")), path))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            _set_aside(path, f"unreadable entry: {exc}")
    return entries


def failed(loopx_dir: Path) -> list[Path]:
    """Entries set aside because their handler refused them."""
    return sorted((folder(loopx_dir) / "failed").glob("*.json"))


def reason(path: Path) -> str:
    """Why the entry at ``path`` (in ``failed/``) was set aside."""
    try:
        return path.with_suffix(".reason.txt").read_text("utf-8").strip()
    except OSError:
        return "no reason recorded"


def drain(loopx_dir: Path, handlers: Mapping[str, Callable[[Entry], None]], *,
          state_ref: Optional[str] = None) -> Drained:
    """Apply the waiting entries of ``state_ref`` oldest first; never raises for an entry."""
    done = Drained()
    for entry in pending(loopx_dir):
        if entry.state_ref != state_ref or entry.hook not in handlers:
            continue
        claimed = entry.path.with_name(f"{entry.path.name}{_CLAIMED}{os.getpid()}")
        try:
            os.replace(entry.path, claimed)
        except FileNotFoundError:
            continue  # another drain took it
        try:
            handlers[entry.hook](entry)
        except Later:
            os.replace(claimed, entry.path)
            done.kept.append(entry.id)
            break  # keep the order: what follows waits too
        except Exception as exc:  # noqa: BLE001 - one bad entry must not block the rest
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            _set_aside(claimed, reason, name=entry.path.name)
            done.failed[entry.id] = reason
            continue
        claimed.unlink(missing_ok=True)
        done.applied.append(entry.id)
    return done


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
        target.with_suffix(".reason.txt").write_text(reason + "\n", "utf-8")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
