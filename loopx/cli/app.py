"""What every command needs: the ledger (opened lazily), the actor, the output format, and
the few helpers that turn an operation's result into output."""

from __future__ import annotations

import os
import re
import sys
import textwrap
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

import click

from loopx.cli import terminal
from loopx.errors import ArgumentError, LoopxError, UsageError
from loopx.model import clock, limits
from loopx.ops import declare
from loopx.ops.declare import Operation, Param, Values

if TYPE_CHECKING:
    from loopx.ledger.book import Ledger
    from loopx.ledger.txn import Txn
    from loopx.model.events import Event

T = TypeVar("T")


class App:
    """The state of one `git loopx` invocation."""

    def __init__(self, *, cwd: str, actor: Optional[str], state_ref: Optional[str],
                 debug: bool, actor_from: str = "--actor") -> None:
        self.cwd = cwd
        self._actor: Optional[str] = None
        self.named_actor = actor  # --actor or $LOOPX_ACTOR as given, before any default
        self.actor_from = actor_from  # which of the two named it, for the line refusing it
        self.state_ref = state_ref
        self.debug = debug
        self.format = "text"
        self._ledger: Optional[Ledger] = None
        self.now: Optional[datetime] = None

    def close(self) -> None:
        """Let go of the ledger this invocation opened (its long-lived cat-file, its cache's
        database): a command run in-process (tests, a library caller) leaves nothing running."""
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None

    @property
    def ledger(self) -> Ledger:
        if self._ledger is None:
            # Imported on first use: `--version`, `-h` and `hook` on a repository without a
            # ledger never open one (start-up time, measured in benchmarks/).
            from loopx.ops import ledgers

            self._ledger = ledgers.open_ledger(self.cwd, ref=self.state_ref,
                                               report=self.progress_bar())
            self._ledger.time = self.clock  # --now is this clone's clock for first sight too
            for line in self._ledger.notices:
                click.echo(f"loopx: {line}", err=True)
        return self._ledger

    def progress_bar(self) -> Optional[terminal.Bar]:
        """A bar for long work when a person watches: stdout and stderr both a terminal
        and text output (piped, in CI or with --format json, nothing is drawn)."""
        if self.json or not (sys.stdout.isatty() and sys.stderr.isatty()):
            return None
        return terminal.Bar()

    @property
    def actor(self) -> str:
        """Who is acting: --actor, else $LOOPX_ACTOR, else human:<git user.email>."""
        if self._actor:
            return self._actor
        from loopx.ops import ledgers  # on first use (see `ledger`)

        self._actor = ledgers.actor(self.cwd, self.named_actor, named=self.actor_from)
        return self._actor

    def actor_or_none(self) -> Optional[str]:
        """The actor when one can be told (status works for anyone)."""
        try:
            return self.actor
        except LoopxError:
            return None

    @property
    def json(self) -> bool:
        return self.format == "json"

    def clock(self) -> datetime:
        """Now, or the time pinned by --now."""
        return self.now or clock.now()

    def write(self, build: Callable[[Txn], T], *, require: bool = True, sign: bool = False) -> T:
        """Run ``build(txn)`` as one commit."""
        if require:
            self.ledger.require()
        result, _ = self.ledger.write(build, actor=self.actor, now=self.now, sign=sign)
        return result

    def call(self, op: Operation, values: Values) -> Any:
        """Run a declared operation (:mod:`loopx.ops.declare`) as this invocation's actor."""
        call = declare.Call(values, self.ledger, self._actor_once, now=self.now,
                            environ=dict(os.environ), cwd=self.cwd)
        try:
            return op.run(call)
        except ArgumentError as exc:  # as click says it: usage, exit 2
            raise click.UsageError(str(exc)) from None

    def _actor_once(self) -> str:
        return self.actor

    def use_state_ref(self, ref: str) -> None:
        """A command's own --state-ref (a proposal branch); same meaning as the global one."""
        if self._ledger is not None and ref not in (self.state_ref, self._ledger.ref):
            raise UsageError("--state-ref cannot change inside a batch; give it to `batch`")
        self.state_ref = ref

    def emit(self, data: Any, text: Optional[str | Callable[[], str]] = None) -> None:
        """Print ``data`` as JSON, or its text rendering."""
        if self.json:
            click.echo(terminal.json_text(data, indent=2))
        else:
            rendered = text() if callable(text) else text
            if rendered is None:
                rendered = terminal.json_text(data, indent=2)
            if rendered:
                terminal.echo(rendered)

    def emit_event(self, event: Event, text: str) -> None:
        """What a write command prints: one line of text, or the event document as JSON."""
        self.emit(event.to_dict(), f"{text}  [{event.id}]")


