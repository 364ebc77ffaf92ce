"""The event model: the envelope and one typed payload per event type. Pure (no git, no I/O).

Every event is one immutable YAML file. Its ``type`` names a payload model (one module per
family of types in :mod:`loopx.model.payloads`); ``v`` is the version of that payload's
schema. A type (or version) this loopx does not know is kept as an :class:`UnknownEvent` and
reported, never dropped (a newer loopx may have written it).
"""

from __future__ import annotations

import functools
import importlib
import re
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, Optional

from pydantic import Field, ValidationError, create_model, field_validator
from typing_extensions import TypeVar

from loopx.errors import SchemaError
from loopx.model import inert
from loopx.model.ids import ULID_RE, EVENT_ID_RULE, EventId, is_dated
from loopx.model.limits import PATTERN_MEANS
from loopx.model.paths import file_path
from loopx.model.payloads.base import (
    ACTOR_PATTERN, ID_PATTERN, MAX_CLOCK, OID_PATTERN, ONE_LINE, TS_PATTERN, Model,
)

if TYPE_CHECKING:  # the payload models, for annotations (at run time: __getattr__ below)
    from loopx.model.payloads.effect_events import (EffectConfirmed, EffectFailed,
                                                    EffectIntended)
    from loopx.model.payloads.evidence_events import EvidenceRecorded, EvidenceRemapped
    from loopx.model.payloads.gate_events import GateAnswered, GateOpened, GateWithdrawn
    from loopx.model.payloads.goal_events import (Criterion, CriterionScope, GoalClosed,
                                                  GoalCreated, GoalUpdated)
    from loopx.model.payloads.ledger_events import ConfigSet, LedgerInitialised
    from loopx.model.payloads.note_events import NoteAdded, NoticeDismissed
    from loopx.model.payloads.quota_events import QuotaSet, QuotaSpent
    from loopx.model.payloads.session_events import (
        SessionAcked, SessionCheckpointed, SessionClosed, SessionInterjected, SessionOpened,
        SessionProgress, SessionResponded, Transcript, TranscriptChunk, Workspace)
    from loopx.model.payloads.todo_events import (
        TodoAcked, TodoAdded, TodoAssigned, TodoBlocked, TodoCancelled, TodoClaimed, TodoDone,
        TodoHandedOff, TodoReleased, TodoRenewed, TodoReopened, TodoUpdated)
    from loopx.model.payloads.wake_events import WakeCleared, WakeFired, WakeSet

__all__ = [
    "ACTOR_PATTERN", "ADDED_IN", "EVENT_TYPES", "Envelope", "Event", "ID_PATTERN", "Model",
    "OID_PATTERN", "RETRY_VOLATILE", "TS_PATTERN", "VERBATIM_TEXT", "event_path", "free_text",
    "one_line", "one_line_rule",
    "make_event", "parse_event",
    "ConfigSet", "Criterion", "CriterionScope", "EffectConfirmed", "EffectFailed",
    "EffectIntended", "EvidenceRecorded", "EvidenceRemapped", "GateAnswered", "GateOpened",
    "GateWithdrawn", "GoalClosed", "GoalCreated", "GoalUpdated", "LedgerInitialised",
    "NoteAdded", "NoticeDismissed", "QuotaSet", "QuotaSpent", "SessionAcked",
    "SessionCheckpointed", "SessionClosed", "SessionInterjected", "SessionOpened",
    "SessionProgress", "SessionResponded", "TodoAcked", "TodoAdded", "TodoAssigned",
    "TodoBlocked", "TodoHandedOff",
    "TodoCancelled", "TodoClaimed", "TodoDone", "TodoReleased", "TodoRenewed", "TodoReopened",
    "TodoUpdated", "Transcript", "TranscriptChunk", "WakeCleared", "WakeFired", "WakeSet",
    "Workspace",
]


