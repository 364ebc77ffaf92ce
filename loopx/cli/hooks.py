"""`git loopx hooks install|uninstall|status`, `git loopx hook NAME` (what the shims run) and
`git loopx run -- CMD` (a command run recorded as evidence)."""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

import click

from loopx.cli import terminal
from loopx.cli.app import App, event_id_option, pass_app
from loopx.ops import evidence, hooking


@click.group()
def hooks() -> None:
    """Install the git hooks that record evidence and carry the state branch."""


@hooks.command("install")
@click.option("--force", is_flag=True,
              help="Replace existing hooks instead of chaining them (uninstall puts them back).")
@pass_app
def hooks_install(app: App, force: bool) -> None:
    """Install post-commit, post-rewrite and pre-push into the hooks folder git uses.

    A hook already there keeps running: it is chained (run first, same arguments and stdin).
    """
    folder, lines = hooking.install(app.cwd, force=force)
    app.emit({"hooks_dir": str(folder), "results": lines},
             lambda: "\n".join([f"hooks folder: {folder}", *lines]))


@hooks.command("uninstall")
@pass_app
def hooks_uninstall(app: App) -> None:
    """Remove the loopx hooks and put back exactly what was there before."""
    lines = hooking.uninstall(app.cwd)
    app.emit({"results": lines}, "\n".join(lines))


@hooks.command("status")
@pass_app
def hooks_status(app: App) -> None:
    """Show which loopx hooks are installed, chained or missing."""
    states = hooking.installed(app.cwd)
    data = [{"name": s.name, "path": str(s.path), "installed": s.installed, "chained": s.chained,
             "replaced": s.replaced, "other_hook": s.other} for s in states]
    app.emit(data, lambda: "\n".join(_status_line(s) for s in states))


def _status_line(state: Any) -> str:
    if state.installed:
        what = "installed" + (", chaining the previous hook" if state.chained else "")
        what += ", previous hook set aside by --force" if state.replaced else ""
    else:
        other = " (another hook is there; install chains it)" if state.other else ""
        what = f"not installed{other}"
    return f"{state.name:<13} {what}  {state.path}"


@click.command("hook", hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("name", type=click.Choice(hooking.HOOKS))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_obj
def hook(app: App, name: str, args: tuple[str, ...]) -> None:
    """Run loopx's part of git hook NAME (called by the installed shims).

    Fails open: a loopx problem prints one line and exits 0, unless loopx.hooks.strict=true.
    """
    stdin = sys.stdin.read() if name in ("pre-push", "post-rewrite") else ""
    result = hooking.run(hooking.Hook(name, app.cwd, app.actor_or_none(), app.state_ref,
                                      args, stdin))
    for line in result.lines:
        terminal.echo(f"loopx: {line}", err=True)
    if result.failed:
        hint = "" if result.strict else " (git goes on; set loopx.hooks.strict=true to stop instead)"
        terminal.echo(f"loopx: {name} hook failed: {result.failed}{hint}", err=True)
    sys.exit(result.exit_code)


@click.command("run", context_settings={"ignore_unknown_options": True,
                                        "allow_interspersed_args": False})
@click.option("--todo", "todo_id", metavar="TODO", help="The todo it supports.")
@click.option("--goal", "goal_id", metavar="GOAL", help="The goal (implied by --todo).")
@click.option("--criterion", multiple=True, metavar="ID", help="Acceptance criterion it meets.")
@click.option("--kind", type=click.Choice(["test", "ci", "review", "receipt", "note"]),
              default="test", show_default=True)
@click.option("--summary", help="One line on what it shows (default: command, verdict, time).")
@click.option("--id", "ev_id", help="Evidence id to use (default: a generated e-xxxxxx).")
@event_id_option
@click.argument("argv", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD [ARG]...")
@pass_app
def run(app: App, todo_id: Optional[str], goal_id: Optional[str], criterion: tuple[str, ...],
        kind: str, summary: Optional[str], ev_id: Optional[str], event_id: Optional[str],
        argv: tuple[str, ...]) -> None:
    """Run CMD (output streamed as usual) and record it as evidence; exits with CMD's code.

    Without --todo or --goal, the evidence goes to the one todo you hold a lease on, if any.

    The evidence holds the command, exit code, duration, commit, tree, dirty flag, a sha256 of
    the output and its last lines. Secrets (credential-like environment values, token
    shapes) are redacted before anything is written.
    """
    result = evidence.run(app.ledger, argv, actor=app.actor, kind=kind, todo=todo_id,
                          goal=goal_id, criteria=criterion, summary=summary, id=ev_id,
                          event_id=event_id, now=app.now, environ=os.environ)
    if result.event is None:
        # The command's own failure is the more important exit code to pass on.
        terminal.echo(f"error: evidence not recorded: {result.error}", err=True)
    elif app.json:
        app.emit_event(result.event, "")
    else:  # stderr: the command's stdout stays exactly its own
        terminal.echo(f"loopx: recorded {kind} evidence {result.event.data.id}: "
                   f"{result.event.data.summary}", err=True)
    sys.exit(result.outcome.exit_code)
