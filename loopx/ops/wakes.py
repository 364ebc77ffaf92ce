"""Wake conditions: when to look again (a time, a gate answered, CI finished, a todo done)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Optional

from loopx.errors import UsageError
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import clock
from loopx.model.ids import new_short_id
from loopx.ops import lookup
from loopx.state import views

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        Event, WakeCleared, WakeSet,
    )


def set_(txn: Txn, *, at: Optional[str] = None, after: Optional[int] = None,
         on_gate: Optional[str] = None, on_ci: Optional[str] = None, on_todo: Optional[str] = None,
         goal: Optional[str] = None, reason: Optional[str] = None, id: Optional[str] = None,
         event_id: Optional[str] = None) -> Event[WakeSet]:
    """Set a wake: at an RFC 3339 time ``at``, ``after`` seconds from now, when a gate is
    answered, when CI finishes for a commit, or when a todo is done."""
    when = at
    if after is not None:
        when = clock.format_ts(txn.now + timedelta(seconds=after))
    elif at:
        try:
            when = clock.format_ts(clock.parse_ts(at))
        except ValueError:
            raise UsageError(f"not a time: {at!r} (use RFC 3339, e.g. 2026-12-01T09:00:00Z)") \
                from None
    fold = txn.fold
    data = {"id": id or new_short_id("w", event_id), "at": when, "reason": reason,
            "on_gate": lookup.optional(fold.gates, on_gate, "gate"),
            "on_todo": lookup.optional(fold.todos, on_todo, "todo"), "on_ci": on_ci}
    return txn.add(Draft("wake.set", data, lookup.goal_of(fold, goal, None), event_id))


def clear(txn: Txn, wake: str, *, event_id: Optional[str] = None) -> Event[WakeCleared]:
    """Clear a wake condition."""
    return lookup.about(txn, "wakes", wake, "wake", "wake.cleared", {}, event_id)


def listing(ledger: Ledger, *, now: Optional[datetime] = None) -> list[dict[str, Any]]:
    """Every wake condition set."""
    ledger.require()
    return list(views.snapshot(ledger.fold(), now or clock.now())["wakes"])
