"""`git loopx sync|fetch|push|doctor`: the state branch and its remote, and its health."""

from __future__ import annotations

from typing import Any, Optional

import click

from loopx.cli.app import App, declared, pass_app
from loopx.model import plural
from loopx.ops import catalog, exchange, upkeep
from loopx.ops.declare import Values


def _short(oid: Optional[str]) -> str:
    return oid[:12] if oid else "none"


def _report_text(report: exchange.Report, doing: str) -> str:
    """What moved, in words first ("received 3 events, sent 1; merged with origin"), then
    the tips for the curious, then the claims of yours that lost a race."""
    lines = [_summary(report, doing),
             f"  loopx/state {_short(report.local_before)} -> {_short(report.local_after)}, "
             f"{report.remote}'s {_short(report.remote_before)} -> {_short(report.remote_after)}"]
    if report.unknown_events:
        lines.append(f"kept {plural.counted(len(report.unknown_events), 'event')} of types this "
                     "loopx does not know (a newer loopx wrote them)")
    for notice in report.notices:
        what = ("your claim lost a race" if notice.type == "todo.claimed"
                else f"your {notice.type} event was not applied")
        lines.append(f"notice: {what}: {notice.reason}")
        lines.append(f"  once read: git loopx notice dismiss {notice.event}")
    return "\n".join(lines)


def _summary(report: exchange.Report, doing: str) -> str:
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


def _emit_report(app: App, report: exchange.Report, doing: str) -> None:
    app.emit(report.to_dict(), lambda: _report_text(report, doing))


@click.command("sync")
@declared(catalog.find("sync"))
def sync(app: App, v: Values) -> None:
    _emit_report(app, app.call(catalog.find("sync"), v), "sync")


@click.command("fetch")
@declared(catalog.find("fetch"))
def fetch(app: App, v: Values) -> None:
    _emit_report(app, app.call(catalog.find("fetch"), v), "fetch")


@click.command("push")
@declared(catalog.find("push"))
def push(app: App, v: Values) -> None:
    _emit_report(app, app.call(catalog.find("push"), v), "push")


@click.command("doctor")
@click.option("--repair", is_flag=True,
              help="Make loopx/state whole again, keeping every event still at hand (fetched "
              "back from the remotes, else a new commit of every readable event file).")
@click.option("--rollback", is_flag=True,
              help="Move loopx/state back to its newest healthy reflog entry (lists what it drops).")
@click.option("--verify", is_flag=True,
              help="Also replay every event and compare the cache and the checkpoints with it.")
@pass_app
def doctor(app: App, repair: bool, rollback: bool, verify: bool) -> None:
    """Check the state branch: objects (naming every event lost or deleted), files, reflog,
    locks, quarantines."""
    if repair and rollback:
        raise click.UsageError("--repair and --rollback are two ways on: choose one")
    result = upkeep.examine(app.cwd, ref=app.state_ref, rollback=rollback, repair=repair,
                            verify=verify, now=app.now)
    app.emit(result, lambda: _doctor_text(result))
    final = result.get("after", result["health"])
    if not final["ok"]:
        # The report above is the answer (a JSON reader has it whole); exit 1 says "unhealthy".
        hint = "" if rollback or repair else " (`git loopx doctor --repair` keeps every event it can)"
        click.echo(f"error: {final['ref']} has {plural.counted(len(final['problems']), 'problem')}; "
                   "see above" + hint, err=True)
        raise click.exceptions.Exit(1)


def _repair_text(done: dict[str, Any]) -> list[str]:
    if not done["repaired"]:
        return [done["reason"]]
    if done["how"] == "restored":
        return [f"restored the missing objects from {', '.join(done['from'])}: nothing is lost"]
    lines = [f"repaired {_short(done['from'])} -> {_short(done['to'])} on "
             f"{_short(done['base'])}: {len(done['put_back'])} file(s) put back"]
    lines += [f"  lost: event {e['id']} ({e['type']}), {e['path']}" for e in done["lost"]]
    lines += [f"  lost: {what} (not listed anywhere at hand)" for what in done["unknown"]]
    if not done["lost"] and not done["unknown"]:
        lines.append("  nothing is lost")
    return lines


def _doctor_text(result: dict[str, Any]) -> str:
    health = result["health"]
    lines = [f"{health['ref']} at {_short(health['tip'])}: "
             + ("healthy" if health["ok"] else plural.counted(len(health['problems']), 'problem'))]
    lines += [f"  problem: {p}" for p in health["problems"][:30]]
    lines += [f"  warning: {w}" for w in health["warnings"]]
    lines.append(f"  reflog: {plural.counted(health['reflog_entries'], 'entry', 'entries')}")
    if "verify" in result:
        lines.append(f"  verified against a replay of the events: {', '.join(result['verify']['checked'])}")
    for lock in health["locks"]:
        lines.append(f"  lock: {lock['lock']}" + (f" (pid {lock['pid']})" if "pid" in lock else
                                                   f" ({lock['age_seconds']}s old)"))
    for q in health["quarantines"]:
        lines.append(f"  quarantined: {q['ref']} -> {_short(q['tip'])} (report {q['report']})")
    lines += [f"  leftover proposal: {ref}" for ref in health["proposals"]]
    for done in (result.get("repair") or {}, result.get("rollback") or {}):
        if done.get("ref_restored"):
            restored = done["ref_restored"]
            lines.append(f"restored {health['ref']} to {_short(restored['to'])} from its reflog "
                         f"({restored['damage']}); kept: {', '.join(restored['kept']) or 'nothing'}")
    if "repair" in result:
        lines += _repair_text(result["repair"])
    if "rollback" in result:
        rb = result["rollback"]
        if not rb["rolled_back"]:
            lines.append(rb["reason"])
        else:
            lines.append(f"rolled back {_short(rb['from'])} -> {_short(rb['to'])}, dropping "
                         f"{plural.counted(len(rb['dropped']), 'event file')}:")
            lines += [f"  {path}" for path in rb["dropped"]]
    return "\n".join(lines)


@click.command("checkpoint")
@pass_app
def checkpoint(app: App) -> None:
    """Commit a checkpoint of the projection, so fresh clones start from it (writes make one
    on their own at 2,000 events, then every fifth more, at most every 10,000)."""
    made = upkeep.checkpoint(app.ledger, actor=app.actor)
    app.emit({"checkpoint": made}, f"checkpoint of {made[:12]} committed" if made
             else "the tip has a checkpoint already")
