"""The projection: a pure fold of events, ordered by ``(clock, id)``, into the ledger's state.

:class:`Fold` holds what does not depend on the time of day; :func:`snapshot` adds the parts
that do (live leases, the frontier) for a given ``now``. The same rules decide whether an
event applies while replaying *and* whether a new write is accepted (:func:`check`), so a
write refused by the CLI is exactly an event the projection would list under ``problems``.

Never crashes on a ledger: an event that is illegal where it falls in the order is skipped and
reported with its reason. The same set of events gives the same state in any merge order.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Optional, Union, cast

from loopx.model import clock as clk

if TYPE_CHECKING:  # only for annotations: the hooks read a cached fold without pydantic
    # Each rule narrows ``event.data`` to its payload with ``cast("Model", ...)``: a string,
    # so nothing here is imported at run time.
    from loopx.model.events import (
        ConfigSet, EffectConfirmed, EffectFailed, EffectIntended, Event, EvidenceRecorded,
        EvidenceRemapped, GateAnswered, GateOpened, GateWithdrawn, GoalClosed, GoalCreated,
        GoalUpdated, LedgerInitialised, QuotaSpent, SessionAcked, SessionCheckpointed,
        SessionClosed, SessionInterjected, SessionOpened, SessionProgress, SessionResponded,
        TodoAdded, TodoBlocked, TodoCancelled, TodoClaimed, TodoDone, TodoReleased,
        TodoRenewed, TodoReopened, TodoUpdated, WakeCleared, WakeSet,
    )

    # The payloads of the events that act on an existing session.
    SessionChange = Union[SessionProgress, SessionResponded, SessionInterjected,
                          SessionCheckpointed, SessionAcked, SessionClosed]

DEFAULT_LEASE_TTL_S = 45 * 60
DEFAULT_SESSION_SLOTS = 20


@dataclass
class Goal:
    id: str
    title: str
    description: Optional[str]
    acceptance: list[dict[str, str]]
    state: str = "active"
    reason: Optional[str] = None
    override: bool = False
    created_by: str = ""
    clock: int = 0


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


@dataclass
class Gate:
    id: str
    goal: str
    question: str
    authority: list[str]
    blocks: list[str]
    state: str = "open"  # open | answered | withdrawn
    decision: Optional[str] = None
    answer: Optional[str] = None
    comment: Optional[str] = None
    answered_by: Optional[str] = None
    answered_event: Optional[str] = None
    answered_clock: int = 0
    opened_by: str = ""


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


@dataclass
class Problem:
    event: str
    type: str
    actor: str
    clock: int
    reason: str


@dataclass
class Fold:
    """Everything the events say, independent of the time of day."""

    name: Optional[str] = None
    config: dict[str, Any] = field(default_factory=dict)
    goals: dict[str, Goal] = field(default_factory=dict)
    todos: dict[str, Todo] = field(default_factory=dict)
    gates: dict[str, Gate] = field(default_factory=dict)
    evidence: dict[str, Evidence] = field(default_factory=dict)
    wakes: dict[str, Wake] = field(default_factory=dict)
    effects: dict[str, Effect] = field(default_factory=dict)
    quotas: dict[str, Quota] = field(default_factory=dict)  # "" is the ledger-wide budget
    sessions: dict[str, Session] = field(default_factory=dict)
    notes: int = 0
    remaps: dict[str, str] = field(default_factory=dict)  # rewritten commit -> new commit
    problems: list[Problem] = field(default_factory=list)
    unknown: list[dict[str, Any]] = field(default_factory=list)
    events: int = 0
    max_clock: int = 0
    last_key: tuple[int, str] = (0, "")
    extra: dict[str, Any] = field(default_factory=dict)  # room for later entity kinds

    def apply(self, event: Event) -> Optional[str]:
        """Apply one event in order; returns the reason it was refused, or None."""
        self.events += 1
        self.max_clock = max(self.max_clock, event.env.clock)
        self.last_key = max(self.last_key, event.sort_key())
        if not event.known:
            self.unknown.append({"event": event.id, "type": event.type, "v": event.env.v})
            return None
        reason = check(self, event)
        if reason is not None:
            self.problems.append(
                Problem(event.id, event.type, event.env.actor, event.env.clock, reason)
            )
            self._note_contest(event)
            return reason
        _APPLY[event.type](self, event)
        return None

    def _note_contest(self, event: Event) -> None:
        """A claim that lost to a live lease (two claims crossed in a merge): the todo shows
        who else wanted it."""
        if event.type != "todo.claimed":
            return
        todo = self.todos.get(cast("TodoClaimed", event.data).id)
        if todo is not None and todo.holder and event.env.actor not in (todo.holder, *todo.contested_by):
            todo.contested_by.append(event.env.actor)

    def resolve_authority(self, authority: list[str]) -> set[str]:
        """The identities a gate's authority list names, roles expanded from config."""
        roles: dict[str, list[str]] = self.config.get("roles") or {}
        people: set[str] = set()
        for who in authority:
            if who.startswith("role:"):
                people.update(roles.get(who[5:], []))
            else:
                people.add(who)
        return people


def replay(events: list[Event], fold: Optional[Fold] = None) -> Fold:
    """Fold events (in any order given) into a state; ``fold`` continues an earlier one."""
    fold = fold or Fold()
    for event in sorted(events, key=lambda event: event.sort_key()):
        fold.apply(event)
    return fold


# --- rules: one check per event type; the same code judges replay and new writes -------------

Check = Callable[[Fold, "Event"], Optional[str]]


