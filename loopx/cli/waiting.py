"""`git loopx wait` and `git loopx watch -- CMD`: something that acts on wakes (docs/agents.md).

Exit codes of `wait` (besides 1/2/3 for errors, as everywhere): 0 a wake is due, 11 a gate you
wait on was answered, 12 the state changed, 13 CI for HEAD finished, 124 the timeout passed.
`watch` exits with the last run's exit code (0 when nothing ran).
"""

from __future__ import annotations

import shlex
import sys
import time
from datetime import datetime, timedelta
from typing import Callable, Optional

import click

from loopx.agents import hosts
from loopx.cli import render, terminal
from loopx.cli.app import App, pass_app
from loopx.model import clock
from loopx.model.inert import line
from loopx.ops import notify, wakes

EXIT = {"wake": 0, "gate": 11, "state": 12, "ci": 13, "timeout": 124}


def _seconds(text: Optional[str], option: str, *, zero: bool = True) -> Optional[float]:
    """A number of seconds (``0.5``) or a duration (``30m``); never negative (nor 0 unless
    ``zero``)."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        try:
            value = clock.parse_duration(text).total_seconds()
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint=option) from None
    if value < 0 or (value == 0 and not zero) or value != value or value == float("inf"):
        least = "0 or more" if zero else "more than 0"
        raise click.BadParameter(f"{text!r} is not a time span of {least} seconds",
                                 param_hint=option)
    return value


def _clock(app: App) -> Callable[[], datetime]:
    """Now; under --now, the pinned time moving on with the real one (so a wait can end)."""
    if app.now is None:
        return clock.now
    pinned, started = app.now, time.monotonic()
    return lambda: pinned + timedelta(seconds=time.monotonic() - started)


def _pace(poll: Optional[str], fetch_every: Optional[str]) -> wakes.Pace:
    default = wakes.Pace()
    return wakes.Pace(poll=_seconds(poll, "--poll", zero=False) or default.poll,
                      fetch_first=_seconds(fetch_every, "--fetch-every", zero=False)
                      or default.fetch_first)


def _common(fn: Callable[..., None]) -> Callable[..., None]:
    fn = click.option("--fetch-every", metavar="SECONDS", help="First gap between fetches "
                      "(default 5s); it doubles while nothing arrives, up to 5m.")(fn)
    fn = click.option("--poll", metavar="SECONDS", help="How often to look at the local state "
                      "(default 1s).")(fn)
    fn = click.option("--remote", metavar="NAME", help="The remote to fetch from (default: the "
                      "branch's upstream remote, else origin).")(fn)
    fn = click.option("--fetch", is_flag=True, help="Also fetch the remote's state (with "
                      "backoff), so changes made in other clones wake you.")(fn)
    return fn


@click.command()
@click.option("--timeout", metavar="DURATION", help="Give up after this long (exit 124); 0 "
              "looks once. Default: wait for ever.")
@_common
@pass_app
def wait(app: App, timeout: Optional[str], fetch: bool, remote: Optional[str],
         poll: Optional[str], fetch_every: Optional[str]) -> None:
    """Block until a wake is due (0), a gate you wait on is answered (11), the state changes
    (12) or CI for HEAD finishes (13); 124 when --timeout passes first. Prints why."""
    hint = None if fetch or timeout == "0" else wakes.local_only(app.ledger, remote)
    if hint is not None:
        terminal.echo(f"wait: {hint}", err=True)
    result = wakes.wait(app.ledger, actor=app.actor_or_none(), timeout=_seconds(timeout, "--timeout"),
                        fetch=fetch, remote=remote, pace=_pace(poll, fetch_every),
                        clock_fn=_clock(app), sleep=time.sleep)
    # A due wake stays due until acted on: the next wait ends at once on it again.
    acks = [f"  acted on it? git loopx wake ack {wake}" for wake in result.wakes]
    app.emit(result.to_dict(), "\n".join([f"{result.cause}: {result.reason}",
                                          *render.capped(acks, "git loopx wake list", 3)]))
    if EXIT[result.cause]:
        raise click.exceptions.Exit(EXIT[result.cause])


@click.command(context_settings={"ignore_unknown_options": True,
                                 "allow_interspersed_args": False})
@click.option("--max-runs", type=click.IntRange(min=1), help="Stop after this many runs of CMD.")
@click.option("--timeout", metavar="DURATION", help="Stop after this long; 0 runs CMD only for "
              "wakes due now (for cron).")
@click.option("--backoff", metavar="SECONDS", default="10", show_default=True,
              help="Wait this long after a failed run before trying again; doubles with each "
              "failure in a row, up to 15m.")
@click.option("--host", "host", type=click.Choice(hosts.names()), help="Start this agent CLI "
              "headless for each turn (claude -p, codex exec, gemini -p; command: CMD), the "
              "primer and the wake's cause as its prompt; one turn of quota spent per turn. "
              "ARGs after -- are added to its command.")
@click.option("--notify", "nudge", is_flag=True, help="Also, each time the state moves, send "
              "the nudges `git loopx notify` would (through git config loopx.notify.webhook / "
              "loopx.notify.desktop), each once.")
@_common
@click.argument("argv", nargs=-1, type=click.UNPROCESSED, metavar="-- CMD [ARG]...")
@pass_app
def watch(app: App, max_runs: Optional[int], timeout: Optional[str], backoff: str,
          host: Optional[str], nudge: bool, fetch: bool, remote: Optional[str],
          poll: Optional[str], fetch_every: Optional[str], argv: tuple[str, ...]) -> None:
    """Run CMD (or, with --host, a turn of an agent CLI) each time a wake is due; one watch
    per repository. When it exits 0 the wakes are acknowledged (a one-shot wake cleared, a
    recurring one re-armed); when it fails they stay due and the next try backs off. Exits
    with the last run's exit code."""
    # --notify with no channel configured is refused now, before anything starts.
    chosen = notify.configured(cwd=app.cwd, flags=False) if nudge else None
    # With --json, stdout is for the report: the command's own output goes to stderr.
    run = wakes.driver(app.ledger, argv, host=host, actor=app.actor,
                       cwd=str(app.ledger.repo.work_tree or app.cwd),
                       stdout=sys.stderr if app.json else None)
    command = f"a turn of {host}" if host else shlex.join(argv)

    def logged(wakeup: wakes.Wakeup) -> int:
        terminal.echo(f"loopx watch: {wakeup.reason}; running {command}", err=True)
        code = run(wakeup)
        if code:
            terminal.echo(f"loopx watch: {command} exited {code}; the wake stays due", err=True)
        return code

    report = wakes.watch(app.ledger, argv, actor=app.actor, max_runs=max_runs,
                         timeout=_seconds(timeout, "--timeout"), fetch=fetch, remote=remote,
                         backoff=_seconds(backoff, "--backoff") or 0.0,
                         pace=_pace(poll, fetch_every), clock_fn=_clock(app), sleep=time.sleep,
                         run=logged, nudge=chosen, told=_told)
    app.emit(report.to_dict(), f"loopx watch: {report.runs} run(s), stopped ({report.stopped})"
             + (f"; acknowledged {', '.join(report.wakes)}" if report.wakes else ""))
    if report.last_code:
        raise click.exceptions.Exit(report.last_code)


def _told(report: notify.Report) -> None:
    """Say each nudge that went out or failed (one already sent is not news)."""
    for s in report.sends:
        if s.state in ("sent", "failed"):
            terminal.echo(f"loopx watch: {s.state} {s.channel} {s.about}"
                          + (f"  [{s.effect}]" if s.effect else "")
                          + (f"  {line(s.detail)}" if s.detail else ""), err=True)
