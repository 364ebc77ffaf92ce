"""`git loopx hooks install|uninstall|status|queue|drain` and `git loopx hook NAME`
(what the shims run)."""

from __future__ import annotations

import sys
from typing import Any

import click

from loopx.cli import terminal
from loopx.cli.app import App, pass_app
from loopx.errors import LoopxError, UsageError
from loopx.model import plural
from loopx.ops import hooks


@click.group("hooks")
def hooks_() -> None:
    """Install the git hooks that record evidence and carry the state branch."""


@hooks_.command("install")
@click.option("--force", is_flag=True,
              help="Replace existing hooks instead of chaining them (uninstall puts them back).")
@pass_app
def hooks_install(app: App, force: bool) -> None:
    """Install post-commit, post-rewrite and pre-push into the hooks folder git uses.

    A hook already there keeps running: it is chained (run first, same arguments and stdin).
    """
    folder, lines = hooks.install(app.cwd, force=force)
    app.emit({"hooks_dir": str(folder), "results": lines},
             lambda: "\n".join([f"hooks folder: {folder}", *lines]))


@hooks_.command("uninstall")
@pass_app
def hooks_uninstall(app: App) -> None:
    """Remove the loopx hooks and put back exactly what was there before."""
    lines = hooks.uninstall(app.cwd)
    app.emit({"results": lines}, "\n".join(lines))


@hooks_.command("status")
@pass_app
def hooks_status(app: App) -> None:
    """Show which loopx hooks are installed, chained or missing."""
    states = hooks.installed(app.cwd)
    data = [{"name": s.name, "path": str(s.path), "installed": s.installed, "chained": s.chained,
             "replaced": s.replaced, "other_hook": s.other} for s in states]
    app.emit(data, lambda: "\n".join([*(_status_line(s) for s in states),
                                      *_queue_lines(hooks.queue(app.cwd))]))


@hooks_.command("queue")
@pass_app
def hooks_queue(app: App) -> None:
    """Show the work hooks queued and not applied yet, and entries set aside (with why).

    post-commit queues the evidence of a commit and a detached `git loopx hooks drain`
    records it a moment later; any loopx command applies what is still queued first.
    """
    found = hooks.queue(app.cwd)
    app.emit(found, lambda: "\n".join(_queue_lines(found)) or "nothing queued")


@hooks_.command("drain")
@click.option("--retry", is_flag=True, help="Queue the entries set aside again first.")
@click.option("--quiet", is_flag=True, help="Say nothing unless an entry was set aside.")
@pass_app
def hooks_drain(app: App, retry: bool, quiet: bool) -> None:
    """Apply the work hooks queued now (post-commit starts this in the background).

    Entries go in oldest first, each once; one that cannot be applied yet stays queued, one
    that can never be is set aside (see `git loopx hooks queue`; fix the cause, then
    `git loopx hooks drain --retry`).
    """
    done = hooks.drain(app.cwd, state_ref=app.state_ref, retry=retry)
    data = {"applied": done.applied, "kept": done.kept, "set_aside": done.failed,
            "busy": done.busy}
    lines = [f"set aside {entry}: {why}" for entry, why in done.failed.items()]
    if not quiet:
        applied = plural.counted(len(done.applied), "queued entry", "queued entries")
        lines[:0] = [f"applied {applied}" if done.applied else "" if (
            done.kept or done.busy or done.failed) else "nothing queued"] + (
            [f"{len(done.kept)} still queued: the state branch is busy"] if done.kept else []) + (
            ["another drain is still running"] if done.busy else [])
    app.emit(data, lambda: "\n".join(line for line in lines if line))
    if done.failed:
        sys.exit(1)


def _queue_lines(found: hooks.Queue) -> list[str]:
    lines = [f"queued: {found.queued} (`git loopx hooks drain` applies them now)"
             ] if found.queued else []
    lines += [f"  {e.entry}  {e.hook}" + (f" of {e.commit[:12]}" if e.commit else "")
              + f"  by {e.actor} at {e.at}" for e in found.waiting]
    return lines + [f"set aside: {e.entry}: {e.reason} (fix it, then "
                    "`git loopx hooks drain --retry`)" for e in found.set_aside]


def _status_line(state: Any) -> str:
    if state.installed:
        what = "installed" + (", chaining the previous hook" if state.chained else "")
        what += ", previous hook set aside by --force" if state.replaced else ""
    else:
        other = " (another hook is there; install chains it)" if state.other else ""
        what = f"not installed{other}"
    return f"{state.name:<13} {what}  {state.path}"


@click.command("hook", hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("name", type=click.Choice(hooks.HOOKS))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_obj
def hook(app: App, name: str, args: tuple[str, ...]) -> None:
    """Run loopx's part of git hook NAME (called by the installed shims).

    Fails open: a loopx problem prints one line and exits 0, unless loopx.hooks.strict=true.
    """
    stdin = sys.stdin.read() if name in ("pre-push", "post-rewrite") else ""
    try:
        actor, refused = app.actor, None
    except UsageError as exc:  # an identity loopx refuses: said once one is needed
        actor, refused = None, str(exc)
    except LoopxError:  # no identity yet: the hook says so if it needs one
        actor, refused = None, None
    result = hooks.run(hooks.Hook(name, app.cwd, actor, app.state_ref, args, stdin,
                                  no_actor=refused))
    for line in result.lines:
        terminal.echo(f"loopx: {line}", err=True)
    if result.failed:
        hint = "" if result.strict else " (git goes on; set loopx.hooks.strict=true to stop instead)"
        terminal.echo(f"loopx: {name} hook failed: {result.failed}{hint}", err=True)
    sys.exit(result.exit_code)
