"""`git loopx wake|quota|effect ...`: wake conditions, the budget, and external writes."""

from __future__ import annotations

from typing import TYPE_CHECKING


import click

from loopx.cli.app import App, declared
from loopx.model.inert import line
from loopx.ops import catalog
from loopx.ops.declare import Values

if TYPE_CHECKING:  # annotations only: the command runs its operation through the catalog
    from loopx.ops import quotas

# --- wakes ----------------------------------------------------------------------------------


@click.group()
def wake() -> None:
    """Wake conditions: when to look again."""


@wake.command("set")
@declared(catalog.find("wake set"))
def wake_set(app: App, v: Values) -> None:
    event = app.call(catalog.find("wake set"), v)
    app.emit_event(event, f"set wake {event.data.id}"
                   + (f" at {event.data.at}" if event.data.at else "")
                   + (f" on CI for {event.data.on_ci[:12]}" if event.data.on_ci else ""))


@wake.command("clear")
@declared(catalog.find("wake clear"))
def wake_clear(app: App, v: Values) -> None:
    event = app.call(catalog.find("wake clear"), v)
    app.emit_event(event, f"cleared wake {event.data.id}")


@wake.command("ack")
@declared(catalog.find("wake ack"))
def wake_ack(app: App, v: Values) -> None:
    event = app.call(catalog.find("wake ack"), v)
    next_at = getattr(event.data, "next", None)
    app.emit_event(event, f"wake {event.data.id} due again at {next_at}" if next_at
                   else f"cleared wake {event.data.id}")


@wake.command("list")
@declared(catalog.find("wake list"))
def wake_list(app: App, v: Values) -> None:
    found = app.call(catalog.find("wake list"), v)
    app.emit(found, lambda: "\n".join(
        f"{w.id:<12} " + ", ".join(f"{k}={getattr(w, k)}" for k in ("at", "on_gate", "on_ci",
                                                                   "on_todo", "every")
                                   if getattr(w, k))
        + (f"  ({line(w.reason)})" if w.reason else "") for w in found) or "no wakes")


# --- quota ----------------------------------------------------------------------------------


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


# --- effects --------------------------------------------------------------------------------


@click.group()
def effect() -> None:
    """External writes: intend before the call, confirm or fail after."""


@effect.command("intend")
@declared(catalog.find("effect intend"))
def effect_intend(app: App, v: Values) -> None:
    event = app.call(catalog.find("effect intend"), v)
    app.emit_event(event, f"intend {v.action} on {v.target} as effect {event.data.id}")


@effect.command("confirm")
@declared(catalog.find("effect confirm"))
def effect_confirm(app: App, v: Values) -> None:
    event = app.call(catalog.find("effect confirm"), v)
    app.emit_event(event, f"confirmed effect {event.data.id}")


@effect.command("fail")
@declared(catalog.find("effect fail"))
def effect_fail(app: App, v: Values) -> None:
    event = app.call(catalog.find("effect fail"), v)
    app.emit_event(event, f"effect {event.data.id} failed")


@effect.command("list")
@declared(catalog.find("effect list"))
def effect_list(app: App, v: Values) -> None:
    found = app.call(catalog.find("effect list"), v)
    app.emit(found, lambda: "\n".join(
        f"{e.id:<12} {e.state:<13} {e.action} {e.target}" for e in found)
        or "no effects")
