"""`git loopx evidence|wake|quota|effect|note ...`: the record-keeping commands."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Optional

import click

from loopx.cli import App, duration, emit_event, event_id_option, lookup, pass_app, write_about
from loopx.model.ids import new_short_id

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn


def _goal_of(txn: Txn, goal: Optional[str], todo: Optional[str]) -> Optional[str]:
    if todo:
        return txn.fold.todos[todo].goal
    return lookup(txn.fold.goals, goal, "goal") if goal else None


# --- evidence -------------------------------------------------------------------------------


@click.group()
def evidence() -> None:
    """Evidence bound to a commit and tree: tests, CI, reviews, receipts."""


@evidence.command("add")
@click.option("--kind", type=click.Choice(["test", "ci", "commit", "review", "receipt", "note"]),
              required=True)
@click.option("--todo", "todo_id", metavar="TODO", help="The todo it supports.")
@click.option("--goal", "goal_id", metavar="GOAL", help="The goal (implied by --todo).")
@click.option("--criterion", multiple=True, metavar="ID", help="Acceptance criterion it meets.")
@click.option("--commit", "rev", default=None, metavar="REV",
              help="Commit it vouches for (default HEAD, if any).")
@click.option("--command", help="The command that produced it.")
@click.option("--exit-code", type=int, help="That command's exit code (0 = passing).")
@click.option("--duration", "duration_s", type=float, help="Seconds it took.")
@click.option("--summary", help="One line on what it shows.")
@click.option("--url", help="Where to see it (CI run, review, receipt).")
@click.option("--digest", help="Digest of the output, e.g. sha256:...")
@click.option("--id", "ev_id", help="Id to use (default: a generated e-xxxxxx).")
@event_id_option
@pass_app
def evidence_add(app: App, kind: str, todo_id: Optional[str], goal_id: Optional[str],
                 criterion: tuple[str, ...], rev: Optional[str], command: Optional[str],
                 exit_code: Optional[int], duration_s: Optional[float], summary: Optional[str],
                 url: Optional[str], digest: Optional[str], ev_id: Optional[str],
                 event_id: Optional[str]) -> None:
    """Record evidence; it is bound to HEAD's commit and tree unless --commit says otherwise."""
    from loopx.ledger.txn import Draft

    binding = _binding(app, rev)

    def build(txn: Any) -> Any:
        todo = lookup(txn.fold.todos, todo_id, "todo") if todo_id else None
        data = {"id": ev_id or new_short_id("e", event_id), "kind": kind, **binding, "command": command,
                "exit_code": exit_code, "duration_s": duration_s, "summary": summary, "url": url,
                "digest": digest, "todo": todo, "criteria": list(criterion)}
        return txn.add(Draft("evidence.recorded", data, _goal_of(txn, goal_id, todo), event_id))

    event = app.write(build)
    emit_event(app, event, f"recorded {kind} evidence {event.data.id}")


def _binding(app: App, rev: Optional[str]) -> dict[str, Any]:
    """commit, tree and dirty flag of ``rev`` (HEAD by default) in the user's work tree."""
    from loopx.storage import gateway

    repo = app.ledger.repo
    commit = app.ledger.store.resolve(rev or "HEAD")
    if commit is None:
        if rev:
            raise click.BadParameter(f"no commit {rev!r}", param_hint="--commit")
        return {}
    tree = gateway.out(repo.cwd, "rev-parse", f"{commit}^{{tree}}")
    dirty = False
    if rev is None and repo.work_tree is not None:
        dirty = bool(gateway.out(repo.cwd, "status", "--porcelain", "--untracked-files=no"))
    return {"commit": commit, "tree": tree, "dirty": dirty}


@evidence.command("list")
@click.option("--todo", "todo_id", metavar="TODO")
@click.option("--goal", "goal_id", metavar="GOAL")
@pass_app
def evidence_list(app: App, todo_id: Optional[str], goal_id: Optional[str]) -> None:
    """List evidence."""
    items = app.ledger.snapshot(app.now)["evidence"]
    if todo_id:
        items = [e for e in items if e["todo"] and e["todo"].startswith(todo_id)]
    if goal_id:
        items = [e for e in items if e["goal"] and e["goal"].startswith(goal_id)]

    def text() -> str:
        return "\n".join(
            f"{e['id']:<12} {e['kind']:<7} {(e['commit'] or '-')[:10]:<10} "
            f"{'exit ' + str(e['exit_code']) if e['exit_code'] is not None else '':<7} "
            f"{e['summary'] or ''}" for e in items
        ) or "no evidence"

    app.emit(items, text)


