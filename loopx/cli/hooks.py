"""`git loopx hooks install|uninstall|status|queue|drain`, `git loopx hook NAME` (what the shims run),
`git loopx run -- CMD` (a command run recorded as evidence) and `git loopx rerun` (the
recorded commands of stale or failing evidence, run again)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Optional

import click

from loopx.cli import terminal
from loopx.cli.app import App, event_id_option, pass_app
from loopx.model import plural
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
    app.emit(data, lambda: "\n".join([*(_status_line(s) for s in states),
                                      *_queue_lines(hooking.queue(app.cwd))]))


@hooks.command("queue")
@pass_app
def hooks_queue(app: App) -> None:
    """Show the work hooks queued and not applied yet, and entries set aside (with why).

    post-commit queues the evidence of a commit and a detached `git loopx hooks drain`
    records it a moment later; any loopx command applies what is still queued first.
    """
    found = hooking.queue(app.cwd)
    app.emit(found, lambda: "\n".join(_queue_lines(found)) or "nothing queued")


@hooks.command("drain")
@click.option("--retry", is_flag=True, help="Queue the entries set aside again first.")
@click.option("--quiet", is_flag=True, help="Say nothing unless an entry was set aside.")
@pass_app
def hooks_drain(app: App, retry: bool, quiet: bool) -> None:
    """Apply the work hooks queued now (post-commit starts this in the background).

    Entries go in oldest first, each once; one that cannot be applied yet stays queued, one
    that can never be is set aside (see `git loopx hooks queue`; fix the cause, then
    `git loopx hooks drain --retry`).
    """
    done = hooking.drain(app.cwd, state_ref=app.state_ref, retry=retry)
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


def _queue_lines(found: dict[str, Any]) -> list[str]:
    lines = [f"queued: {found['queued']} (`git loopx hooks drain` applies them now)"
             ] if found["queued"] else []
    lines += [f"  {e['entry']}  {e['hook']}" + (f" of {e['commit'][:12]}" if e["commit"] else "")
              + f"  by {e['actor']} at {e['at']}" for e in found.get("waiting", [])]
    return lines + [f"set aside: {e['entry']}: {e['reason']} (fix it, then "
                    "`git loopx hooks drain --retry`)" for e in found["set_aside"]]


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


# Not ignore_unknown_options: an option `run` does not know, before the command, is a usage
# error (exit 2), not the first word of the command to run.
@click.command("run", context_settings={"allow_interspersed_args": False})
@click.option("--todo", "todo_id", metavar="TODO", help="The todo it supports.")
@click.option("--goal", "goal_id", metavar="GOAL", help="The goal (implied by --todo).")
@click.option("--criterion", multiple=True, metavar="ID", help="Acceptance criterion it meets.")
@click.option("--kind", type=click.Choice(["test", "ci", "review", "receipt", "note"]),
              default="test", show_default=True)
@click.option("--summary", help="One line on what it shows (default: command, verdict, time).")
@click.option("--paths", "paths", multiple=True, metavar="GLOB",
              help="The paths it covers (repeatable, e.g. 'src/**'); changes elsewhere leave it "
              "fresh. Default: its criterion's paths, else the whole tree.")
@click.option("--id", "ev_id", help="Evidence id to use (default: a generated e-xxxxxx).")
@event_id_option
@click.argument("argv", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD [ARG]...")
@pass_app
def run(app: App, todo_id: Optional[str], goal_id: Optional[str], criterion: tuple[str, ...],
        kind: str, summary: Optional[str], paths: tuple[str, ...], ev_id: Optional[str],
        event_id: Optional[str], argv: tuple[str, ...]) -> None:
    """Run CMD (output streamed as usual) and record it as evidence; exits with CMD's code.

    Without --todo or --goal, the evidence goes to the one todo you hold a lease on, if any.

    The evidence holds the command, where it ran, exit code, duration, HEAD's commit, the tree
    of the work tree as it was when CMD started (uncommitted changes included), a sha256 of
    the output and its last lines. Secrets (credential-like environment values, token
    shapes) are redacted before anything is written. A command that could not start (not
    found, not executable: exit 127 or 126, from a shell too) is no evidence: nothing is
    recorded and run exits 1.
    """
    result = evidence.run(app.ledger, argv, actor=app.actor, kind=kind, todo=todo_id,
                          goal=goal_id, criteria=criterion, paths=paths, summary=summary,
                          id=ev_id, event_id=event_id, now=app.now, environ=os.environ,
                          cwd=Path(app.cwd))  # -C PATH: run as if started there, like git
    if result.event is None:
        # The command's own failure is the more important exit code to pass on.
        terminal.echo(f"error: evidence not recorded: {result.error}", err=True)
    elif app.json:
        app.emit_event(result.event, "")
    else:  # stderr: the command's stdout stays exactly its own
        terminal.echo(f"loopx: recorded {kind} evidence {result.event.data.id}: "
                   f"{result.event.data.summary}", err=True)
    sys.exit(result.outcome.exit_code)


@click.command("rerun")
@click.option("--stale", "stale_only", is_flag=True,
              help="Only evidence that went stale (not evidence that failed on this code).")
@click.option("--todo", "todo_id", metavar="TODO", help="Only the evidence of this todo.")
@click.option("--criterion", metavar="[GOAL:]ID", help="Only the evidence of this criterion.")
@click.option("--goal", "goal_id", metavar="GOAL", help="The goal of --criterion ID.")
@click.option("--dry-run", is_flag=True, help="Show the commands; run nothing.")
@pass_app
def rerun(app: App, stale_only: bool, todo_id: Optional[str], criterion: Optional[str],
          goal_id: Optional[str], dry_run: bool) -> None:
    """Run again the recorded commands of evidence that went stale or failed, and record the
    results (same todo, goal, criteria and paths) as `git loopx run` does.

    The evidence re-run is the latest verdict of each criterion and open todo of the goals in
    play. Exits 0 when every command passed (or nothing needed it), else with the first failing
    command's code (1 when some could not be run). Commands come from the ledger: check them
    with --dry-run first when others write to it.
    """
    plan = evidence.rerun(app.ledger, actor=app.actor, stale_only=stale_only, todo=todo_id,
                          criterion=criterion, goal=goal_id, dry_run=dry_run, now=app.now,
                          environ=os.environ)
    if app.json:
        app.emit([item.to_dict() for item in plan])
    else:  # stderr: the commands' own output is on stdout
        for line in _rerun_lines(plan, dry_run) or ["loopx: nothing to re-run"]:
            terminal.echo(line, err=True)
    codes = [i.result.outcome.exit_code for i in plan if i.result and i.result.outcome.exit_code]
    sys.exit(codes[0] if codes else (1 if any(i.skipped for i in plan) else 0))


def _rerun_lines(plan: list[evidence.Rerun], dry_run: bool) -> list[str]:
    lines = []
    for item in plan:
        why = "; ".join(item.why)
        if item.skipped:
            lines.append(f"loopx: cannot re-run {', '.join(item.evidence)} ({why}): {item.skipped}")
        elif dry_run:
            where = f" (in {item.cwd})" if item.cwd else ""
            lines.append(f"loopx: would re-run `{item.command}`{where} for {why}")
        elif item.result and item.result.event:
            lines.append(f"loopx: re-ran {', '.join(item.evidence)} ({why}): recorded "
                         f"{item.result.event.data.id}: {item.result.event.data.summary}")
        elif item.result:
            lines.append(f"loopx: re-ran {', '.join(item.evidence)} but could not record it: "
                         f"{item.result.error}")
    return lines

