"""`git loopx notify`"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from loopx.cli.app import App, declared
from loopx.model.inert import line
from loopx.ops import catalog
from loopx.ops.declare import Values

if TYPE_CHECKING:  # annotations only: the command runs its operation through the catalog
    from loopx.ops import notify


@click.command("notify")
@declared(catalog.find("notify"))
def notify_(app: App, v: Values) -> None:
    report = app.call(catalog.find("notify"), v)
    app.emit(report.to_dict(), lambda: _text(report))


def _text(report: notify.Report) -> str:
    if not report.sends:
        return f"nothing waits on {report.actor}"
    return "\n".join(f"{s.state:<8} {s.channel:<8} {s.about}"
                     + (f"  [{s.effect}]" if s.effect else "")
                     + (f"  {line(s.detail)}" if s.detail else "") for s in report.sends)