# type name -> (payload model, version). Events are written at the version listed; the rules of
# an event's own version judge it on replay (projection/checks.py), so a ledger written before a rule
# was tightened keeps its meaning. A model is imported (built) the first time its type is
# looked up: a command pays for the models of the events it touches, not the catalogue.
_CATALOGUE: dict[str, tuple[str, str, int]] = {
    "ledger.initialised": ("ledger_events", "LedgerInitialised", 1),
    "config.set": ("ledger_events", "ConfigSet", 3),
    "goal.created": ("goal_events", "GoalCreated", 3),
    "goal.updated": ("goal_events", "GoalUpdated", 3),
    "goal.closed": ("goal_events", "GoalClosed", 2),
    "todo.added": ("todo_events", "TodoAdded", 3),
    "todo.updated": ("todo_events", "TodoUpdated", 3),
    "todo.claimed": ("todo_events", "TodoClaimed", 3),
    "todo.renewed": ("todo_events", "TodoRenewed", 1),
    "todo.assigned": ("todo_events", "TodoAssigned", 1),
    "todo.handed_off": ("todo_events", "TodoHandedOff", 1),
    "todo.released": ("todo_events", "TodoReleased", 1),
    "todo.done": ("todo_events", "TodoDone", 4),
    "todo.acked": ("todo_events", "TodoAcked", 1),
    "todo.blocked": ("todo_events", "TodoBlocked", 1),
    "todo.reopened": ("todo_events", "TodoReopened", 1),
    "todo.cancelled": ("todo_events", "TodoCancelled", 1),
    "gate.opened": ("gate_events", "GateOpened", 1),
    "gate.answered": ("gate_events", "GateAnswered", 1),
    "gate.withdrawn": ("gate_events", "GateWithdrawn", 1),
    "evidence.recorded": ("evidence_events", "EvidenceRecorded", 2),
    "evidence.remapped": ("evidence_events", "EvidenceRemapped", 1),
    "wake.set": ("wake_events", "WakeSet", 2),
    "wake.cleared": ("wake_events", "WakeCleared", 1),
    "wake.fired": ("wake_events", "WakeFired", 1),
    "quota.set": ("quota_events", "QuotaSet", 1),
    "quota.spent": ("quota_events", "QuotaSpent", 3),
    "effect.intended": ("effect_events", "EffectIntended", 2),
    "effect.confirmed": ("effect_events", "EffectConfirmed", 1),
    "effect.failed": ("effect_events", "EffectFailed", 1),
    "note.added": ("note_events", "NoteAdded", 1),
    "notice.dismissed": ("note_events", "NoticeDismissed", 1),
    "session.opened": ("session_events", "SessionOpened", 1),
    "session.progress": ("session_events", "SessionProgress", 1),
    "session.responded": ("session_events", "SessionResponded", 1),
    "session.interjected": ("session_events", "SessionInterjected", 1),
    "session.checkpointed": ("session_events", "SessionCheckpointed", 1),
    "session.acked": ("session_events", "SessionAcked", 1),
    "session.closed": ("session_events", "SessionClosed", 1),
}


class _Catalogue(Mapping[str, tuple[type[Model], int]]):
    """EVENT_TYPES: type name -> (payload model, version), each model imported on first use."""

    def __init__(self) -> None:
        self._found: dict[str, tuple[type[Model], int]] = {}

    def __getitem__(self, type_name: str) -> tuple[type[Model], int]:
        found = self._found.get(type_name)
        if found is None:  # once per type: replay looks one up per event
            family, name, version = _CATALOGUE[type_name]
            found = self._found[type_name] = (getattr(_family(family), name), version)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(_CATALOGUE)

    def __len__(self) -> int:
        return len(_CATALOGUE)

    def version(self, type_name: str) -> int:
        """The version events of ``type_name`` are written at (imports no model)."""
        return _CATALOGUE[type_name][2]


def _family(name: str) -> types.ModuleType:
    return importlib.import_module(f"loopx.model.payloads.{name}")


EVENT_TYPES = _Catalogue()

# Where each payload model (and the models nested in them) lives, for ``events.<Model>``.
_MODELS = {name: family for family, name, _ in _CATALOGUE.values()} | {
    "Criterion": "goal_events", "CriterionScope": "goal_events", "Workspace": "session_events",
    "Transcript": "session_events", "TranscriptChunk": "session_events"}


def __getattr__(name: str) -> Any:
    """``loopx.model.events.TodoClaimed`` and the like: the payload models, from their family's
    module (loopx.model.payloads), imported on first use."""
    family = _MODELS.get(name)
    if family is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_family(family), name)


# Fields added in a later version of a type ("list[].field": a field of a list's items): an
# event of an earlier version may not carry them.
ADDED_IN: dict[str, dict[str, int]] = {
    "config.set": {"evidence_ignore": 2, "ci_criteria": 2, "evidence_scope": 3},
    "goal.created": {"acceptance[].paths": 2, "links": 3},
    "goal.updated": {"revise": 2, "retire": 2, "scope": 2, "add_acceptance[].paths": 2,
                     "add_links": 3},
    "todo.added": {"priority": 2, "discovered_from": 2, "labels": 3, "links": 3, "needs": 3},
    "todo.updated": {"priority": 2, "add_labels": 3, "remove_labels": 3},
    "todo.claimed": {"branch": 2, "takes": 3},
    "todo.done": {"reason": 2, "takes": 3},
    "evidence.recorded": {"paths": 2, "check": 2, "cwd": 2},
    "quota.spent": {"force": 2, "reason": 2, "host": 3, "exit": 3, "wakes": 3},
    "wake.set": {"every": 2},
    "effect.intended": {"readback": 2, "owner": 2, "grace": 2, "hold": 2},
}

