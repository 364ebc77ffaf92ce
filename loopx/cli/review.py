"""`git loopx log|diff|validate`: reviewing state changes like code."""

from __future__ import annotations

from typing import Optional

import click

from loopx.cli import pager
from loopx.cli.app import App, pass_app
from loopx.features import changes, validate as checks
from loopx.ops import timeline


@click.command()
@click.argument("spec", required=False, metavar="[RANGE]")
@click.option("-n", "--max-count", type=click.IntRange(min=1), help="Show at most N commits.")
@click.option("--oneline", is_flag=True, help="One line per event: commit, actor, what changed.")
@click.option("--no-pager", "no_pager", is_flag=True, help="Do not page the text on a terminal.")
@pass_app
def log(app: App, spec: Optional[str], max_count: Optional[int], oneline: bool,
        no_pager: bool) -> None:
    """The ledger's history in state terms, newest first, with the commit each change came in.

    RANGE is a revision (default: the state ref) or A..B, as for `git log`. On a terminal the
    text goes through your pager, as git's does (GIT_PAGER, core.pager, PAGER, less).
    """
    rows = timeline.log(app.ledger, spec, max_count=max_count)
    if app.json or app.batch_txn is not None:
        app.emit(rows)
    else:
        pager.show(changes.log_text(rows, oneline=oneline), cwd=app.cwd, enabled=not no_pager)


@click.command()
@click.argument("spec", metavar="[A..B]", required=False)
@pass_app
def diff(app: App, spec: Optional[str]) -> None:
    """What changed in the ledger's state between two commits of a state or proposal branch.

    Goals, acceptance, todos, gates, evidence, leases, config and the frontier, before and
    after. A alone compares A with the state ref's tip. With no argument: what is not pushed
    yet (origin's state branch..here), else the last state commit.
    """
    result = timeline.diff(app.ledger, spec, now=app.now)
    app.emit(result, lambda: changes.diff_text(result))


@click.command()
@click.option(
    "--range",
    "span",
    metavar="BASE..HEAD",
    help="The commits to check, e.g. origin/loopx/state..HEAD (default: a proposal "
    "against loopx/state; loopx/state against origin's, or its whole history).",
)
@pass_app
def validate(app: App, span: Optional[str]) -> None:
    """Check a range of state commits before it is merged (CI on pull requests).

    Every added file is a valid event at a valid path; nothing is modified or deleted; clocks
    never go back; every event is legal when replayed; gate answers come from the gate's
    authority (signed when the config says so). Exit 1 on any failure.
    """
    report = timeline.check_range(app.ledger, span)
    app.emit(report.to_dict(), lambda: checks.render(report))
    if not report.ok:
        raise click.exceptions.Exit(1)
