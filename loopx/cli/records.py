"""`git loopx wake|quota|effect ...`: wake conditions, the budget, and external writes."""

from __future__ import annotations

from typing import Optional

import click

from loopx.cli.app import App, event_id_option, optional_duration, pass_app
from loopx.ops import effects, quotas, wakes
from loopx.model.inert import line

# --- wakes ----------------------------------------------------------------------------------


@click.group()
def wake() -> None:
    """Wake conditions: when to look again."""


@wake.command("set")
@click.option("--at", "at", metavar="TIME", help="An RFC 3339 time (UTC).")
@click.option("--in", "in_", metavar="DURATION", help="From now, e.g. 2h.")
@click.option("--on-gate", metavar="GATE", help="When this gate is answered.")
@click.option("--on-ci", metavar="REV", help="When CI finishes for this commit (a sha, HEAD, "
              "a branch: resolved to its full commit now).")
@click.option("--on-todo", metavar="TODO", help="When this todo is done.")
@click.option("--every", metavar="DURATION", help="Recur: due again this long after each time "
              "it is acted on (`wake ack`), e.g. 30m; first due --at/--in, else one DURATION "
              "from now.")
@click.option("--goal", "goal_id", metavar="GOAL")
@click.option("--reason")
@click.option("--id", "wake_id", help="Id to use (default: a generated w-xxxxxx).")
@event_id_option
@pass_app
def wake_set(app: App, at: Optional[str], in_: Optional[str], on_gate: Optional[str],
             on_ci: Optional[str], on_todo: Optional[str], every: Optional[str],
             goal_id: Optional[str], reason: Optional[str], wake_id: Optional[str],
             event_id: Optional[str]) -> None:
    """Set a wake condition (`wait` and `watch` act on it)."""
    after, seconds = optional_duration(in_), optional_duration(every)
    event = app.write(lambda txn: wakes.set_(txn, at=at, after=after, on_gate=on_gate,
                                             on_ci=on_ci, on_todo=on_todo, goal=goal_id,
                                             reason=reason, every=seconds, id=wake_id,
                                             event_id=event_id))
    app.emit_event(event, f"set wake {event.data.id}"
                   + (f" at {event.data.at}" if event.data.at else "")
                   + (f" on CI for {event.data.on_ci[:12]}" if event.data.on_ci else ""))


@wake.command("clear")
@click.argument("wake_id")
@event_id_option
@pass_app
def wake_clear(app: App, wake_id: str, event_id: Optional[str]) -> None:
    """Clear a wake condition."""
    event = app.write(lambda txn: wakes.clear(txn, wake_id, event_id=event_id))
    app.emit_event(event, f"cleared wake {event.data.id}")


@wake.command("ack")
@click.argument("wake_id")
@event_id_option
@pass_app
def wake_ack(app: App, wake_id: str, event_id: Optional[str]) -> None:
    """Say a due wake was acted on: a one-shot wake is cleared, a recurring one re-armed."""
    event = app.write(lambda txn: wakes.ack(txn, wake_id, event_id=event_id))
    next_at = getattr(event.data, "next", None)
    app.emit_event(event, f"wake {event.data.id} due again at {next_at}" if next_at
                   else f"cleared wake {event.data.id}")


@wake.command("list")
@pass_app
def wake_list(app: App) -> None:
    """List wake conditions."""
    found = wakes.listing(app.ledger, now=app.now)
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
@click.option("--goal", "goal_id", metavar="GOAL", help="Per goal (default: ledger-wide).")
@click.option("--turns", type=click.IntRange(min=0))
@click.option("--tokens", type=click.IntRange(min=0))
@click.option("--cost", type=click.FloatRange(min=0))
@event_id_option
@pass_app
def quota_set(app: App, goal_id: Optional[str], turns: Optional[int], tokens: Optional[int],
              cost: Optional[float], event_id: Optional[str]) -> None:
    """Set a budget."""
    if turns is None and tokens is None and cost is None:
        raise click.UsageError("give at least one of --turns, --tokens, --cost")
    event = app.write(lambda txn: quotas.set_(txn, goal=goal_id, turns=turns, tokens=tokens,
                                              cost=cost, event_id=event_id))
    app.emit_event(event, f"set quota for {event.env.goal or 'the ledger'}")