# The top-level fields of each type in ADDED_IN ("list[].field": the list).
_ADDED_FIELDS: dict[str, frozenset[str]] = {
    type_name: frozenset(name.partition("[].")[0] for name in added)
    for type_name, added in ADDED_IN.items()}

# Payload fields the writer derives from its clock (e.g. a lease's expiry from --ttl): a retry
# of the same event id may differ in them and is still the same event.
RETRY_VOLATILE: dict[str, frozenset[str]] = {
    "todo.claimed": frozenset({"until", "takes"}),
    "todo.done": frozenset({"takes"}),
    "todo.renewed": frozenset({"until"}),
    "todo.handed_off": frozenset({"until"}),
    "wake.set": frozenset({"at"}),
    "wake.fired": frozenset({"at", "next"}),
}

# Text fields that hold no free text: public keys that must stay byte-exact to verify
# signatures, a version string, a digest loopx computes itself.
VERBATIM_TEXT: frozenset[tuple[str, str]] = frozenset({
    ("config.set", "allowed_signers"), ("ledger.initialised", "loopx_version"),
    ("evidence.recorded", "digest"),
})


@functools.lru_cache(maxsize=None)
def free_text(type: str) -> tuple[tuple[str, ...], ...]:
    """Where an event of ``type`` holds free text: every string field without a pattern (or
    choices) in its payload and the models nested in it, as key paths (``*`` for each item of
    a list), less VERBATIM_TEXT. Derived from the models, so a new field is covered as soon as
    it exists; secrets in these are redacted before anything is written."""
    known = EVENT_TYPES.get(type)
    if known is None:
        return ()
    return tuple(path for path in _text_paths(known[0], ())
                 if (type, ".".join(path)) not in VERBATIM_TEXT)


@functools.lru_cache(maxsize=None)
def one_line(type: str) -> tuple[tuple[str, ...], ...]:
    """The free-text fields of ``type`` that are shown on one line (a title, a question):
    those marked ``ONE_LINE`` in the models, as key paths like :func:`free_text`'s."""
    known = EVENT_TYPES.get(type)
    return tuple(_text_paths(known[0], (), one_line=True)) if known else ()


def one_line_rule(type: str, data: dict[str, Any]) -> Optional[str]:
    """Why ``data`` may not be written as an event of ``type``: a line break or a control or
    format character in a one-line field (a rule of writing only: see ONE_LINE)."""
    for path in one_line(type):
        for where, text in _strings_at(data, path, "data"):
            found = inert.first_hidden(text)
            if found is not None:
                what = ("a line break" if found in "\r\n\x0b\x0c\x85\u2028\u2029"
                        else "a tab" if found == "\t"
                        else f"U+{ord(found):04X}, a control or format character")
                return (f"{where} is one line of text and holds {what}; put more in a note "
                        "(or a description)")
    return None


def _strings_at(value: Any, path: tuple[str, ...], where: str) -> Iterator[tuple[str, str]]:
    if not path:
        if isinstance(value, str):
            yield where, value
    elif path[0] == "*":
        for n, item in enumerate(value if isinstance(value, list) else []):
            yield from _strings_at(item, path[1:], f"{where}[{n}]")
    elif isinstance(value, dict) and path[0] in value:
        yield from _strings_at(value[path[0]], path[1:], f"{where}.{path[0]}")


def _text_paths(model: type[Model], prefix: tuple[str, ...],
                one_line: bool = False) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []
    for name, info in model.model_fields.items():
        kind = _unwrap(info.annotation)
        args = typing.get_args(kind)
        if kind is str and not any(getattr(m, "pattern", None) for m in info.metadata):
            if not one_line or (info.json_schema_extra or {}) == ONE_LINE:
                paths.append((*prefix, name))
        elif isinstance(kind, type) and issubclass(kind, Model):
            paths += _text_paths(kind, (*prefix, name), one_line)
        elif typing.get_origin(kind) is list and args and isinstance(args[0], type) \
                and issubclass(args[0], Model):
            paths += _text_paths(args[0], (*prefix, name, "*"), one_line)
    return paths


