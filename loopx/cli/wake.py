"""`git loopx wake ...`: wake conditions, when to look again."""

from __future__ import annotations



import click

from loopx.cli.app import App, declared
from loopx.model.inert import line
from loopx.ops import catalog
from loopx.ops.declare import Values


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
