"""`git loopx init|config|batch|schema|demo|help`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any, Optional

import click

from loopx.cli import render
from loopx.cli.app import App, event_id_option, optional_duration, pass_app
from loopx.errors import LoopxError, UsageError
from loopx.model import plural
from loopx.ops import hooking, ledgers, settings, upkeep


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
    helped = hooking.install_help_viewer(app.cwd)
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


@click.group()
def config() -> None:
    """Ledger-wide settings (roles, lease length, session slots), stored as events."""


@config.command("set")
@click.option("--role", "roles", multiple=True, metavar="NAME=ACTOR[,ACTOR]",
              help="Who holds a role, e.g. maintainer=human:alice@example.com (replaces it).")
@click.option("--lease-ttl", metavar="DURATION", help="Default lease length, e.g. 45m.")
@click.option("--session-slots", type=click.IntRange(min=1), help="Open sessions per owner.")
@click.option("--session-idle", metavar="DURATION",
              help="How long a session may await input before `session reap` closes it.")
@click.option("--signed-answers", metavar="all|off|GATE,...",
              help="Require signed commits for gate answers (all, off, or gate ids).")
@click.option("--allowed-signers", "signers_file", type=click.Path(exists=True, dir_okay=False),
              help="An ssh allowed_signers file whose keys may sign answers.")
@click.option("--evidence-ignore", "ignore", multiple=True, metavar="GLOB",
              help="Paths whose changes leave evidence fresh unless it (or its criterion) names "
              "its own paths, e.g. 'docs/**' (repeatable; replaces the list).")
@click.option("--no-evidence-ignore", "no_ignore", is_flag=True,
              help="Clear the evidence ignore list.")
@click.option("--evidence-scope", "scope", multiple=True, metavar="GLOB",
              help="The repository's default evidence scope: the paths evidence is judged on "
              "when neither it nor its criterion names its own, e.g. 'src/**' (repeatable; "
              "replaces the list). Default: the whole tree.")
@click.option("--no-evidence-scope", "no_scope", is_flag=True,
              help="Judge unscoped evidence on the whole tree again.")
@click.option("--ci-criterion", "ci_specs", multiple=True, metavar="CHECK=GOAL:CRITERION",
              help="A CI check whose result meets (or un-meets) a criterion (repeatable; "
              "CHECK= removes the check's mapping).")
@pass_app
def config_set(app: App, roles: tuple[str, ...], lease_ttl: Optional[str],
               session_slots: Optional[int], session_idle: Optional[str],
               signed_answers: Optional[str], signers_file: Optional[str],
               ignore: tuple[str, ...], no_ignore: bool, scope: tuple[str, ...], no_scope: bool,
               ci_specs: tuple[str, ...]) -> None:
    """Change ledger settings."""
    try:
        role_map = settings.parse_roles(roles)
    except UsageError as exc:
        raise click.BadParameter(str(exc), param_hint="--role") from None
    try:
        ci_map = settings.parse_ci_criteria(ci_specs)
    except UsageError as exc:
        raise click.BadParameter(str(exc), param_hint="--ci-criterion") from None
    if ignore and no_ignore:
        raise click.UsageError("give --evidence-ignore or --no-evidence-ignore, not both")
    if scope and no_scope:
        raise click.UsageError("give --evidence-scope or --no-evidence-scope, not both")
    signers = Path(signers_file).read_text("utf-8") if signers_file else None
    event = app.write(lambda txn: settings.set_(
        txn, roles=role_map, lease_ttl=optional_duration(lease_ttl), session_slots=session_slots,
        session_idle=optional_duration(session_idle),
        signed_answers=settings.parse_signed_answers(signed_answers) if signed_answers else None,
        allowed_signers=signers, evidence_ignore=[] if no_ignore else (list(ignore) or None),
        evidence_scope=[] if no_scope else (list(scope) or None),
        ci_criteria=ci_map))
    app.emit_event(event, "updated ledger config")


@config.command("show")
@pass_app
def config_show(app: App) -> None:
    """Show ledger settings."""
    effective = settings.effective(app.ledger)
    shown = {k: v for k, v in effective.items() if k != "allowed_signers"}
    if effective.get("allowed_signers"):
        shown["allowed_signers"] = plural.counted(len(effective['allowed_signers'].splitlines()), 'line')
    app.emit(effective, lambda: render.fields_text(shown))


@click.group()
def signer() -> None:
    """The ssh keys that sign authority acts (docs/security.md)."""


@signer.command("add")
@click.argument("identity")
@click.option("--key", "key_file", required=True, type=click.Path(exists=True, dir_okay=False),
              help="IDENTITY's ssh public key (the .pub file), e.g. ~/.ssh/id_ed25519.pub.")
@event_id_option
@pass_app
def signer_add(app: App, identity: str, key_file: str, event_id: Optional[str]) -> None:
    """List IDENTITY's ssh key in the ledger's allowed signers.

    The first key is trusted on first use (nothing vouches for it: check it is theirs) and
    turns signing on: from then on every authority act (gate decisions, overrides, finishing
    gated work, changes to roles, signers or policy) counts only in a commit signed by its
    actor's listed key, and later `signer add`/`remove` are themselves signed.
    """
    text = Path(key_file).read_text("utf-8", errors="replace")
    event, first = app.write(lambda txn: settings.add_signer(txn, identity, text,
                                                            event_id=event_id))
    said = f"listed {settings.Signer(identity, settings.public_key(text)).fingerprint} for {identity}"
    if first:
        said += ("; trusted on first use (nothing vouched for this key: check it is theirs). "
                 "Signing is on: authority acts now count only signed by a listed key")
    app.emit_event(event, said)


@signer.command("remove")
@click.argument("identity")
@event_id_option
@pass_app
def signer_remove(app: App, identity: str, event_id: Optional[str]) -> None:
    """Take IDENTITY's keys off the ledger's allowed signers (a signed change)."""
    event = app.write(lambda txn: settings.remove_signer(txn, identity, event_id=event_id))
    app.emit_event(event, f"removed the keys of {identity}")


@signer.command("list")
@pass_app
def signer_list(app: App) -> None:
    """The listed keys: identity, key type and fingerprint."""
    found = [{"identity": s.identity, "key": s.key, "fingerprint": s.fingerprint}
             for s in settings.signers(settings.effective(app.ledger).get("allowed_signers"))]
    app.emit(found, lambda: "\n".join(
        f"{s['identity']}  {s['key'].split()[0]}  {s['fingerprint']}" for s in found)
        or "no signers listed (git loopx signer add IDENTITY --key KEY.pub)")


@click.command()
@click.option("--message", "-m", help="Commit message for the batch.")
@pass_app
def batch(app: App, message: Optional[str]) -> None:
    """Apply JSON lines of commands from stdin in one commit (all or nothing).

    Each line is a JSON array of arguments, e.g. ["todo", "add", "g-1", "Write tests"].
    Later lines see what earlier lines created.
    """
    from loopx.cli.root import cli  # the root group imports this module: a cycle at import time

    lines = [(n, line) for n, line in enumerate(sys.stdin.read().splitlines(), 1) if line.strip()]
    commands = [_batch_argv(n, line) for n, line in lines]

    def build(txn: Any) -> list[Any]:
        app.batch_txn, app.batch_results = txn, []
        try:
            for (n, _), argv in zip(lines, commands):
                staged = len(txn.events) + len(txn.duplicates)
                try:
                    _run_line(cli, app, argv)
                except click.ClickException as exc:
                    raise UsageError(f"line {n}: {exc.format_message()}") from None
                except LoopxError as exc:
                    raise type(exc)(f"line {n}: {exc}") from None
                if len(txn.events) + len(txn.duplicates) == staged:
                    raise UsageError(f"line {n}: `{' '.join(argv[:2])}` writes nothing; "
                                     "a batch takes write commands only")
            return app.batch_results
        finally:
            app.batch_txn = None

    if not commands:
        raise UsageError("nothing to apply: stdin held no command lines")
    app.ledger.require()
    results, _ = app.ledger.write(build, actor=app.actor, message=message, now=app.now)
    app.emit(results, lambda: "\n".join(
        [f"{r['type']:<20} {r['data'].get('id', '')}  [{r['id']}]" for r in results]
        + [f"applied {plural.counted(len(results), 'command')} in one commit"]))


def _run_line(cli: click.Group, app: App, argv: list[str]) -> None:
    # A line names a command: run it directly rather than through the root group, whose
    # option parsing is nearly half of click's cost per line (issue 2's batch benchmark).
    command = None
    if not argv[0].startswith("-"):
        command = cli.get_command(click.Context(cli, obj=app), argv[0])
    if command is None:  # global options, or an unknown name: the root group explains
        cli.main(args=argv, prog_name="git loopx", standalone_mode=False, obj=app)
    else:
        command.main(args=argv[1:], prog_name=f"git loopx {argv[0]}", standalone_mode=False,
                     obj=app)


def _batch_argv(n: int, line: str) -> list[str]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise UsageError(f"line {n}: not JSON ({exc.msg})") from None
    if isinstance(value, dict):
        value = value.get("argv")
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise UsageError(f'line {n}: expected a JSON array of strings, e.g. ["note", "add", "hi"]')
    if value[0].startswith("-"):
        raise UsageError(f"line {n}: options such as {value[0]} apply to the whole batch "
                         "(`git loopx --actor WHO batch`), not to one line")
    if value[0] in ("batch", "demo", "init", "mcp", "wait", "watch"):
        raise UsageError(f"line {n}: `{value[0]}` cannot run inside a batch")
    return value


@click.group()
def schema() -> None:
    """The JSON Schemas in .loopx-schema/ (generated from the event model)."""


def _project_root(root: Optional[str]) -> Path:
    if root:
        return Path(root)
    return ledgers.work_tree(".") or Path(".")


@schema.command("export")
@click.option("--root", type=click.Path(file_okay=False), help="Where .loopx-schema/ goes.")
@pass_app
def schema_export(app: App, root: Optional[str]) -> None:
    """Write the schema files."""
    written = upkeep.export_schemas(_project_root(root))
    app.emit(written, lambda: "\n".join(f"wrote {p}" for p in written) or "schemas up to date")


@schema.command("check")
@click.option("--root", type=click.Path(file_okay=False), help="Where .loopx-schema/ is.")
@pass_app
def schema_check(app: App, root: Optional[str]) -> None:
    """Fail when the checked-in schema files differ from the model (a check for loopx's own
    sources, and for projects that keep an exported copy)."""
    problems = upkeep.stale_schemas(_project_root(root))
    app.emit({"ok": not problems, "problems": problems},
             lambda: "\n".join(problems) if problems else "schemas up to date")
    if problems:
        raise click.exceptions.Exit(1)


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
    from loopx.cli import demo as story  # the demo's story and its files: only for `demo`

    if story.run(keep=keep, where=where, as_json=app.json):
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
        done = hooking.install_help_viewer(app.cwd if app else ".", everywhere=viewer == "global")
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
    from loopx.cli import completion as scripts  # click's shell classes: only for completion

    root = ctx.find_root().command
    assert isinstance(root, click.Group)
    click.echo(scripts.script(root, shell), nl=False)
