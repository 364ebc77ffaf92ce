"""`git loopx note|notice ...`: free-text notes, and the notices about your own events."""

from __future__ import annotations


import click

from loopx.cli import render
from loopx.cli.app import App, declared
from loopx.model import inert, plural
from loopx.model.inert import line
from loopx.ops import catalog, declare
from loopx.ops.declare import Values

# --- notes ----------------------------------------------------------------------------------


@click.group()
def note() -> None:
    """Free-form notes in the ledger."""


def _op(name: str) -> declare.Operation:
    return catalog.find(name)


@note.command("add")
@declared(_op("note add"))
def note_add(app: App, v: Values) -> None:
    """Add a note."""
    event = app.call(_op("note add"), v)
    app.emit_event(event, f"noted {event.data.id}")


@note.command("list")
@declared(_op("note list"))
def note_list(app: App, v: Values) -> None:
    found = app.call(_op("note list"), v)
    app.emit(_op("note list").document(found), lambda: render.page_text(found, lambda: "\n".join(
        f"{n.id:<12} {n.at}  {line(n.actor)}" + (f"  (on {n.todo or n.goal})"
                                                if n.todo or n.goal else "")
        + "\n" + inert.indented(n.text) for n in found), "no notes"))




# --- notices --------------------------------------------------------------------------------


@click.group()
def notice() -> None:
    """Your events that were not applied (a claim that lost a race); dismiss them once read."""


@notice.command("list")
@declared(_op("notice list"))
def notice_list(app: App, v: Values) -> None:
    found = app.call(_op("notice list"), v)
    app.emit(found, lambda: "\n".join(
        f"{n.event}  {n.type:<16} {n.reason}" + ("  (dismissed)" if n.dismissed else "")
        for n in found) or "no notices")


@notice.command("dismiss")
@declared(_op("notice dismiss"))
def notice_dismiss(app: App, v: Values) -> None:
    event = app.call(_op("notice dismiss"), v)
    app.emit_event(event, f"dismissed {plural.counted(len(event.data.events), 'notice')}")
