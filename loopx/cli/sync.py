"""`git loopx sync|fetch|push`: the state branch and its remote."""

from __future__ import annotations


import click

from loopx.cli import render
from loopx.cli.app import App, declared
from loopx.model import plural
from loopx.ops import catalog, sync
from loopx.ops.declare import Values


def _report_text(report: sync.Report, doing: str) -> str:
    """What moved, in words first ("received 3 events, sent 1; merged with origin"), then
    the tips for the curious, then the claims of yours that lost a race."""
    lines = [_summary(report, doing),
             f"  loopx/state {render.short_oid(report.local_before)} -> {render.short_oid(report.local_after)}, "
             f"{report.remote}'s {render.short_oid(report.remote_before)} -> {render.short_oid(report.remote_after)}"]
    if report.unknown_events:
        lines.append(f"kept {plural.counted(len(report.unknown_events), 'event')} of types this "
                     "loopx does not know (a newer loopx wrote them)")
    for notice in report.notices:
        what = ("your claim lost a race" if notice.type == "todo.claimed"
                else f"your {notice.type} event was not applied")
        lines.append(f"notice: {what}: {notice.reason}")
        lines.append(f"  once read: git loopx notice dismiss {notice.event}")
    return "\n".join(lines)


def _summary(report: sync.Report, doing: str) -> str:
    remote = report.remote
    moved = [f"received {plural.counted(report.received, 'event')}"] if report.received else []
    if report.sent:
        moved.append(f"sent {report.sent}" if moved else
                     f"sent {plural.counted(report.sent, 'event')} to {remote}")
    how = {"adopted": f"adopted {remote}'s state", "fast-forward": f"fast-forwarded to {remote}",
           "union": f"merged with {remote}"}.get(report.merge)
    if not moved:
        text = {"push": f"{remote} already had every event",
                "fetch": f"nothing new from {remote}"}.get(doing, f"already in step with {remote}")
        text = f"{how}; nothing new" if how else text
    else:
        text = ", ".join(moved) + (f"; {how}" if how else (
            f" from {remote}" if report.received and not report.sent else ""))
    if report.retries:
        text += f" (after {plural.counted(report.retries, 'retry', 'retries')}: others pushed first)"
    if report.parked:
        text += (f"; ours wait on {remote} as {report.parked}, and the next sync of any clone "
                 "puts them into its loopx/state")
    return text


def _emit_report(app: App, report: sync.Report, doing: str) -> None:
    app.emit(report.to_dict(), lambda: _report_text(report, doing))


@click.command("sync")
@declared(catalog.find("sync"))
def sync_(app: App, v: Values) -> None:
    _emit_report(app, app.call(catalog.find("sync"), v), "sync")


@click.command("fetch")
@declared(catalog.find("fetch"))
def fetch(app: App, v: Values) -> None:
    _emit_report(app, app.call(catalog.find("fetch"), v), "fetch")


@click.command("push")
@declared(catalog.find("push"))
def push(app: App, v: Values) -> None:
    _emit_report(app, app.call(catalog.find("push"), v), "push")
