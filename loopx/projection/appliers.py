"""The appliers: one per event type, only ever called after the matching check passed."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, Callable, Optional, cast

from loopx.projection import authority, views
from loopx.projection.entities import Effect, Evidence, Fold, Gate, Goal, Quota, Session, Todo, Wake
from loopx.projection.entities import Dismissal

if TYPE_CHECKING:  # annotations only: the state layer runs without pydantic on warm reads
    # Each rule narrows ``event.data`` to its payload with ``cast("Model", ...)``: a string,
    # so nothing here is imported at run time.
    from loopx.model.events import (
        ConfigSet, Criterion, EffectConfirmed, EffectFailed, EffectIntended, Event, EvidenceRecorded,
        EvidenceRemapped, GateAnswered, GateOpened, GateWithdrawn, GoalClosed, GoalCreated,
        GoalUpdated, LedgerInitialised, QuotaSpent, SessionAcked, SessionCheckpointed,
        SessionClosed, SessionInterjected, SessionOpened, SessionProgress, SessionResponded,
        TodoAcked, TodoAdded, TodoAssigned, TodoBlocked, TodoCancelled, TodoClaimed, TodoDone,
        TodoHandedOff, TodoReleased, TodoRenewed, TodoReopened, TodoUpdated, WakeCleared,
        WakeFired, WakeSet,
    )
    from loopx.model.events import NoticeDismissed


def _apply_initialised(fold: Fold, event: Event) -> None:
    d = cast("LedgerInitialised", event.data)
    fold.name = fold.name or d.name


def _apply_config(fold: Fold, event: Event) -> None:
    d = cast("ConfigSet", event.data)
    changes = d.model_dump(exclude_none=True)
    if event.id in fold.extra.get("held", ()):  # review: the range is judged by BASE's policy
        changes = {k: v for k, v in changes.items() if k not in authority.SIGNING_CONFIG}
    fold.config.update(changes)


def _criterion(crit: Criterion) -> dict[str, Any]:
    return {"id": crit.id, "text": crit.text, "paths": list(crit.paths or []), "revision": 0}


def _apply_goal_created(fold: Fold, event: Event) -> None:
    d = cast("GoalCreated", event.data)
    fold.goals[d.id] = Goal(d.id, d.title, d.description,
                            [_criterion(c) for c in d.acceptance],
                            created_by=event.env.actor, clock=event.env.clock,
                            links=list(d.links))


def _apply_goal_updated(fold: Fold, event: Event) -> None:
    d = cast("GoalUpdated", event.data)
    goal = fold.goals[d.id]
    goal.title = d.title or goal.title
    goal.description = d.description if d.description is not None else goal.description
    goal.acceptance.extend(_criterion(c) for c in d.add_acceptance)
    goal.state = d.state or goal.state
    goal.links.extend(link for link in d.add_links if link not in goal.links)
    by_id = {c["id"]: c for c in goal.acceptance}
    for new in d.revise or ():
        crit = by_id[new.id]
        crit["text"], crit["revision"] = new.text, crit.get("revision", 0) + 1
        if new.paths is not None:
            crit["paths"] = list(new.paths)
        goal.verdicts.pop(new.id, None)  # what was recorded before vouches for the old text
    for scope in d.scope or ():
        by_id[scope.id]["paths"] = list(scope.paths)
    retired = set(d.retire or ())
    if retired:
        goal.retired += [c for c in goal.acceptance if c["id"] in retired]
        goal.acceptance = [c for c in goal.acceptance if c["id"] not in retired]
        for crit_id in retired:
            goal.verdicts.pop(crit_id, None)


def _apply_goal_closed(fold: Fold, event: Event) -> None:
    d = cast("GoalClosed", event.data)
    goal = fold.goals[d.id]
    goal.state, goal.reason, goal.override = d.outcome, d.reason, d.override


def _apply_todo_added(fold: Fold, event: Event) -> None:
    d = cast("TodoAdded", event.data)
    fold.todos[d.id] = Todo(d.id, d.goal, d.title, d.description, list(d.depends_on),
                            list(d.gates), list(d.criteria), clock=event.env.clock)
    if d.priority is not None:
        fold.todos[d.id].priority = d.priority
    fold.todos[d.id].discovered_from = d.discovered_from
    fold.todos[d.id].labels = _labelled([], d.labels or [], [])
    fold.todos[d.id].links = list(d.links)
    fold.todos[d.id].needs = list(d.needs or [])
    fold.goals[d.goal].todos.append(d.id)
    _link(fold, d.id, d.depends_on, d.gates)


def _link(fold: Fold, todo_id: str, depends_on: list[str], gates: list[str]) -> None:
    """The reverse indexes: who waits for a todo, which todos a gate holds back."""
    for dep in depends_on:
        if todo_id not in fold.todos[dep].dependants:
            fold.todos[dep].dependants.append(todo_id)
    for gate_id in gates:
        if todo_id not in fold.gates[gate_id].blocks:
            fold.gates[gate_id].blocks.append(todo_id)


def _apply_todo_updated(fold: Fold, event: Event) -> None:
    d = cast("TodoUpdated", event.data)
    todo = fold.todos[d.id]
    todo.title = d.title or todo.title
    todo.description = d.description if d.description is not None else todo.description
    todo.depends_on += [t for t in d.add_depends_on if t not in todo.depends_on]
    todo.gates += [g for g in d.add_gates if g not in todo.gates]
    todo.priority = d.priority if d.priority is not None else todo.priority
    if d.add_labels or d.remove_labels:
        todo.labels = _labelled(todo.labels, d.add_labels or [], d.remove_labels or [])
    _link(fold, d.id, d.add_depends_on, d.add_gates)


def _labelled(labels: list[str], add: list[str], remove: list[str]) -> list[str]:
    """``labels`` with ``add`` appended (once each) and then ``remove`` taken out."""
    found = list(labels) + [a for n, a in enumerate(add) if a not in labels and a not in add[:n]]
    return [label for label in found if label not in remove]


def _apply_todo_assigned(fold: Fold, event: Event) -> None:
    d = cast("TodoAssigned", event.data)
    fold.todos[d.id].assignee = d.to


def _apply_todo_handed_off(fold: Fold, event: Event) -> None:
    """The lease moves to ``to`` (a new plan: the old holder's flags go), who is now also the
    todo's assignee; the branch it was claimed on stays the old holder's and is not kept."""
    d = cast("TodoHandedOff", event.data)
    todo = fold.todos[d.id]
    todo.holder, todo.until, todo.branch, todo.assignee = d.to, d.until, None, d.to
    todo.claimed_clock = event.env.clock
    todo.lease_event, todo.lease_at = event.id, event.env.at
    todo.decisions_since_claim = []


def _apply_todo_claimed(fold: Fold, event: Event) -> None:
    d = cast("TodoClaimed", event.data)
    todo = fold.todos[d.id]
    if todo.holder and todo.holder != event.env.actor:
        todo.contested_by.append(todo.holder)
    if todo.holder != event.env.actor:
        todo.decisions_since_claim = []  # a new holder makes a new plan; the old one's flags go
    todo.holder, todo.until, todo.branch = event.env.actor, d.until, d.branch
    todo.claimed_clock = event.env.clock
    todo.lease_event, todo.lease_at = event.id, event.env.at


def _apply_notice_dismissed(fold: Fold, event: Event) -> None:
    for event_id in cast("NoticeDismissed", event.data).events:
        fold.dismissed[event_id] = Dismissal(event_id, event.env.actor, event.env.clock)


def _apply_todo_acked(fold: Fold, event: Event) -> None:
    d = cast("TodoAcked", event.data)
    todo = fold.todos[d.id]
    todo.decisions_since_claim = [g for g in todo.decisions_since_claim if g not in d.gates]


def _apply_todo_renewed(fold: Fold, event: Event) -> None:
    d = cast("TodoRenewed", event.data)
    todo = fold.todos[d.id]
    todo.until, todo.lease_event, todo.lease_at = d.until, event.id, event.env.at


def _drop_lease(todo: Todo) -> None:
    todo.holder = todo.until = todo.branch = todo.lease_event = todo.lease_at = None
    todo.decisions_since_claim = []


def _apply_todo_released(fold: Fold, event: Event) -> None:
    d = cast("TodoReleased", event.data)
    _drop_lease(fold.todos[d.id])


def _apply_todo_done(fold: Fold, event: Event) -> None:
    d = cast("TodoDone", event.data)
    todo = fold.todos[d.id]
    todo.state, todo.reason = "done", d.summary
    todo.no_evidence_reason = d.reason
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
    decide_gate(fold, event, {"event": event.id, "kind": "answer", "actor": event.env.actor,
                              "clock": event.env.clock, "decision": d.decision,
                              "answer": d.answer, "comment": d.comment}, d.supersedes)


def _apply_gate_withdrawn(fold: Fold, event: Event) -> None:
    d = cast("GateWithdrawn", event.data)
    decide_gate(fold, event, {"event": event.id, "kind": "withdraw", "actor": event.env.actor,
                              "clock": event.env.clock, "decision": None, "answer": None,
                              "comment": d.reason}, d.supersedes)


def decide_gate(fold: Fold, event: Event, decision: dict[str, Any],
                supersedes: Optional[list[str]]) -> None:
    """Apply a decision (an answer or a withdrawal) to its gate.

    It takes effect when the gate is open or when it names every decision in force in
    ``supersedes`` (its author saw them). Otherwise the decisions did not see each other:
    one that says the same changes nothing, any other makes the gate ``conflicted`` (its
    todos stay blocked) until the authority decides again, superseding all of them.
    """
    gate = fold.gates[cast("GateAnswered", event.data).id]
    in_force = {d["event"] for d in gate.decisions}
    if gate.state == "open" or in_force <= set(supersedes or ()):
        gate.decisions = [decision]
    elif all(_same(d, decision) for d in gate.decisions):
        return
    else:
        gate.decisions = [*gate.decisions, decision]
    _show_decisions(gate)
    if decision["kind"] == "answer" or gate.state == "conflicted":
        # A decision invalidates the plans it touches, made before it: the todos the gate
        # holds back and everything that waits for them. Their holders are told until they
        # acknowledge.
        for todo_id in views.dependants(fold, gate.blocks):
            todo = fold.todos[todo_id]
            if todo.holder and todo.claimed_clock < event.env.clock and (
                    gate.id not in todo.decisions_since_claim):
                todo.decisions_since_claim.append(gate.id)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (a["kind"], a["decision"], a["answer"]) == (b["kind"], b["decision"], b["answer"])


def _show_decisions(gate: Gate) -> None:
    """The gate's state and answer fields from the decisions in force."""
    only = gate.decisions[0] if len(gate.decisions) == 1 else None
    if only is None:
        gate.state = "conflicted"
    else:
        gate.state = "answered" if only["kind"] == "answer" else "withdrawn"
    answered = only if only and only["kind"] == "answer" else None
    gate.decision = answered["decision"] if answered else None
    gate.answer = answered["answer"] if answered else None
    gate.comment = answered["comment"] if answered else None
    gate.answered_by = answered["actor"] if answered else None
    gate.answered_event = answered["event"] if answered else None
    gate.answered_clock = answered["clock"] if answered else 0


def _apply_evidence(fold: Fold, event: Event) -> None:
    d = cast("EvidenceRecorded", event.data)
    goal = event.env.goal or (fold.todos[d.todo].goal if d.todo else None)
    ev = fold.evidence[d.id] = Evidence(
        d.id, d.kind, goal, d.todo, list(d.criteria), d.commit, d.tree, d.dirty, d.exit_code,
        d.command, d.summary, d.url, event.env.actor, event.env.at, paths=list(d.paths or []),
        check=d.check, cwd=d.cwd,
    )
    if d.todo and d.id not in fold.todos[d.todo].evidence:
        fold.todos[d.todo].evidence.append(d.id)  # shown on the todo before it is done, too
    if d.commit:  # post-commit asks for commit records; a rewrite only whether any is there
        _index(fold.by_commit, d.commit, d.id if d.kind == "commit" else ANY_EVIDENCE)
    if goal is not None and goal in fold.goals and views.verdict(ev) is not None:
        _count_verdict(fold.goals[goal], ev)


def _count_verdict(goal: Goal, ev: Evidence) -> None:
    """The newest verdict for each criterion in force it names (events apply in ledger order)."""
    in_force = {c["id"] for c in goal.acceptance}
    for crit_id in ev.criteria:
        if crit_id in in_force:
            entry = goal.verdicts.setdefault(crit_id, {"latest": None, "evidence": []})
            entry["evidence"].append(ev.id)
            entry["latest"] = ev.id


def _apply_remapped(fold: Fold, event: Event) -> None:
    d = cast("EvidenceRemapped", event.data)
    for pair in d.mappings:
        fold.remaps[pair["old"]] = pair["new"]
        _index(fold.by_commit, pair["new"], f"remap:{pair['old']}")  # a rewrite's rewrite


# In the index by commit: evidence other than commit records is there, without its ids (one
# commit may carry thousands of test results; the list stays as short as its commit records).
ANY_EVIDENCE = "*"


def _index(index: MutableMapping[str, list[str]], key: str, value: str) -> None:
    """Add ``value`` under ``key`` (assigning the list anew: a cached index sees the change)."""
    values = index.get(key) or []
    if value not in values:
        index[key] = [*values, value]


def _apply_wake_set(fold: Fold, event: Event) -> None:
    d = cast("WakeSet", event.data)
    fold.wakes[d.id] = Wake(d.id, event.env.goal, d.at, d.on_gate, d.on_ci, d.on_todo, d.reason,
                            event.env.actor, d.every, set_event=event.id, set_at=event.env.at)


def _apply_wake_cleared(fold: Fold, event: Event) -> None:
    d = cast("WakeCleared", event.data)
    del fold.wakes[d.id]


def _apply_wake_fired(fold: Fold, event: Event) -> None:
    d = cast("WakeFired", event.data)
    wake = fold.wakes[d.id]
    wake.at, wake.fired_at = d.next, d.at
    wake.set_event, wake.set_at = event.id, event.env.at


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
                                d.idempotency_key, event.env.actor, event.env.at,
                                readback=d.readback, owner=d.owner or event.env.actor,
                                grace=d.grace or 0, hold=d.hold or 0, event=event.env.id)
    fold.effect_keys[d.idempotency_key] = d.id


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
        d.workspace.host, d.workspace.path, env.at, clock=env.clock, active_at=env.at,
        active_event=event.id)
    _index(fold.open_sessions, env.actor, d.id)


