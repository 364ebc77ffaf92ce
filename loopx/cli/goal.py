"""`git loopx goal ...`"""

from __future__ import annotations

from typing import TYPE_CHECKING


import click

from loopx.cli.app import App, declared
from loopx.model.inert import line
from loopx.ops import catalog, declare
from loopx.ops.declare import Values

if TYPE_CHECKING:  # annotations only: the command runs its operation through the catalog
    from loopx.ops import goals


@click.group()
def goal() -> None:
    """Goals and their acceptance criteria."""


def _op(name: str) -> declare.Operation:
    return catalog.find("goal " + name)


@goal.command("add")
@declared(_op("add"))
def goal_add(app: App, v: Values) -> None:
    event = app.call(_op("add"), v)
    app.emit_event(event, f"created goal {event.data.id}: {v.title}")


@goal.command("update")
@declared(_op("update"))
def goal_update(app: App, v: Values) -> None:
    event = app.call(_op("update"), v)
    app.emit_event(event, f"updated goal {event.data.id}")


@goal.command("close")
@declared(_op("close"))
def goal_close(app: App, v: Values) -> None:
    event = app.call(_op("close"), v)
    app.emit_event(event, f"closed goal {event.data.id} as {v.outcome}")


@goal.command("list")
@declared(_op("list"))
def goal_list(app: App, v: Values) -> None:
    found = app.call(_op("list"), v)
    app.emit(found, lambda: _list_text(found))


def _list_text(found: list[goals.GoalRecord]) -> str:
    if not found:
        return "no goals (add one with `git loopx goal add TITLE --accept TEXT`)"
    lines = []
    for g in found:
        met = sum(c.met for c in g.acceptance)
        lines.append(f"{g.id:<12} {g.state:<9} {met}/{len(g.acceptance)} met  "
                     f"{line(g.title)}")
    return "\n".join(lines)


@goal.command("show")
@declared(_op("show"))
def goal_show(app: App, v: Values) -> None:
    found = app.call(_op("show"), v)
    app.emit(found, lambda: _show_text(found))


def _show_text(found: goals.GoalShown) -> str:
    lines = [f"goal {found.id}: {line(found.title)} ({found.state})"]
    for c in found.acceptance:
        mark = "x" if c.met else " "
        ev = f"  <- {', '.join(c.evidence)}" if c.evidence else ""
        if c.verdict == "fail":
            ev += f"  (latest: {c.latest} failed)"
        scope = f"  [on {', '.join(c.paths)}]" if c.paths else ""
        lines.append(f"  [{mark}] {c.id}: {line(c.text)}{line(scope)}{ev}")
    for r in found.retired:
        lines.append(f"  [-] {r.id}: {line(r.text)}  (retired)")
    for t in found.todos:
        lines.append(f"  todo {t.id:<10} {t.state:<9} {line(t.title)}")
    for g in found.gates:
        lines.append(f"  gate {g.id:<10} {g.state:<9} {line(g.question)}")
    return "\n".join(lines)
