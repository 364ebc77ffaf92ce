"""The event model: the envelope and one typed payload per event type. Pure (no git, no I/O).

Every event is one immutable YAML file. Its ``type`` names a payload model below; ``v`` is the
version of that payload's schema. A type (or version) this loopx does not know is kept as an
:class:`UnknownEvent` and reported, never dropped (a newer loopx may have written it).
"""

from __future__ import annotations

import functools
import re
import types
import typing
from typing import Annotated, Any, Generic, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from typing_extensions import TypeVar

from loopx.errors import SchemaError
from loopx.model.globs import GLOB_PATTERN, MAX_GLOBS
from loopx.model.ids import ENTITY_ID_RE, EVENT_ID_RULE, ULID_RE, EventId, is_event_id
from loopx.model.paths import (  # noqa: F401 - re-exported: where events live
    PATH_RE, SESSION_FILE_RE, file_path, TRANSCRIPT_CHUNK_BYTES, TRANSCRIPT_MAX_BYTES, event_dir,
    transcript_chunk_path,
)

TS_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$"
ACTOR_PATTERN = r"^[a-z][a-z0-9_-]{0,31}:\S{1,200}$"
ID_PATTERN = ENTITY_ID_RE.pattern
OID_PATTERN = r"^[0-9a-f]{40}([0-9a-f]{24})?$"
REF_PATTERN = r"^refs/[^\x00-\x20\x7f~^:?*\[\\]{1,1000}$"
CHECK_PATTERN = r"^[^\x00-\x1f]{1,200}$"  # a CI check's name, as the provider reports it
_ID = ENTITY_ID_RE.pattern.strip("^$")
CRITERION_REF_PATTERN = f"^{_ID}:{_ID}$"  # GOAL:CRITERION

# An actor (human:alice@example.com, agent:codex@devbox) or a role (role:maintainer).
Identity = Annotated[str, Field(pattern=ACTOR_PATTERN)]
EntityId = Field(pattern=ID_PATTERN)
Text = Field(min_length=1, max_length=20_000)
# A scope: globs of paths from the top of the repository (loopx.model.globs says how they match).
Glob = Annotated[str, Field(pattern=GLOB_PATTERN)]
Globs = Field(default=None, max_length=MAX_GLOBS,
              description="path globs (docs/**, src/**/*.py); none: the whole tree")


# Bounds of the numbers events carry. Every numeric field has both ends, and floats must be
# finite: a value from another clone is data, and no data may stop a clone from writing.
MAX_CLOCK = 2**53 - 1  # exact in JSON readers that hold numbers as doubles
MAX_COUNT = 10**15  # turns and tokens
MAX_COST = 1e12
MAX_SECONDS = 10 * 366 * 86400  # ten years
MIN_EXIT, MAX_EXIT = -(2**31), 2**32 - 1  # signed POSIX statuses, unsigned Windows ones


class Model(BaseModel):
    # defer_build: only the payload models a command touches pay their schema build cost.
    model_config = ConfigDict(extra="forbid", defer_build=True, frozen=True, allow_inf_nan=False)


class Criterion(Model):
    """An acceptance criterion of a goal."""

    id: str = Field(pattern=ID_PATTERN)
    text: str = Text
    paths: Optional[list[Glob]] = Globs


class CriterionScope(Model):
    """The paths a criterion's evidence is judged on (an empty list: the whole tree)."""

    id: str = Field(pattern=ID_PATTERN)
    paths: list[Glob] = Field(max_length=MAX_GLOBS)


# --- ledger and config -----------------------------------------------------------------------


class LedgerInitialised(Model):
    """The first event of a ledger."""

    name: Optional[str] = Field(default=None, max_length=200)
    loopx_version: str = Field(max_length=40)