def check(fold: Fold, event: Event) -> Optional[str]:
    """Why ``event`` cannot be applied to ``fold`` now, or None when it can."""
    rule = _CHECK.get(event.type)
    return rule(fold, event) if rule else None


def _need_goal(fold: Fold, goal_id: str, *, open_: bool = True) -> Optional[str]:
    goal = fold.goals.get(goal_id)
    if goal is None:
        return f"unknown goal {goal_id}"
    if open_ and goal.state in ("achieved", "abandoned"):
        return f"goal {goal_id} is {goal.state}"
    return None


def _need_todo(fold: Fold, todo_id: str) -> tuple[Optional[Todo], Optional[str]]:
    todo = fold.todos.get(todo_id)
    return (todo, None) if todo else (None, f"unknown todo {todo_id}")


def _lease_live(todo: Todo, at: str) -> bool:
    return todo.holder is not None and todo.until is not None and (
        clk.parse_ts(todo.until) > clk.parse_ts(at)
    )


def _check_goal_created(fold: Fold, event: Event) -> Optional[str]:
    data = cast("GoalCreated", event.data)
    if data.id in fold.goals:
        return f"goal {data.id} already exists"
    ids = [c.id for c in data.acceptance]
    return "acceptance criteria ids repeat" if len(ids) != len(set(ids)) else None


def _check_goal_updated(fold: Fold, event: Event) -> Optional[str]:
    data = cast("GoalUpdated", event.data)
    why = _need_goal(fold, data.id)
    if why:
        return why
    known = {c["id"] for c in fold.goals[data.id].acceptance}
    added = [c.id for c in data.add_acceptance]
    if known & set(added) or len(added) != len(set(added)):
        return f"goal {data.id} already has a criterion with that id"
    return None


def _check_goal_closed(fold: Fold, event: Event) -> Optional[str]:
    data = cast("GoalClosed", event.data)
    why = _need_goal(fold, data.id)
    if why or data.outcome != "achieved":
        return why
    unmet = unmet_criteria(fold, data.id)
    if unmet and not data.override:
        return (f"goal {data.id} has criteria without passing evidence ({', '.join(unmet)}); "
                "record evidence or close with --override (a human decision)")
    if data.override and not event.env.actor.startswith("human:"):
        return "only a human may override unmet acceptance criteria"
    return None


