"""One declaration per operation: its name, its parameters (type, bound, default, help, how the
command line spells it, repeatable or not), whether it writes, and what it runs.

Everything an interface needs is derived from these: the CLI's click options
(``loopx.cli.app.declared``), the MCP tools and their input schemas (``loopx.mcp.tools``), the
lines of ``batch`` (:func:`parse`, :mod:`loopx.ops.batch`) and so the CLI reference and the man
page. A parameter, its bound and its help are written once, here or in
:mod:`loopx.model.limits` (the bounds the event models share).

Plain dataclasses and values: a warm read loads this module, so it imports neither click nor
pydantic; :func:`model` builds the pydantic model of an operation's arguments (what MCP and
batch validate with) the first time one is asked for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace as _replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Optional, TypeVar

from loopx.errors import ArgumentError, LoopxError, UsageError
from loopx.model import clock, typed
from loopx.model.limits import ID_PATTERN, LABEL_PATTERN, LABELS_MAX, TEXT_MAX
from loopx.projection import compact

if TYPE_CHECKING:
    from loopx.ledger.book import Ledger
    from loopx.ledger.txn import Txn

T = TypeVar("T")

# The kinds of parameter, and what each is on the command line:
#   text, int, float   a value (--name VALUE, or positional)
#   bool               a flag (--name; with ``off``, a flag that sets it false: --no-ci)
#   duration           45m, 2h30m, 1d (a unit is required); seconds when it reaches the op
#   choice             one of ``choices``
#   switch             one flag per value (--achieved / --abandoned set outcome)
#   pair               two values (--scope CRITERION GLOB)
#   file               a file's path; the op gets its bytes (MCP passes the text itself)
#   argv               the rest of the line after --, unparsed (a command to run)
#   event_id           a ULID (--event-id): a retried write is recorded once
#   lines              command lines (a batch's): JSON lines on stdin, a list of lists in MCP
KINDS = ("text", "int", "float", "bool", "duration", "choice", "switch", "pair", "file", "argv",
         "event_id", "lines", "env")
# ``lines`` are stdin on the command line; ``env`` (NAME to value) is the shell's own environment
# there: both are parameters of MCP and the library, with no click parameter.
NO_FLAGS = ("lines", "env")


@dataclass(frozen=True)
class Param:
    """One parameter of an operation, as every interface takes it."""

    name: str  # the library's, MCP's and batch's name
    kind: str = "text"
    positional: bool = False  # an argument, not an option
    help: str = ""
    flag: Optional[str] = None  # "--after"
    short: Optional[str] = None  # "-n"
    dest: Optional[str] = None  # the click function's argument, when not ``name``
    metavar: Optional[str] = None
    default: Any = None
    required: bool = False
    many: bool = False  # repeatable (a list)
    lo: Optional[float] = None
    hi: Optional[float] = None
    choices: tuple[str, ...] = ()
    switches: tuple[tuple[str, str, str], ...] = ()  # kind switch: (flag, value, help)
    off: Optional[str] = None  # kind bool: the flag that sets it false (--one-shot, --no-ci)
    min_length: Optional[int] = None
    max_length: Optional[int] = None
    max_items: Optional[int] = None
    pattern: Optional[str] = None
    field: Optional[str] = None  # "todo.added:priority": the event field it fills (bounds agree)
    show_default: bool = False
    mcp: bool = True  # False: a parameter of the command line only (--no-pager)

    def __post_init__(self) -> None:
        assert self.kind in KINDS, self.kind
        assert self.kind != "switch" or self.switches, self.name

    @property
    def key(self) -> str:
        """The click function's argument name."""
        return self.dest or self.name

    @property
    def flags(self) -> tuple[str, ...]:
        """Every spelling of it on a command line."""
        if self.positional or self.kind in NO_FLAGS:
            return ()
        if self.kind == "switch":
            return tuple(f for f, _, _ in self.switches)
        return tuple(f for f in (self.flag, self.short, self.off) if f)