class ConfigSet(Model):
    """Ledger-wide settings; each field given replaces the previous value."""

    roles: Optional[dict[Annotated[str, Field(pattern=ID_PATTERN)], list[Identity]]] = Field(
        default=None, description="role name -> actor identities, e.g. maintainer: [human:a@x]"
    )
    lease_ttl_seconds: Optional[int] = Field(default=None, ge=10, le=30 * 86400)
    session_slots: Optional[int] = Field(default=None, ge=1, le=10_000)
    session_idle_seconds: Optional[int] = Field(default=None, ge=60, le=MAX_SECONDS)
    signed_answers: Optional[Literal["off", "all"] | list[str]] = Field(
        default=None, description="'all', 'off', or the gate ids whose answers must be signed"
    )
    allowed_signers: Optional[str] = Field(
        default=None, max_length=200_000, description="ssh allowed_signers text for signed answers"
    )
    evidence_ignore: Optional[list[Glob]] = Field(
        default=None, max_length=MAX_GLOBS,
        description="paths whose changes never make evidence stale, unless the evidence or its "
        "criterion names its own paths (e.g. docs/**)")
    ci_criteria: Optional[dict[Annotated[str, Field(pattern=CHECK_PATTERN)],
                               list[Annotated[str, Field(pattern=CRITERION_REF_PATTERN)]]]] = Field(
        default=None, max_length=200,
        description="CI check name -> the criteria (GOAL:CRITERION) its result meets or un-meets")


# --- goals -----------------------------------------------------------------------------------


class GoalCreated(Model):
    id: str = EntityId
    title: str = Field(min_length=1, max_length=500)
    description: Optional[str] = Field(default=None, max_length=20_000)
    acceptance: list[Criterion] = Field(default_factory=list, max_length=200)


class GoalUpdated(Model):
    id: str = EntityId
    title: Optional[str] = Field(default=None, min_length=1, max_length=500)
    description: Optional[str] = Field(default=None, max_length=20_000)
    add_acceptance: list[Criterion] = Field(default_factory=list, max_length=200)
    state: Optional[Literal["active", "paused"]] = None
    revise: Optional[list[Criterion]] = Field(
        default=None, max_length=200,
        description="new text for existing criteria: evidence recorded before no longer counts")
    retire: Optional[list[Annotated[str, Field(pattern=ID_PATTERN)]]] = Field(
        default=None, max_length=200, description="criteria that no longer need evidence")
    scope: Optional[list[CriterionScope]] = Field(
        default=None, max_length=200, description="the paths existing criteria are judged on")


class GoalClosed(Model):
    id: str = EntityId
    outcome: Literal["achieved", "abandoned"]
    reason: Optional[str] = Field(default=None, max_length=20_000)
    override: bool = Field(
        default=False, description="a human decision: achieved although criteria are unmet "
        "(v2: with a reason)"
    )


# --- todos -----------------------------------------------------------------------------------


class TodoAdded(Model):
    id: str = EntityId
    goal: str = EntityId
    title: str = Field(min_length=1, max_length=500)
    description: Optional[str] = Field(default=None, max_length=20_000)
    depends_on: list[str] = Field(default_factory=list, max_length=200)
    gates: list[str] = Field(default_factory=list, max_length=200)
    criteria: list[str] = Field(default_factory=list, max_length=200)
    priority: Optional[int] = Field(
        default=None, ge=0, le=4, description="0 most urgent .. 4 least; none given is 2")
    discovered_from: Optional[str] = Field(
        default=None, pattern=ID_PATTERN, description="the todo whose work turned this one up")


class TodoUpdated(Model):
    id: str = EntityId
    title: Optional[str] = Field(default=None, min_length=1, max_length=500)
    description: Optional[str] = Field(default=None, max_length=20_000)
    add_depends_on: list[str] = Field(default_factory=list, max_length=200)
    add_gates: list[str] = Field(default_factory=list, max_length=200)
    priority: Optional[int] = Field(default=None, ge=0, le=4, description="a new priority")


class TodoClaimed(Model):
    id: str = EntityId
    until: str = Field(pattern=TS_PATTERN, description="lease expiry (UTC)")
    branch: Optional[str] = Field(
        default=None, pattern=REF_PATTERN,
        description="the branch checked out where the claim was made: commits without a "
        "Loopx-Todo trailer count for the lease only on it")


class TodoRenewed(Model):
    id: str = EntityId
    until: str = Field(pattern=TS_PATTERN)


