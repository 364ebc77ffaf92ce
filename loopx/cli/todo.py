"""`git loopx todo ...`"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Optional

import click

from loopx.cli import App, duration, emit_event, event_id_option, lookup, pass_app
from loopx.model.ids import new_short_id


@click.group()
def todo() -> None:
    """Todos: dependencies, claims (leases), completion."""


@todo.command("add")
@click.argument("goal_id")
@click.argument("title")
@click.option("--id", "todo_id", help="Id to use (default: a generated t-xxxxxx).")
@click.option("--after", multiple=True, metavar="TODO", help="A todo this one waits for.")
@click.option("--gate", multiple=True, metavar="GATE", help="A gate that must be approved first.")
@click.option("--criterion", multiple=True, metavar="ID", help="An acceptance criterion it serves.")
@click.option("--description", help="Longer text.")
@event_id_option
@pass_app
def todo_add(app: App, goal_id: str, title: str, todo_id: Optional[str], after: tuple[str, ...],
             gate: tuple[str, ...], criterion: tuple[str, ...], description: Optional[str],
             event_id: Optional[str]) -> None:
    """Add a todo to GOAL_ID."""
    from loopx.ledger.txn import Draft

    def build(txn: Any) -> Any:
        fold = txn.fold
        gid = lookup(fold.goals, goal_id, "goal")
        data = {"id": todo_id or new_short_id("t", event_id), "goal": gid, "title": title,
                "description": description, "criteria": list(criterion),
                "depends_on": [lookup(fold.todos, t, "todo") for t in after],
                "gates": [lookup(fold.gates, g, "gate") for g in gate]}
        return txn.add(Draft("todo.added", data, gid, event_id))

    event = app.write(build)
    emit_event(app, event, f"added todo {event.data.id} to {event.data.goal}: {title}")


@todo.command("update")
@click.argument("todo_id")
@click.option("--title", help="A new title.")
@click.option("--description", help="A new description.")
@click.option("--after", multiple=True, metavar="TODO", help="Also wait for this todo (refuses cycles).")
@click.option("--gate", multiple=True, metavar="GATE", help="Also require this gate's approval.")
@event_id_option
@pass_app
def todo_update(app: App, todo_id: str, title: Optional[str], description: Optional[str],
                after: tuple[str, ...], gate: tuple[str, ...], event_id: Optional[str]) -> None:
    """Change a todo's title or description, or add dependencies and gates."""
    if not (title or description or after or gate):
        raise click.UsageError("nothing to change: give --title, --description, --after or --gate")
    event = app.write(lambda txn: _update(txn, todo_id, event_id, title=title,
                                          description=description, after=after, gate=gate))
    emit_event(app, event, f"updated todo {event.data.id}")


@todo.command("depend")
@click.argument("todo_id")
@click.option("--on", "on", multiple=True, metavar="TODO", required=True, help="Todo to wait for.")
@event_id_option
@pass_app
def todo_depend(app: App, todo_id: str, on: tuple[str, ...], event_id: Optional[str]) -> None:
    """Make a todo wait for other todos (refuses cycles); same as `todo update --after`."""
    event = app.write(lambda txn: _update(txn, todo_id, event_id, after=on))
    emit_event(app, event, f"todo {event.data.id} now waits for {', '.join(event.data.add_depends_on)}")


def _update(txn: Any, todo_id: str, event_id: Optional[str], *, title: Optional[str] = None,
            description: Optional[str] = None, after: tuple[str, ...] = (),
            gate: tuple[str, ...] = ()) -> Any:
    from loopx.ledger.txn import Draft

    tid = lookup(txn.fold.todos, todo_id, "todo")
    data = {"id": tid, "title": title, "description": description,
            "add_depends_on": [lookup(txn.fold.todos, t, "todo") for t in after],
            "add_gates": [lookup(txn.fold.gates, g, "gate") for g in gate]}
    return txn.add(Draft("todo.updated", data, txn.fold.todos[tid].goal, event_id))


def _simple(event_type: str, verb: str, **options: Any) -> Any:
    """A todo command that takes the id and optional fields, and appends one event."""

    def command(app: App, todo_id: str, event_id: Optional[str], **fields: Any) -> None:
        from loopx.ledger.txn import Draft

        def build(txn: Any) -> Any:
            tid = lookup(txn.fold.todos, todo_id, "todo")
            data = {"id": tid, **{k: v for k, v in fields.items() if v not in (None, ())}}
            if "evidence" in data:
                data["evidence"] = [lookup(txn.fold.evidence, e, "evidence") for e in data["evidence"]]
            return txn.add(Draft(event_type, data, txn.fold.todos[tid].goal, event_id))

        event = app.write(build)
        emit_event(app, event, f"{verb} todo {event.data.id}")

    return command


