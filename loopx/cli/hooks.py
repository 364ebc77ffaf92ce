"""`git loopx hooks install|uninstall|status`, `git loopx hook NAME` (what the shims run) and
`git loopx run -- CMD` (a command run recorded as evidence)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

import click

from loopx.cli import App, emit_event, event_id_option, lookup, pass_app

# Tests set this to a hook name (or "all") to make that hook's handler fail on purpose, to
# check that a loopx failure never blocks the git command (see docs/hooks.md).
FAIL_ENV = "LOOPX_HOOK_TEST_FAIL"
# Set by post-commit for the detached process it starts under loopx.hooks.background=true:
# the commit to record (HEAD may have moved on by the time it runs).
COMMIT_ENV = "LOOPX_HOOK_COMMIT"


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
    from loopx.features import shims as feature

    lines = feature.install(cwd=app.cwd, force=force)
    app.emit({"hooks_dir": str(feature.hooks_dir(app.cwd)), "results": lines},
             lambda: "\n".join([f"hooks folder: {feature.hooks_dir(app.cwd)}", *lines]))


@hooks.command("uninstall")
@pass_app
def hooks_uninstall(app: App) -> None:
    """Remove the loopx hooks and put back exactly what was there before."""
    from loopx.features import shims as feature

    lines = feature.uninstall(cwd=app.cwd)
    app.emit({"results": lines}, "\n".join(lines))


@hooks.command("status")
@pass_app
def hooks_status(app: App) -> None:
    """Show which loopx hooks are installed, chained or missing."""
    from loopx.features import shims as feature

    states = feature.status(cwd=app.cwd)
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


# --- the handlers the shims call -------------------------------------------------------------


@click.command("hook", hidden=True,
               context_settings={"ignore_unknown_options": True})
@click.argument("name", type=click.Choice(["post-commit", "post-rewrite", "pre-push"]))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_obj
def hook(app: App, name: str, args: tuple[str, ...]) -> None:
    """Run loopx's part of git hook NAME (called by the installed shims).

    Fails open: a loopx problem prints one line and exits 0, unless loopx.hooks.strict=true.
    """
    stdin = sys.stdin.read() if name in ("pre-push", "post-rewrite") else ""
    try:
        if os.environ.get(FAIL_ENV) in (name, "all"):
            raise RuntimeError(f"forced failure ({FAIL_ENV}={os.environ[FAIL_ENV]})")
        for line in _HANDLERS[name](app, list(args), stdin):
            click.echo(f"loopx: {line}", err=True)
    except Exception as exc:  # noqa: BLE001 - fail open is the point
        _fail_open(app, name, exc)


def _fail_open(app: App, name: str, exc: Exception) -> None:
    strict = _config_true(app, "loopx.hooks.strict")
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    hint = "" if strict else " (git goes on; set loopx.hooks.strict=true to stop instead)"
    click.echo(f"loopx: {name} hook failed: {message}{hint}", err=True)
    if strict:
        sys.exit(1)


def _post_commit(app: App, args: list[str], stdin: str) -> list[str]:
    found = _ledger_tip(app)
    if found is None or _rebasing(found.git_dir):
        return []
    from loopx.features import capture
    from loopx.storage import gateway

    background_child = COMMIT_ENV in os.environ
    info = capture.read_commit(app.cwd, os.environ.get(COMMIT_ENV, "HEAD"))
    if not info.todos and not info.goals and capture.cached_leases(
        loopx_dir=found.loopx_dir, ref=_state_ref(app), tip=found.tip, actor=app.actor,
    ) == []:
        return []  # nothing to record, known without loading the event model
    if not background_child and _config_true(app, "loopx.hooks.background"):
        _record_in_background(app, found.loopx_dir, info.sha)
        return []
    from loopx.ledger.book import Ledger

    ledger = Ledger(gateway.discover(app.cwd), ref=_state_ref(app))
    result = capture.record_commit(ledger=ledger, actor=app.actor, info=info)
    return result.notes + [_recorded_line(e) for e in result.events]


def _recorded_line(event: Any) -> str:
    data = event.data
    target = f"todo {data.todo}" if data.todo else f"goal {event.env.goal}"
    return f"recorded commit evidence {data.id} for {target}"


def _config_true(app: App, key: str) -> bool:
    from loopx.storage import gateway

    return gateway.out(app.cwd, "config", "--bool", key, check=False) == "true"


def _record_in_background(app: App, loopx_dir: Path, sha: str) -> None:
    """Hand the recording of ``sha`` to a detached loopx so that `git commit` returns now;
    its messages go to <git common dir>/loopx/hooks.log."""
    import subprocess

    log_path = loopx_dir / "hooks.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, **{COMMIT_ENV: sha, "LOOPX_ACTOR": app.actor})
    with open(log_path, "ab") as log:
        subprocess.Popen([sys.executable, "-m", "loopx", "hook", "post-commit"], cwd=app.cwd,
                         env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         start_new_session=True)


def _rebasing(git_dir: str) -> bool:
    # The sequencer runs post-commit for every commit a rebase picks (git >= 2.24); post-rewrite
    # remaps their evidence once it is done, so per-pick records would repeat it (and cost time).
    return any(os.path.isdir(os.path.join(git_dir, d)) for d in ("rebase-merge", "rebase-apply"))


def _state_ref(app: App) -> str:
    ref = app.state_ref or "refs/heads/loopx/state"
    return ref if ref.startswith("refs/") else f"refs/heads/{ref}"


class _Found(NamedTuple):
    git_dir: str  # this worktree's
    loopx_dir: Path  # loopx's files in the common git dir (as gateway.Repo.loopx_dir)
    tip: str


def _ledger_tip(app: App) -> Optional[_Found]:
    """Where the repository is and its state tip, if it has a ledger (one git call)."""
    from loopx.storage import gateway

    proc = gateway.run(app.cwd, "rev-parse", "--absolute-git-dir", "--git-common-dir", "--verify",
                   "-q", f"{_state_ref(app)}^{{commit}}", check=False)
    lines = proc.stdout.decode().splitlines()
    if proc.returncode != 0 or len(lines) != 3:
        return None
    common = Path(app.cwd) / lines[1]  # relative to the cwd, like gateway.discover reads it
    return _Found(lines[0], common.resolve() / "loopx", lines[2])


def _has_ledger(app: App) -> bool:
    return _ledger_tip(app) is not None


def _post_rewrite(app: App, args: list[str], stdin: str) -> list[str]:
    from loopx.features import capture

    pairs = capture.parse_rewrites(stdin.splitlines())
    if not stdin and os.environ.get("PRE_COMMIT_REWRITE_COMMAND") == "amend":
        pairs = _amend_from_reflog(app)  # pre-commit passes no stdin; an amend is HEAD@{1}->HEAD
    if not pairs or not _has_ledger(app):
        return []
    result = capture.record_rewrite(ledger=app.ledger, actor=app.actor, pairs=pairs)
    events: list[Any] = result.events
    count = sum(len(e.data.mappings) for e in events)
    return [f"evidence follows {count} rewritten commit(s)"] if count else []


def _amend_from_reflog(app: App) -> list[dict[str, str]]:
    from loopx.storage import gateway

    proc = gateway.run(app.cwd, "rev-parse", "HEAD@{1}", "HEAD", check=False)
    old_new = proc.stdout.decode().split()
    if proc.returncode != 0 or len(old_new) != 2:
        return []
    return [{"old": old_new[0], "new": old_new[1]}]


def _pre_push(app: App, args: list[str], stdin: str) -> list[str]:
    from loopx.features import shims as feature

    if not stdin and "PRE_COMMIT_REMOTE_BRANCH" in os.environ:  # pre-commit ate stdin
        stdin = " ".join(os.environ.get(k, "") or "-" for k in (
            "PRE_COMMIT_LOCAL_BRANCH", "PRE_COMMIT_TO_REF", "PRE_COMMIT_REMOTE_BRANCH",
            "PRE_COMMIT_FROM_REF"))
    remote = args[0] if args else os.environ.get("PRE_COMMIT_REMOTE_NAME", "")
    ref = _state_ref(app)
    if not remote or not feature.pushes_code(stdin.splitlines(), ref):
        return []
    if not feature.push_state_enabled(app.cwd) or not _has_ledger(app):
        return []
    line = feature.push_state(ledger=app.ledger, remote=remote)
    return [line] if line else []


_HANDLERS: dict[str, Callable[[App, list[str], str], list[str]]] = {
    "post-commit": _post_commit, "post-rewrite": _post_rewrite, "pre-push": _pre_push,
}


# --- git loopx run ---------------------------------------------------------------------------


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
    from loopx.features import capture
    from loopx.features import redact
    from loopx.cli.records import _binding

    app.ledger.require()
    fold = app.ledger.fold()  # unknown ids fail now, not after a long run
    for table, prefix, kind_ in ((fold.todos, todo_id, "todo"), (fold.goals, goal_id, "goal")):
        if prefix:
            lookup(table, prefix, kind_)
    if not todo_id and not goal_id:  # like a commit: the todo you hold is what you work on
        held = [t["id"] for t in app.ledger.snapshot(app.now)["todos"] if t["claimed_by"] == app.actor]
        todo_id = held[0] if len(held) == 1 else None
    binding = _binding(app, None)  # before the command runs: it may change the work tree
    outcome = capture.run_command(list(argv), environ=os.environ, stdout=sys.stdout.buffer,
                                  stderr=sys.stderr.buffer)
    text = redact.redact(summary, os.environ) if summary else capture.run_summary(outcome)
    data = {"kind": kind, **binding, "command": outcome.command, "exit_code": outcome.exit_code,
            "duration_s": outcome.duration_s, "summary": text, "digest": outcome.digest,
            "output_tail": outcome.tail or None, "criteria": list(criterion)}
    try:
        event = app.write(_evidence_builder(data, todo_id, goal_id, ev_id, event_id))
    except Exception as exc:
        if not outcome.exit_code:
            raise
        # The command's own failure is the more important exit code to pass on.
        click.echo(f"error: evidence not recorded: {exc}", err=True)
        sys.exit(outcome.exit_code)
    if app.json:
        emit_event(app, event, "")
    else:  # stderr: the command's stdout stays exactly its own
        click.echo(f"loopx: recorded {kind} evidence {event.data.id}: {text}", err=True)
    sys.exit(outcome.exit_code)


def _evidence_builder(data: dict[str, Any], todo_id: Optional[str], goal_id: Optional[str],
                      ev_id: Optional[str], event_id: Optional[str]) -> Callable[[Any], Any]:
    from loopx.cli.records import _goal_of
    from loopx.model.ids import new_short_id
    from loopx.ledger.txn import Draft

    def build(txn: Any) -> Any:
        todo = lookup(txn.fold.todos, todo_id, "todo") if todo_id else None
        full = {"id": ev_id or new_short_id("e", event_id), **data, "todo": todo}
        return txn.add(Draft("evidence.recorded", full, _goal_of(txn, goal_id, todo), event_id))

    return build