def _check_todo_added(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoAdded", event.data)
    if data.id in fold.todos:
        return f"todo {data.id} already exists"
    return (
        _need_goal(fold, data.goal)
        or _unknown(fold.todos, data.depends_on, "todo")
        or _unknown(fold.gates, data.gates, "gate")
        or _unknown_criteria(fold, data.goal, data.criteria)
    )


def _unknown(table: dict[str, Any], ids: list[str], kind: str) -> Optional[str]:
    missing = [i for i in ids if i not in table]
    return f"unknown {kind} {', '.join(missing)}" if missing else None


def _unknown_criteria(fold: Fold, goal_id: str, criteria: list[str]) -> Optional[str]:
    goal = fold.goals.get(goal_id)
    known = {c["id"] for c in goal.acceptance} if goal else set()
    missing = [c for c in criteria if c not in known]
    return f"goal {goal_id} has no criterion {', '.join(missing)}" if missing else None


def _check_todo_updated(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoUpdated", event.data)
    todo, why = _need_todo(fold, data.id)
    if why:
        return why
    why = _unknown(fold.todos, data.add_depends_on, "todo") or _unknown(
        fold.gates, data.add_gates, "gate")
    if why:
        return why
    for dep in data.add_depends_on:
        if dep == data.id or data.id in ancestors(fold, dep):
            return f"depending on {dep} would make a cycle ({dep} already waits for {data.id})"
    return None


def ancestors(fold: Fold, todo_id: str) -> set[str]:
    """Every todo that ``todo_id`` waits for, directly or through others."""
    seen: set[str] = set()
    stack = [todo_id]
    while stack:
        for dep in fold.todos[stack.pop()].depends_on:
            if dep not in seen and dep in fold.todos:
                seen.add(dep)
                stack.append(dep)
    return seen


def _check_todo_claimed(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoClaimed", event.data)
    todo, why = _need_todo(fold, data.id)
    if why or todo is None:
        return why
    if todo.state != "open":
        return f"todo {todo.id} is {todo.state}"
    if todo.holder and todo.holder != event.env.actor and _lease_live(todo, event.env.at):
        return f"todo {todo.id} is claimed by {todo.holder} until {todo.until} (contested)"
    why = _not_ready(fold, todo)
    return f"todo {todo.id} is not ready: {why}" if why else None


def _not_ready(fold: Fold, todo: Todo) -> Optional[str]:
    goal = fold.goals.get(todo.goal)
    if goal is None:  # only in a status-only partial fold, where closed goals are left out
        return f"goal {todo.goal} is closed"
    if goal.state != "active":
        return f"goal {goal.id} is {goal.state}"
    for dep in todo.depends_on:
        state = fold.todos[dep].state
        if state != "done":
            return f"waits for todo {dep}" + ("" if state == "open" else f" ({state})")
    for gate_id in todo.gates:
        gate = fold.gates[gate_id]
        if gate.state == "open":
            return f"waits for gate {gate_id} (asks {', '.join(gate.authority)})"
        if gate.state == "answered" and gate.decision == "reject":
            return f"gate {gate_id} was rejected by {gate.answered_by}"
    return None


def _check_lease_holder(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoRenewed | TodoReleased", event.data)
    todo, why = _need_todo(fold, data.id)
    if why or todo is None:
        return why
    if todo.holder is None:
        return f"todo {todo.id} is not claimed"
    if todo.holder != event.env.actor and not (
        event.type == "todo.released" and event.env.actor.startswith("human:")
    ):
        return f"todo {todo.id} is claimed by {todo.holder}, not {event.env.actor}"
    return None


def _check_todo_done(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoDone", event.data)
    todo, why = _need_todo(fold, data.id)
    if why or todo is None:
        return why
    if todo.state in ("done", "cancelled"):
        return f"todo {todo.id} is already {todo.state}"
    if todo.holder and todo.holder != event.env.actor and _lease_live(todo, event.env.at):
        return f"todo {todo.id} is claimed by {todo.holder} until {todo.until}"
    failing = [e for e in data.evidence if e in fold.evidence and not passing(fold.evidence[e])]
    if failing:
        return (f"evidence {', '.join(failing)} does not pass (failed, or only a note); "
                "cite passing evidence, or block the todo instead")
    return _unknown(fold.evidence, data.evidence, "evidence")


def _check_todo_blocked(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoBlocked", event.data)
    todo, why = _need_todo(fold, data.id)
    if why or todo is None:
        return why
    return None if todo.state == "open" else f"todo {todo.id} is {todo.state}"


def _check_todo_reopened(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoReopened", event.data)
    todo, why = _need_todo(fold, data.id)
    if why or todo is None:
        return why
    return None if todo.state != "open" else f"todo {todo.id} is already open"


def _check_todo_cancelled(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoCancelled", event.data)
    todo, why = _need_todo(fold, data.id)
    if why or todo is None:
        return why
    return None if todo.state in ("open", "blocked") else f"todo {todo.id} is {todo.state}"


def _check_gate_opened(fold: Fold, event: Event) -> Optional[str]:
    data = cast("GateOpened", event.data)
    if data.id in fold.gates:
        return f"gate {data.id} already exists"
    roles = fold.config.get("roles") or {}
    missing = [a for a in data.authority if a.startswith("role:") and not roles.get(a[5:])]
    if missing:  # nobody could ever answer it
        return (f"no one holds {', '.join(missing)}; define it first: "
                f"git loopx config set --role {missing[0][5:]}=human:EMAIL")
    return _need_goal(fold, data.goal) or _unknown(fold.todos, data.blocks, "todo")


def _check_gate_answered(fold: Fold, event: Event) -> Optional[str]:
    data = cast("GateAnswered", event.data)
    gate = fold.gates.get(data.id)
    if gate is None:
        return f"unknown gate {data.id}"
    if gate.state != "open":
        extra = f" by {gate.answered_by} ({gate.decision})" if gate.state == "answered" else ""
        return f"gate {gate.id} is already {gate.state}{extra}"
    if event.env.actor not in fold.resolve_authority(gate.authority):
        return (f"gate {gate.id} is answered by {', '.join(gate.authority)} only; "
                f"you are {event.env.actor}")
    if data.decision == "answer" and not data.answer:
        return "a free answer needs its text"
    return _check_signature(fold, event, f"the answer to gate {gate.id}")


# --- verified authority: signed answers ---------------------------------------------------------
# Whether a commit is signed is not in the event file: the reading layer asks git once per
# allowed_signers text and passes the verdicts in as data, fold.extra["signed"]:
# event id -> {signers_digest(allowed_signers text): principal}. They depend only on
# commits reachable from the tip and on the config inside it, so a fold cached by tip stays true.


def signature_required(config: dict[str, Any], gate_id: str) -> bool:
    """Whether the config in force says answers to ``gate_id`` must come in signed commits."""
    rule = config.get("signed_answers")
    return rule == "all" or (isinstance(rule, list) and gate_id in rule)


# Who may answer (roles) and how answers are verified: while signing is on, changing these
# needs a signed commit too, or an unsigned config event could simply switch signing off.
GUARDED_CONFIG = frozenset({"roles", "signed_answers", "allowed_signers"})


def needs_signature(fold: Fold, event: Event) -> bool:
    """Whether ``event`` counts only in a commit signed by its actor's key in allowed_signers."""
    if event.type == "gate.answered":
        gate = fold.gates.get(cast("GateAnswered", event.data).id)
        return gate is not None and signature_required(fold.config, gate.id)
    if event.type == "config.set":
        rule = fold.config.get("signed_answers")
        config = cast("ConfigSet", event.data)
        touched = GUARDED_CONFIG & set(config.model_dump(exclude_none=True))
        on = rule not in (None, "off") and bool(fold.config.get("allowed_signers"))
        return on and bool(touched)
    return False


def signers_digest(allowed_signers: str) -> str:
    """A short name for one allowed_signers text (keys rotate: each answer is checked against
    the list in force where it falls in the order)."""
    return hashlib.sha256(allowed_signers.encode("utf-8")).hexdigest()[:16]


def signer_matches(principal: str, actor: str) -> bool:
    """``alice@example.com`` (or the full actor) in allowed_signers signs as human:alice@..."""
    return principal == actor or principal == actor.partition(":")[2]


def _check_signature(fold: Fold, event: Event, what: str) -> Optional[str]:
    if not needs_signature(fold, event):
        return None
    allowed = fold.config.get("allowed_signers")
    if not allowed:
        return f"{what} needs a signed commit, but the config names no allowed signers"
    verdicts = fold.extra.get("signed", {}).get(event.id, {})
    principal = verdicts.get(signers_digest(allowed))
    if principal is None:
        return (f"{what} is not in a commit signed by a key in allowed_signers "
                "(unsigned, unknown key or bad signature)")
    if not signer_matches(principal, event.env.actor):
        return f"{what} is signed by {principal}, not by {event.env.actor}"
    return None


def _check_config_set(fold: Fold, event: Event) -> Optional[str]:
    return _check_signature(fold, event, "a change to roles or signing rules")


def _check_gate_withdrawn(fold: Fold, event: Event) -> Optional[str]:
    data = cast("GateWithdrawn", event.data)
    gate = fold.gates.get(data.id)
    if gate is None:
        return f"unknown gate {data.id}"
    return None if gate.state == "open" else f"gate {gate.id} is already {gate.state}"


def _check_evidence(fold: Fold, event: Event) -> Optional[str]:
    data = cast("EvidenceRecorded", event.data)
    if data.id in fold.evidence:
        return f"evidence {data.id} already exists"
    if data.todo and data.todo not in fold.todos:
        return f"unknown todo {data.todo}"
    goal = event.env.goal or (fold.todos[data.todo].goal if data.todo else None)
    if data.criteria:
        if goal is None:
            return "evidence for criteria must name its goal or todo"
        return _need_goal(fold, goal, open_=False) or _unknown_criteria(fold, goal, data.criteria)
    return None


def _check_wake_set(fold: Fold, event: Event) -> Optional[str]:
    data = cast("WakeSet", event.data)
    if data.id in fold.wakes:
        return f"wake {data.id} already exists"
    if not (data.at or data.on_gate or data.on_ci or data.on_todo):
        return "a wake needs a time, a gate, CI or a todo to wait for"
    if data.on_gate and data.on_gate not in fold.gates:
        return f"unknown gate {data.on_gate}"
    if data.on_todo and data.on_todo not in fold.todos:
        return f"unknown todo {data.on_todo}"
    return None


def _check_wake_cleared(fold: Fold, event: Event) -> Optional[str]:
    data = cast("WakeCleared", event.data)
    return None if data.id in fold.wakes else f"unknown wake {data.id}"


def _check_quota(fold: Fold, event: Event) -> Optional[str]:
    goal = event.env.goal
    if goal is not None:
        return _need_goal(fold, goal, open_=event.type == "quota.set")
    return None


def _check_effect_intended(fold: Fold, event: Event) -> Optional[str]:
    data = cast("EffectIntended", event.data)
    if data.id in fold.effects:
        return f"effect {data.id} already exists"
    for effect in fold.effects.values():
        if effect.key == data.idempotency_key and effect.state != "failed":
            return (f"idempotency key {data.idempotency_key} is already used by effect "
                    f"{effect.id} ({effect.state})")
    return None


def _check_effect_outcome(fold: Fold, event: Event) -> Optional[str]:
    data = cast("EffectConfirmed | EffectFailed", event.data)
    effect = fold.effects.get(data.id)
    if effect is None:
        return f"unknown effect {data.id}"
    return None if effect.state == "indeterminate" else f"effect {effect.id} is already {effect.state}"


# --- sessions: see docs/sessions.md ---------------------------------------------------------


def _need_session(fold: Fold, event: Event, *, owner: bool = False,
                  open_: bool = True) -> tuple[Optional[Session], Optional[str]]:
    data = cast("SessionChange", event.data)
    session = fold.sessions.get(data.id)
    if session is None:
        return None, f"unknown session {data.id}"
    if open_ and session.state == "closed":
        return session, f"session {session.id} is closed ({session.closed_reason})"
    if owner and event.env.actor != session.owner:
        return session, (f"only its owner {session.owner} can do that to session {session.id}; "
                         f"you are {event.env.actor} (send it a message instead)")
    return session, None


def _check_session_opened(fold: Fold, event: Event) -> Optional[str]:
    data, goal = cast("SessionOpened", event.data), event.env.goal
    if data.id in fold.sessions:
        return f"session {data.id} already exists"
    if data.todo is not None and data.todo not in fold.todos:
        return f"unknown todo {data.todo}"
    if data.todo is not None and goal is not None and fold.todos[data.todo].goal != goal:
        return f"todo {data.todo} belongs to goal {fold.todos[data.todo].goal}, not {goal}"
    return (_need_goal(fold, goal) if goal else None) or _free_slot(fold, event.env.actor, event.env.at)


def session_slots(fold: Fold) -> int:
    """How many sessions one owner may hold open (ledger config ``session_slots``)."""
    return int(fold.config.get("session_slots") or DEFAULT_SESSION_SLOTS)


def _free_slot(fold: Fold, owner: str, at: str) -> Optional[str]:
    limit = session_slots(fold)
    mine = [s for s in fold.sessions.values() if s.owner == owner and s.state != "closed"]
    if len(mine) < limit:
        return None
    idle = sorted((s for s in mine if s.state == "awaiting_input"), key=lambda s: (s.active_at, s.id))
    now = clk.parse_ts(at)
    named = ", ".join(
        f"{s.id} (awaiting input for {clk.format_duration(now - clk.parse_ts(s.active_at))})"
        for s in idle[:10])
    hint = f"idle sessions that could be closed: {named}" if idle else "none is idle (all running)"
    return (f"{owner} already holds {len(mine)} open sessions (limit {limit}); {hint}; "
            "free a slot with `git loopx session close ID` or `git loopx session reap`")


def _check_session_running(fold: Fold, event: Event) -> Optional[str]:
    session, why = _need_session(fold, event, owner=True)
    if why is None and session is not None and session.state != "running":
        return f"session {session.id} is awaiting input; it runs again when a message is sent"
    return why


def _check_session_owner(fold: Fold, event: Event) -> Optional[str]:
    return _need_session(fold, event, owner=True)[1]


def _check_session_open(fold: Fold, event: Event) -> Optional[str]:
    return _need_session(fold, event)[1]


def _check_session_checkpointed(fold: Fold, event: Event) -> Optional[str]:
    session, why = _need_session(fold, event, owner=True)
    if why or session is None:
        return why
    data = cast("SessionCheckpointed", event.data)
    if data.number != len(session.checkpoints) + 1:
        return (f"session {session.id} has {len(session.checkpoints)} checkpoints; "
                f"the next one is number {len(session.checkpoints) + 1}, not {data.number}")
    from loopx.model.events import transcript_chunk_path  # here: this module loads without pydantic

    chunks = data.transcript.chunks
    if [c.path for c in chunks] != [transcript_chunk_path(session.id, data.number, i)
                                    for i in range(len(chunks))]:
        return f"transcript chunks of session {session.id} are not at their expected paths"
    if sum(c.bytes for c in chunks) != data.transcript.bytes:
        return "transcript size does not match the sum of its chunks"
    return None


def _check_session_acked(fold: Fold, event: Event) -> Optional[str]:
    data = cast("SessionAcked", event.data)
    session, why = _need_session(fold, event, owner=True, open_=False)
    if why or session is None:
        return why
    known = {m["event"] for m in session.messages}
    unknown = [i for i in data.interjections if i not in known]
    if unknown:
        return f"session {session.id} has no interjection {', '.join(unknown[:5])}"
    if set(data.interjections) <= set(session.acked):
        return f"those messages to session {session.id} were already acknowledged"
    return None


def _check_session_closed(fold: Fold, event: Event) -> Optional[str]:
    data = cast("SessionClosed", event.data)
    session, why = _need_session(fold, event)
    if why is None and session is not None and data.reason == "expired" and (
        session.state != "awaiting_input"
    ):
        # A follow-up that sorts before the reaper's close wins: the session runs on.
        return f"session {session.id} is {session.state}, only a session awaiting input expires"
    return why


def _ok(fold: Fold, event: Event) -> Optional[str]:
    return None


_CHECK: dict[str, Check] = {
    "config.set": _check_config_set,
    "goal.created": _check_goal_created,
    "goal.updated": _check_goal_updated,
    "goal.closed": _check_goal_closed,
    "todo.added": _check_todo_added,
    "todo.updated": _check_todo_updated,
    "todo.claimed": _check_todo_claimed,
    "todo.renewed": _check_lease_holder,
    "todo.released": _check_lease_holder,
    "todo.done": _check_todo_done,
    "todo.blocked": _check_todo_blocked,
    "todo.reopened": _check_todo_reopened,
    "todo.cancelled": _check_todo_cancelled,
    "gate.opened": _check_gate_opened,
    "gate.answered": _check_gate_answered,
    "gate.withdrawn": _check_gate_withdrawn,
    "evidence.recorded": _check_evidence,
    "wake.set": _check_wake_set,
    "wake.cleared": _check_wake_cleared,
    "quota.set": _check_quota,
    "quota.spent": _check_quota,
    "effect.intended": _check_effect_intended,
    "effect.confirmed": _check_effect_outcome,
    "effect.failed": _check_effect_outcome,
    "session.opened": _check_session_opened,
    "session.progress": _check_session_running,
    "session.responded": _check_session_owner,
    "session.interjected": _check_session_open,
    "session.checkpointed": _check_session_checkpointed,
    "session.acked": _check_session_acked,
    "session.closed": _check_session_closed,
}


# --- appliers: only ever called after the matching check passed ------------------------------


def _apply_initialised(fold: Fold, event: Event) -> None:
    d = cast("LedgerInitialised", event.data)
    fold.name = fold.name or d.name


def _apply_config(fold: Fold, event: Event) -> None:
    d = cast("ConfigSet", event.data)
    fold.config.update(d.model_dump(exclude_none=True))


def _apply_goal_created(fold: Fold, event: Event) -> None:
    d = cast("GoalCreated", event.data)
    fold.goals[d.id] = Goal(d.id, d.title, d.description,
                            [{"id": c.id, "text": c.text} for c in d.acceptance],
                            created_by=event.env.actor, clock=event.env.clock)


def _apply_goal_updated(fold: Fold, event: Event) -> None:
    d = cast("GoalUpdated", event.data)
    goal = fold.goals[d.id]
    goal.title = d.title or goal.title
    goal.description = d.description if d.description is not None else goal.description
    goal.acceptance.extend({"id": c.id, "text": c.text} for c in d.add_acceptance)
    goal.state = d.state or goal.state


def _apply_goal_closed(fold: Fold, event: Event) -> None:
    d = cast("GoalClosed", event.data)
    goal = fold.goals[d.id]
    goal.state, goal.reason, goal.override = d.outcome, d.reason, d.override


def _apply_todo_added(fold: Fold, event: Event) -> None:
    d = cast("TodoAdded", event.data)
    fold.todos[d.id] = Todo(d.id, d.goal, d.title, d.description, list(d.depends_on),
                            list(d.gates), list(d.criteria), clock=event.env.clock)


def _apply_todo_updated(fold: Fold, event: Event) -> None:
    d = cast("TodoUpdated", event.data)
    todo = fold.todos[d.id]
    todo.title = d.title or todo.title
    todo.description = d.description if d.description is not None else todo.description
    todo.depends_on += [t for t in d.add_depends_on if t not in todo.depends_on]
    todo.gates += [g for g in d.add_gates if g not in todo.gates]


def _apply_todo_claimed(fold: Fold, event: Event) -> None:
    d = cast("TodoClaimed", event.data)
    todo = fold.todos[d.id]
    if todo.holder and todo.holder != event.env.actor:
        todo.contested_by.append(todo.holder)
    todo.holder, todo.until = event.env.actor, d.until
    todo.claimed_clock = event.env.clock
    todo.decisions_since_claim = []


def _apply_todo_renewed(fold: Fold, event: Event) -> None:
    d = cast("TodoRenewed", event.data)
    fold.todos[d.id].until = d.until


def _drop_lease(todo: Todo) -> None:
    todo.holder = todo.until = None
    todo.decisions_since_claim = []


def _apply_todo_released(fold: Fold, event: Event) -> None:
    d = cast("TodoReleased", event.data)
    _drop_lease(fold.todos[d.id])


def _apply_todo_done(fold: Fold, event: Event) -> None:
    d = cast("TodoDone", event.data)
    todo = fold.todos[d.id]
    todo.state, todo.reason = "done", d.summary
    todo.evidence += [e for e in d.evidence if e not in todo.evidence]
    _drop_lease(todo)


def _apply_todo_state(state: str) -> Callable[[Fold, Event], None]:
    def apply(fold: Fold, event: Event) -> None:
        d = cast("TodoBlocked | TodoReopened | TodoCancelled", event.data)
        todo = fold.todos[d.id]
        todo.state, todo.reason = state, d.reason
        _drop_lease(todo)

    return apply


def _apply_gate_opened(fold: Fold, event: Event) -> None:
    d = cast("GateOpened", event.data)
    fold.gates[d.id] = Gate(d.id, d.goal, d.question, list(d.authority), list(d.blocks),
                            opened_by=event.env.actor)
    for todo_id in d.blocks:
        if d.id not in fold.todos[todo_id].gates:
            fold.todos[todo_id].gates.append(d.id)


def _apply_gate_answered(fold: Fold, event: Event) -> None:
    d = cast("GateAnswered", event.data)
    gate = fold.gates[d.id]
    gate.state, gate.decision, gate.answer, gate.comment = "answered", d.decision, d.answer, d.comment
    gate.answered_by, gate.answered_event = event.env.actor, event.id
    gate.answered_clock = event.env.clock
    # A decision invalidates plans made before it: tell whoever holds a todo of this goal.
    for todo in fold.todos.values():
        if todo.goal == gate.goal and todo.holder and todo.claimed_clock < event.env.clock:
            todo.decisions_since_claim.append(gate.id)


def _apply_gate_withdrawn(fold: Fold, event: Event) -> None:
    d = cast("GateWithdrawn", event.data)
    fold.gates[d.id].state = "withdrawn"


def _apply_evidence(fold: Fold, event: Event) -> None:
    d = cast("EvidenceRecorded", event.data)
    goal = event.env.goal or (fold.todos[d.todo].goal if d.todo else None)
    fold.evidence[d.id] = Evidence(
        d.id, d.kind, goal, d.todo, list(d.criteria), d.commit, d.tree, d.dirty, d.exit_code,
        d.command, d.summary, d.url, event.env.actor, event.env.at,
    )
    if d.todo and d.id not in fold.todos[d.todo].evidence:
        fold.todos[d.todo].evidence.append(d.id)  # shown on the todo before it is done, too


def _apply_remapped(fold: Fold, event: Event) -> None:
    d = cast("EvidenceRemapped", event.data)
    for pair in d.mappings:
        fold.remaps[pair["old"]] = pair["new"]


def _apply_wake_set(fold: Fold, event: Event) -> None:
    d = cast("WakeSet", event.data)
    fold.wakes[d.id] = Wake(d.id, event.env.goal, d.at, d.on_gate, d.on_ci, d.on_todo, d.reason,
                            event.env.actor)


def _apply_wake_cleared(fold: Fold, event: Event) -> None:
    d = cast("WakeCleared", event.data)
    del fold.wakes[d.id]


def _apply_quota_set(fold: Fold, event: Event) -> None:
    quota = fold.quotas.setdefault(event.env.goal or "", Quota())
    for name in ("turns", "tokens", "cost"):
        value = getattr(event.data, name)
        if value is not None:
            setattr(quota, name, value)


def _apply_quota_spent(fold: Fold, event: Event) -> None:
    d = cast("QuotaSpent", event.data)
    scopes = {"", event.env.goal} if event.env.goal else {""}
    for scope in scopes:
        quota = fold.quotas.setdefault(scope, Quota())
        quota.spent_turns += d.turns
        quota.spent_tokens += d.tokens
        quota.spent_cost = round(quota.spent_cost + d.cost, 6)


def _apply_effect_intended(fold: Fold, event: Event) -> None:
    d = cast("EffectIntended", event.data)
    fold.effects[d.id] = Effect(d.id, event.env.goal, d.todo, d.target, d.action,
                                d.idempotency_key, event.env.actor, event.env.at)


def _apply_effect_confirmed(fold: Fold, event: Event) -> None:
    d = cast("EffectConfirmed", event.data)
    effect = fold.effects[d.id]
    effect.state, effect.receipt = "confirmed", d.receipt


def _apply_effect_failed(fold: Fold, event: Event) -> None:
    d = cast("EffectFailed", event.data)
    effect = fold.effects[d.id]
    effect.state, effect.error, effect.retryable = "failed", d.error, d.retryable


def _apply_note(fold: Fold, event: Event) -> None:
    fold.notes += 1


def _apply_session_opened(fold: Fold, event: Event) -> None:
    d, env = cast("SessionOpened", event.data), event.env
    goal = env.goal or (fold.todos[d.todo].goal if d.todo else None)
    fold.sessions[d.id] = Session(
        d.id, d.task, goal, d.todo, env.actor, d.keep_open, d.keep_open_reason,
        d.workspace.host, d.workspace.path, env.at, clock=env.clock, active_at=env.at)


def _apply_session_progress(fold: Fold, event: Event) -> None:
    d = cast("SessionProgress", event.data)
    session = fold.sessions[d.id]
    session.last_progress, session.active_at = d.message, event.env.at


def _apply_session_responded(fold: Fold, event: Event) -> None:
    d = cast("SessionResponded", event.data)
    session = fold.sessions[d.id]
    session.state, session.last_response = "awaiting_input", d.response
    session.active_at = event.env.at


def interjection_kind(session: Session) -> str:
    """What a message to ``session`` is right now: a correction while it runs, else a follow-up."""
    return "correction" if session.state == "running" else "follow_up"


def _apply_session_interjected(fold: Fold, event: Event) -> None:
    d = cast("SessionInterjected", event.data)
    session, env = fold.sessions[d.id], event.env
    # The kind is re-derived from the replay order, so every clone agrees even when a merge
    # put the sender's message on the other side of a response; `sent_as` keeps what they saw.
    session.messages.append({
        "event": event.id, "seq": len(session.messages) + 1, "from": env.actor, "at": env.at,
        "kind": interjection_kind(session), "sent_as": d.kind,
        "message": d.message,
    })
    session.state, session.active_at = "running", env.at


def _apply_session_checkpointed(fold: Fold, event: Event) -> None:
    d = cast("SessionCheckpointed", event.data)
    fold.sessions[d.id].checkpoints.append({
        "number": d.number, "event": event.id, "at": event.env.at, "summary": d.summary,
        "omitted": d.omitted, "bytes": d.transcript.bytes, "sha256": d.transcript.sha256,
        "chunks": [[c.path, c.oid, c.bytes] for c in d.transcript.chunks],
    })


def _apply_session_acked(fold: Fold, event: Event) -> None:
    d = cast("SessionAcked", event.data)
    session = fold.sessions[d.id]
    session.acked += [i for i in d.interjections if i not in session.acked]


def _apply_session_closed(fold: Fold, event: Event) -> None:
    d = cast("SessionClosed", event.data)
    session = fold.sessions[d.id]
    session.state, session.closed_reason = "closed", d.reason
    session.closed_note, session.closed_at = d.note, event.env.at
    session.closed_by = event.env.actor


_APPLY: dict[str, Callable[[Fold, Event], None]] = {
    "ledger.initialised": _apply_initialised,
    "config.set": _apply_config,
    "goal.created": _apply_goal_created,
    "goal.updated": _apply_goal_updated,
    "goal.closed": _apply_goal_closed,
    "todo.added": _apply_todo_added,
    "todo.updated": _apply_todo_updated,
    "todo.claimed": _apply_todo_claimed,
    "todo.renewed": _apply_todo_renewed,
    "todo.released": _apply_todo_released,
    "todo.done": _apply_todo_done,
    "todo.blocked": _apply_todo_state("blocked"),
    "todo.reopened": _apply_todo_state("open"),
    "todo.cancelled": _apply_todo_state("cancelled"),
    "gate.opened": _apply_gate_opened,
    "gate.answered": _apply_gate_answered,
    "gate.withdrawn": _apply_gate_withdrawn,
    "evidence.recorded": _apply_evidence,
    "evidence.remapped": _apply_remapped,
    "wake.set": _apply_wake_set,
    "wake.cleared": _apply_wake_cleared,
    "quota.set": _apply_quota_set,
    "quota.spent": _apply_quota_spent,
    "effect.intended": _apply_effect_intended,
    "effect.confirmed": _apply_effect_confirmed,
    "effect.failed": _apply_effect_failed,
    "note.added": _apply_note,
    "session.opened": _apply_session_opened,
    "session.progress": _apply_session_progress,
    "session.responded": _apply_session_responded,
    "session.interjected": _apply_session_interjected,
    "session.checkpointed": _apply_session_checkpointed,
    "session.acked": _apply_session_acked,
    "session.closed": _apply_session_closed,
}


# --- derived views -----------------------------------------------------------------------------


def passing(evidence: Evidence) -> bool:
    return evidence.kind != "note" and evidence.exit_code in (None, 0)


def criterion_evidence(fold: Fold, goal_id: str) -> dict[str, list[str]]:
    """criterion id -> ids of passing evidence that supports it."""
    goal = fold.goals[goal_id]
    found: dict[str, list[str]] = {c["id"]: [] for c in goal.acceptance}
    for ev in fold.evidence.values():
        if ev.goal == goal_id and passing(ev):
            for crit in ev.criteria:
                if crit in found:
                    found[crit].append(ev.id)
    return found


def unmet_criteria(fold: Fold, goal_id: str) -> list[str]:
    return [crit for crit, ids in criterion_evidence(fold, goal_id).items() if not ids]


def todo_view(fold: Fold, todo: Todo, now: datetime) -> dict[str, Any]:
    live = todo.holder is not None and todo.until is not None and clk.parse_ts(todo.until) > now
    state = "claimed" if (todo.state == "open" and live) else todo.state
    why: Optional[str] = None
    if todo.state != "open":
        why = todo.state + (f": {todo.reason}" if todo.state == "blocked" and todo.reason else "")
    elif live:
        why = f"claimed by {todo.holder} until {todo.until}"
    else:
        why = _not_ready(fold, todo)
    return {
        "id": todo.id, "goal": todo.goal, "title": todo.title, "state": state,
        "depends_on": list(todo.depends_on), "gates": list(todo.gates),
        "claimed_by": todo.holder if live else None,
        "lease_expires": todo.until if live else None,
        "expired_claim_by": todo.holder if (todo.holder and not live) else None,
        "contested_by": list(todo.contested_by),
        "decisions_since_claim": list(todo.decisions_since_claim) if live else [],
        "ready": why is None, "why_not_ready": why, "evidence": list(todo.evidence),
    }


def frontier(fold: Fold, now: datetime) -> list[str]:
    """Open todos that are ready and unleased, oldest first (by clock, then id)."""
    ready = [t for t in fold.todos.values() if todo_view(fold, t, now)["ready"]]
    return [t.id for t in sorted(ready, key=lambda t: (t.clock, t.id))]


def snapshot(fold: Fold, now: datetime) -> dict[str, Any]:
    """The ledger part of ``git loopx status --format json`` (documented in docs/status.md)."""
    todos = [todo_view(fold, t, now) for t in sorted(fold.todos.values(), key=lambda t: (t.clock, t.id))]
    return {
        "ledger": {"name": fold.name, "events": fold.events, "clock": fold.max_clock},
        "goals": [_goal_view(fold, g) for g in sorted(fold.goals.values(), key=lambda g: (g.clock, g.id))],
        "todos": todos,
        "frontier": [t["id"] for t in todos if t["ready"]],
        "gates": [_gate_view(g) for g in fold.gates.values()],
        "evidence": [_evidence_view(e) for e in fold.evidence.values()],
        "wakes": [dataclasses.asdict(w) for w in fold.wakes.values()],
        "quota": {scope or "*": _quota_view(q) for scope, q in sorted(fold.quotas.items())},
        "effects": [dataclasses.asdict(e) for e in fold.effects.values()],
        "problems": [dataclasses.asdict(p) for p in fold.problems],
        "unknown_events": list(fold.unknown),
        "notes": fold.notes,
        "sessions": [session_view(s, now) for s in
                     sorted(fold.sessions.values(), key=lambda s: (s.clock, s.id))],
    }


def session_view(session: Session, now: datetime) -> dict[str, Any]:
    """One session as ``status --format json`` shows it (documented in docs/sessions.md)."""
    idle = None
    if session.state != "closed":
        idle = max(0, int((now - clk.parse_ts(session.active_at)).total_seconds()))
    acked = set(session.acked)
    return {
        "id": session.id, "state": session.state, "owner": session.owner, "task": session.task,
        "goal": session.goal, "todo": session.todo,
        "workspace": {"host": session.host, "path": session.path},
        "idle_seconds": idle,
        "inbox": [{k: m[k] for k in ("event", "seq", "from", "at", "kind", "message")}
                  for m in session.messages if m["event"] not in acked],
        "keep_open": session.keep_open, "keep_open_reason": session.keep_open_reason,
        "closed_reason": session.closed_reason, "last_response": session.last_response,
        "last_progress": session.last_progress, "opened_at": session.opened_at,
        "checkpoints": len(session.checkpoints),
    }


def _goal_view(fold: Fold, goal: Goal) -> dict[str, Any]:
    support = criterion_evidence(fold, goal.id)
    return {
        "id": goal.id, "title": goal.title, "state": goal.state, "reason": goal.reason,
        "acceptance": [
            {"id": c["id"], "text": c["text"], "met": bool(support[c["id"]]),
             "evidence": support[c["id"]]}
            for c in goal.acceptance
        ],
    }


def _gate_view(gate: Gate) -> dict[str, Any]:
    return {
        "id": gate.id, "goal": gate.goal, "state": gate.state, "question": gate.question,
        "authority": list(gate.authority), "blocks": list(gate.blocks),
        "decision": gate.decision, "answer": gate.answer, "comment": gate.comment,
        "answered_by": gate.answered_by,
    }


def _evidence_view(ev: Evidence) -> dict[str, Any]:
    return {
        "id": ev.id, "kind": ev.kind, "goal": ev.goal, "todo": ev.todo, "criteria": list(ev.criteria),
        "commit": ev.commit, "tree": ev.tree, "dirty": ev.dirty, "exit_code": ev.exit_code,
        "summary": ev.summary, "command": ev.command, "actor": ev.actor, "at": ev.at,
    }


def _quota_view(q: Quota) -> dict[str, Any]:
    def left(limit: Optional[float], spent: float) -> Optional[float]:
        return None if limit is None else round(limit - spent, 6)

    return {
        "turns": q.turns, "tokens": q.tokens, "cost": q.cost,
        "spent": {"turns": q.spent_turns, "tokens": q.spent_tokens, "cost": q.spent_cost},
        "left": {"turns": left(q.turns, q.spent_turns), "tokens": left(q.tokens, q.spent_tokens),
                 "cost": left(q.cost, q.spent_cost)},
        "exhausted": any(
            lim is not None and spent >= lim
            for lim, spent in ((q.turns, q.spent_turns), (q.tokens, q.spent_tokens), (q.cost, q.spent_cost))
        ),
    }