@quota.command("spend")
@click.option("--goal", "goal_id", metavar="GOAL")
@click.option("--todo", "todo_id", metavar="TODO")
@click.option("--turns", type=click.IntRange(min=0), default=0)
@click.option("--tokens", type=click.IntRange(min=0), default=0)
@click.option("--cost", type=click.FloatRange(min=0), default=0.0)
@click.option("--force", is_flag=True, help="Record it although it goes past the budget.")
@click.option("--reason", help="Why it went past the budget (needed with --force).")
@event_id_option
@pass_app
def quota_spend(app: App, goal_id: Optional[str], todo_id: Optional[str], turns: int, tokens: int,
                cost: float, force: bool, reason: Optional[str], event_id: Optional[str]) -> None:
    """Record what was spent (after the work); past the budget only with --force --reason."""
    event = app.write(lambda txn: quotas.spend(txn, goal=goal_id, todo=todo_id, turns=turns,
                                               tokens=tokens, cost=cost, force=force,
                                               reason=reason, event_id=event_id))
    app.emit_event(event, f"spent {turns} turns, {tokens} tokens, {cost} cost")


@quota.command("show")
@pass_app
def quota_show(app: App) -> None:
    """Budgets, spending and what is left."""
    found = quotas.show(app.ledger, now=app.now)
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
@click.argument("target")
@click.option("--action", required=True, help="What will be done, e.g. open-pr.")
@click.option("--key", "key", help="Idempotency key (default: the effect id).")
@click.option("--todo", "todo_id", metavar="TODO")
@click.option("--goal", "goal_id", metavar="GOAL")
@click.option("--id", "effect_id", help="Id to use (default: a generated x-xxxxxx).")
@event_id_option
@pass_app
def effect_intend(app: App, target: str, action: str, key: Optional[str], todo_id: Optional[str],
                  goal_id: Optional[str], effect_id: Optional[str], event_id: Optional[str]) -> None:
    """Record the intent to write to TARGET, before making the call."""
    event = app.write(lambda txn: effects.intend(txn, target, action=action, key=key, todo=todo_id,
                                                 goal=goal_id, id=effect_id, event_id=event_id))
    app.emit_event(event, f"intend {action} on {target} as effect {event.data.id}")


@effect.command("confirm")
@click.argument("effect_id")
@click.option("--receipt", required=True, help="Proof it happened, e.g. the URL created.")
@event_id_option
@pass_app
def effect_confirm(app: App, effect_id: str, receipt: str, event_id: Optional[str]) -> None:
    """Record that an intended effect happened."""
    event = app.write(lambda txn: effects.confirm(txn, effect_id, receipt=receipt,
                                                  event_id=event_id))
    app.emit_event(event, f"confirmed effect {event.data.id}")


@effect.command("fail")
@click.argument("effect_id")
@click.option("--error", required=True, help="What went wrong.")
@click.option("--final", is_flag=True, help="Not worth retrying.")
@event_id_option
@pass_app
def effect_fail(app: App, effect_id: str, error: str, final: bool, event_id: Optional[str]) -> None:
    """Record that an intended effect did not happen."""
    event = app.write(lambda txn: effects.fail(txn, effect_id, error=error, final=final,
                                               event_id=event_id))
    app.emit_event(event, f"effect {event.data.id} failed")


@effect.command("list")
@pass_app
def effect_list(app: App) -> None:
    """List effects; indeterminate ones must be read back before any retry."""
    found = effects.listing(app.ledger, now=app.now)
    app.emit(found, lambda: "\n".join(
        f"{e.id:<12} {e.state:<13} {e.action} {e.target}" for e in found)
        or "no effects")
