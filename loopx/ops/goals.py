"""Goals and their acceptance criteria."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Optional

from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import clock
from loopx.model.ids import new_short_id
from loopx.ops import lookup
from loopx.state import views

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        Event, GoalClosed, GoalCreated, GoalUpdated,
    )


def add(txn: Txn, title: str, *, id: Optional[str] = None, accept: Sequence[str] = (),
        description: Optional[str] = None, event_id: Optional[str] = None) -> Event[GoalCreated]:
    """Create a goal; its acceptance criteria get the ids a1, a2, ... in order."""
    gid = id or new_short_id("g", event_id)
    data: dict[str, Any] = {"id": gid, "title": title, "description": description,
                            "acceptance": [{"id": f"a{i}", "text": t}
                                           for i, t in enumerate(accept, 1)]}
    return txn.add(Draft("goal.created", data, gid, event_id))


def update(txn: Txn, goal: str, *, title: Optional[str] = None,
           description: Optional[str] = None, accept: Sequence[str] = (),
           state: Optional[str] = None, event_id: Optional[str] = None) -> Event[GoalUpdated]:
    """Change a goal's title, description or state (active, paused), or add criteria."""
    gid = lookup.goal(txn.fold, goal)
    start = len(txn.fold.goals[gid].acceptance) + 1
    data = {"id": gid, "title": title, "description": description, "state": state,
            "add_acceptance": [{"id": f"a{i}", "text": t} for i, t in enumerate(accept, start)]}
    return txn.add(Draft("goal.updated", data, gid, event_id))


def close(txn: Txn, goal: str, *, outcome: str, reason: Optional[str] = None,
          override: bool = False, event_id: Optional[str] = None) -> Event[GoalClosed]:
    """Close a goal as ``achieved`` (every criterion met, or a human's override) or
    ``abandoned``."""
    gid = lookup.goal(txn.fold, goal)
    data = {"id": gid, "outcome": outcome, "reason": reason, "override": override}
    return txn.add(Draft("goal.closed", data, gid, event_id))


def listing(ledger: Ledger, *, include_closed: bool = False,
            now: Optional[datetime] = None) -> list[dict[str, Any]]:
    """Goals in play (all goals with ``include_closed``), as ``status`` shows them."""
    goals = views.snapshot(ledger.fold(), now or clock.now())["goals"]
    return [g for g in goals if include_closed or g["state"] in ("active", "paused")]


def show(ledger: Ledger, goal: str, *, now: Optional[datetime] = None) -> dict[str, Any]:
    """One goal with its criteria (and their evidence), its todos and its gates."""
    snap = views.snapshot(ledger.fold(), now or clock.now())
    gid = lookup.goal(ledger.fold(), goal)
    found = next(g for g in snap["goals"] if g["id"] == gid)
    return dict(found, todos=[t for t in snap["todos"] if t["goal"] == gid],
                gates=[g for g in snap["gates"] if g["goal"] == gid])
