"""`git loopx init|batch|demo|help|completion`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any, Optional

import click

import loopx.ops.batch  # qualified: `batch` here is the command
from loopx.cli import terminal
from loopx.cli.app import App, declared, pass_app
from loopx.model import plural
from loopx.ops import hooks, ledgers
from loopx.ops.declare import Values


@click.command()
@click.option("--name", help="A name for this ledger (shown in status).")
@click.option("--offline", is_flag=True,
              help="Do not look at the remote for a ledger first (start one here regardless).")
@pass_app
def init(app: App, name: Optional[str], offline: bool) -> None:
    """Create the ledger on refs/heads/loopx/state (idempotent).

    When the repository has a remote (the branch's upstream, else origin), fetches its
    loopx/state first and adopts it instead of starting a second ledger.
    """
    existed = app.ledger.exists()
    event = ledgers.init(app.ledger, actor=app.actor, name=name, offline=offline)
    ref = app.ledger.ref
    helped = hooks.install_help_viewer(app.cwd)
    if helped and not app.json:
        click.echo(helped, err=True)
    if event is None:
        remote = ledgers.remote(app.ledger)
        adopted = not existed and remote is not None
        app.emit({"created": False, "ref": ref, "tip": app.ledger.tip(),
                  "adopted": remote if adopted else None},
                 f"adopted {remote}'s ledger on {ref}; no new ledger started" if adopted
                 else f"ledger already exists on {ref}")
    else:
        app.emit({"created": True, "ref": ref, "event": event.to_dict()},
                 f"initialised ledger on {ref}  [{event.id}]")


@click.command()
@declared(loopx.ops.batch.BATCH)
def batch(app: App, v: Values) -> None:
    v["lines"] = loopx.ops.batch.read(sys.stdin.read())
    results = [line.answer for line in app.call(loopx.ops.batch.BATCH, v)]
    app.emit(results, lambda: "\n".join(
        [_batch_line(r) for r in results]
        + [f"applied {plural.counted(len(results), 'command')} in one commit"]))


def _batch_line(result: Any) -> str:
    if isinstance(result, dict) and "type" in result and "data" in result:
        return f"{result['type']:<20} {result['data'].get('id', '')}  [{result['id']}]"
    return terminal.json_text(result)


@click.command()
@click.option("--keep", is_flag=True, help="Keep the throwaway folder and print its path.")
@click.option("--dir", "where", type=click.Path(file_okay=False),
              help="Create it here (and keep it).")
@pass_app
def demo(app: App, keep: bool, where: Optional[str]) -> None:
    """Tell what sets loopx apart, in a throwaway folder: hooks recording a commit, a real test
    run, evidence going stale and re-run, a second clone taking over by fetch, a claim race
    won by exactly one agent, the maintainer's gate, the goal closing.

    With --json, one JSON line per step: its key, where and as whom it ran, the command, its
    exit code (and the one expected), and the command's own JSON output. Exits 1 when a step
    did not end as the story expects.
    """
    from loopx.cli import demo  # the demo's story and its files: only for `demo`

    if demo.run(keep=keep, where=where, as_json=app.json):
        raise click.exceptions.Exit(1)


def _man_page() -> bool:
    """Show the man page installed with the package through `man`; False when man is not
    there or cannot show it (the caller prints the built-in help instead)."""
    page = resources.files("loopx").joinpath("man/git-loopx.1")
    man = shutil.which("man")
    if man is None or not isinstance(page, Path) or not page.is_file():
        return False
    sys.stdout.flush()
    return subprocess.run([man, str(page)], stderr=subprocess.DEVNULL).returncode == 0


@click.command("help")
@click.argument("command", nargs=-1)
# Hidden: what the man viewer `init` and `hooks install` configure runs for `git loopx --help`.
@click.option("--man", "as_man", is_flag=True, hidden=True)
@click.option("--install-viewer", "viewer", type=click.Choice(["here", "global"]),
              help="Make `git loopx --help` show this help where man cannot: in this "
              "repository (init and hooks install do it), or for every repository (your "
              "global git config).")
@click.pass_context
def help_(ctx: click.Context, command: tuple[str, ...], as_man: bool,
          viewer: Optional[str]) -> None:
    """Show help for loopx or one of its commands."""
    if viewer:
        app = ctx.find_object(App)
        done = hooks.install_help_viewer(app.cwd if app else ".", everywhere=viewer == "global")
        click.echo(done or "the help viewer is set already (or another man viewer is configured)")
        return
    if as_man and _man_page():
        return
    group = ctx.parent.command if ctx.parent else None
    target: Any = group
    parent = ctx.parent
    for name in command:
        sub = target.get_command(ctx, name) if isinstance(target, click.Group) else None
        if sub is None:
            raise click.UsageError(f"no such command: {' '.join(command)}")
        parent = click.Context(sub, info_name=name, parent=parent)
        target = sub
    click.echo(target.get_help(parent))


@click.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script for SHELL (`git-loopx` and `git loopx`).

    bash: eval "$(git loopx completion bash)" in ~/.bashrc (after git's own completion);
    zsh: eval "$(git loopx completion zsh)" in ~/.zshrc (after compinit);
    fish: git loopx completion fish > ~/.config/fish/completions/git-loopx.fish
    """
    from loopx.cli import completion  # click's shell classes: only for completion

    root = ctx.find_root().command
    assert isinstance(root, click.Group)
    click.echo(completion.script(root, shell), nl=False)
