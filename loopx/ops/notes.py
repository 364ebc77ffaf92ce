"""Free-form notes in the ledger."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from loopx.ledger import layout
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import typed
from loopx.model.ids import new_short_id
from loopx.ops import lookup
from loopx.projection import answers
from loopx.storage import gateway

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


def listing(ledger: Ledger, *, todo: Optional[str] = None,
            goal: Optional[str] = None) -> list[answers.Note]:
    """Every note, oldest first (ledger order): ``{id, text, todo, goal, actor, at, event}``;
    of one todo or goal when given (id prefixes match). The projection only counts notes, so
    this reads their event files."""
    ledger.require()
    tip = ledger.tip()
    names = [n for n in gateway.out(ledger.repo.cwd, "ls-tree", "-r", "--name-only", str(tip),
                                    "--", "events/").splitlines()
             if n.endswith(".note.added.yaml")]
    found = ledger.store.read_blobs([f"{tip}:{n}" for n in names])  # capped, by header
    events = sorted((layout.read_event(n, item) for n, item in zip(names, found)),
                    key=lambda e: e.sort_key())
    notes = [dict(_data(e), goal=e.env.goal, actor=e.env.actor, at=e.env.at, event=e.id)
             for e in events]
    return [typed.build(answers.Note, n) for n in notes
            if (not todo or (n["todo"] or "").startswith(todo))
            and (not goal or (n["goal"] or "").startswith(goal))]


def _data(event: Event[Any]) -> dict[str, Any]:
    data: Any = event.data  # a NoteAdded: its file name says so, and parsing checked it
    return {"id": data.id, "text": data.text, "todo": data.todo}
