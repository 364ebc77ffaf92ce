"""`git loopx gate ...`"""

from __future__ import annotations

from typing import TYPE_CHECKING


import click

from loopx.cli import render
from loopx.cli.app import App, declared
from loopx.model.inert import line
from loopx.ops import catalog, declare
from loopx.ops.declare import Values

if TYPE_CHECKING:  # annotations only: the command runs its operation through the catalog
    from loopx.ops import gates


@click.group()
def gate() -> None:
    """Gates: questions that wait on a named human authority."""


def _op(name: str) -> declare.Operation:
    return catalog.find("gate " + name)


@gate.command("open")
@declared(_op("open"))
def gate_open(app: App, v: Values) -> None:
    event = app.call(_op("open"), v)
    app.emit_event(event, f"opened gate {event.data.id}, waiting on {', '.join(v.authority)}")


@gate.command("answer")
@declared(_op("answer"))
def gate_answer(app: App, v: Values) -> None:
    event = app.call(_op("answer"), v)
    app.emit_event(event, f"answered gate {event.data.id}: {event.data.decision}")


@gate.command("withdraw")
@declared(_op("withdraw"))
def gate_withdraw(app: App, v: Values) -> None:
    event = app.call(_op("withdraw"), v)
    app.emit_event(event, f"withdrew gate {event.data.id}")


@gate.command("list")
@declared(_op("list"))
def gate_list(app: App, v: Values) -> None:
    found = app.call(_op("list"), v)
    app.emit(found, lambda: _list_text(found))


def _list_text(found: list[gates.Gate]) -> str:
    if not found:
        return "no open gates"
    return "\n".join(
        f"{g.id:<12} {g.state:<9} {line(g.question)}  "
        + (f"(asks {', '.join(g.authority)})" if g.state == "open"
           else f"({g.decision} by {g.answered_by})" if g.decision
           else "(" + ", ".join(f"{d.decision or 'withdraw'} by {d.actor}"
                                for d in g.conflict) + ")" if g.conflict else "")
        for g in found
    )


@gate.command("show")
@declared(_op("show"))
def gate_show(app: App, v: Values) -> None:
    """Show one gate."""
    found = app.call(_op("show"), v)
    app.emit(found, lambda: render.fields_text(found))
