"""`git loopx goal ...`"""

from __future__ import annotations

from typing import Optional

import click

from loopx.cli.app import App, event_id_option, pass_app
from loopx.ops import goals
from loopx.model.inert import line


@click.group()
def goal() -> None:
    """Goals and their acceptance criteria."""


@goal.command("add")
@click.argument("title")
@click.option("--id", "goal_id", help="Id to use (default: a generated g-xxxxxx).")
@click.option("--accept", "accept", multiple=True, metavar="TEXT",
              help="An acceptance criterion (repeatable); ids a1, a2, ... in order.")
@click.option("--scope", "scope", multiple=True, type=(str, str), metavar="CRITERION GLOB",
              help="A path its evidence is judged on (repeatable), e.g. --scope a1 'src/**'.")
@click.option("--description", help="Longer text.")
@event_id_option
@pass_app
def goal_add(app: App, title: str, goal_id: Optional[str], accept: tuple[str, ...],
             scope: tuple[tuple[str, str], ...], description: Optional[str],
             event_id: Optional[str]) -> None:
    """Create a goal with acceptance criteria."""
    event = app.write(lambda txn: goals.add(txn, title, id=goal_id, accept=accept,
                                            scope=_scopes(scope), description=description,
                                            event_id=event_id))
    app.emit_event(event, f"created goal {event.data.id}: {title}")


@goal.command("update")
@click.argument("goal_id")
@click.option("--title")
@click.option("--description")
@click.option("--accept", multiple=True, metavar="TEXT", help="Add an acceptance criterion.")
@click.option("--revise", multiple=True, type=(str, str), metavar="CRITERION TEXT",
              help="New text for a criterion; evidence recorded before no longer counts for it.")
@click.option("--retire", multiple=True, metavar="CRITERION",
              help="A criterion that no longer needs evidence.")
@click.option("--scope", "scope", multiple=True, type=(str, str), metavar="CRITERION GLOB",
              help="The paths a criterion's evidence is judged on (repeatable; replaces them; "
              "'' clears them: the whole tree less the ledger's evidence_ignore).")
@click.option("--pause", "state", flag_value="paused", help="Pause the goal.")
@click.option("--resume", "state", flag_value="active", help="Resume a paused goal.")
@event_id_option
@pass_app
def goal_update(app: App, goal_id: str, title: Optional[str], description: Optional[str],
                accept: tuple[str, ...], revise: tuple[tuple[str, str], ...],
                retire: tuple[str, ...], scope: tuple[tuple[str, str], ...],
                state: Optional[str], event_id: Optional[str]) -> None:
    """Change a goal's title, description or state; add, revise, retire or scope criteria."""
    revised = dict(revise)
    if len(revised) != len(revise):
        raise click.BadParameter("revise each criterion once", param_hint="--revise")
    event = app.write(lambda txn: goals.update(
        txn, goal_id, title=title, description=description, accept=accept, state=state,
        revise=revised, retire=retire, scope=_scopes(scope), event_id=event_id))
    app.emit_event(event, f"updated goal {event.data.id}")


def _scopes(pairs: tuple[tuple[str, str], ...]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for crit, glob in pairs:
        found.setdefault(crit, []).extend([glob] if glob else [])  # '' clears the scope
    return found


@goal.command("close")
@click.argument("goal_id")
@click.option("--achieved", "outcome", flag_value="achieved", help="Every criterion is met.")
@click.option("--abandoned", "outcome", flag_value="abandoned", help="Give the goal up.")
@click.option("--reason", help="Why (shown in history; needed with --override).")
@click.option("--override", is_flag=True,
              help="Achieved although criteria lack fresh passing evidence (a human decision, "
              "with --reason).")
@event_id_option
@pass_app
def goal_close(app: App, goal_id: str, outcome: Optional[str], reason: Optional[str],
               override: bool, event_id: Optional[str]) -> None:
    """Close a goal as achieved or abandoned."""
    if outcome is None:
        raise click.UsageError("say --achieved or --abandoned")
    event = app.write(lambda txn: goals.close(txn, goal_id, outcome=outcome, reason=reason,
                                              override=override, event_id=event_id))
    app.emit_event(event, f"closed goal {event.data.id} as {outcome}")


@goal.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include achieved and abandoned goals.")
@pass_app
def goal_list(app: App, show_all: bool) -> None:
    """List goals."""
    found = goals.listing(app.ledger, include_closed=show_all, now=app.now)
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
@click.argument("goal_id")
@pass_app
def goal_show(app: App, goal_id: str) -> None:
    """Show one goal: criteria with evidence, its todos and gates."""
    found = goals.show(app.ledger, goal_id, now=app.now)
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
