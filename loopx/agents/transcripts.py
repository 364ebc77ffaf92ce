"""Persistent sessions beyond one event (see docs/sessions.md): transcripts cut into chunks
and read back byte-exact, what the reaper closes, slots in use, and the stats that tune the
keep-open judgement. The rules live in :mod:`loopx.projection.checks`; the writes are operations
(:mod:`loopx.ops.sessions`). Functions take the ledger or fold they work on; time is a
parameter.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from collections.abc import Callable, Mapping
from typing import Any, Optional

from loopx.errors import LoopxError, NotFound
from loopx.ledger.book import Ledger
from loopx.model import clock
from loopx.model.paths import TRANSCRIPT_CHUNK_BYTES
from loopx.projection import entities, views
from loopx.storage.batches import Oversize

DEFAULT_IDLE_SECONDS = 24 * 3600
DEFAULT_STATS_WINDOW_SECONDS = 3600


class TranscriptError(LoopxError):
    """A transcript that is too large, or whose stored chunks do not match its checkpoint."""


def get(fold: entities.Fold, session_id: str) -> entities.Session:
    """The session with this id or unique id prefix."""
    return fold.sessions[views.resolve_id(fold.sessions, session_id, "session")]


def chunks(data: bytes) -> list[bytes]:
    """``data`` cut into chunks of at most TRANSCRIPT_CHUNK_BYTES (one empty chunk if empty)."""
    size = TRANSCRIPT_CHUNK_BYTES
    return [data[i : i + size] for i in range(0, len(data), size)] or [b""]


def inbox(session: entities.Session) -> list[dict[str, Any]]:
    """Interjections the session's owner has not acknowledged yet, oldest first."""
    acked = set(session.acked)
    return [m for m in session.messages if m["event"] not in acked]


# --- reads -------------------------------------------------------------------------------------


def read_transcript(ledger: Ledger, session: entities.Session,
                    number: Optional[int] = None) -> bytes:
    """The transcript of checkpoint ``number`` (default: the latest), verified byte-exact."""
    if not session.checkpoints:
        raise NotFound(f"session {session.id} has no checkpoint yet")
    if number is None:
        number = len(session.checkpoints)
    if not 1 <= number <= len(session.checkpoints):
        raise NotFound(f"session {session.id} has checkpoints 1..{len(session.checkpoints)}")
    point = session.checkpoints[number - 1]
    blobs = ledger.store.read_blobs([oid for _, oid, _ in point["chunks"]],
                                    max_size=TRANSCRIPT_CHUNK_BYTES)
    for (path, _, _), blob in zip(point["chunks"], blobs):
        if blob is None:
            raise TranscriptError(f"{path} is missing from this clone; fetch the state branch")
        if isinstance(blob, Oversize):  # sized from its header, never read
            raise TranscriptError(f"{path} is {blob.size} bytes, over the "
                                  f"{TRANSCRIPT_CHUNK_BYTES // 1024} KiB a chunk may hold")
    data = b"".join(b for b in blobs if isinstance(b, bytes))
    if len(data) != point["bytes"] or hashlib.sha256(data).hexdigest() != point["sha256"]:
        raise TranscriptError(f"transcript {number} of session {session.id} fails its sha256 check")
    return data


def idle_seconds(fold: entities.Fold) -> int:
    """The idle limit after which `reap` closes a session awaiting input (ledger config)."""
    return int(fold.config.get("session_idle_seconds") or DEFAULT_IDLE_SECONDS)


def reapable(fold: entities.Fold, now: datetime, idle: int,
             first_seen: Optional[Callable[[list[str]], Mapping[str, str]]] = None,
             ) -> list[entities.Session]:
    """Sessions awaiting input for at least ``idle`` seconds, longest idle first. Idle time
    counts from when this clone first saw the last activity (``first_seen``, see
    views.idle_since) when that is later than its writer's clock says."""
    waiting = [s for s in fold.sessions.values() if s.state == "awaiting_input"]
    seen = first_seen([s.active_event for s in waiting if s.active_event]) if first_seen else {}
    limit = now - timedelta(seconds=idle)
    found = [s for s in waiting if views.idle_since(s, seen) <= limit]
    return sorted(found, key=lambda s: (s.active_at, s.id))


def slots(fold: entities.Fold) -> dict[str, dict[str, int]]:
    """owner -> {used, limit} for every owner with an open session."""
    limit = views.session_slots(fold)
    used: dict[str, int] = {}
    for session in fold.sessions.values():
        if session.state != "closed":
            used[session.owner] = used.get(session.owner, 0) + 1
    return {owner: {"used": n, "limit": limit} for owner, n in sorted(used.items())}


# --- stats -------------------------------------------------------------------------------------


def _follow_ups(session: entities.Session) -> int:
    return sum(m["kind"] == "follow_up" for m in session.messages)


def stats(fold: entities.Fold, *, window: int = DEFAULT_STATS_WINDOW_SECONDS) -> dict[str, Any]:
    """How sessions ended, to tune the keep-open judgement from data.

    Kept-open sessions either got a follow-up (keeping them open paid off) or ended unused
    (expired, or closed without one). A one-shot session (``keep_open`` false) whose goal got
    a new session within ``window`` seconds of its close was a *missed keep-open*.
    """
    ordered = sorted(fold.sessions.values(), key=lambda s: (s.clock, s.id))
    ended: dict[str, int] = {}
    for session in ordered:
        if session.closed_reason:
            ended[session.closed_reason] = ended.get(session.closed_reason, 0) + 1
    kept = [s for s in ordered if s.keep_open]
    unused = [s for s in kept if s.state == "closed" and not _follow_ups(s)]
    missed = _missed_keep_open(ordered, window)
    one_shot = [s for s in ordered if not s.keep_open]
    return {
        "sessions": len(ordered),
        "open": {state: sum(s.state == state for s in ordered)
                 for state in ("running", "awaiting_input")},
        "closed": ended,
        "kept_open": {
            "total": len(kept),
            "got_follow_up": sum(_follow_ups(s) > 0 for s in kept),
            "follow_ups": sum(_follow_ups(s) for s in kept),
            "expired_unused": sum(s.closed_reason == "expired" for s in unused),
            "closed_unused": sum(s.closed_reason != "expired" for s in unused),
        },
        "one_shot": {"total": len(one_shot), "missed_keep_open": len(missed), "missed": missed},
        "window_seconds": window,
    }


def _missed_keep_open(ordered: list[entities.Session], window: int) -> list[dict[str, Any]]:
    missed = []
    for session in ordered:
        topic = session.goal or session.todo
        if session.keep_open or session.closed_at is None or topic is None:
            continue
        end = clock.parse_ts(session.closed_at)
        later = [(clock.parse_ts(s.opened_at) - end, s) for s in ordered
                 if s is not session and (s.goal or s.todo) == topic]
        later = [(gap, s) for gap, s in later if timedelta(0) <= gap <= timedelta(seconds=window)]
        if later:
            gap, nxt = min(later, key=lambda pair: (pair[0], pair[1].id))
            missed.append({"session": session.id, "topic": topic, "followed_by": nxt.id,
                           "after_seconds": int(gap.total_seconds())})
    return missed
