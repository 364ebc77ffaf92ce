"""`git loopx quota ...`: the budget of turns, tokens and cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from loopx.cli.app import App, declared
from loopx.ops import catalog
from loopx.ops.declare import Values

if TYPE_CHECKING:  # annotations only: the command runs its operation through the catalog
    from loopx.ops import quotas


@click.group()
def quota() -> None:
    """Budgets of turns, tokens and cost (ledger-wide or per goal)."""


@quota.command("set")
@declared(catalog.find("quota set"))
def quota_set(app: App, v: Values) -> None:
    event = app.call(catalog.find("quota set"), v)
    app.emit_event(event, f"set quota for {event.env.goal or 'the ledger'}")


@quota.command("spend")
@declared(catalog.find("quota spend"))
def quota_spend(app: App, v: Values) -> None:
    event = app.call(catalog.find("quota spend"), v)
    app.emit_event(event, f"spent {v.turns} turns, {v.tokens} tokens, {v.cost} cost")


@quota.command("show")
@declared(catalog.find("quota show"))
def quota_show(app: App, v: Values) -> None:
    found = app.call(catalog.find("quota show"), v)
    app.emit(found, lambda: _quota_text(found))


def _quota_text(found: dict[str, quotas.Quota]) -> str:
    lines = []
    for scope, q in found.items():
        limits = {"turns": q.turns, "tokens": q.tokens, "cost": q.cost}
        parts = [f"{k} {getattr(q.spent, k)}/{v if v is not None else '-'}"
                 for k, v in limits.items()]
        lines.append(f"{scope:<12} {'  '.join(parts)}{'  EXHAUSTED' if q.exhausted else ''}")
    return "\n".join(lines) or "no quota set"
