"""The status document as types: what ``git loopx status --format json`` prints, field for field
(docs/status.md). :func:`loopx.ops.status.status` builds a :class:`StatusDoc` from the plain
values the views, readback and ``decide`` compute (:func:`loopx.model.typed.build`), and
``schema export`` writes ``.loopx-schema/status.schema.json`` from these classes.

Frozen stdlib dataclasses: a warm `status` starts without pydantic. A field made with
``optional()`` is a key the document carries only when it applies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

from loopx.model import typed
from loopx.model.typed import optional
from loopx.projection.environment import Check, CriterionState, Environment, EvidenceState, Verdict

GoalState = Literal["active", "paused", "achieved", "abandoned"]
TodoState = Literal["open", "claimed", "done", "blocked", "cancelled"]
GateState = Literal["open", "answered", "withdrawn", "conflicted"]
EvidenceKind = Literal["test", "ci", "commit", "review", "receipt", "note"]
# The kinds of loopx.projection.decide.PRIORITY, most urgent first (tests/projection/test_answers.py
# checks the two agree).
ActionKind = Literal[
    "repair", "finish_operation", "stop_quota", "read_back_effect", "replan", "release_lease",
    "renew_lease", "read_inbox", "session_waiting", "answer_gate", "sync", "fix_ci", "record_ci",
    "rerun_evidence", "close_goal", "wake_due", "continue", "work", "plan_criterion", "wait_ci",
    "wait_gate",
    "wait_lease", "wait_host", "notice",
]


# --- the ledger part (loopx.projection.views.snapshot) ---------------------------------------------


@dataclass(frozen=True)
class ClockAhead:
    """A writer whose events are dated in this clone's future (its clock runs fast)."""

    actor: str
    event: str
    at: str
    ahead_seconds: int


@dataclass(frozen=True)
class CheckpointSource:
    """The signed checkpoint this clone's cache started from instead of a replay, and the
    listed signer whose key signed it (``git loopx doctor --verify`` replays and compares)."""

    commit: str
    signer: str


@dataclass(frozen=True)
class LedgerInfo:
    """The ledger read: its name, events replayed, highest Lamport clock."""

    name: Optional[str]
    events: int
    clock: int
    clocks_ahead: list[ClockAhead]
    checkpoint: Optional[CheckpointSource] = None


@dataclass(frozen=True)
class CriterionCi:
    """A finished CI result mapped to a criterion that the ledger does not hold yet."""

    verdict: Verdict
    checks: list[Check]
    recorded: bool


@dataclass(frozen=True, kw_only=True)
class CriterionRecord:
    """An acceptance criterion in force and its latest verdict, as the ledger has them."""

    id: str
    text: str
    met: bool
    open_work: Optional[list[str]] = optional()  # unfinished todos serving it
    evidence: list[str]  # the passing evidence since its last revision
    latest: Optional[str]  # the evidence whose verdict counts
    verdict: Optional[Verdict]
    paths: list[str]
    revision: int


@dataclass(frozen=True, kw_only=True)
class Criterion(CriterionRecord):
    """A criterion as status shows it: also whether its verdict still holds for the code."""

    ci: Optional[CriterionCi] = None
    freshness: Optional[CriterionState] = None
    changed: list[str] = field(default_factory=list)
    why: Optional[str] = optional()
    scope: Optional[list[str]] = optional()  # the globs its verdict was judged on
    needs_rerun: bool = False


@dataclass(frozen=True)
class Retired:
    """A criterion taken out of force."""

    id: str
    text: str


@dataclass(frozen=True)
class Goal:
    """A goal, its criteria in force and those retired."""

    id: str
    title: str
    state: GoalState
    reason: Optional[str]
    acceptance: list[Criterion]
    retired: list[Retired]
    override: bool
    links: Optional[list[str]] = optional()  # github:OWNER/REPO#N (environment.links: states)


@dataclass(frozen=True)
class GoalRecord:
    """A goal as the ledger has it (`goal list`): its criteria are not judged against code."""

    id: str
    title: str
    state: GoalState
    reason: Optional[str]
    acceptance: list[CriterionRecord]
    retired: list[Retired]
    override: bool


