"""`git loopx todo ...`"""

from __future__ import annotations

from typing import Optional

import click

from loopx.cli.app import App, event_id_option, optional_duration, pass_app
from loopx.ops import todos
from loopx.model.inert import line


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
@click.option("--priority", type=click.IntRange(0, 4), metavar="0-4",
              help="0 most urgent .. 4 least (default 2); orders the frontier and `next`.")
@click.option("--discovered-from", "discovered_from", metavar="TODO",
              help="The todo whose work turned this one up.")
@event_id_option
@pass_app
def todo_add(app: App, goal_id: str, title: str, todo_id: Optional[str], after: tuple[str, ...],
             gate: tuple[str, ...], criterion: tuple[str, ...], description: Optional[str],
             priority: Optional[int], discovered_from: Optional[str],
             event_id: Optional[str]) -> None:
    """Add a todo to GOAL_ID."""
    event = app.write(lambda txn: todos.add(txn, goal_id, title, id=todo_id, after=after,
                                            gates=gate, criteria=criterion,
                                            description=description, priority=priority,
                                            discovered_from=discovered_from, event_id=event_id))
    app.emit_event(event, f"added todo {event.data.id} to {event.data.goal}: {title}")


@todo.command("update")
@click.argument("todo_id")
@click.option("--title", help="A new title.")
@click.option("--description", help="A new description.")
@click.option("--after", multiple=True, metavar="TODO", help="Also wait for this todo (refuses cycles).")
@click.option("--gate", multiple=True, metavar="GATE", help="Also require this gate's approval.")
@click.option("--priority", type=click.IntRange(0, 4), metavar="0-4",
              help="A new priority: 0 most urgent .. 4 least.")
@event_id_option
@pass_app
def todo_update(app: App, todo_id: str, title: Optional[str], description: Optional[str],
                after: tuple[str, ...], gate: tuple[str, ...], priority: Optional[int],
                event_id: Optional[str]) -> None:
    """Change a todo's title, description or priority, or add dependencies and gates."""
    if not (title or description or after or gate or priority is not None):
        raise click.UsageError("nothing to change: give --title, --description, --priority, "
                               "--after or --gate")
    event = app.write(lambda txn: todos.update(txn, todo_id, title=title, description=description,
                                               after=after, gates=gate, priority=priority,
                                               event_id=event_id))
    app.emit_event(event, f"updated todo {event.data.id}")


@todo.command("depend")
@click.argument("todo_id")
@click.option("--on", "on", multiple=True, metavar="TODO", required=True, help="Todo to wait for.")
@event_id_option
@pass_app
def todo_depend(app: App, todo_id: str, on: tuple[str, ...], event_id: Optional[str]) -> None:
    """Make a todo wait for other todos (refuses cycles); same as `todo update --after`."""
    event = app.write(lambda txn: todos.update(txn, todo_id, after=on, event_id=event_id))
    app.emit_event(event, f"todo {event.data.id} now waits for "
                   f"{', '.join(event.data.add_depends_on)}")


@todo.command("release")
@click.argument("todo_id")
@click.option("--reason")
@event_id_option
@pass_app
def todo_release(app: App, todo_id: str, reason: Optional[str], event_id: Optional[str]) -> None:
    """Give up your claim on a todo."""
    event = app.write(lambda txn: todos.release(txn, todo_id, reason=reason, event_id=event_id))
    app.emit_event(event, f"released todo {event.data.id}")


@todo.command("done")
@click.argument("todo_id")
@click.option("--evidence", multiple=True, metavar="ID", help="Evidence id (repeatable).")
@click.option("--summary")
@click.option("--reason", metavar="TEXT",
              help="Why it is done without passing, fresh evidence (recorded and shown).")
@event_id_option
@pass_app
def todo_done(app: App, todo_id: str, evidence: tuple[str, ...], summary: Optional[str],
              reason: Optional[str], event_id: Optional[str]) -> None:
    """Mark a todo done, on passing evidence that still vouches for the code (cited, else the
    latest recorded for it), or with --reason saying why not."""
    event = app.write(lambda txn: todos.done(txn, todo_id, evidence=evidence, summary=summary,
                                             reason=reason, event_id=event_id))
    app.emit_event(event, f"finished todo {event.data.id}"
                   + (" without passing evidence (reason recorded)" if reason else ""))


@todo.command("ack")
@click.argument("todo_id")
@click.option("--gate", "gates", multiple=True, metavar="GATE",
              help="The decision to acknowledge (repeatable; default: all of them).")
@event_id_option
@pass_app
def todo_ack(app: App, todo_id: str, gates: tuple[str, ...], event_id: Optional[str]) -> None:
    """Acknowledge decisions made since you claimed a todo: you have re-planned with them."""
    event = app.write(lambda txn: todos.ack(txn, todo_id, gates=gates, event_id=event_id))
    app.emit_event(event, f"acknowledged {', '.join(event.data.gates)} on todo {event.data.id}")


@todo.command("block")
@click.argument("todo_id")
@click.option("--reason", required=True)
@event_id_option
@pass_app
def todo_block(app: App, todo_id: str, reason: str, event_id: Optional[str]) -> None:
    """Mark a todo blocked, with the reason."""
    event = app.write(lambda txn: todos.block(txn, todo_id, reason=reason, event_id=event_id))
    app.emit_event(event, f"blocked todo {event.data.id}")


