"""`git loopx goal ...`"""

from __future__ import annotations

from typing import Any, Optional

import click

from loopx.cli import App, emit_event, event_id_option, lookup, pass_app
from loopx.model.ids import new_short_id


@click.group()
def goal() -> None:
    """Goals and their acceptance criteria."""


@goal.command("add")
@click.argument("title")
@click.option("--id", "goal_id", help="Id to use (default: a generated g-xxxxxx).")
@click.option("--accept", "accept", multiple=True, metavar="TEXT",
              help="An acceptance criterion (repeatable); ids a1, a2, ... in order.")
@click.option("--description", help="Longer text.")
@event_id_option
@pass_app
def goal_add(app: App, title: str, goal_id: Optional[str], accept: tuple[str, ...],
             description: Optional[str], event_id: Optional[str]) -> None:
    """Create a goal with acceptance criteria."""
    from loopx.ledger.txn import Draft

    gid = goal_id or new_short_id("g", event_id)
    data: dict[str, Any] = {"id": gid, "title": title, "description": description,
                            "acceptance": [{"id": f"a{i}", "text": t} for i, t in enumerate(accept, 1)]}
    event = app.write(lambda txn: txn.add(Draft("goal.created", data, gid, event_id)))
    emit_event(app, event, f"created goal {gid}: {title}")


@goal.command("update")
@click.argument("goal_id")
@click.option("--title")
@click.option("--description")
@click.option("--accept", multiple=True, metavar="TEXT", help="Add an acceptance criterion.")
@click.option("--pause", "state", flag_value="paused", help="Pause the goal.")
@click.option("--resume", "state", flag_value="active", help="Resume a paused goal.")
@event_id_option
@pass_app
def goal_update(app: App, goal_id: str, title: Optional[str], description: Optional[str],
                accept: tuple[str, ...], state: Optional[str], event_id: Optional[str]) -> None:
    """Change a goal's title, description or state, or add criteria."""
    from loopx.ledger.txn import Draft

    def build(txn: Any) -> Any:
        gid = lookup(txn.fold.goals, goal_id, "goal")
        start = len(txn.fold.goals[gid].acceptance) + 1
        data = {"id": gid, "title": title, "description": description, "state": state,
                "add_acceptance": [{"id": f"a{i}", "text": t} for i, t in enumerate(accept, start)]}
        return txn.add(Draft("goal.updated", data, gid, event_id))

    event = app.write(build)
    emit_event(app, event, f"updated goal {event.data.id}")


@goal.command("close")
@click.argument("goal_id")
@click.option("--achieved", "outcome", flag_value="achieved", help="Every criterion is met.")
@click.option("--abandoned", "outcome", flag_value="abandoned", help="Give the goal up.")
@click.option("--reason", help="Why (shown in history).")
@click.option("--override", is_flag=True,
              help="Achieved although criteria lack evidence (a human decision).")
@event_id_option
@pass_app
def goal_close(app: App, goal_id: str, outcome: Optional[str], reason: Optional[str],
               override: bool, event_id: Optional[str]) -> None:
    """Close a goal as achieved or abandoned."""
    from loopx.ledger.txn import Draft

    if outcome is None:
        raise click.UsageError("say --achieved or --abandoned")

    def build(txn: Any) -> Any:
        gid = lookup(txn.fold.goals, goal_id, "goal")
        data = {"id": gid, "outcome": outcome, "reason": reason, "override": override}
        return txn.add(Draft("goal.closed", data, gid, event_id))

    event = app.write(build)
    emit_event(app, event, f"closed goal {event.data.id} as {outcome}")


@goal.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include achieved and abandoned goals.")
@pass_app
def goal_list(app: App, show_all: bool) -> None:
    """List goals."""
    goals = [g for g in app.ledger.snapshot(app.now)["goals"]
             if show_all or g["state"] in ("active", "paused")]

    def text() -> str:
        if not goals:
            return "no goals (add one with `git loopx goal add TITLE --accept TEXT`)"
        lines = []
        for g in goals:
            met = sum(c["met"] for c in g["acceptance"])
            lines.append(f"{g['id']:<12} {g['state']:<9} {met}/{len(g['acceptance'])} met  {g['title']}")
        return "\n".join(lines)

    app.emit(goals, text)


@goal.command("show")
@click.argument("goal_id")
@pass_app
def goal_show(app: App, goal_id: str) -> None:
    """Show one goal: criteria with evidence, its todos and gates."""
    snap = app.ledger.snapshot(app.now)
    gid = lookup({g["id"]: g for g in snap["goals"]}, goal_id, "goal")
    found = next(g for g in snap["goals"] if g["id"] == gid)
    found = dict(found, todos=[t for t in snap["todos"] if t["goal"] == gid],
                 gates=[g for g in snap["gates"] if g["goal"] == gid])

    def text() -> str:
        lines = [f"goal {gid}: {found['title']} ({found['state']})"]
        for c in found["acceptance"]:
            mark = "x" if c["met"] else " "
            ev = f"  <- {', '.join(c['evidence'])}" if c["evidence"] else ""
            lines.append(f"  [{mark}] {c['id']}: {c['text']}{ev}")
        for t in found["todos"]:
            lines.append(f"  todo {t['id']:<10} {t['state']:<9} {t['title']}")
        for g in found["gates"]:
            lines.append(f"  gate {g['id']:<10} {g['state']:<9} {g['question']}")
        return "\n".join(lines)

    app.emit(found, text)
