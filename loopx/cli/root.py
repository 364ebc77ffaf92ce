"""`git loopx`: the root command group, and :func:`main`, which maps errors to exit codes.

Exit codes: 0 ok, 1 a user error (one clear line), 2 usage, 3 unexpected (rerun with --debug).
Each command group lives in its own module and is registered in ``_GROUPS`` below.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import sys
from datetime import datetime
from typing import Optional

import click

from loopx.version import __version__
from loopx.cli import terminal
from loopx.cli.app import App
from loopx.errors import GitError, LoopxError, describe, refused_write
from loopx.model import inert

# (module, attribute) of each command or group, imported when the CLI starts.
_GROUPS = [
    ("loopx.cli.core", "init"),
    ("loopx.cli.config", "config"),
    ("loopx.cli.goal", "goal"),
    ("loopx.cli.todo", "todo"),
    ("loopx.cli.gate", "gate"),
    ("loopx.cli.evidence", "evidence_"), ("loopx.cli.evidence", "ci"),
    ("loopx.cli.wake", "wake"),
    ("loopx.cli.quota", "quota"),
    ("loopx.cli.effect", "effect"),
    ("loopx.cli.note", "note"), ("loopx.cli.note", "notice"),
    ("loopx.cli.session", "session"),
    ("loopx.cli.hooks", "hooks_"), ("loopx.cli.hooks", "hook"), ("loopx.cli.evidence", "run"),
    ("loopx.cli.evidence", "rerun"),
    ("loopx.cli.status", "status_"),
    ("loopx.cli.status", "next_"),
    ("loopx.cli.status", "brief"),
    ("loopx.cli.status", "prime"),
    ("loopx.cli.waiting", "wait"), ("loopx.cli.waiting", "watch"),
    ("loopx.cli.serve", "mcp"),
    ("loopx.cli.web", "web"),
    ("loopx.cli.server", "server"),
    ("loopx.cli.notify", "notify_"),
    ("loopx.cli.setup", "setup_"),
    ("loopx.cli.review", "log"), ("loopx.cli.review", "diff"), ("loopx.cli.review", "validate_"),
    ("loopx.cli.config", "signer"),
    ("loopx.cli.core", "batch"),
    ("loopx.cli.upkeep", "schema"),
    ("loopx.cli.core", "demo"),
    ("loopx.cli.sync", "sync_"), ("loopx.cli.sync", "fetch"), ("loopx.cli.sync", "push"),
    ("loopx.cli.upkeep", "doctor"), ("loopx.cli.upkeep", "checkpoint"),
    ("loopx.cli.core", "help_"), ("loopx.cli.core", "completion"),
]

# The commands that are not a declared operation (loopx.ops.catalog: their options, MCP tool and
# batch line are derived), each with why: the command line's own. tests/cli/test_root.py walks
# the click tree and fails on a command that is neither, or on this list naming one that is
# declared or gone.
CLI_ONLY = {
    "init": "starts the ledger and sets up this clone's git (its help viewer): what every "
            "other interface needs to exist first",
    "hooks install": "installs files in the hooks folder git uses (.git/hooks)",
    "hooks uninstall": "removes loopx's files from the hooks folder git uses",
    "hooks status": "reads the hooks folder git uses, not the ledger",
    "hooks queue": "reads this clone's hook queue (.git/loopx/), which git hooks fill",
    "hooks drain": "applies this clone's hook queue: what post-commit starts in the background",
    "hook": "what the installed git hook shims run, with git's own hook arguments",
    "ci record": "a CI job's step: records the provider's finished checks for HEAD with the "
                 "job's credentials (agents read CI through status)",
    "doctor": "examines and repairs the state branch's objects, reflog and locks beneath the "
              "ledger, which a declared operation needs whole to open",
    "checkpoint": "upkeep of a derived form: writes commit checkpoints on their own",
    "schema export": "writes the generated .loopx-schema/ files into the work tree (a build "
                     "step)",
    "schema check": "compares the work tree's .loopx-schema/ files with the model (a CI step)",
    "setup": "writes an agent tool's own config files (.mcp.json, .codex/, ...) in the work tree",
    "wait": "runs in the foreground until a wake is due, a gate is answered or the state "
            "changes (its exit code says which)",
    "watch": "runs in the foreground for as long as it is let, starting a command or an agent "
             "CLI at each wake",
    "mcp": "starts the MCP server on stdio (its tools are the declared operations)",
    "web": "starts a web server on 127.0.0.1 and runs until stopped",
    "server start": "starts this repository's command server and returns (loopx/cli/server.py)",
    "server stop": "stops the command server: a process, not the ledger",
    "server status": "tells whether a command server runs here: a process, not the ledger",
    "demo": "builds a throwaway repository and plays a story of real commands in it",
    "help": "prints the command line's own help (the man page, or -h's text)",
    "completion": "prints a shell's completion script for the command line",
}

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class LoopxGroup(click.Group):
    """Loads command modules lazily and keeps `git loopx help CMD` working."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        # Import only the module that defines `name` when its attribute says so: a git hook
        # runs loopx on every commit and should not import every command module.
        for module, attr in _GROUPS:
            if attr.rstrip("_") == name and name not in self.commands:
                self.add_command(getattr(importlib.import_module(module), attr))
        if name not in self.commands:
            self._load()
        return super().get_command(ctx, name)

    def _load(self) -> None:
        if getattr(self, "_loaded", False):
            return
        self._loaded = True
        for module, attr in _GROUPS:
            self.add_command(getattr(importlib.import_module(module), attr))