def pass_app(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: adds --format/--json/--state-ref to a command and passes the App first."""

    def set_format(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        app = ctx.find_object(App)
        if app is not None and value:
            app.format = "json" if (value is True or value == "json") else app.format
        return value

    def set_state_ref(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        app = ctx.find_object(App)
        if app is not None and value:
            app.use_state_ref(value)
        return value

    fn = click.option("--state-ref", "state_ref_", metavar="REF", expose_value=False,
                      callback=set_state_ref,
                      help="A proposal branch to use instead of loopx/state (forks from it).")(fn)
    fn = click.option("--json", "as_json", is_flag=True, expose_value=False, callback=set_format,
                      help="Alias for --format json.")(fn)
    fn = click.option("--format", "fmt", type=click.Choice(["text", "json"]), expose_value=False,
                      callback=set_format, help="Output format (default text).")(fn)
    return click.pass_obj(fn)


def _event_id(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[str]:
    from loopx.model import ids  # only when an id is given (ids is small and pure)

    if value is not None and not ids.is_event_id(value):
        raise click.BadParameter(f"{value!r} is not {ids.EVENT_ID_RULE}")
    return value


def duration(text: str) -> int:
    """Seconds in a duration like 45m (a click parameter error otherwise). On the command
    line a unit is required: is `--ttl 45` minutes or seconds? (The library takes seconds.)"""
    try:
        found = declare.seconds(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    assert found is not None
    return found


def optional_duration(text: Optional[str]) -> Optional[int]:
    return duration(text) if text else None


def _bounded(p: Param, value: Optional[int]) -> Optional[int]:
    try:
        return declare.bounded(p, value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def declared(op: Operation) -> Callable[[Callable[[App, Values], None]], Callable[..., Any]]:
    """Decorator: the click parameters of ``op``'s declaration (and --format/--json/
    --state-ref), its help, and the body called with the App and the arguments by name."""

    def wrap(body: Callable[[App, Values], None]) -> Callable[..., Any]:
        def command(app: App, **given: Any) -> None:
            body(app, op.values(given))

        command.__name__ = body.__name__
        command.__doc__ = body.__doc__ or "\n\n".join(
            textwrap.fill(part, 92) for part in op.help.split("\n\n"))
        fn = pass_app(command)
        for param in reversed(op.params):
            for make in reversed(_click_params(param)):
                fn = make(fn)
        return fn

    return wrap


def _click_params(p: Param) -> list[Callable[..., Any]]:
    """The click argument or option(s) of a declared parameter (none for lines, stdin, and for
    env, the shell's environment)."""
    if p.kind in ("lines", "env"):
        return []
    if p.positional:
        if p.kind == "argv":
            return [click.argument(p.key, nargs=-1, required=True, type=click.UNPROCESSED,
                                   metavar=p.metavar)]
        return [click.argument(p.key, nargs=-1 if p.many else 1, required=p.required,
                               metavar=p.metavar, type=_click_type(p),
                               callback=_click_callback(p))]
    if p.kind == "switch":
        return [click.option(flag, p.key, flag_value=value, help=help_)
                for flag, value, help_ in p.switches]
    common: dict[str, Any] = {"help": p.help or None, "metavar": p.metavar,
                              "required": p.required, "show_default": p.show_default}
    decls = [d for d in (p.short, p.flag) if d]
    if p.kind == "bool":
        if p.off and p.flag:
            return [click.option(f"{p.flag}/{p.off}", p.key, default=bool(p.default),
                                 help=p.help or None, show_default=p.show_default)]
        if p.off:
            return [click.option(p.off, p.key, flag_value=False, default=True,
                                 help=p.help or None)]
        return [click.option(*decls, p.key, is_flag=True, help=p.help or None)]
    if p.default is not None:
        common["default"] = p.default
    return [click.option(*decls, p.key, multiple=p.many, type=_click_type(p),
                         callback=_click_callback(p), **common)]


def _click_type(p: Param) -> Any:
    if p.kind == "int":
        return click.IntRange(_int(p.lo), _int(p.hi)) if (p.lo, p.hi) != (None, None) else int
    if p.kind == "float":
        return click.FloatRange(p.lo, p.hi) if (p.lo, p.hi) != (None, None) else float
    if p.kind == "choice":
        return click.Choice(p.choices)
    if p.kind == "pair":
        return (str, str)
    if p.kind == "file":
        return click.Path(exists=True, dir_okay=False, allow_dash=True)
    return None


def _int(bound: Optional[float]) -> Optional[int]:
    return None if bound is None else int(bound)


def _click_callback(p: Param) -> Optional[Callable[..., Any]]:
    if p.kind == "duration":
        return lambda ctx, param, value: _bounded(p, optional_duration(value))
    if p.kind == "event_id":
        return _event_id
    if p.kind == "file":
        return lambda ctx, param, value: _read(value)
    # An id given to look up is answered "no todo matches ..."; a new one (--id) is checked.
    if p.pattern and (p.pattern != limits.ID_PATTERN or p.name == "id"):
        return lambda ctx, param, value: _matching(p.pattern or "", param, value)
    return None


def _matching(pattern: str, param: click.Parameter, value: Any) -> Any:
    """``value`` (one or several) when each matches ``pattern``: the event would refuse it
    only after the lookups, naming its own field (``new event: gate.opened: data.authority.0:
    ...``), not the option. Refused as the event is, in one line (exit 1)."""
    for one in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(one, str) and not re.fullmatch(pattern, one):
            means = limits.PATTERN_MEANS.get(pattern, f"of the form {pattern}")
            named = param.opts[0] if isinstance(param, click.Option) else param.human_readable_name
            raise UsageError(f"{named} {one!r} is not {means}")
    return value


def _read(path: Optional[str]) -> Optional[bytes]:
    if path is None:
        return None
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as file:
        return file.read()