@todo.command("reopen")
@click.argument("todo_id")
@click.option("--reason")
@event_id_option
@pass_app
def todo_reopen(app: App, todo_id: str, reason: Optional[str], event_id: Optional[str]) -> None:
    """Reopen a done, blocked or cancelled todo."""
    event = app.write(lambda txn: todos.reopen(txn, todo_id, reason=reason, event_id=event_id))
    app.emit_event(event, f"reopened todo {event.data.id}")


@todo.command("cancel")
@click.argument("todo_id")
@click.option("--reason")
@event_id_option
@pass_app
def todo_cancel(app: App, todo_id: str, reason: Optional[str], event_id: Optional[str]) -> None:
    """Cancel a todo."""
    event = app.write(lambda txn: todos.cancel(txn, todo_id, reason=reason, event_id=event_id))
    app.emit_event(event, f"cancelled todo {event.data.id}")


_TTL = click.option("--ttl", default=None, metavar="DURATION",
                    help="Lease length, e.g. 45m (default: ledger config, else 45m).")


@todo.command("claim")
@click.argument("todo_id")
@_TTL
@click.option("--sync", "synced", is_flag=True,
              help="Count only once the remote has it; fails if someone else's claim got there first.")
@event_id_option
@pass_app
def todo_claim(app: App, todo_id: str, ttl: Optional[str], synced: bool,
               event_id: Optional[str]) -> None:
    """Claim a todo: a lease that expires unless renewed."""
    seconds = optional_duration(ttl)
    if synced:
        event, _ = todos.claim_synced(app.ledger, todo_id, actor=app.actor, ttl=seconds,
                                      now=app.now, event_id=event_id)
    else:
        event = app.write(lambda txn: todos.claim(txn, todo_id, ttl=seconds, event_id=event_id))
    app.emit_event(event, f"claimed todo {event.data.id} until {event.data.until}")


@todo.command("renew")
@click.argument("todo_id")
@_TTL
@event_id_option
@pass_app
def todo_renew(app: App, todo_id: str, ttl: Optional[str], event_id: Optional[str]) -> None:
    """Extend your lease on a todo."""
    seconds = optional_duration(ttl)
    event = app.write(lambda txn: todos.renew(txn, todo_id, ttl=seconds, event_id=event_id))
    app.emit_event(event, f"renewed todo {event.data.id} until {event.data.until}")


@todo.command("list")
@click.option("--goal", "goal_id", help="Only this goal's todos.")
@click.option("--ready", is_flag=True, help="Only the frontier (ready to work on), in its order.")
@click.option("--all", "show_all", is_flag=True, help="Include done and cancelled todos.")
@click.option("--priority", multiple=True, type=click.IntRange(0, 4), metavar="0-4",
              help="Only todos of this priority (repeatable).")
@click.option("--state", type=click.Choice(todos.STATES), help="Only todos in this state.")
@click.option("--claimed-by", "claimant", metavar="ACTOR", help="Only todos this actor holds.")
@click.option("--mine", is_flag=True, help="Only todos you hold (same as --claimed-by YOU).")
@pass_app
def todo_list(app: App, goal_id: Optional[str], ready: bool, show_all: bool,
              priority: tuple[int, ...], state: Optional[str], claimant: Optional[str],
              mine: bool) -> None:
    """List todos with their state and why they are not ready (ledger order)."""
    found = todos.listing(app.ledger, goal=goal_id, ready=ready, include_closed=show_all,
                          priority=priority, state=state,
                          claimant=app.actor if mine else claimant, now=app.now)
    app.emit(found, lambda: _list_text(found))


def _list_text(found: list[todos.Todo]) -> str:
    if not found:
        return "no todos"
    return "\n".join(
        f"{t.id:<12} {t.state:<9} P{t.priority} {line(t.title)}"
        + (f"  ({line(t.why_not_ready)})" if t.why_not_ready and t.state != "done" else "")
        for t in found
    )


@todo.command("show")
@click.argument("todo_id")
@pass_app
def todo_show(app: App, todo_id: str) -> None:
    """Show one todo."""
    found = todos.show(app.ledger, todo_id, now=app.now)
    app.emit(found, lambda: _show_text(found))


def _show_text(found: todos.Todo) -> str:
    lines = [f"todo {found.id}: {line(found.title)}", f"  goal:    {found.goal}",
             f"  state:   {found.state}", f"  priority: {found.priority}"]
    if found.discovered_from:
        lines.append(f"  found while doing: {found.discovered_from}")
    if found.depends_on:
        lines.append(f"  after:   {', '.join(found.depends_on)}")
    if found.gates:
        lines.append(f"  gates:   {', '.join(found.gates)}")
    if found.claimed_by:
        lines.append(f"  claimed: {line(found.claimed_by)} until {found.lease_expires}")
    if found.why_not_ready:
        lines.append(f"  not ready: {line(found.why_not_ready)}")
    if found.evidence:
        lines.append(f"  evidence: {', '.join(found.evidence)}")
    if found.no_evidence_reason:
        lines.append(f"  done without evidence: {line(found.no_evidence_reason)}")
    if found.decisions_since_claim:
        lines.append(f"  decisions since claim: {', '.join(found.decisions_since_claim)} "
                     f"(git loopx todo ack {found.id})")
    return "\n".join(lines)