# --- wakes ----------------------------------------------------------------------------------


@click.group()
def wake() -> None:
    """Wake conditions: when to look again."""


@wake.command("set")
@click.option("--at", "at", metavar="TIME", help="An RFC 3339 time (UTC).")
@click.option("--in", "in_", metavar="DURATION", help="From now, e.g. 2h.")
@click.option("--on-gate", metavar="GATE", help="When this gate is answered.")
@click.option("--on-ci", metavar="SHA", help="When CI finishes for this commit (or HEAD).")
@click.option("--on-todo", metavar="TODO", help="When this todo is done.")
@click.option("--goal", "goal_id", metavar="GOAL")
@click.option("--reason")
@click.option("--id", "wake_id", help="Id to use (default: a generated w-xxxxxx).")
@event_id_option
@pass_app
def wake_set(app: App, at: Optional[str], in_: Optional[str], on_gate: Optional[str],
             on_ci: Optional[str], on_todo: Optional[str], goal_id: Optional[str],
             reason: Optional[str], wake_id: Optional[str], event_id: Optional[str]) -> None:
    """Set a wake condition."""
    from loopx.model import clock
    from loopx.ledger.txn import Draft

    def build(txn: Any) -> Any:
        when = at
        if in_:
            when = clock.format_ts(txn.now + timedelta(seconds=duration(in_)))
        elif at:
            try:
                when = clock.format_ts(clock.parse_ts(at))
            except ValueError:
                raise click.BadParameter(f"not a time: {at!r}", param_hint="--at") from None
        data = {"id": wake_id or new_short_id("w", event_id), "at": when, "reason": reason,
                "on_gate": lookup(txn.fold.gates, on_gate, "gate") if on_gate else None,
                "on_todo": lookup(txn.fold.todos, on_todo, "todo") if on_todo else None,
                "on_ci": on_ci}
        return txn.add(Draft("wake.set", data, _goal_of(txn, goal_id, None), event_id))

    event = app.write(build)
    emit_event(app, event, f"set wake {event.data.id}")


@wake.command("clear")
@click.argument("wake_id")
@event_id_option
@pass_app
def wake_clear(app: App, wake_id: str, event_id: Optional[str]) -> None:
    """Clear a wake condition."""
    event = write_about(app, "wakes", wake_id, "wake", "wake.cleared", {}, event_id)
    emit_event(app, event, f"cleared wake {event.data.id}")


@wake.command("list")
@pass_app
def wake_list(app: App) -> None:
    """List wake conditions."""
    wakes = app.ledger.snapshot(app.now)["wakes"]

    def text() -> str:
        return "\n".join(
            f"{w['id']:<12} " + ", ".join(f"{k}={w[k]}" for k in ("at", "on_gate", "on_ci", "on_todo") if w[k])
            + (f"  ({w['reason']})" if w["reason"] else "") for w in wakes
        ) or "no wakes"

    app.emit(wakes, text)


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
    from loopx.ledger.txn import Draft

    if turns is None and tokens is None and cost is None:
        raise click.UsageError("give at least one of --turns, --tokens, --cost")

    def build(txn: Any) -> Any:
        data = {"turns": turns, "tokens": tokens, "cost": cost}
        return txn.add(Draft("quota.set", data, _goal_of(txn, goal_id, None), event_id))

    event = app.write(build)
    emit_event(app, event, f"set quota for {event.env.goal or 'the ledger'}")