class TodoReleased(Model):
    id: str = EntityId
    reason: Optional[str] = Field(default=None, max_length=20_000)


class TodoDone(Model):
    id: str = EntityId
    evidence: list[str] = Field(default_factory=list, max_length=200)
    summary: Optional[str] = Field(default=None, max_length=20_000)
    reason: Optional[str] = Field(
        default=None, min_length=1, max_length=20_000,
        description="why it is done without passing, fresh evidence (v2 needs one or the other)")


class TodoAcked(Model):
    """The holder has taken in decisions made since the claim (gate answers): the flag clears."""

    id: str = EntityId
    gates: list[Annotated[str, Field(pattern=ID_PATTERN)]] = Field(min_length=1, max_length=200)


class TodoBlocked(Model):
    id: str = EntityId
    reason: str = Text


class TodoReopened(Model):
    id: str = EntityId
    reason: Optional[str] = Field(default=None, max_length=20_000)


class TodoCancelled(Model):
    id: str = EntityId
    reason: Optional[str] = Field(default=None, max_length=20_000)


# --- gates -----------------------------------------------------------------------------------


class GateOpened(Model):
    id: str = EntityId
    goal: str = EntityId
    question: str = Text
    authority: list[Identity] = Field(
        min_length=1, max_length=50,
        description="identities (human:alice@example.com) or roles (role:maintainer)",
    )
    blocks: list[str] = Field(default_factory=list, max_length=200)


# A decision on a gate (an answer or a withdrawal) that saw earlier decisions on it names
# them: it replaces them. Two decisions that did not see each other conflict (docs/gates).
Supersedes = Field(
    default=None, min_length=1, max_length=50,
    description="event ids of the decisions on this gate that this one replaces")


class GateAnswered(Model):
    id: str = EntityId
    decision: Literal["approve", "reject", "answer"]
    answer: Optional[str] = Field(default=None, max_length=20_000)
    comment: Optional[str] = Field(default=None, max_length=20_000)
    supersedes: Optional[list[Annotated[str, Field(pattern=ULID_RE.pattern)]]] = Supersedes


class GateWithdrawn(Model):
    id: str = EntityId
    reason: Optional[str] = Field(default=None, max_length=20_000)
    supersedes: Optional[list[Annotated[str, Field(pattern=ULID_RE.pattern)]]] = Supersedes


# --- evidence --------------------------------------------------------------------------------


