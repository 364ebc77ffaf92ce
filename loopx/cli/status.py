"""`git loopx status|next|brief`: replay the ledger, look at the world, say what to do.

Exit codes of `next` (besides 1/2/3 for errors, as everywhere): 0 there is something to do,
10 there is only something to wait for, 20 nothing is left. See docs/recovery.md.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from loopx.cli import pager, render
from loopx.cli.app import App, declared
from loopx.model import inert, plural, typed
from loopx.ops import catalog, status
from loopx.ops.declare import Values
from loopx.projection import answers, environment

EXIT_WAIT = 10
EXIT_NOTHING = 20
ACTIONS = 8  # actions the status text lists before the ledger, most important first
WAITS = 3  # of the things to wait for, listed after them when there is something to do


def _emit(app: App, data: Any, text: Any) -> None:
    """Like ``app.emit``, but JSON for a program (not a terminal) is compact: the indenting
    encoder is pure Python and was the largest cost of a warm `status` for a busy ledger."""
    if app.json and not sys.stdout.isatty():
        click.echo(inert.encodable(json.dumps(data, ensure_ascii=False, separators=(",", ":"),
                                                   default=typed.json_default)))
    else:
        app.emit(data, text)


@click.command("status")
@declared(catalog.find("status"))
def status_(app: App, v: Values) -> None:
    if not app.json:  # text for people is the whole document, each section kept short
        v = Values(v, detail=True)
    snap = app.call(catalog.find("status"), v)
    if app.json:
        _emit(app, snap, None)
        return
    color = sys.stdout.isatty()
    pager.show(status_text(snap, render.status_text(snap, color=color), color=color),
               cwd=app.cwd, enabled=not v.no_pager)


@click.command("next")
@declared(catalog.find("next"))
def next_(app: App, v: Values) -> None:
    result = app.call(catalog.find("next"), v)
    app.emit(result.to_dict(), lambda: _next_text(result))
    if result.action is None:
        raise click.exceptions.Exit(EXIT_NOTHING)
    if result.waiting:
        raise click.exceptions.Exit(EXIT_WAIT)


def _next_text(result: status.Next) -> str:
    best = result.action
    passed = [f"(passed over: {inert.line(why)})" for why in result.passed_over[:5]]
    if best is None:
        wake = f"; look again at {result.next_wake}" if result.next_wake else ""
        return "\n".join([f"nothing left to do{wake}", *passed])
    lines = [f"{best.kind}: {inert.line(best.reason)}"]
    if best.command:
        lines.append(f"  {inert.line(best.command)}")
    if result.not_claimed:
        lines.append(f"(not claimed: {inert.line(result.not_claimed)})")
    elif passed:
        lines += passed
    return "\n".join(lines)


@click.command()
@declared(catalog.find("brief"))
def brief(app: App, v: Values) -> None:
    found = app.call(catalog.find("brief"), v)
    _emit(app, found, found["markdown"])


@click.command()
@declared(catalog.find("prime"))
def prime(app: App, v: Values) -> None:
    found = app.call(catalog.find("prime"), v)
    if isinstance(found, dict):  # no ledger here
        markdown, data = found["markdown"], found
    else:
        markdown, data = found.markdown, found.to_dict()
    if v.as_hook:  # the one shape these hooks read; compact, it is for a program
        click.echo(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                      "additionalContext": markdown}},
                              ensure_ascii=False, separators=(",", ":")))
        return
    _emit(app, data, markdown.rstrip())


# --- text ----------------------------------------------------------------------------------------


def status_text(snap: answers.StatusDoc, ledger_text: str, *, color: bool = False) -> str:
    """Like `git status`: where you are, what to do now, then the ledger."""
    def paint(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if color else text

    first, _, rest = ledger_text.partition("\n")
    out = [first, *environment_lines(snap.environment, paint)]
    # What to do leads (new work as its best todo: the rest are under Ready to work on), then
    # what to wait for (gates, wakes, CI; others' leases are under Claimed).
    work = next((a for a in snap.actions if a.kind == "work"), None)
    doing = [a for a in snap.actions
             if not status.is_waiting(a) and (a.kind != "work" or a is work)][:ACTIONS]
    waits = [a for a in snap.actions if status.is_waiting(a) and a.kind != "wait_lease"]
    for title, actions in (("Do now:", doing), ("Waiting for:", waits[:WAITS if doing else ACTIONS])):
        if actions:
            out.append("\n" + paint(title, bold=True))
        for action in actions:
            colour = "yellow" if status.is_waiting(action) else "red" if action.priority < 30 else "cyan"
            out.append(f"  {paint(action.kind, fg=colour)}: {inert.line(action.reason)}")
            if action.command:
                out.append(paint(f"    {inert.line(action.command)}", dim=True))
    if not snap.actions and snap.next_wake:
        out.append(f"\nNothing to do; look again at {snap.next_wake}")
    return "\n".join(out) + ("\n" + rest if rest else "")


def environment_lines(env: environment.Environment, paint: Any) -> list[str]:
    head = (env.head or "")[:12] or "no commits yet"
    where = f"on branch {env.branch}" if env.branch else "HEAD detached"
    # A bare repository (a hub) has no work tree, and its HEAD is no checkout, detached or not.
    lines = [f"Work tree: {where} at {head}" if env.worktree else "Work tree: none (a bare repository)"]
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