@dataclass(frozen=True, kw_only=True)
class Todo:
    """A todo as status shows it: its lease as this clone judges it, and why it is not ready."""

    id: str
    goal: str
    title: str
    state: TodoState
    depends_on: list[str]
    gates: list[str]
    claimed_by: Optional[str]
    lease_expires: Optional[str]
    expired_claim_by: Optional[str]
    contested_by: list[str]
    decisions_since_claim: list[str]
    ready: bool
    why_not_ready: Optional[str]
    blockers: Optional[list[str]] = optional()  # everything an open todo waits for
    evidence: list[str]
    no_evidence_reason: Optional[str]
    priority: int
    discovered_from: Optional[str]
    assignee: Optional[str] = optional()  # who is meant to do it
    labels: Optional[list[str]] = optional()  # only when it has some
    links: Optional[list[str]] = optional()  # github:OWNER/REPO#N (environment.links: states)
    needs: Optional[list[str]] = optional()  # tools the host that works on it must have (TOOL>=VERSION)


@dataclass(frozen=True)
class Decision:
    """One decision on a gate (an answer or a withdrawal)."""

    event: str
    kind: Literal["answer", "withdraw"]
    actor: str
    clock: int
    decision: Optional[str]
    answer: Optional[str]
    comment: Optional[str]


@dataclass(frozen=True)
class Gate:
    """A gate: its question, who answers it, what it blocks and the decision in force."""

    id: str
    goal: str
    state: GateState
    question: str
    authority: list[str]
    blocks: list[str]
    decision: Optional[Literal["approve", "reject", "answer"]]
    answer: Optional[str]
    comment: Optional[str]
    answered_by: Optional[str]
    conflict: list[Decision]  # the decisions that did not see each other, while conflicted


@dataclass(frozen=True)
class GoalShown(GoalRecord):
    """`goal show`: a goal with its todos and gates."""

    todos: list[Todo]
    gates: list[Gate]


@dataclass(frozen=True)
class Evidence:
    """A piece of evidence: what it ran on (``commit``, ``tree``) and what it vouches for."""

    id: str
    kind: EvidenceKind
    goal: Optional[str]
    todo: Optional[str]
    criteria: list[str]
    commit: Optional[str]  # the commit it was recorded on
    tree: Optional[str]
    dirty: bool
    exit_code: Optional[int]
    summary: Optional[str]
    command: Optional[str]
    actor: str
    at: str
    url: Optional[str]
    paths: list[str]
    check: Optional[str]
    # The commit it points to now: ``commit`` after following amends and rebases.
    current_commit: Optional[str] = None
    freshness: Optional[EvidenceState] = None


@dataclass(frozen=True)
class EvidenceJudged:
    """How one piece of evidence stands now, and the scope it was judged on."""

    state: EvidenceState
    changed: list[str]
    reason: Optional[str]
    paths: list[str]
    ignored: list[str]
    outside_scope: int
    judged_tree: Optional[str]


@dataclass(frozen=True, kw_only=True)
class EvidenceShown(Evidence):
    """`evidence show`: the evidence, how it stands now and, from the event that recorded
    it, the output's digest and tail and the run's duration."""

    judged: EvidenceJudged
    event: Optional[str]
    digest: Optional[str]
    output_tail: Optional[str]
    duration_s: Optional[float]
    author: Optional[str]
    cwd: Optional[str]


@dataclass(frozen=True)
class Wake:
    """When to look again: ``at`` is when it is next due for this clone."""

    id: str
    goal: Optional[str]
    at: Optional[str]
    on_gate: Optional[str]
    on_ci: Optional[str]
    on_todo: Optional[str]
    reason: Optional[str]
    actor: str
    every: Optional[int]
    fired_at: Optional[str]


@dataclass(frozen=True)
class Note:
    """A note (`note list`), read from its event file: the projection only counts notes."""

    id: str
    text: str
    todo: Optional[str]
    goal: Optional[str]
    actor: str
    at: str
    event: str


@dataclass(frozen=True)
class Amounts:
    """Turns, tokens and cost (None: no limit)."""

    turns: Optional[float]
    tokens: Optional[float]
    cost: Optional[float]


@dataclass(frozen=True)
class Quota:
    """A budget: its limits, what was spent, what is left."""

    turns: Optional[int]
    tokens: Optional[int]
    cost: Optional[float]
    spent: Amounts
    left: Amounts
    exhausted: bool