def _unwrap(annotation: Any) -> Any:
    """``X`` for ``Optional[X]``; anything else as is."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return args[0]
    return annotation


TYPE_RE = re.compile(r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$")


class Envelope(Model):
    """The fields every event file carries around its typed ``data``."""

    id: EventId = Field(pattern=ULID_RE.pattern, description="ULID; also the idempotency key")
    type: str = Field(pattern=TYPE_RE.pattern)
    v: int = Field(ge=1, le=10_000, description="schema version of this event type's payload")
    at: str = Field(pattern=TS_PATTERN, description="UTC wall clock, for display only")
    clock: int = Field(ge=1, le=MAX_CLOCK,
                       description="Lamport clock: 1 + the highest clock the writer saw")
    actor: str = Field(pattern=ACTOR_PATTERN)
    goal: Optional[str] = Field(default=None, pattern=ID_PATTERN)
    data: dict[str, Any]

    @field_validator("id")
    @classmethod
    def _dated(cls, value: str) -> str:
        if not is_dated(value):  # (the field's pattern, ULID_RE's, has held: pydantic's
            # regex anchors at the very end, where re's $ would pass a trailing newline too)
            raise ValueError(f"{value!r} is not {EVENT_ID_RULE}")
        return value


# The payload type of an Event: ``Event[TodoClaimed]`` is what `todos.claim` returns; a bare
# ``Event`` is any event, its payload None when the type is unknown.
P = TypeVar("P", bound=Optional["Model"], covariant=True, default=Optional["Model"])


class Event(Generic[P]):
    """A validated event: the envelope plus its typed payload (``None`` when unknown)."""

    __slots__ = ("env", "data")

    def __init__(self, env: Envelope, data: P) -> None:
        self.env = env
        self.data = data

    @property
    def id(self) -> str:
        return self.env.id

    @property
    def type(self) -> str:
        return self.env.type

    @property
    def known(self) -> bool:
        return self.data is not None

    def sort_key(self) -> tuple[int, str]:
        return (self.env.clock, self.env.id)

    def to_dict(self) -> dict[str, Any]:
        """The document as written to its file, in canonical key order."""
        doc: dict[str, Any] = {
            "id": self.env.id, "type": self.env.type, "v": self.env.v, "at": self.env.at,
            "clock": self.env.clock, "actor": self.env.actor,
        }
        if self.env.goal is not None:
            doc["goal"] = self.env.goal
        doc["data"] = (
            self.data.model_dump(mode="json", exclude_none=True)
            if self.data is not None else self.env.data
        )
        return doc


# What a pattern means, for messages a person can act on.
_PATTERN_MEANS = {
    **PATTERN_MEANS,
    TS_PATTERN: "a UTC time like 2026-01-01T12:00:00Z",
    ULID_RE.pattern: "a ULID (26 characters, e.g. 01JD5Z3Q1T8E0000000000ABCD)",
    OID_PATTERN: "a full commit or tree id (40 or 64 hex digits)",
}


def _describe(exc: ValidationError, prefix: tuple[str, ...] = ()) -> str:
    return "; ".join(describe_error(err, prefix) for err in exc.errors()[:5])


def describe_error(err: Any, prefix: tuple[str, ...] = ()) -> str:
    """One of pydantic's errors as a person reads it: ``data.title is empty``, not "String
    should have at least 1 character"; a pattern by what it means."""
    where = ".".join(str(p) for p in (*prefix, *err["loc"])) or "document"
    ctx = err.get("ctx") or {}
    means = _PATTERN_MEANS.get(ctx.get("pattern", ""))
    if err["type"] == "string_pattern_mismatch" and means:
        return f"{where}: {err['input']!r} is not {means}"
    if err["type"] == "string_too_short" and ctx.get("min_length") == 1:
        return f"{where} is empty"
    return f"{where}: {err['msg']}"


def parse_event(doc: Any, name: str = "<event>", *, owned: bool = False) -> Event:
    """Validate a loaded document into an Event; raise SchemaError naming ``name``.

    An event of a known type and version is validated once, envelope and payload together
    (:func:`_in_one_step`); a document that refuses is judged again in the two steps
    (envelope, then payload) whose messages say what is wrong, so both paths accept and
    refuse the same documents, with the same words (tests/model/test_one_step.py).
    ``owned``: the caller gives ``doc`` away (a document just read from a file), so the
    event keeps its ``data`` rather than a copy."""
    if not isinstance(doc, dict):
        raise SchemaError(f"{name}: an event file must hold a mapping")
    found = _in_one_step(doc, owned)
    if found is None:
        return _in_two_steps(doc, name)
    return _checked(found[0], found[0].payload, found[1], name)