class EvidenceRecorded(Model):
    id: str = EntityId
    kind: Literal["test", "ci", "commit", "review", "receipt", "note"]
    commit: Optional[str] = Field(default=None, pattern=OID_PATTERN)
    tree: Optional[str] = Field(default=None, pattern=OID_PATTERN)
    dirty: bool = False
    command: Optional[str] = Field(default=None, max_length=10_000)
    exit_code: Optional[int] = Field(default=None, ge=MIN_EXIT, le=MAX_EXIT)
    duration_s: Optional[float] = Field(default=None, ge=0, le=MAX_SECONDS)
    summary: Optional[str] = Field(default=None, max_length=20_000)
    digest: Optional[str] = Field(default=None, max_length=200)
    url: Optional[str] = Field(default=None, max_length=2_000)
    output_tail: Optional[str] = Field(default=None, max_length=20_000)
    author: Optional[str] = Field(default=None, max_length=500)
    todo: Optional[str] = Field(default=None, pattern=ID_PATTERN)
    criteria: list[str] = Field(default_factory=list, max_length=200)
    paths: Optional[list[Glob]] = Globs
    check: Optional[str] = Field(default=None, pattern=CHECK_PATTERN,
                                 description="the CI check it reports (kind ci)")
    cwd: Optional[str] = Field(
        default=None, pattern=r"^[^/\x00\n\r][^\x00\n\r]{0,4095}$",
        description="where the command ran, relative to the top of the work tree")

    @field_validator("cwd")
    @classmethod
    def _inside(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and ".." in value.split("/"):
            raise ValueError("cwd stays inside the work tree (no '..')")
        return value


class EvidenceRemapped(Model):
    """Commits rewritten by amend or rebase: evidence for ``old`` now follows ``new``."""

    mappings: list[dict[str, str]] = Field(min_length=1, max_length=10_000)

    @field_validator("mappings")
    @classmethod
    def _pairs(cls, value: list[dict[str, str]]) -> list[dict[str, str]]:
        for pair in value:
            if set(pair) != {"old", "new"} or not all(
                re.match(OID_PATTERN, pair[k]) for k in ("old", "new")
            ):
                raise ValueError("each mapping is {old: <sha>, new: <sha>}")
        return value


# --- wakes, quota, effects, notes ------------------------------------------------------------


class WakeSet(Model):
    id: str = EntityId
    at: Optional[str] = Field(default=None, pattern=TS_PATTERN)
    on_gate: Optional[str] = Field(default=None, pattern=ID_PATTERN)
    on_ci: Optional[str] = Field(default=None, max_length=200, description="a commit sha or 'HEAD'")
    on_todo: Optional[str] = Field(default=None, pattern=ID_PATTERN)
    reason: Optional[str] = Field(default=None, max_length=2_000)
    every: Optional[int] = Field(
        default=None, ge=60, le=366 * 86400,
        description="seconds: a recurring time wake, next due this long after it last fired")


class WakeCleared(Model):
    id: str = EntityId


class WakeFired(Model):
    """A recurring wake was acted on; it is due again at ``next``."""

    id: str = EntityId
    at: str = Field(pattern=TS_PATTERN, description="when it was acted on (UTC)")
    next: str = Field(pattern=TS_PATTERN, description="when it is due again: at + every")


class QuotaSet(Model):
    turns: Optional[int] = Field(default=None, ge=0, le=MAX_COUNT)
    tokens: Optional[int] = Field(default=None, ge=0, le=MAX_COUNT)
    cost: Optional[float] = Field(default=None, ge=0, le=MAX_COST)


class QuotaSpent(Model):
    turns: int = Field(default=0, ge=0, le=MAX_COUNT)
    tokens: int = Field(default=0, ge=0, le=MAX_COUNT)
    cost: float = Field(default=0.0, ge=0, le=MAX_COST)
    todo: Optional[str] = Field(default=None, pattern=ID_PATTERN)
    force: Optional[bool] = Field(default=None, description="recorded past the budget (v2)")
    reason: Optional[str] = Field(default=None, min_length=1, max_length=2_000,
                                  description="why spending past the budget was recorded")


class EffectIntended(Model):
    id: str = EntityId
    target: str = Field(min_length=1, max_length=2_000, description="e.g. github:owner/repo#12")
    action: str = Field(min_length=1, max_length=200, description="e.g. open-pr, comment")
    idempotency_key: str = Field(min_length=1, max_length=200)
    todo: Optional[str] = Field(default=None, pattern=ID_PATTERN)


class EffectConfirmed(Model):
    id: str = EntityId
    receipt: str = Field(min_length=1, max_length=2_000, description="e.g. the URL created")


class EffectFailed(Model):
    id: str = EntityId
    error: str = Text
    retryable: bool = True


class NoteAdded(Model):
    id: str = EntityId
    text: str = Text
    todo: Optional[str] = Field(default=None, pattern=ID_PATTERN)


# --- sessions --------------------------------------------------------------------------------
# A task that outlives its first result: running -> responded (awaiting input) -> interjected
# (running again) -> ... -> closed. Only `session.closed` ends one; see docs/sessions.md.

class Workspace(Model):
    """Where a session's live process and files are: only that host can re-attach to them."""

    host: str = Field(min_length=1, max_length=255)
    path: str = Field(min_length=1, max_length=4_096)


class NoticeDismissed(Model):
    """Its actor has read the notices about these events of theirs that were not applied
    (a claim that lost a race, say): they no longer show as things to do."""

    events: list[Annotated[str, Field(pattern=ULID_RE.pattern)]] = Field(
        min_length=1, max_length=1_000, description="ids of the actor's events that were not applied")


class SessionOpened(Model):
    """A task that outlives its first result; its owner (the actor) runs it."""

    id: str = EntityId
    task: str = Text
    todo: Optional[str] = Field(default=None, pattern=ID_PATTERN)
    keep_open: bool = Field(description="kept open for follow-ups after it responds")
    keep_open_reason: Optional[str] = Field(default=None, max_length=2_000)
    workspace: Workspace


class SessionProgress(Model):
    """The session is still running: a progress update from its owner."""

    id: str = EntityId
    message: str = Text


class SessionResponded(Model):
    """The session finished its turn and is awaiting input (not progress)."""

    id: str = EntityId
    response: str = Text


class SessionInterjected(Model):
    """A message from the caller (the actor); the session runs again."""

    id: str = EntityId
    message: str = Text
    kind: Literal["correction", "follow_up"] = Field(
        description="what the sender saw: correction if running, follow_up if awaiting input; "
        "replay re-derives it from the order of events"
    )


class TranscriptChunk(Model):
    path: str = Field(pattern=SESSION_FILE_RE.pattern)
    oid: str = Field(pattern=OID_PATTERN)
    bytes: int = Field(ge=0, le=TRANSCRIPT_CHUNK_BYTES)


class Transcript(Model):
    chunks: list[TranscriptChunk] = Field(
        max_length=TRANSCRIPT_MAX_BYTES // TRANSCRIPT_CHUNK_BYTES + 1)
    bytes: int = Field(ge=0, le=TRANSCRIPT_MAX_BYTES)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class SessionCheckpointed(Model):
    """The transcript so far, stored on the state branch, and the summary that replaces it."""

    id: str = EntityId
    number: int = Field(ge=1, le=999_999, description="1 for a session's first checkpoint")
    transcript: Transcript
    summary: str = Text
    omitted: Optional[str] = Field(default=None, max_length=20_000,
                                   description="what the summary leaves out")


class SessionAcked(Model):
    """The owner consumed these interjections (event ids); the rest stay in the inbox."""

    id: str = EntityId
    interjections: list[Annotated[str, Field(pattern=ULID_RE.pattern)]] = Field(
        min_length=1, max_length=1_000, description="event ids of session.interjected events")


class SessionClosed(Model):
    id: str = EntityId
    reason: Literal["done", "stopped", "expired", "abandoned"]
    note: Optional[str] = Field(default=None, max_length=20_000)


# type name -> (payload model, version). Events are written at the version listed; the rules of
# an event's own version judge it on replay (state/checks.py), so a ledger written before a rule
# was tightened keeps its meaning.
EVENT_TYPES: dict[str, tuple[type[Model], int]] = {
    "ledger.initialised": (LedgerInitialised, 1),
    "config.set": (ConfigSet, 2),
    "goal.created": (GoalCreated, 2),
    "goal.updated": (GoalUpdated, 2),
    "goal.closed": (GoalClosed, 2),
    "todo.added": (TodoAdded, 2),
    "todo.updated": (TodoUpdated, 2),
    "todo.claimed": (TodoClaimed, 2),
    "todo.renewed": (TodoRenewed, 1),
    "todo.released": (TodoReleased, 1),
    "todo.done": (TodoDone, 2),
    "todo.acked": (TodoAcked, 1),
    "todo.blocked": (TodoBlocked, 1),
    "todo.reopened": (TodoReopened, 1),
    "todo.cancelled": (TodoCancelled, 1),
    "gate.opened": (GateOpened, 1),
    "gate.answered": (GateAnswered, 1),
    "gate.withdrawn": (GateWithdrawn, 1),
    "evidence.recorded": (EvidenceRecorded, 2),
    "evidence.remapped": (EvidenceRemapped, 1),
    "wake.set": (WakeSet, 2),
    "wake.cleared": (WakeCleared, 1),
    "wake.fired": (WakeFired, 1),
    "quota.set": (QuotaSet, 1),
    "quota.spent": (QuotaSpent, 2),
    "effect.intended": (EffectIntended, 1),
    "effect.confirmed": (EffectConfirmed, 1),
    "effect.failed": (EffectFailed, 1),
    "note.added": (NoteAdded, 1),
    "notice.dismissed": (NoticeDismissed, 1),
    "session.opened": (SessionOpened, 1),
    "session.progress": (SessionProgress, 1),
    "session.responded": (SessionResponded, 1),
    "session.interjected": (SessionInterjected, 1),
    "session.checkpointed": (SessionCheckpointed, 1),
    "session.acked": (SessionAcked, 1),
    "session.closed": (SessionClosed, 1),
}

# Fields added in a later version of a type ("list[].field": a field of a list's items): an
# event of an earlier version may not carry them.
ADDED_IN: dict[str, dict[str, int]] = {
    "config.set": {"evidence_ignore": 2, "ci_criteria": 2},
    "goal.created": {"acceptance[].paths": 2},
    "goal.updated": {"revise": 2, "retire": 2, "scope": 2, "add_acceptance[].paths": 2},
    "todo.added": {"priority": 2, "discovered_from": 2},
    "todo.updated": {"priority": 2},
    "todo.claimed": {"branch": 2},
    "todo.done": {"reason": 2},
    "evidence.recorded": {"paths": 2, "check": 2, "cwd": 2},
    "quota.spent": {"force": 2, "reason": 2},
    "wake.set": {"every": 2},
}

# Payload fields the writer derives from its clock (e.g. a lease's expiry from --ttl): a retry
# of the same event id may differ in them and is still the same event.
RETRY_VOLATILE: dict[str, frozenset[str]] = {
    "todo.claimed": frozenset({"until"}),
    "todo.renewed": frozenset({"until"}),
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


def _text_paths(model: type[Model], prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []
    for name, info in model.model_fields.items():
        kind = _unwrap(info.annotation)
        args = typing.get_args(kind)
        if kind is str and not any(getattr(m, "pattern", None) for m in info.metadata):
            paths.append((*prefix, name))
        elif isinstance(kind, type) and issubclass(kind, Model):
            paths += _text_paths(kind, (*prefix, name))
        elif typing.get_origin(kind) is list and args and isinstance(args[0], type) \
                and issubclass(args[0], Model):
            paths += _text_paths(args[0], (*prefix, name, "*"))
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
        if not is_event_id(value):
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
    ACTOR_PATTERN: "an identity like human:alice@example.com, agent:codex@devbox or role:NAME",
    ID_PATTERN: "an id of letters, digits, '-' and '_' (at most 64)",
    TS_PATTERN: "a UTC time like 2026-01-01T12:00:00Z",
    ULID_RE.pattern: "a ULID (26 characters, e.g. 01JD5Z3Q1T8E0000000000ABCD)",
    OID_PATTERN: "a full commit or tree id (40 or 64 hex digits)",
}


def _describe(exc: ValidationError, prefix: tuple[str, ...] = ()) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in (*prefix, *err["loc"])) or "document"
        means = _PATTERN_MEANS.get((err.get("ctx") or {}).get("pattern", ""))
        if err["type"] == "string_pattern_mismatch" and means:
            parts.append(f"{where}: {err['input']!r} is not {means}")
        else:
            parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def parse_event(doc: Any, name: str = "<event>") -> Event:
    """Validate a loaded document into an Event; raise SchemaError naming ``name``."""
    if not isinstance(doc, dict):
        raise SchemaError(f"{name}: an event file must hold a mapping")
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
    newer = _newer_fields(env.type, env.v, data) if env.v < known[1] else []
    if newer:
        raise SchemaError(f"{name}: {env.type} v{env.v} cannot carry data.{newer[0]} "
                          f"(added in v{ADDED_IN[env.type][newer[0]]})")
    return Event(env, data)


def _newer_fields(type_name: str, version: int, data: Model) -> list[str]:
    """Fields of ``data`` that its event's version does not have yet."""
    found = []
    given = data.model_fields_set  # the common case: none of the added fields was given
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
    """Build and validate a new event for writing."""
    doc: dict[str, Any] = {"id": event_id, "type": type, "v": EVENT_TYPES[type][1], "at": at,
                           "clock": clock, "actor": actor, "data": data}
    if goal is not None:
        doc["goal"] = goal
    return parse_event(doc, "new event")


def event_path(event: Event) -> str:
    """``events/YYYY/MM/DD/<id>.<type>.yaml``."""
    return file_path(event.env.id, event.env.type)


