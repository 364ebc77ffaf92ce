"""The state types: what the fold of a ledger holds. Plain dataclasses, no behaviour.

:mod:`loopx.projection.fold` folds events into a :class:`Fold`; :mod:`loopx.projection.checks` says
whether an event may apply, :mod:`loopx.projection.appliers` applies it, :mod:`loopx.projection.views`
derives what readers show. Pure: no git, no I/O, no pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import MutableMapping, MutableSequence
from typing import Any, Optional, Protocol, runtime_checkable

from loopx.model.limits import LEASE_TTL_MAX_S

DEFAULT_LEASE_TTL_S = 45 * 60
MAX_LEASE_TTL_S = LEASE_TTL_MAX_S  # as ConfigSet.lease_ttl_seconds allows
DEFAULT_SESSION_SLOTS = 20
DEFAULT_PRIORITY = 2  # todo priorities run from 0 (most urgent) to 4


@dataclass
class Goal:
    id: str
    title: str
    description: Optional[str]
    acceptance: list[dict[str, Any]]  # {id, text, paths, revision}
    state: str = "active"
    reason: Optional[str] = None
    override: bool = False
    created_by: str = ""
    clock: int = 0
    retired: list[dict[str, Any]] = field(default_factory=list)  # criteria no longer in force
    links: list[str] = field(default_factory=list)  # github:OWNER/REPO#N
    # criterion id -> {"latest": evidence id or None, "evidence": [ids]}: the verdicts (passed or
    # failed, not notes or commits) recorded for it since its last revision, in ledger order.
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)
    todos: list[str] = field(default_factory=list)  # its todos, in ledger order


@dataclass
class Todo:
    id: str
    goal: str
    title: str
    description: Optional[str]
    depends_on: list[str]
    gates: list[str]
    criteria: list[str]
    state: str = "open"  # open | done | blocked | cancelled ("claimed" is derived from the lease)
    holder: Optional[str] = None
    until: Optional[str] = None
    claimed_clock: int = 0
    reason: Optional[str] = None
    evidence: list[str] = field(default_factory=list)
    contested_by: list[str] = field(default_factory=list)
    decisions_since_claim: list[str] = field(default_factory=list)
    clock: int = 0
    branch: Optional[str] = None  # where the lease was taken (refs/heads/...), if on a branch
    no_evidence_reason: Optional[str] = None  # done without evidence: why
    dependants: list[str] = field(default_factory=list)  # todos that wait for this one
    priority: int = DEFAULT_PRIORITY
    discovered_from: Optional[str] = None
    links: list[str] = field(default_factory=list)  # github:OWNER/REPO#N
    needs: list[str] = field(default_factory=list)  # tools the host must have (model.needs)
    # The event (claim or renewal) that set the lease, and its writer's clock: the lease is
    # judged by when this clone first saw that event (views.lease_end), not by `until` alone.
    lease_event: Optional[str] = None
    lease_at: Optional[str] = None
    assignee: Optional[str] = None  # who is meant to do it (todo.assigned, todo.handed_off)
    labels: list[str] = field(default_factory=list)  # in the order they were first given


@dataclass
class Gate:
    id: str
    goal: str
    question: str
    authority: list[str]
    blocks: list[str]
    state: str = "open"  # open | answered | withdrawn | conflicted
    decision: Optional[str] = None
    answer: Optional[str] = None
    comment: Optional[str] = None
    answered_by: Optional[str] = None
    answered_event: Optional[str] = None
    answered_clock: int = 0
    opened_by: str = ""
    # The decisions in force: one when answered or withdrawn, the competing ones (each
    # {event, kind, actor, clock, decision, answer, comment}) when conflicted.
    decisions: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Evidence:
    id: str
    kind: str
    goal: Optional[str]
    todo: Optional[str]
    criteria: list[str]
    commit: Optional[str]
    tree: Optional[str]
    dirty: bool
    exit_code: Optional[int]
    command: Optional[str]
    summary: Optional[str]
    url: Optional[str]
    actor: str
    at: str
    paths: list[str] = field(default_factory=list)  # its scope; empty: see views.scope
    check: Optional[str] = None
    cwd: Optional[str] = None


@dataclass
class Wake:
    id: str
    goal: Optional[str]
    at: Optional[str]
    on_gate: Optional[str]
    on_ci: Optional[str]
    on_todo: Optional[str]
    reason: Optional[str]
    actor: str
    every: Optional[int] = None  # seconds; a recurring wake's `at` moves on when it fires
    fired_at: Optional[str] = None  # when a recurring wake was last acted on
    # The event that set `at` (wake.set or wake.fired) and its writer's clock (views.wake_due).
    set_event: Optional[str] = None
    set_at: Optional[str] = None


@dataclass
class Effect:
    id: str
    goal: Optional[str]
    todo: Optional[str]
    target: str
    action: str
    key: str
    actor: str
    at: str
    state: str = "indeterminate"  # indeterminate | confirmed | failed
    receipt: Optional[str] = None
    error: Optional[str] = None
    retryable: bool = False
    readback: Optional[str] = None  # http:URL | github:OWNER/REPO[#N] | cmd:COMMAND
    owner: Optional[str] = None  # who reads it back first: the writer unless named
    grace: int = 0  # seconds after the intent before the owner reads it back
    hold: int = 0  # seconds after the intent during which only the owner does
    event: Optional[str] = None  # the intent's event (when its clock counts from: views)


@dataclass
class Quota:
    turns: Optional[int] = None
    tokens: Optional[int] = None
    cost: Optional[float] = None
    spent_turns: int = 0
    spent_tokens: int = 0
    spent_cost: float = 0.0


@dataclass
class Session:
    id: str
    task: str
    goal: Optional[str]
    todo: Optional[str]
    owner: str
    keep_open: bool
    keep_open_reason: Optional[str]
    host: str
    path: str
    opened_at: str
    clock: int = 0
    state: str = "running"  # running | awaiting_input | closed
    active_at: str = ""  # when it last ran or responded: idle time counts from here
    last_progress: Optional[str] = None
    last_response: Optional[str] = None
    closed_reason: Optional[str] = None
    closed_note: Optional[str] = None
    closed_at: Optional[str] = None
    closed_by: Optional[str] = None
    messages: list[dict[str, Any]] = field(default_factory=list)  # interjections, replay order
    acked: list[str] = field(default_factory=list)  # event ids of consumed interjections
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    active_event: Optional[str] = None  # the event that set `active_at` (views.idle_since)


@dataclass
class Problem:
    event: str
    type: str
    actor: str
    clock: int
    reason: str


@dataclass
class Dismissal:
    """A notice its actor has dismissed: the problem of one of their events (by its id)."""

    event: str
    actor: str
    clock: int


@dataclass
class Fold:
    """Everything the events say, independent of the time of day."""

    name: Optional[str] = None
    config: dict[str, Any] = field(default_factory=dict)
    # The tables are dicts in a fold built in memory, and loopx.projection.tables.Table in
    # the fold a write is checked against (values read on demand from a source the ledger
    # hands in; every change kept in the table for the ledger to store).
    goals: MutableMapping[str, Goal] = field(default_factory=dict)
    todos: MutableMapping[str, Todo] = field(default_factory=dict)
    gates: MutableMapping[str, Gate] = field(default_factory=dict)
    evidence: MutableMapping[str, Evidence] = field(default_factory=dict)
    wakes: MutableMapping[str, Wake] = field(default_factory=dict)
    effects: MutableMapping[str, Effect] = field(default_factory=dict)
    quotas: MutableMapping[str, Quota] = field(default_factory=dict)  # "" is ledger-wide
    sessions: MutableMapping[str, Session] = field(default_factory=dict)
    dismissed: MutableMapping[str, Dismissal] = field(default_factory=dict)  # by event id
    notes: int = 0
    remaps: MutableMapping[str, str] = field(default_factory=dict)  # rewritten commit -> new
    # Indexes the checks and appliers read instead of scanning a table (their cost must not
    # grow with the ledger): idempotency key -> effect, owner -> open sessions, commit ->
    # the commit records on it, "*" when other evidence names it, "remap:<old>" for each
    # commit rewritten into it (short lists, however many test results one commit has).
    effect_keys: MutableMapping[str, str] = field(default_factory=dict)
    open_sessions: MutableMapping[str, list[str]] = field(default_factory=dict)
    by_commit: MutableMapping[str, list[str]] = field(default_factory=dict)
    problems: MutableSequence[Problem] = field(default_factory=list)
    unknown: MutableSequence[dict[str, Any]] = field(default_factory=list)
    events: int = 0
    max_clock: int = 0
    last_key: tuple[int, str] = (0, "")
    # The writers whose events are dated latest: actor -> [at, event id] of its latest-dated
    # event, for the CLOCK_LEADERS actors dated latest (a clock running fast is flagged).
    clocks: dict[str, list[str]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # room for later entity kinds


@runtime_checkable
class PrefixSearch(Protocol):
    """A table that finds the ids starting with a prefix without reading every id."""

    def with_prefix(self, prefix: str, *, limit: int) -> list[str]:
        ...
