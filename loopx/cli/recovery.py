"""`git loopx status|next|brief`: replay the ledger, look at the world, say what to do.

Exit codes of `next` (besides 1/2/3 for errors, as everywhere): 0 there is something to do,
10 there is only something to wait for, 20 nothing is left. See docs/recovery.md.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Optional

import click

from loopx.cli import pager, render
from loopx.cli.app import App, optional_duration, pass_app
from loopx.model import inert, plural, typed
from loopx.ops import status as recovery
from loopx.state import answers

EXIT_WAIT = 10
EXIT_NOTHING = 20


def _inspect_options(fn: Any) -> Any:
    fn = click.option("--offline", is_flag=True,
                      help="Use no network (CI from its cache only).")(fn)
    fn = click.option("--no-ci", "no_ci", is_flag=True, help="Do not ask CI about HEAD.")(fn)
    return fn


def _emit(app: App, data: Any, text: Any) -> None:
    """Like ``app.emit``, but JSON for a program (not a terminal) is compact: the indenting
    encoder is pure Python and was the largest cost of a warm `status` for a busy ledger."""
    if app.json and app.batch_txn is None and not sys.stdout.isatty():
        click.echo(json.dumps(data, ensure_ascii=False, separators=(",", ":"),
                              default=typed.json_default))
    else:
        app.emit(data, text)


@click.command()
@click.option("--goal", "goal_id", help="Only this goal.")
@click.option("--all", "show_all", is_flag=True,
              help="Include achieved and abandoned goals with their todos, gates and evidence.")
@click.option("--no-pager", "no_pager", is_flag=True, help="Do not page the text on a terminal.")
@_inspect_options
@pass_app
def status(app: App, goal_id: Optional[str], show_all: bool, no_pager: bool, no_ci: bool,
           offline: bool) -> None:
    """Goals, acceptance, frontier, gates, leases, the work tree and what to do next.

    On a terminal the text goes through your pager, as git's does (GIT_PAGER, core.pager,
    PAGER, else less with LESS=FRX: one screen prints as is); never with --json or when
    stdout is not a terminal.
    """
    snap = recovery.status(app.ledger, actor=app.actor_or_none(), goal=goal_id, ci=not no_ci,
                           offline=offline, include_closed=show_all, now=app.now)
    if app.json or app.batch_txn is not None:
        _emit(app, snap, None)
        return
    color = sys.stdout.isatty()
    pager.show(status_text(snap, render.status_text(snap, color=color), color=color),
               cwd=app.cwd, enabled=not no_pager)


@click.command("next")
@click.option("--claim", is_flag=True, help="Claim the top frontier todo in the same call, when working on it is the best action.")
@click.option("--ttl", default=None, metavar="DURATION", help="Lease length for --claim.")
@click.option("--sync", "synced", is_flag=True,
              help="With --claim: the claim counts only once the remote has it (agents on "
              "several hosts).")
@_inspect_options
@pass_app
def next_(app: App, claim: bool, ttl: Optional[str], synced: bool, no_ci: bool,
          offline: bool) -> None:
    """The single best action for you (exit 0 do it, 10 wait, 20 nothing left)."""
    if synced and not claim:
        raise click.UsageError("--sync goes with --claim")
    actor = app.actor if claim else (app.actor_or_none() or "")
    result = recovery.next_action(app.ledger, actor=actor, claim=claim,
                                  ttl=optional_duration(ttl), ci=not no_ci, offline=offline,
                                  now=app.now, synced=synced)
    app.emit(result.to_dict(), lambda: _next_text(result))
    if result.action is None:
        raise click.exceptions.Exit(EXIT_NOTHING)
    if result.waiting:
        raise click.exceptions.Exit(EXIT_WAIT)


def _next_text(result: recovery.Next) -> str:
    best = result.action
    if best is None:
        wake = f"; look again at {result.next_wake}" if result.next_wake else ""
        return f"nothing left to do{wake}"
    lines = [f"{best.kind}: {inert.line(best.reason)}"]
    if best.command:
        lines.append(f"  {inert.line(best.command)}")
    if result.not_claimed:
        lines.append(f"(not claimed: {inert.line(result.not_claimed)})")
    return "\n".join(lines)


@click.command()
@click.option("--goal", "goal_id", help="Only this goal.")
@_inspect_options
@pass_app
def brief(app: App, goal_id: Optional[str], no_ci: bool, offline: bool) -> None:
    """A Markdown handoff packet a new agent can start from with nothing else."""
    text, snap = recovery.brief(app.ledger, actor=app.actor_or_none(), goal=goal_id,
                                ci=not no_ci, offline=offline, now=app.now)
    _emit(app, {"markdown": text, "status": snap}, text)


@click.command()
@click.option("--as-hook", "as_hook", is_flag=True,
              help="Print it as a session-start hook's answer, the JSON {hookSpecificOutput: "
              "{hookEventName: SessionStart, additionalContext: MARKDOWN}} that Claude Code, "
              "Codex CLI and Gemini CLI add to the context (`git loopx setup` writes such hooks).")
@_inspect_options
@pass_app
def prime(app: App, as_hook: bool, no_ci: bool, offline: bool) -> None:
    """A short Markdown primer for an agent starting a session (or after compaction): what
    loopx is, the commands it needs, and what matters to you now. Made for session-start
    hooks: in a repository without a ledger it says so and exits 0."""
    if not app.ledger.exists():
        markdown, data = NO_LEDGER, {"markdown": NO_LEDGER, "primer": None}
    else:
        result = recovery.prime(app.ledger, actor=app.actor_or_none(), ci=not no_ci,
                                offline=offline, now=app.now)
        markdown, data = result.markdown, result.to_dict()
    if as_hook:  # the one shape these hooks read; compact, it is for a program
        click.echo(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                      "additionalContext": markdown}},
                              ensure_ascii=False, separators=(",", ":")))
        return
    _emit(app, data, markdown.rstrip())


NO_LEDGER = "This repository has no loopx ledger yet (`git loopx init` starts one).\n"


# --- text ----------------------------------------------------------------------------------------


def status_text(snap: answers.StatusDoc, ledger_text: str, *, color: bool = False) -> str:
    """Like `git status`: where you are, what to do now, then the ledger."""
    def paint(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if color else text

    first, _, rest = ledger_text.partition("\n")
    out = [first, *environment_lines(snap.environment, paint)]
    actions = [a for a in snap.actions if a.kind not in ("work", "wait_lease")][:8]
    if actions:
        out.append("\n" + paint("Do now:" if not recovery.is_waiting(actions[0]) else "Waiting for:",
                         bold=True))
        for action in actions:
            colour = "yellow" if recovery.is_waiting(action) else "red" if action.priority < 30 else "cyan"
            out.append(f"  {paint(action.kind, fg=colour)}: {inert.line(action.reason)}")
            if action.command:
                out.append(paint(f"    {inert.line(action.command)}", dim=True))
    if not snap.actions and snap.next_wake:
        out.append(f"\nNothing to do; look again at {snap.next_wake}")
    return "\n".join(out) + ("\n" + rest if rest else "")


def environment_lines(env: answers.Environment, paint: Any) -> list[str]:
    head = (env.head or "")[:12] or "no commits yet"
    where = f"on branch {env.branch}" if env.branch else "HEAD detached"
    lines = [f"Work tree: {where} at {head}"]
    upstream = env.upstream
    if upstream and (upstream.ahead or upstream.behind):
        lines.append(f"  {upstream.ahead} ahead, {upstream.behind} behind {upstream.name}")
    if env.in_progress:
        lines.append(paint(f"  {env.in_progress} in progress", fg="red"))
    if env.dirty:
        lines.append(paint(f"  {plural.counted(len(env.dirty), 'changed file')}: "
                           f"{inert.line(', '.join(env.dirty[:5]))}", fg="yellow"))
    if env.untracked:
        lines.append(f"  {plural.counted(len(env.untracked), 'untracked file')}: "
                     f"{inert.line(', '.join(env.untracked[:5]))}")
    state = env.state
    if state.unpushed or state.unmerged:
        lines.append(f"  ledger: {plural.counted(state.unpushed, 'event')} not pushed, "
                     f"{state.unmerged} fetched and not merged")
    ci = env.ci
    if ci.provider:
        colour = {"success": "green", "failure": "red", "pending": "yellow"}.get(ci.state)
        detail = f" ({inert.line(ci.detail)})" if ci.detail else ""
        lines.append(f"  CI ({ci.provider}): " + paint(ci.state, fg=colour) + detail)
    return lines