@click.group(cls=LoopxGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "--version", prog_name="git-loopx")
@click.option("-C", "cwd", default=".", metavar="PATH", help="Run as if started in PATH.")
@click.option("--actor", envvar="LOOPX_ACTOR", help="Who is acting, e.g. agent:codex@devbox "
              "(default: $LOOPX_ACTOR, else human:<git user.email>).")
@click.option("--state-ref", envvar="LOOPX_STATE_REF", metavar="REF",
              help="Read and write this state branch instead of loopx/state (for proposals).")
@click.option("--debug", is_flag=True, envvar="LOOPX_DEBUG", help="Log git calls; show tracebacks.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default=None,
              help="Output format (default text); also taken after the command.")
@click.option("--json", "as_json", is_flag=True, help="Alias for --format json.")
# Hidden: pins "now" (RFC 3339) for tests and scripted histories, e.g. the session reaper.
@click.option("--now", "now_text", envvar="LOOPX_NOW", hidden=True, metavar="TIME")
@click.pass_context
def cli(ctx: click.Context, cwd: str, actor: Optional[str], state_ref: Optional[str], debug: bool,
        fmt: Optional[str], as_json: bool, now_text: Optional[str]) -> None:
    """loopx: durable goals, todos, gates and evidence for long-running agent work.

    State lives in this repository on refs/heads/loopx/state as one YAML file per event.
    Start with `git loopx init`, or try `git loopx demo`.
    """
    if debug:
        from loopx.storage import gateway  # only under --debug

        gateway.DEBUG = True
    if ctx.obj is None:  # a caller may pass its own App (click's obj)
        from_env = ctx.get_parameter_source("actor") == click.core.ParameterSource.ENVIRONMENT
        ctx.obj = App(cwd=cwd, actor=actor, state_ref=state_ref, debug=debug,
                      actor_from="$LOOPX_ACTOR" if from_env else "--actor")
        ctx.call_on_close(ctx.obj.close)  # (ours to close: a caller's App is the caller's)
        ctx.obj.now = _parse_now(now_text) if now_text else None
        if as_json or fmt == "json":
            ctx.obj.format = "json"


def _parse_now(text: str) -> datetime:
    from loopx.model import clock  # only under --now

    try:
        pinned = clock.parse_ts(text)
    except ValueError:
        raise click.BadParameter(f"not an RFC 3339 time: {text!r}", param_hint="--now") from None
    if pinned in (clock.EARLIEST, clock.LATEST):  # (held there: it was that or beyond)
        raise click.BadParameter(
            f"{text!r} must be after {clock.format_ts(clock.EARLIEST)} and before "
            f"{clock.format_ts(clock.LATEST)}, the times loopx holds (it would be recorded "
            "as the nearer of them)", param_hint="--now")
    return pinned


