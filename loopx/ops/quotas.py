"""Quota: budgets of turns, tokens and cost, ledger-wide or per goal; spending recorded after
the work."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Optional

from loopx.errors import UsageError
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import clock, typed
from loopx.ops import lookup
from loopx.projection import answers, views

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        Event, QuotaSet, QuotaSpent,
    )

Quota = answers.Quota  # what show answers, per scope


def set_(txn: Txn, *, goal: Optional[str] = None, turns: Optional[int] = None,
         tokens: Optional[int] = None, cost: Optional[float] = None,
         event_id: Optional[str] = None) -> Event[QuotaSet]:
    """Set a budget (each limit given replaces the previous one)."""
    if turns is None and tokens is None and cost is None:
        raise UsageError("give at least one of turns, tokens or cost")
    data = {"turns": turns, "tokens": tokens, "cost": cost}
    return txn.add(Draft("quota.set", data, lookup.goal_of(txn.fold, goal, None), event_id))


def spend(txn: Txn, *, goal: Optional[str] = None, todo: Optional[str] = None, turns: int = 0,
          tokens: int = 0, cost: float = 0.0, force: bool = False, reason: Optional[str] = None,
          host: Optional[str] = None, exit: Optional[int] = None, wakes: Sequence[str] = (),
          event_id: Optional[str] = None) -> Event[QuotaSpent]:
    """Record what was spent, after the work. Spending past a budget that covers it is refused
    unless ``force``d with a ``reason`` (the spending happened: say why it went over).
    ``host``, ``exit`` and ``wakes`` say which turn it was (``watch --host``)."""
    if force and not reason:
        raise UsageError("recording spending past the budget needs a reason (--reason TEXT)")
    tid = lookup.optional(txn.fold.todos, todo, "todo")
    data = {"turns": turns, "tokens": tokens, "cost": cost, "todo": tid,
            "force": True if force else None, "reason": reason, "host": host, "exit": exit,
            "wakes": list(wakes) or None}
    return txn.add(Draft("quota.spent", data, lookup.goal_of(txn.fold, goal, tid), event_id))


def show(ledger: Ledger, *, now: Optional[datetime] = None) -> dict[str, answers.Quota]:
    """Budgets, spending and what is left, by scope (``*`` is ledger-wide)."""
    found = views.snapshot(ledger.fold(), now or clock.now())["quota"]
    return {scope: typed.build(answers.Quota, q) for scope, q in found.items()}
