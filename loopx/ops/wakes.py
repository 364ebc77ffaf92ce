"""Wake conditions: when to look again (a time, a gate answered, CI finished, a todo done)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Optional

from loopx.errors import NotFound, UsageError
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import clock
from loopx.model.ids import new_short_id
from loopx.ops import lookup
from loopx.state import views

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        Event, WakeCleared, WakeFired, WakeSet,
    )

MIN_EVERY_S = 60
_FULL_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def set_(txn: Txn, *, at: Optional[str] = None, after: Optional[int] = None,
         on_gate: Optional[str] = None, on_ci: Optional[str] = None, on_todo: Optional[str] = None,
         goal: Optional[str] = None, reason: Optional[str] = None, every: Optional[int] = None,
         id: Optional[str] = None, event_id: Optional[str] = None) -> Event[WakeSet]:
    """Set a wake: at an RFC 3339 time ``at``, ``after`` seconds from now, when a gate is
    answered, when CI finishes for a commit (``on_ci``: any revision, resolved to its full
    commit now), or when a todo is done.

    With ``every`` (seconds) the wake recurs: first due at ``at``/``after`` (default: ``every``
    from now), then ``every`` after each time it is acted on (:func:`ack`).
    """
    when = at
    if after is not None:
        when = clock.format_ts(txn.now + timedelta(seconds=after))
    elif at:
        try:
            when = clock.format_ts(clock.parse_ts(at))
        except ValueError:
            raise UsageError(f"not a time: {at!r} (use RFC 3339, e.g. 2026-12-01T09:00:00Z)") \
                from None
    if every is not None:
        if every < MIN_EVERY_S:
            raise UsageError(f"a recurring wake repeats at most once a minute, not every {every}s")
        when = when or clock.format_ts(txn.now + timedelta(seconds=every))
    fold = txn.fold
    data = {"id": id or new_short_id("w", event_id), "at": when, "reason": reason,
            "on_gate": lookup.optional(fold.gates, on_gate, "gate"),
            "on_todo": lookup.optional(fold.todos, on_todo, "todo"),
            "on_ci": commit_of(txn.ledger, on_ci) if on_ci else None, "every": every}
    return txn.add(Draft("wake.set", data, lookup.goal_of(fold, goal, None), event_id))


def commit_of(ledger: Ledger, rev: str) -> str:
    """The full commit ``rev`` names (a short sha, ``HEAD``, a branch): what CI will judge,
    fixed now. A full sha this clone lacks is taken as given (CI may know it)."""
    found = ledger.store.resolve(rev)
    if found is not None:
        return found
    if _FULL_SHA.match(rev):
        return rev
    raise NotFound(f"no commit {rev!r} in this repository; give a revision it has, or a full "
                   "40-character sha")


def clear(txn: Txn, wake: str, *, event_id: Optional[str] = None) -> Event[WakeCleared]:
    """Clear a wake condition."""
    return lookup.about(txn, "wakes", wake, "wake", "wake.cleared", {}, event_id)


def ack(txn: Txn, wake: str, *,
        event_id: Optional[str] = None) -> Event[WakeCleared] | Event[WakeFired]:
    """Say a due wake was acted on: a one-shot wake is cleared, a recurring one re-armed
    (due again ``every`` seconds from now)."""
    wid = views.resolve_id(txn.fold.wakes, wake, "wake")
    found = txn.fold.wakes[wid]
    if not found.every:
        return clear(txn, wid, event_id=event_id)
    data = {"id": wid, "at": clock.format_ts(txn.now),
            "next": clock.format_ts(txn.now + timedelta(seconds=found.every))}
    return txn.add(Draft("wake.fired", data, found.goal, event_id))


def listing(ledger: Ledger, *, now: Optional[datetime] = None) -> list[dict[str, Any]]:
    """Every wake condition set."""
    return list(views.snapshot(ledger.fold(), now or clock.now())["wakes"])
