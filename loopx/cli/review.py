"""`git loopx log|diff|validate`: reviewing state changes like code."""

from __future__ import annotations

import click

from loopx.cli import pager
from loopx.cli.app import App, declared
from loopx.review import changes, validate
from loopx.ops import catalog
from loopx.ops.declare import Values


@click.command()
@declared(catalog.find("log"))
def log(app: App, v: Values) -> None:
    rows = app.call(catalog.find("log"), v)
    if app.json:
        app.emit(rows)
    else:
        pager.show(changes.log_text(rows, oneline=v.oneline), cwd=app.cwd,
                   enabled=not v.no_pager)


@click.command()
@declared(catalog.find("diff"))
def diff(app: App, v: Values) -> None:
    result = app.call(catalog.find("diff"), v)
    app.emit(result, lambda: changes.diff_text(result))


@click.command("validate")
@declared(catalog.find("validate"))
def validate_(app: App, v: Values) -> None:
    report = app.call(catalog.find("validate"), v)
    app.emit(report.to_dict(), lambda: validate.render(report))
    if not report.ok:
        raise click.exceptions.Exit(1)
