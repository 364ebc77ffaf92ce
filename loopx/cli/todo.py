"""`git loopx todo ...`"""

from __future__ import annotations

from typing import TYPE_CHECKING


import click

from loopx.cli import render
from loopx.cli.app import App, declared
from loopx.model.inert import line
from loopx.ops import catalog, declare
from loopx.ops.declare import Values

if TYPE_CHECKING:  # annotations only: the command runs its operation through the catalog
    from loopx.ops import todos


@click.group()
def todo() -> None:
    """Todos: dependencies, claims (leases), completion."""


def _op(name: str) -> declare.Operation:
    return catalog.find("todo " + name)


@todo.command("add")
@declared(_op("add"))
def todo_add(app: App, v: Values) -> None:
    event = app.call(_op("add"), v)
    app.emit_event(event, f"added todo {event.data.id} to {event.data.goal}: {v.title}")


@todo.command("update")
@declared(_op("update"))
def todo_update(app: App, v: Values) -> None:
    event = app.call(_op("update"), v)
    app.emit_event(event, f"updated todo {event.data.id}")


@todo.command("depend")
@declared(_op("depend"))
def todo_depend(app: App, v: Values) -> None:
    event = app.call(_op("depend"), v)
    app.emit_event(event, f"todo {event.data.id} now waits for "
                   f"{', '.join(event.data.add_depends_on)}")


@todo.command("label")
@declared(_op("label"))
def todo_label(app: App, v: Values) -> None:
    event = app.call(_op("label"), v)
    changes = ([f"+{a}" for a in event.data.add_labels or ()]
               + [f"-{r}" for r in event.data.remove_labels or ()])
    app.emit_event(event, f"labelled todo {event.data.id}: {' '.join(changes)}")


@todo.command("assign")
@declared(_op("assign"))
def todo_assign(app: App, v: Values) -> None:
    event = app.call(_op("assign"), v)
    app.emit_event(event, f"assigned todo {event.data.id} to {event.data.to}" if event.data.to
                   else f"todo {event.data.id} is assigned to nobody in particular")


@todo.command("handoff")
@declared(_op("handoff"))
def todo_handoff(app: App, v: Values) -> None:
    event = app.call(_op("handoff"), v)
    app.emit_event(event, f"handed todo {event.data.id} on to {event.data.to}, leased until "
                   f"{event.data.until}")


@todo.command("release")
@declared(_op("release"))
def todo_release(app: App, v: Values) -> None:
    event = app.call(_op("release"), v)
    app.emit_event(event, f"released todo {event.data.id}")


@todo.command("done")
@declared(_op("done"))
def todo_done(app: App, v: Values) -> None:
    event = app.call(_op("done"), v)
    app.emit_event(event, f"finished todo {event.data.id}"
                   + (" without passing evidence (reason recorded)" if v.reason else ""))


@todo.command("ack")
@declared(_op("ack"))
def todo_ack(app: App, v: Values) -> None:
    event = app.call(_op("ack"), v)
    app.emit_event(event, f"acknowledged {', '.join(event.data.gates)} on todo {event.data.id}")


@todo.command("block")
@declared(_op("block"))
def todo_block(app: App, v: Values) -> None:
    event = app.call(_op("block"), v)
    app.emit_event(event, f"blocked todo {event.data.id}")


@todo.command("reopen")
@declared(_op("reopen"))
def todo_reopen(app: App, v: Values) -> None:
    event = app.call(_op("reopen"), v)
    app.emit_event(event, f"reopened todo {event.data.id}")


@todo.command("cancel")
@declared(_op("cancel"))
def todo_cancel(app: App, v: Values) -> None:
    event = app.call(_op("cancel"), v)
    app.emit_event(event, f"cancelled todo {event.data.id}")


@todo.command("claim")
@declared(_op("claim"))
def todo_claim(app: App, v: Values) -> None:
    event = app.call(_op("claim"), v)
    app.emit_event(event, f"claimed todo {event.data.id} until {event.data.until}")


@todo.command("renew")
@declared(_op("renew"))
def todo_renew(app: App, v: Values) -> None:
    event = app.call(_op("renew"), v)
    app.emit_event(event, f"renewed todo {event.data.id} until {event.data.until}")


@todo.command("list")
@declared(_op("list"))
def todo_list(app: App, v: Values) -> None:
    found = app.call(_op("list"), v)
    app.emit(_op("list").document(found), lambda: render.page_text(found, lambda: "\n".join(
        f"{t.id:<12} {t.state:<9} P{t.priority} {line(t.title)}"
        + (f"  [{' '.join(line(label) for label in t.labels)}]" if t.labels else "")
        + (f"  -> {line(t.assignee)}" if t.assignee and t.assignee != t.claimed_by else "")
        + (f"  ({line(t.why_not_ready)})" if t.why_not_ready and t.state != "done" else "")
        for t in found), "no todos"))


@todo.command("show")
@declared(_op("show"))
def todo_show(app: App, v: Values) -> None:
    found = app.call(_op("show"), v)
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
    if found.labels:
        lines.append(f"  labels:  {', '.join(line(label) for label in found.labels)}")
    if found.assignee:
        lines.append(f"  assigned: {line(found.assignee)}")
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