@quota.command("spend")
@click.option("--goal", "goal_id", metavar="GOAL")
@click.option("--todo", "todo_id", metavar="TODO")
@click.option("--turns", type=click.IntRange(min=0), default=0)
@click.option("--tokens", type=click.IntRange(min=0), default=0)
@click.option("--cost", type=click.FloatRange(min=0), default=0.0)
@event_id_option
@pass_app
def quota_spend(app: App, goal_id: Optional[str], todo_id: Optional[str], turns: int, tokens: int,
                cost: float, event_id: Optional[str]) -> None:
    """Record what was spent (after the work)."""
    from loopx.ledger.txn import Draft

    def build(txn: Any) -> Any:
        todo = lookup(txn.fold.todos, todo_id, "todo") if todo_id else None
        data = {"turns": turns, "tokens": tokens, "cost": cost, "todo": todo}
        return txn.add(Draft("quota.spent", data, _goal_of(txn, goal_id, todo), event_id))

    event = app.write(build)
    emit_event(app, event, f"spent {turns} turns, {tokens} tokens, {cost} cost")


@quota.command("show")
@pass_app
def quota_show(app: App) -> None:
    """Budgets, spending and what is left."""
    quotas = app.ledger.snapshot(app.now)["quota"]

    def text() -> str:
        lines = []
        for scope, q in quotas.items():
            parts = [f"{k} {q['spent'][k]}/{q[k] if q[k] is not None else '-'}" for k in ("turns", "tokens", "cost")]
            lines.append(f"{scope:<12} {'  '.join(parts)}{'  EXHAUSTED' if q['exhausted'] else ''}")
        return "\n".join(lines) or "no quota set"

    app.emit(quotas, text)


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
    from loopx.ledger.txn import Draft

    def build(txn: Any) -> Any:
        todo = lookup(txn.fold.todos, todo_id, "todo") if todo_id else None
        xid = effect_id or new_short_id("x", event_id)
        data = {"id": xid, "target": target, "action": action, "idempotency_key": key or xid,
                "todo": todo}
        return txn.add(Draft("effect.intended", data, _goal_of(txn, goal_id, todo), event_id))

    event = app.write(build)
    emit_event(app, event, f"intend {action} on {target} as effect {event.data.id}")


@effect.command("confirm")
@click.argument("effect_id")
@click.option("--receipt", required=True, help="Proof it happened, e.g. the URL created.")
@event_id_option
@pass_app
def effect_confirm(app: App, effect_id: str, receipt: str, event_id: Optional[str]) -> None:
    """Record that an intended effect happened."""
    event = write_about(app, "effects", effect_id, "effect", "effect.confirmed",
                        {"receipt": receipt}, event_id)
    emit_event(app, event, f"confirmed effect {event.data.id}")


@effect.command("fail")
@click.argument("effect_id")
@click.option("--error", required=True, help="What went wrong.")
@click.option("--final", is_flag=True, help="Not worth retrying.")
@event_id_option
@pass_app
def effect_fail(app: App, effect_id: str, error: str, final: bool, event_id: Optional[str]) -> None:
    """Record that an intended effect did not happen."""
    event = write_about(app, "effects", effect_id, "effect", "effect.failed",
                        {"error": error, "retryable": not final}, event_id)
    emit_event(app, event, f"effect {event.data.id} failed")


@effect.command("list")
@pass_app
def effect_list(app: App) -> None:
    """List effects; indeterminate ones must be read back before any retry."""
    effects = app.ledger.snapshot(app.now)["effects"]
    app.emit(effects, lambda: "\n".join(
        f"{e['id']:<12} {e['state']:<13} {e['action']} {e['target']}" for e in effects) or "no effects")


# --- notes ----------------------------------------------------------------------------------


@click.group()
def note() -> None:
    """Free-form notes in the ledger."""


@note.command("add")
@click.argument("text")
@click.option("--todo", "todo_id", metavar="TODO")
@click.option("--goal", "goal_id", metavar="GOAL")
@event_id_option
@pass_app
def note_add(app: App, text: str, todo_id: Optional[str], goal_id: Optional[str],
             event_id: Optional[str]) -> None:
    """Add a note."""
    from loopx.ledger.txn import Draft

    def build(txn: Any) -> Any:
        todo = lookup(txn.fold.todos, todo_id, "todo") if todo_id else None
        data = {"id": new_short_id("n", event_id), "text": text, "todo": todo}
        return txn.add(Draft("note.added", data, _goal_of(txn, goal_id, todo), event_id))

    event = app.write(build)
    emit_event(app, event, f"noted {event.data.id}")
