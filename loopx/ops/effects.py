"""Effects: external writes, intended before the call and confirmed or failed after. An
intent with no outcome is indeterminate: read the target back before retrying."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Optional

from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import clock, typed
from loopx.model.ids import new_short_id
from loopx.ops import lookup
from loopx.projection import answers, views

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        Event, EffectConfirmed, EffectFailed, EffectIntended,
    )


def intend(txn: Txn, target: str, *, action: str, key: Optional[str] = None,
           todo: Optional[str] = None, goal: Optional[str] = None, id: Optional[str] = None,
           event_id: Optional[str] = None) -> Event[EffectIntended]:
    """Record the intent to write to ``target``, before making the call."""
    tid = lookup.optional(txn.fold.todos, todo, "todo")
    xid = id or new_short_id("x", event_id)
    data = {"id": xid, "target": target, "action": action, "idempotency_key": key or xid,
            "todo": tid}
    return txn.add(Draft("effect.intended", data, lookup.goal_of(txn.fold, goal, tid), event_id))


def confirm(txn: Txn, effect: str, *, receipt: str, event_id: Optional[str] = None) -> Event[EffectConfirmed]:
    """Record that an intended effect happened, with proof (e.g. the URL created)."""
    return lookup.about(txn, "effects", effect, "effect", "effect.confirmed",
                        {"receipt": receipt}, event_id)


def fail(txn: Txn, effect: str, *, error: str, final: bool = False,
         event_id: Optional[str] = None) -> Event[EffectFailed]:
    """Record that an intended effect did not happen (``final``: not worth retrying)."""
    return lookup.about(txn, "effects", effect, "effect", "effect.failed",
                        {"error": error, "retryable": not final}, event_id)


def listing(ledger: Ledger, *, now: Optional[datetime] = None) -> list[answers.Effect]:
    """Every effect with its state (indeterminate, confirmed or failed)."""
    ledger.require()
    return [typed.build(answers.Effect, e)
            for e in views.snapshot(ledger.fold(), now or clock.now())["effects"]]