@dataclass(frozen=True)
class Effect:
    """An external write: intended, then confirmed or failed (indeterminate until then)."""

    id: str
    goal: Optional[str]
    todo: Optional[str]
    target: str
    action: str
    key: str
    actor: str
    at: str
    state: Literal["indeterminate", "confirmed", "failed"]
    receipt: Optional[str]
    error: Optional[str]
    retryable: bool
    readback: Optional[str]  # http:URL | github:OWNER/REPO[#N] | cmd:COMMAND
    owner: Optional[str]  # who reads it back first (the writer unless named)
    grace: int  # seconds after the intent before the owner reads it back
    hold: int  # seconds after the intent during which only the owner does
    readback_at: str  # when the owner reads it back (for this clone)
    held_until: str  # until when only the owner does; anyone after


@dataclass(frozen=True)
class Problem:
    """An event not applied, and why."""

    event: str
    type: str
    actor: str
    clock: int
    reason: str
    dismissed: bool


@dataclass(frozen=True)
class Notice:
    """One of the actor's events a merge left not applied (a claim that lost a race)."""

    event: str
    type: str
    reason: str


@dataclass(frozen=True)
class UnknownEvent:
    """An event of a type this loopx does not know (kept, never dropped)."""

    event: str
    type: str
    v: int


@dataclass(frozen=True)
class Workspace:
    host: str
    path: str


@dataclass(frozen=True)
class Message:
    """An interjection waiting in a session's inbox."""

    event: str
    seq: int
    from_: str = field(metadata={typed.KEY: "from"})  # a Python keyword
    at: str
    kind: Literal["correction", "follow_up"]
    message: str


@dataclass(frozen=True)
class Session:
    """A session as status shows it (docs/sessions.md)."""

    id: str
    state: Literal["running", "awaiting_input", "closed"]
    owner: str
    task: str
    goal: Optional[str]
    todo: Optional[str]
    workspace: Workspace
    idle_seconds: Optional[int]
    inbox: list[Message]
    keep_open: bool
    keep_open_reason: Optional[str]
    closed_reason: Optional[Literal["done", "stopped", "expired", "abandoned"]]
    last_response: Optional[str]
    last_progress: Optional[str]
    opened_at: str
    checkpoints: int
    ends: Optional[str] = None  # how an open session ends (null once closed)
    same_goal: Optional[list[str]] = optional()  # the other open sessions on its goal


# --- what to do (loopx.projection.decide) ------------------------------------------------------------


@dataclass(frozen=True)
class Action:
    """One legal next action: its kind and priority (lower first), why, the command to run,
    and what it is about."""

    kind: ActionKind
    priority: int
    reason: str
    command: Optional[str]
    todo: Optional[str] = optional()
    gate: Optional[str] = optional()
    goal: Optional[str] = optional()
    effect: Optional[str] = optional()
    session: Optional[str] = optional()
    evidence: Optional[str] = optional()
    wake: Optional[str] = optional()
    event: Optional[str] = optional()


@dataclass(frozen=True)
class Omitted:
    """What a compact status leaves out (loopx.projection.compact): counts, and how to see it."""

    todos: int  # todos not listed
    frontier: int  # ready todos past the ones listed
    by_state: dict[str, int]  # the todos not listed, by state
    waiting: int  # open todos not listed that wait (for todos, gates)
    actions: int
    gates: int  # answered and withdrawn gates, and open ones past the first ten
    blocks: int  # todo ids left out of the gates' ``blocks`` (each lists at most five)
    goals: int
    evidence: int
    more: str  # the commands that show the rest


@dataclass(frozen=True)
class StatusDoc:
    """The status document: the ledger's snapshot, the environment as inspected now, the legal
    next actions, most important first, and when looking again could change things."""

    ledger: LedgerInfo
    goals: list[Goal]
    todos: list[Todo]
    frontier: list[str]
    gates: list[Gate]
    evidence: list[Evidence]
    wakes: list[Wake]
    quota: dict[str, Quota]  # scope ("*": ledger-wide, else a goal id) -> its budget
    effects: list[Effect]
    problems: list[Problem]
    unknown_events: list[UnknownEvent]
    notes: int
    sessions: list[Session]
    ref: str  # the state ref read
    environment: Environment
    actions: list[Action]
    next_wake: Optional[str]
    # Only in a compact answer (the default of `status` for agents; not with --detail).
    omitted: Optional[Omitted] = optional()