def _register(name: str, event_type: str, verb: str, doc: str, *extra: Any) -> None:
    fn = _simple(event_type, verb)
    fn.__doc__ = doc
    for decorator in reversed((click.argument("todo_id"), *extra, event_id_option, pass_app)):
        fn = decorator(fn)
    todo.command(name)(fn)


_register("release", "todo.released", "released", "Give up your claim on a todo.",
          click.option("--reason"))
_register("done", "todo.done", "finished", "Mark a todo done, citing evidence.",
          click.option("--evidence", multiple=True, metavar="ID", help="Evidence id (repeatable)."),
          click.option("--summary"))
_register("block", "todo.blocked", "blocked", "Mark a todo blocked, with the reason.",
          click.option("--reason", required=True))
_register("reopen", "todo.reopened", "reopened", "Reopen a done, blocked or cancelled todo.",
          click.option("--reason"))
_register("cancel", "todo.cancelled", "cancelled", "Cancel a todo.", click.option("--reason"))


def _lease_command(event_type: str, verb: str) -> Any:
    @click.argument("todo_id")
    @click.option("--ttl", default=None, metavar="DURATION",
                  help="Lease length, e.g. 45m (default: ledger config, else 45m).")
    @click.option("--sync", "synced", is_flag=True,
                  help="Count only once the remote has it; fails if someone else's claim got there first.")
    @event_id_option
    @pass_app
    def command(app: App, todo_id: str, ttl: Optional[str], synced: bool, event_id: Optional[str]) -> None:
        from loopx.model import clock
        from loopx.ledger.txn import Draft
        from loopx.state.entities import DEFAULT_LEASE_TTL_S

        def build(txn: Any) -> Any:
            tid = lookup(txn.fold.todos, todo_id, "todo")
            seconds = duration(ttl) if ttl else txn.fold.config.get("lease_ttl_seconds", DEFAULT_LEASE_TTL_S)
            until = clock.format_ts(txn.now + timedelta(seconds=seconds))
            return txn.add(Draft(event_type, {"id": tid, "until": until}, txn.fold.todos[tid].goal, event_id))

        if synced:
            from loopx.cli.remote import write_synced

            event = write_synced(app, build, todo_id)
        else:
            event = app.write(build)
        emit_event(app, event, f"{verb} todo {event.data.id} until {event.data.until}")

    return command


todo.command("claim", help="Claim a todo: a lease that expires unless renewed.")(
    _lease_command("todo.claimed", "claimed"))
todo.command("renew", help="Extend your lease on a todo.")(_lease_command("todo.renewed", "renewed"))


@todo.command("list")
@click.option("--goal", "goal_id", help="Only this goal's todos.")
@click.option("--ready", is_flag=True, help="Only the frontier (ready to work on).")
@click.option("--all", "show_all", is_flag=True, help="Include done and cancelled todos.")
@pass_app
def todo_list(app: App, goal_id: Optional[str], ready: bool, show_all: bool) -> None:
    """List todos with their state and why they are not ready."""
    snap = app.ledger.snapshot(app.now)
    todos = snap["todos"]
    if goal_id:
        gid = lookup({g["id"]: g for g in snap["goals"]}, goal_id, "goal")
        todos = [t for t in todos if t["goal"] == gid]
    if ready:
        todos = [t for t in todos if t["ready"]]
    elif not show_all:
        todos = [t for t in todos if t["state"] not in ("done", "cancelled")]

    def text() -> str:
        if not todos:
            return "no todos"
        return "\n".join(
            f"{t['id']:<12} {t['state']:<9} {t['title']}"
            + (f"  ({t['why_not_ready']})" if t["why_not_ready"] and t["state"] != "done" else "")
            for t in todos
        )

    app.emit(todos, text)


@todo.command("show")
@click.argument("todo_id")
@pass_app
def todo_show(app: App, todo_id: str) -> None:
    """Show one todo."""
    snap = app.ledger.snapshot(app.now)
    tid = lookup({t["id"]: t for t in snap["todos"]}, todo_id, "todo")
    found = next(t for t in snap["todos"] if t["id"] == tid)

    def text() -> str:
        lines = [f"todo {tid}: {found['title']}", f"  goal:    {found['goal']}",
                 f"  state:   {found['state']}"]
        if found["depends_on"]:
            lines.append(f"  after:   {', '.join(found['depends_on'])}")
        if found["gates"]:
            lines.append(f"  gates:   {', '.join(found['gates'])}")
        if found["claimed_by"]:
            lines.append(f"  claimed: {found['claimed_by']} until {found['lease_expires']}")
        if found["why_not_ready"]:
            lines.append(f"  not ready: {found['why_not_ready']}")
        if found["evidence"]:
            lines.append(f"  evidence: {', '.join(found['evidence'])}")
        return "\n".join(lines)

    app.emit(found, text)