def _apply_session_progress(fold: Fold, event: Event) -> None:
    d = cast("SessionProgress", event.data)
    session = fold.sessions[d.id]
    session.last_progress, session.active_at = d.message, event.env.at
    session.active_event = event.id


def _apply_session_responded(fold: Fold, event: Event) -> None:
    d = cast("SessionResponded", event.data)
    session = fold.sessions[d.id]
    session.state, session.last_response = "awaiting_input", d.response
    session.active_at, session.active_event = event.env.at, event.id


def _apply_session_interjected(fold: Fold, event: Event) -> None:
    d = cast("SessionInterjected", event.data)
    session, env = fold.sessions[d.id], event.env
    # The kind is re-derived from the replay order, so every clone agrees even when a merge
    # put the sender's message on the other side of a response; `sent_as` keeps what they saw.
    session.messages.append({
        "event": event.id, "seq": len(session.messages) + 1, "from": env.actor, "at": env.at,
        "kind": views.interjection_kind(session), "sent_as": d.kind,
        "message": d.message,
    })
    session.state, session.active_at, session.active_event = "running", env.at, event.id


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
    fold.open_sessions[session.owner] = [
        s for s in fold.open_sessions.get(session.owner, []) if s != session.id]


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
    "todo.assigned": _apply_todo_assigned,
    "todo.handed_off": _apply_todo_handed_off,
    "todo.released": _apply_todo_released,
    "todo.done": _apply_todo_done,
    "todo.acked": _apply_todo_acked,
    "notice.dismissed": _apply_notice_dismissed,
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
    "wake.fired": _apply_wake_fired,
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




def apply(fold: Fold, event: Event) -> None:
    """Apply ``event`` (of a known type) to ``fold``; the caller has checked it."""
    _APPLY[event.type](fold, event)
