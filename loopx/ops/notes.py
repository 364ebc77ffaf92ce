"""Free-form notes in the ledger."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from loopx.ledger.draft import Draft
from loopx.model.ids import new_short_id
from loopx.ops import lookup

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        Event, NoteAdded,
    )


def add(txn: Txn, text: str, *, todo: Optional[str] = None, goal: Optional[str] = None,
        event_id: Optional[str] = None) -> Event[NoteAdded]:
    """Add a note, on a todo or goal if given."""
    tid = lookup.optional(txn.fold.todos, todo, "todo")
    data = {"id": new_short_id("n", event_id), "text": text, "todo": tid}
    return txn.add(Draft("note.added", data, lookup.goal_of(txn.fold, goal, tid), event_id))
