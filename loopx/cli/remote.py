"""`git loopx sync|fetch|push|doctor` and the `--sync` of `todo claim`."""

from __future__ import annotations

from typing import Any, Callable, Optional

import click

from loopx.cli import App, pass_app


def _short(oid: Optional[str]) -> str:
    return oid[:12] if oid else "none"


def _report_text(report: Any) -> str:
    lines = [f"{report.remote}: local {_short(report.local_before)} -> {_short(report.local_after)}"
             f" ({report.merge}), remote {_short(report.remote_before)} -> {_short(report.remote_after)}",
             f"received {report.received} events, sent {report.sent}"
             + (f", {report.retries} retries" if report.retries else "")]
    if report.unknown_events:
        lines.append(f"kept {len(report.unknown_events)} events of types this loopx does not know "
                     "(a newer loopx wrote them)")
    return "\n".join(lines)


def _run(app: App, action: Callable[..., Any], **kwargs: Any) -> None:
    report = action(ledger=app.ledger, **kwargs)
    app.emit(report.to_dict(), lambda: _report_text(report))


@click.command("sync")
@click.argument("remote", required=False)
@click.option("--retries", default=5, show_default=True, type=click.IntRange(0, 100),
              help="How often to fetch, merge and push again when someone pushed first.")
@pass_app
def sync(app: App, remote: Optional[str], retries: int) -> None:
    """Fetch, check and merge REMOTE's loopx/state, then push ours (never forced).

    REMOTE defaults to the current branch's upstream remote, else origin. A remote state that
    fails the incoming check is quarantined (see `git loopx doctor`); local state is untouched.
    """
    from loopx.features import sync as sync_

    _run(app, sync_.sync, remote=remote, retries=retries)


@click.command("fetch")
@click.argument("remote", required=False)
@pass_app
def fetch(app: App, remote: Optional[str]) -> None:
    """Fetch, check and merge REMOTE's loopx/state (no push)."""
    from loopx.features import sync as sync_

    _run(app, sync_.fetch, remote=remote)


@click.command("push")
@click.argument("remote", required=False)
@pass_app
def push(app: App, remote: Optional[str]) -> None:
    """Push loopx/state to REMOTE, fast-forward only (run `sync` if the remote moved)."""
    from loopx.features import sync as sync_

    _run(app, sync_.push, remote=remote)


def write_synced(app: App, build: Callable[[Any], Any], todo_id: str) -> Any:
    """Run a claim so that it counts only once the remote has it (`todo claim --sync`).

    When someone else's claim reached the remote first, says who holds the todo and fails.
    """
    from loopx.features import sync as sync_
    from loopx.errors import ClaimLost, TransitionError

    try:
        event, _ = sync_.publish(ledger=app.ledger, build=build, actor=app.actor, now=app.now)
    except TransitionError as exc:
        holder = _holder(app, todo_id)
        if holder is None or holder == app.actor:
            raise
        raise ClaimLost(f"todo {todo_id} went to {holder}: their claim reached the remote first; "
                        f"nothing was recorded for you ({exc})") from None
    return event


def _holder(app: App, todo_id: str) -> Optional[str]:
    from loopx.cli import lookup

    fold = app.ledger.fold()
    try:
        return fold.todos[lookup(fold.todos, todo_id, "todo")].holder  # type: ignore[no-any-return]
    except Exception:
        return None


@click.command("doctor")
@click.option("--rollback", is_flag=True,
              help="Move loopx/state back to its newest healthy reflog entry (lists what it drops).")
@pass_app
def doctor(app: App, rollback: bool) -> None:
    """Check the state branch: objects, files, reflog, locks, quarantines."""
    from loopx.features import doctor as doctor_
    from loopx.ledger.book import Ledger

    # Opened without adopting: doctor must work even when origin's state is refused.
    from loopx.storage.store import STATE_REF

    ref = app.state_ref or STATE_REF
    ref = ref if ref.startswith("refs/") else f"refs/heads/{ref}"
    with Ledger.open(app.cwd, ref=ref) as ledger:
        result: dict[str, Any] = {"health": doctor_.examine(ledger=ledger)}
        if rollback:
            result["rollback"] = doctor_.rollback(ledger=ledger)
            result["after"] = doctor_.examine(ledger=ledger)
    app.emit(result, lambda: _doctor_text(result))
    final = result.get("after", result["health"])
    if not final["ok"]:
        # The report above is the answer (a JSON reader has it whole); exit 1 says "unhealthy".
        click.echo(f"error: {final['ref']} has {len(final['problems'])} problem(s); see above"
                   + ("" if rollback else " (`git loopx doctor --rollback` may help)"), err=True)
        raise click.exceptions.Exit(1)


def _doctor_text(result: dict[str, Any]) -> str:
    health = result["health"]
    lines = [f"{health['ref']} at {_short(health['tip'])}: "
             + ("healthy" if health["ok"] else f"{len(health['problems'])} problem(s)")]
    lines += [f"  problem: {p}" for p in health["problems"][:30]]
    lines += [f"  warning: {w}" for w in health["warnings"]]
    lines.append(f"  reflog: {health['reflog_entries']} entries")
    for lock in health["locks"]:
        lines.append(f"  lock: {lock['lock']}" + (f" (pid {lock['pid']})" if "pid" in lock else
                                                   f" ({lock['age_seconds']}s old)"))
    for q in health["quarantines"]:
        lines.append(f"  quarantined: {q['ref']} -> {_short(q['tip'])} (report {q['report']})")
    lines += [f"  leftover proposal: {ref}" for ref in health["proposals"]]
    if "rollback" in result:
        rb = result["rollback"]
        if not rb["rolled_back"]:
            lines.append(rb["reason"])
        else:
            lines.append(f"rolled back {_short(rb['from'])} -> {_short(rb['to'])}, dropping "
                         f"{len(rb['dropped'])} event file(s):")
            lines += [f"  {path}" for path in rb["dropped"]]
    return "\n".join(lines)