def arg(name: str, kind: str = "text", **kw: Any) -> Param:
    """A positional parameter (required unless ``required=False``)."""
    kw.setdefault("required", True)
    return Param(name, kind, positional=True, **kw)


def opt(name: str, kind: str = "text", **kw: Any) -> Param:
    """An option, ``--name`` unless ``flag`` says otherwise."""
    if kind != "switch":
        kw.setdefault("flag", "--" + name.replace("_", "-"))
    if kind == "bool":
        kw.setdefault("default", False)
    return Param(name, kind, **kw)


ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"  # an environment variable's name
REFS_MAX = 200  # ids one argument may list (an event's lists are capped there too)


def ref(name: str, *, positional: bool = False, **kw: Any) -> Param:
    """An id, or a unique prefix of one."""
    kw.setdefault("max_length", 64)
    kw.setdefault("pattern", ID_PATTERN)
    if kw.get("many"):
        kw.setdefault("max_items", REFS_MAX)
    return arg(name, **kw) if positional else opt(name, **kw)


def text(name: str, *, most: int = TEXT_MAX, positional: bool = False, **kw: Any) -> Param:
    """Free text of at most ``most`` characters (a title, a reason, a summary)."""
    kw.setdefault("max_length", most)
    if positional:
        return arg(name, min_length=1, **kw)
    return opt(name, **kw)


# The answers that fit an agent's context (loopx.projection.compact): what asks for more.
DETAIL = opt("detail", "bool", help=(
    "The whole answer: every todo, gate, evidence and action (default: your own work, the top "
    "of the frontier and counts for the rest)."))
LIMIT = opt("limit", "int", lo=1, hi=100_000, metavar="N", help=(
    "At most N items (a page; default: as many as fit an agent's context)."))
OFFSET = opt("offset", "int", lo=0, hi=10_000_000, default=0, metavar="N", help=(
    "Skip the first N items (the next page starts at offset + limit)."))


def paging(what: str, default: int = compact.PAGE) -> tuple[Param, Param]:
    """``--limit`` (``default`` a page: what fits an agent's context) and ``--offset`` of a
    listing of ``what`` answered a page at a time (:func:`page`)."""
    return (_replace(LIMIT, default=default, help=f"At most N {what} (a page; default "
                                                  f"{default}, what fits an agent's context)."),
            OFFSET)


def paged_note(key: str) -> str:
    """What a paged listing's MCP tool says of its answer."""
    return (f"Answers {{{key}: [...], total, next_offset}}: at most `limit` from `offset`; "
            "next_offset is where the next page starts (null on the last).")


def page(items: Sequence[T], values: Values) -> compact.Page[T]:
    """The page of ``items`` that a listing's ``limit`` and ``offset`` (:func:`paging`) ask for."""
    return compact.page(items, limit=values.limit, offset=values.offset)


EVENT_ID = opt("event_id", "event_id", metavar="ULID", help=(
    "Event id to use; retrying with the same id records nothing new."))


def labels(name: str, help: str) -> Param:
    """A repeatable label (area:cli, docs): what `todo list`, `next` and MCP filter by."""
    return opt(name, many=True, metavar="LABEL", pattern=LABEL_PATTERN, max_length=64,
               max_items=LABELS_MAX, help=help)


LABEL_FILTER = labels("label", "Only todos that carry this label (repeatable: every one given).")