def main(argv: Optional[list[str]] = None) -> None:
    """Console entry point: maps errors to exit codes (and to JSON on stdout with --json)."""
    args = argv if argv is not None else sys.argv[1:]
    debug = "--debug" in args or bool(os.environ.get("LOOPX_DEBUG"))
    as_json = "--json" in args or "--format=json" in args or any(
        a == "--format" and b == "json" for a, b in zip(args, args[1:]))
    global _PUBLISHED_BEFORE
    _PUBLISHED_BEFORE = _published()
    try:
        code = _run_once_more_on_cache_trouble(argv)
        if isinstance(code, int) and code:  # click returns Exit(n)'s code when not standalone
            sys.exit(code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        if as_json:
            _json_error(1, "aborted", "Abort")
        sys.exit(1)
    except click.ClickException as raised:
        exc = _hint_global_option(raised)
        if as_json:
            _json_error(exc.exit_code, exc.format_message(), type(exc).__name__)
        shown = io.StringIO()  # click repeats the offending input: made safe like all output
        exc.show(file=shown)
        terminal.echo("".join(inert.bounded(line) for line in shown.getvalue().splitlines(True)),
                      err=True, nl=False)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except GitError as exc:
        hint = exc.stderr if debug else "hint: rerun with --debug for details"
        _fail(*describe(exc), as_json, None if refused_write(exc) else hint)
    except LoopxError as exc:
        _fail(*describe(exc), as_json)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # the safety net: never a bare traceback for users
        if debug:
            import traceback  # only under --debug

            traceback.print_exc()
        _fail(*describe(exc), as_json,
              None if refused_write(exc) else "hint: rerun with --debug and report the traceback")


def _run_once_more_on_cache_trouble(argv: Optional[list[str]]) -> object:
    """Run the command; if the cache failed a read the ledger could not retry itself (a
    table a view read on demand) and nothing was written, run it again on a rebuilt or
    in-memory cache. Derived data is never required (docs/reliability.md)."""
    loaded = sys.modules.get("loopx.ledger.book")  # a process that ran commands before
    published = getattr(loaded, "published", 0)
    rows_module = sys.modules.get("loopx.ledger.rows")
    if rows_module is not None:
        rows_module.OPENED.clear()
    try:
        return cli.main(args=argv, prog_name=_prog_name(), standalone_mode=False,
                        complete_var=COMPLETE_VAR)
    except Exception as exc:
        from loopx.ledger import book, cache  # loaded already: a ledger was open

        if not cache.is_cache_error(exc):
            raise
        from loopx.ledger import rows  # sqlite3 is loaded: it raised ``exc``

        for line in rows.trouble_all(exc):
            terminal.echo(line, err=True)
        if book.published != published:
            raise LoopxError(f"the cache failed after this command's write was recorded "
                             f"({exc}); it is rebuilt by the next command") from None
        return cli.main(args=argv, prog_name=_prog_name(), standalone_mode=False,
                        complete_var=COMPLETE_VAR)


# Options of `git loopx` itself: given after a command's name they are not that command's.
_GLOBAL_OPTIONS = ("-C", "--actor", "--debug", "--now")


# Shell completion runs as `git-loopx` (see cli/completion.py): "git loopx" has a space.
COMPLETE_VAR = "_GIT_LOOPX_COMPLETE"


def _prog_name() -> str:
    if os.environ.get(COMPLETE_VAR):
        from loopx.cli import completion  # registers the shells' classes: only when completing

        return completion.PROG
    return "git loopx"


def _hint_global_option(exc: click.ClickException) -> click.ClickException:
    """`git loopx todo claim t --actor X`: say where --actor goes instead of "No such option"."""
    if not (isinstance(exc, click.NoSuchOption) and exc.option_name in _GLOBAL_OPTIONS):
        return exc
    path = exc.ctx.command_path.removeprefix("git loopx").strip() if exc.ctx else ""
    return click.UsageError(
        f"{exc.option_name} is an option of `git loopx` itself: put it before the command, "
        f"e.g. `git loopx {exc.option_name} ... {path or 'COMMAND'} ...`", ctx=exc.ctx)


_PUBLISHED_BEFORE = 0  # the ledger's count of published writes when this command started


def _published() -> int:
    loaded = sys.modules.get("loopx.ledger.book")  # not loaded: nothing was written
    return int(getattr(loaded, "published", 0))


def _fail(kind: str, message: str, code: int, as_json: bool, hint: Optional[str] = None) -> None:
    """One clear line on stderr (plus a hint); with --json also a JSON error on stdout."""
    if message.endswith("; nothing was changed") and _published() != _PUBLISHED_BEFORE:
        # The write was recorded and then printing its answer failed (stdout a file on a
        # full disk): "nothing was changed" would have the user write it again.
        message = (f"{message.removesuffix('; nothing was changed')}, after this command's "
                   "write was recorded (`git loopx log` shows it)")
    terminal.echo(f"error: {inert.bounded(inert.line(message))}", err=True)  # (quoting a title)
    if hint:
        terminal.echo(hint, err=True)
    if as_json:
        _json_error(code, message, kind)
    sys.exit(code)


def _json_error(code: int, message: str, kind: str) -> None:
    with contextlib.suppress(OSError):  # stdout may be what failed: stderr has said it
        click.echo(terminal.json_text({"error": {"message": inert.bounded(message), "kind": kind,
                                                 "exit_code": code}}))