def _in_one_step(doc: dict[Any, Any], owned: bool = False) -> Optional[tuple[_Whole, int]]:
    """``doc`` validated once by its type's :class:`_Whole` model, with the version of its
    type; None when no such model applies (a type or version this loopx does not know, values
    the envelope would convert) or it refuses ``doc`` (then the two steps say why)."""
    type_name, v, data = doc.get("type"), doc.get("v"), doc.get("data")
    if type(type_name) is not str or type(v) is not int or type(data) is not dict:
        return None
    known = _WHOLE.get(type_name) or _whole(type_name)
    if known is None or v > known[1]:
        return None
    try:  # (``data`` copied unless owned, as validating the envelope's dict[str, Any] did)
        return known[0](doc if owned else {**doc, "data": data.copy()}), known[1]
    except ValidationError:
        return None


class _Whole(Envelope):
    """An Envelope that also holds its ``data`` validated by the payload model of its type
    (one subclass per type, :func:`_whole`): envelope and payload in one validation. Its
    ``data`` is taken as it is (a dict, :func:`_in_one_step` has checked, whose keys the
    payload model checks are strings): validating it as ``dict[str, Any]`` too was a sixth
    of the validation."""

    data: Any
    payload: Model = Field(validation_alias="data", exclude=True)


# type name -> (its _Whole model's validation, the version its events are written at), built
# on first use. The validation is what ``model_validate`` calls with its defaults, taken once
# per type (replay validates one event per file).
_WHOLE: dict[str, tuple[Callable[[object], _Whole], int]] = {}


def _whole(type_name: str) -> Optional[tuple[Callable[[object], _Whole], int]]:
    known = EVENT_TYPES.get(type_name)
    if known is None:
        return None
    model = create_model(f"{known[0].__name__}Event", __base__=_Whole, __module__=__name__,
                         payload=(known[0], Field(validation_alias="data", exclude=True)))
    found = _WHOLE[type_name] = (model.__pydantic_validator__.validate_python, known[1])
    return found


def _in_two_steps(doc: dict[Any, Any], name: str) -> Event:
    """The envelope validated, then the payload of its type: what :func:`_in_one_step` does
    at once, and what names the fields of a document it refuses."""
    try:
        env = Envelope.model_validate(doc)
    except ValidationError as exc:
        raise SchemaError(f"{name}: {_describe(exc)}") from None
    known = EVENT_TYPES.get(env.type)
    if known is None or env.v > known[1]:
        return Event(env, None)  # from a newer loopx: kept and reported
    try:
        data = known[0].model_validate(env.data)
    except ValidationError as exc:
        raise SchemaError(f"{name}: {env.type}: {_describe(exc, ('data',))}") from None
    return _checked(env, data, known[1], name)


def _checked(env: Envelope, data: Model, version: int, name: str) -> Event:
    """The event, unless its payload carries a field added after the event's version (the
    type's current one being ``version``)."""
    newer = _newer_fields(env.type, env.v, data) if env.v < version else []
    if newer:
        raise SchemaError(f"{name}: {env.type} v{env.v} cannot carry data.{newer[0]} "
                          f"(added in v{ADDED_IN[env.type][newer[0]]})")
    return Event(env, data)


def _newer_fields(type_name: str, version: int, data: Model) -> list[str]:
    """Fields of ``data`` that its event's version does not have yet."""
    given = data.model_fields_set
    if given.isdisjoint(_ADDED_FIELDS.get(type_name, ())):
        return []  # the common case: none of the added fields was given
    found = []
    for name, since in ADDED_IN.get(type_name, {}).items():
        field, _, item_field = name.partition("[].")
        if since <= version or field not in given:
            continue
        value = getattr(data, field)
        if (any(getattr(item, item_field) is not None for item in value) if item_field
                else value is not None):
            found.append(name)
    return found


def make_event(
    *, type: str, data: dict[str, Any], event_id: str, at: str, clock: int, actor: str,
    goal: Optional[str] = None,
) -> Event:
    """Build and validate a new event for writing (one-line fields hold one line)."""
    doc: dict[str, Any] = {"id": event_id, "type": type, "v": EVENT_TYPES.version(type), "at": at,
                           "clock": clock, "actor": actor, "data": data}
    if goal is not None:
        doc["goal"] = goal
    event = parse_event(doc, "new event")
    broken = one_line_rule(type, data)
    if broken is not None:
        raise SchemaError(f"new event: {type}: {broken}")
    return event


def event_path(event: Event) -> str:
    """``events/YYYY/MM/DD/<id>.<type>.yaml``."""
    return file_path(event.env.id, event.env.type)