class Values(dict[str, Any]):
    """An operation's arguments by name, read as attributes."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass
class Call:
    """What one run of an operation has: its arguments, the ledger, who acts, and, inside a
    batch, the transaction every line writes into."""

    values: Values
    ledger: Ledger
    principal: Callable[[], str]  # who acts (told lazily: reads rarely need it)
    now: Optional[datetime] = None
    txn: Optional[Txn] = None
    environ: Optional[dict[str, str]] = None  # a command run: the environment it runs in
    cwd: Optional[str] = None  # where the call was made (-C PATH)
    quiet: bool = False  # a command's output goes nowhere (MCP: stdout is the protocol)

    def write(self, build: Callable[[Txn], T], *, sign: bool = False) -> T:
        """``build(txn)`` as one commit, or inside the batch being applied."""
        if self.txn is not None:
            self.txn.sign = self.txn.sign or sign
            return build(self.txn)
        self.ledger.require()
        result, _ = self.ledger.write(build, actor=self.who(), now=self.now, sign=sign)
        return result

    def who(self) -> str:
        """Who acts (a LoopxError when that cannot be told)."""
        return self.principal()

    def who_or_none(self) -> Optional[str]:
        """Who acts, when it can be told (status works for anyone)."""
        try:
            return self.principal()
        except LoopxError:
            return None

    def standalone(self, what: str) -> None:
        """Refuse a part of an operation that cannot join a batch's one commit."""
        if self.txn is not None:
            raise UsageError(f"{what} cannot run inside a batch")


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one object per operation
class Operation:
    """A thing a user can do, and every interface's part in it."""

    name: str  # the command's words, "todo add"
    help: str  # the command's help; its first paragraph describes the MCP tool
    run: Callable[[Call], Any]
    params: tuple[Param, ...] = ()
    writes: bool = False  # batch takes it (and MCP marks it as not read-only)
    tool: Optional[str] = ""  # the MCP tool's name ("" derives it: todo_add); None: none
    wrap: Optional[str] = None  # MCP (and any page): a list result is the value of this key
    agent_note: str = ""  # what the MCP description adds for agents (the shape of the result)
    batch: Optional[bool] = None  # None: batch takes it when it writes
    shape: Optional[Callable[[Any], Any]] = None  # the result as a document, when not itself

    @property
    def tool_name(self) -> Optional[str]:
        if self.tool is None:
            return None
        return self.tool or self.name.replace(" ", "_")

    @property
    def in_batch(self) -> bool:
        return self.writes if self.batch is None else self.batch

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    def values(self, given: dict[str, Any]) -> Values:
        """The arguments by name from the click function's keywords (by ``Param.key``)."""
        return Values({p.name: _listed(p, given.get(p.key)) for p in self.params})

    def document(self, result: Any) -> Any:
        """The result as JSON values (what MCP answers, a batch line gives and a listing's
        --format json prints). A page of a listing (:class:`loopx.projection.compact.Page`) is
        ``{wrap: [...], total, next_offset}``: how many there are in all, and the offset of the
        next page (None on the last)."""
        doc = typed.plain(self.shape(result) if self.shape else result)
        if isinstance(result, compact.Page):
            return {self.wrap or "items": doc, "total": result.total,
                    "next_offset": result.next_offset}
        return doc

    def description(self) -> str:
        """What the MCP tool says of itself: the help's first paragraph, the command, and what
        the declaration adds for agents."""
        first = " ".join(self.help.split("\n\n", 1)[0].split())
        note = f" {' '.join(self.agent_note.split())}" if self.agent_note else ""
        return f"{first} (`git loopx {self.name}`).{note}"


def _listed(param: Param, value: Any) -> Any:
    if param.many or param.kind in ("argv", "lines"):
        return list(value or ())
    return value


# --- values -----------------------------------------------------------------------------------


