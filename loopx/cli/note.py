"""`git loopx note|notice ...`: free-text notes, and the notices about your own events."""

from __future__ import annotations

from typing import Optional

import click

from loopx.cli.app import App, event_id_option, pass_app
from loopx.model import inert, plural
from loopx.model.inert import line
from loopx.ops import notes, notices

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
    event = app.write(lambda txn: notes.add(txn, text, todo=todo_id, goal=goal_id,
                                            event_id=event_id))
    app.emit_event(event, f"noted {event.data.id}")


@note.command("list")
@click.option("--todo", "todo_id", metavar="TODO", help="Only the notes on this todo.")
@click.option("--goal", "goal_id", metavar="GOAL", help="Only the notes on this goal.")
@pass_app
def note_list(app: App, todo_id: Optional[str], goal_id: Optional[str]) -> None:
    """List notes, oldest first."""
    found = notes.listing(app.ledger, todo=todo_id, goal=goal_id)
    app.emit(found, lambda: "\n".join(
        f"{n.id:<12} {n.at}  {line(n.actor)}" + (f"  (on {n.todo or n.goal})"
                                                if n.todo or n.goal else "")
        + "\n" + inert.indented(n.text) for n in found) or "no notes")




# --- notices --------------------------------------------------------------------------------


@click.group()
def notice() -> None:
    """Your events that were not applied (a claim that lost a race); dismiss them once read."""


@notice.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include dismissed notices.")
@pass_app
def notice_list(app: App, show_all: bool) -> None:
    """Your events that were not applied, and why (dismissed ones with --all)."""
    found = notices.listing(app.ledger, actor=app.actor, include_dismissed=show_all)
    app.emit(found, lambda: "\n".join(
        f"{n.event}  {n.type:<16} {n.reason}" + ("  (dismissed)" if n.dismissed else "")
        for n in found) or "no notices")


@notice.command("dismiss")
@click.argument("events", nargs=-1, metavar="EVENT...")
@click.option("--all", "every", is_flag=True, help="Dismiss all your notices still showing.")
@event_id_option
@pass_app
def notice_dismiss(app: App, events: tuple[str, ...], every: bool, event_id: Optional[str]) -> None:
    """Dismiss notices (by the id, or a unique prefix, of the event that was not applied): they
    leave `status` and `next`. The events stay in the ledger, listed under problems."""
    if events and every:
        raise click.UsageError("give EVENT ids or --all, not both")
    event = app.write(lambda txn: notices.dismiss(txn, events, every=every, event_id=event_id))
    app.emit_event(event, f"dismissed {plural.counted(len(event.data.events), 'notice')}")