def seconds(value: Any) -> Optional[int]:
    """A duration in seconds: an int is seconds already, a text needs a unit (is `--ttl 45`
    minutes or seconds?); None stays None. ValueError says what to give."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    text = str(value).strip()
    if clock.SECONDS.fullmatch(text) and text.strip("0") and len(text) <= 16:  # 0: any unit
        raise ValueError(f"{text!r} has no unit: say {text}s, {text}m, {text}h or {text}d")
    return int(clock.parse_duration(text).total_seconds())


def bounded(p: Param, value: Optional[int]) -> Optional[int]:
    """``value``, seconds of the duration parameter ``p``, inside ``p``'s bounds (the event
    field's it fills: a ValueError in the units it was given, not the field's seconds)."""
    def shown(s: float) -> str:
        return clock.format_duration(timedelta(seconds=s))

    if value is not None and p.lo is not None and value < p.lo:
        raise ValueError(f"at least {shown(p.lo)}, not {shown(value)}")
    if value is not None and p.hi is not None and value > p.hi:
        raise ValueError(f"at most {shown(p.hi)}, not {shown(value)}")
    return value


# --- batch lines --------------------------------------------------------------------------------


def parse(op: Operation, argv: Sequence[str]) -> dict[str, Any]:
    """A command line's words after the command's name, as raw arguments by name (what
    :func:`validate` then checks): the same options, flags and positionals as the CLI's."""
    by_flag, positional = _spellings(op)
    raw: dict[str, Any] = {}
    words = list(argv)
    rest: list[str] = []
    while words:
        word = words.pop(0)
        if word == "--":
            rest += words
            break
        if not word.startswith("-") or word == "-" or _number(word):
            rest.append(word)
            continue
        spelled, eq, inline = word.partition("=")
        found = by_flag.get(spelled)
        if found is None:
            raise UsageError(f"no such option: {spelled}")
        p = found
        if p.kind == "switch":
            raw[p.name] = {f: v for f, v, _ in p.switches}[spelled]
        elif p.kind == "bool":
            raw[p.name] = spelled != p.off
        else:
            need = 2 if p.kind == "pair" else 1
            taken = [inline] if eq else []
            while len(taken) < need:
                if not words:
                    raise UsageError(f"option {spelled} needs {'two values' if need == 2 else 'a value'}")
                taken.append(words.pop(0))
            value: Any = taken if p.kind == "pair" else taken[0]
            if p.kind == "file":
                value = _contents(spelled, value)
            if p.many:
                raw.setdefault(p.name, []).append(value)
            else:
                raw[p.name] = value
    for p in positional:
        if p.many or p.kind == "argv":
            if rest:
                raw[p.name] = rest
            rest = []
        elif rest:
            raw[p.name] = rest.pop(0)
        elif p.required:
            raise UsageError(f"missing argument {(p.metavar or p.key).upper()}")
    if rest:
        raise UsageError(f"unexpected extra argument {rest[0]!r}")
    return raw


def _contents(spelled: str, path: str) -> str:
    """A file option's file, read as the command line reads it (bytes kept through
    surrogate escapes, for the operation to encode back)."""
    if path == "-":
        raise UsageError(f"{spelled} -: stdin is the batch's own input; give a file")
    try:
        with open(path, "rb") as file:
            return file.read().decode("utf-8", "surrogateescape")
    except OSError as exc:
        raise UsageError(f"{spelled} {path}: {exc.strerror}") from None


@functools.lru_cache(maxsize=None)
def _spellings(op: Operation) -> tuple[dict[str, Param], list[Param]]:
    """Each spelling of ``op``'s options, and its positional parameters in order."""
    return ({spelled: p for p in op.params for spelled in p.flags},
            [p for p in op.params if p.positional])


def _number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


# --- validation (MCP calls and batch lines) ----------------------------------------------------


@functools.lru_cache(maxsize=None)
def model(op: Operation) -> Any:
    """The pydantic model of ``op``'s arguments (``extra="forbid"``): an MCP tool's input
    schema, and what MCP calls and batch lines are validated with. Built on first use."""
    from pydantic import ConfigDict, Field, create_model  # only MCP and batch validate this way

    fields: dict[str, Any] = {}
    for p in op.params:
        if not p.mcp:
            continue
        kind, default = _annotation(p), _default(p)
        extra: dict[str, Any] = {"description": _argument_help(p) or None}
        if p.many or p.kind in ("argv", "lines"):
            extra["max_length"] = p.max_items
            if p.kind in ("argv", "lines"):
                extra["min_length"] = 1
        if p.required:
            fields[p.name] = (kind, Field(**extra))
        elif p.kind == "bool":
            fields[p.name] = (bool, Field(default=default, **extra))
        elif isinstance(default, (list, dict)):
            fields[p.name] = (kind, Field(default_factory=type(default), **extra))
        else:
            fields[p.name] = (Optional[kind], Field(default=default, **extra))
    name = "".join(w.capitalize() for w in op.name.replace("-", " ").split()) + "Args"
    return create_model(name, __config__=ConfigDict(extra="forbid"), **fields)


def _argument_help(p: Param) -> str:
    """``p``'s help as an argument (MCP, batch): a flag that only turns a thing off (--no-ci,
    "Do not ask CI about HEAD.") is, as an argument, the thing itself (``ci``, true unless
    given), so its help says what false does; read as it is, it said the opposite."""
    if p.kind == "bool" and p.off and not p.flag and p.help:
        return f"False: {p.help[0].lower()}{p.help[1:]}"
    return p.help


def _default(p: Param) -> Any:
    if p.kind == "env":
        return {}
    if p.many or p.kind in ("argv", "lines"):
        return []
    if p.kind == "bool":
        return bool(p.default)
    return p.default


def _annotation(p: Param) -> Any:
    from typing import Annotated, Literal, Union

    from pydantic import Field

    scalar: Any
    if p.kind in ("int", "float"):
        scalar = Annotated[int if p.kind == "int" else float, Field(ge=p.lo, le=p.hi)]
    elif p.kind == "bool":
        scalar = bool
    elif p.kind == "duration":
        scalar = Annotated[Union[int, str], Field(
            description="seconds, or a duration like 45m, 2h30m, 1d")]
    elif p.kind in ("choice", "switch"):
        # Sorted: typing takes Literals of the same values in any order as equal, and pydantic
        # gives an equal type the schema it built first, so the order of an MCP tool's enum
        # hung on which model a process happened to build first.
        scalar = Literal[tuple(sorted(p.choices or (v for _, v, _ in p.switches)))]
    elif p.kind == "pair":
        scalar = tuple[str, str]
    elif p.kind == "lines":
        scalar = Annotated[list[Annotated[str, Field(max_length=TEXT_MAX)]], Field(
            min_length=1, max_length=500)]
    elif p.kind == "env":
        return Annotated[dict[Annotated[str, Field(pattern=ENV_NAME)],
                              Annotated[str, Field(max_length=p.max_length)]],
                         Field(max_length=p.max_items)]
    elif p.kind == "event_id":
        from loopx.model.ids import ULID_RE

        scalar = Annotated[str, Field(pattern=ULID_RE.pattern)]
    else:  # text, file (its text), argv (each word)
        scalar = Annotated[str, Field(min_length=p.min_length, max_length=p.max_length,
                                      pattern=p.pattern)]
    return list[scalar] if (p.many or p.kind in ("argv", "lines")) else scalar


def validate(op: Operation, raw: dict[str, Any], *, what: Optional[str] = None) -> Values:
    """``raw`` checked against ``op``'s model: the arguments by name (durations in seconds,
    every parameter present). UsageError names each problem."""
    from pydantic import ValidationError  # loaded with the model

    from loopx.model.events import describe_error  # loads pydantic too: only here

    try:
        checked = model(op).model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(describe_error(e) if e["loc"] else f"arguments: {e['msg']}"
                             for e in exc.errors(include_url=False)[:5])
        raise ArgumentError(f"invalid arguments for {what or op.name}: {problems}") from None
    values = Values({p.name: getattr(checked, p.name, _default(p)) for p in op.params})
    for p in op.params:
        if p.kind == "duration" and values[p.name] is not None:
            try:
                values[p.name] = bounded(p, seconds(values[p.name]))
            except ValueError as exc:
                raise ArgumentError(f"{p.name}: {exc}") from None
        if p.kind == "pair":
            values[p.name] = [tuple(v) for v in values[p.name]]
    return values


