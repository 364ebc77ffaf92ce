"""The rules: one check per event type. The same code judges replay and new writes, so a
write the CLI refuses is exactly an event the projection would list under ``problems``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, Optional, cast

from loopx.model import clock
from loopx.model.limits import LINKS_MAX
from loopx.projection import authority, rule_base, session_rules, views
from loopx.projection.entities import Fold, Todo

if TYPE_CHECKING:  # annotations only: the state layer runs without pydantic on warm reads
    # Each rule narrows ``event.data`` to its payload with ``cast("Model", ...)``: a string,
    # so nothing here is imported at run time.
    from loopx.model.events import (
        EffectConfirmed, EffectFailed, EffectIntended, Event, EvidenceRecorded,
        GateAnswered, GateOpened, GateWithdrawn, GoalClosed, GoalCreated,
        GoalUpdated, QuotaSpent, TodoAcked, TodoAdded, TodoAssigned, TodoBlocked, TodoCancelled, TodoClaimed, TodoDone,
        TodoHandedOff, TodoReleased, TodoRenewed, TodoReopened, TodoUpdated, WakeCleared,
        WakeFired, WakeSet,
    )
    from loopx.model.events import NoticeDismissed

# --- rules: one check per event type; the same code judges replay and new writes -------------

Check = Callable[[Fold, "Event"], Optional[str]]


def check(fold: Fold, event: Event) -> Optional[str]:
    """Why ``event`` cannot be applied to ``fold`` now, or None when it can."""
    rule = _CHECK.get(event.type)
    return rule(fold, event) if rule else None


def _check_goal_created(fold: Fold, event: Event) -> Optional[str]:
    data = cast("GoalCreated", event.data)
    if data.id in fold.goals:
        return f"goal {data.id} already exists"
    ids = [c.id for c in data.acceptance]
    return "acceptance criteria ids repeat" if len(ids) != len(set(ids)) else None


def _check_goal_updated(fold: Fold, event: Event) -> Optional[str]:
    data = cast("GoalUpdated", event.data)
    why = rule_base.need_goal(fold, data.id)
    if why:
        return why
    goal = fold.goals[data.id]
    in_force = {c["id"] for c in goal.acceptance}
    known = in_force | {c["id"] for c in goal.retired}  # a retired id is never reused
    added = [c.id for c in data.add_acceptance]
    if known & set(added) or len(added) != len(set(added)):
        return f"goal {data.id} already has a criterion with that id"
    if len(set(goal.links) | set(data.add_links)) > LINKS_MAX:
        return f"goal {data.id} would link to more than {LINKS_MAX} issues and pull requests"
    changed = [c.id for c in data.revise or ()] + list(data.retire or ()) + [
        s.id for s in data.scope or ()]
    missing = [c for c in changed if c not in in_force]
    if missing:
        retired = [c for c in missing if c in known]
        what = "is retired" if retired else "is not one of its criteria"
        return (f"criterion {(retired or missing)[0]} of goal {data.id} {what} "
                f"(in force: {', '.join(sorted(in_force)) or 'none'})")
    revised, retiring = [c.id for c in data.revise or ()], set(data.retire or ())
    if len(revised) != len(set(revised)) or retiring & set(revised):
        return "a criterion is revised or retired once per update, not both"
    return None


def _check_goal_closed(fold: Fold, event: Event) -> Optional[str]:
    data = cast("GoalClosed", event.data)
    why = rule_base.need_goal(fold, data.id)
    if why or data.outcome != "achieved":
        return why
    rules_v2 = event.env.v >= 2  # version 1 ledgers keep the rules they were written under
    unmet = views.unmet_criteria(fold, data.id, latest=rules_v2)
    if unmet and not data.override:
        return (f"goal {data.id} has criteria without passing evidence ({', '.join(unmet)}); "
                f"record it (git loopx run --goal {data.id} --criterion ID -- CMD) or close "
                "with --override --reason TEXT (a human decision)")
    if data.override and not event.env.actor.startswith("human:"):
        return "only a human may override unmet acceptance criteria"
    if data.override and rules_v2 and not data.reason:
        return "an override is a decision on the record: say why with --reason TEXT"
    if data.override:
        why = authority.check_signature(fold, event, f"the override closing goal {data.id}")
        if why:
            return why
    unfinished = views.unfinished_todos(fold, fold.goals[data.id]) if rules_v2 else []
    if unfinished:
        named = ", ".join(f"{t.id} ({_todo_state(t, event.env.at)})" for t in unfinished[:5])
        more = f" and {len(unfinished) - 5} more" if len(unfinished) > 5 else ""
        return (f"goal {data.id} still has work: todos {named}{more}; finish or cancel them "
                f"first (git loopx todo cancel {unfinished[0].id} --reason TEXT)")
    return None


def _todo_state(todo: Todo, at: str) -> str:
    return "claimed" if todo.state == "open" and views.lease_live(todo, at) else todo.state


def _check_todo_added(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoAdded", event.data)
    if data.id in fold.todos:
        return f"todo {data.id} already exists"
    return (rule_base.need_goal(fold, data.goal)
        or _unknown(fold.todos, data.depends_on, "todo")
        or _unknown(fold.gates, data.gates, "gate")
        or _unknown_criteria(fold, data.goal, data.criteria)
        or _unknown(fold.todos, [data.discovered_from] if data.discovered_from else [], "todo")
    )


def _unknown(table: Mapping[str, Any], ids: list[str], kind: str) -> Optional[str]:
    missing = [i for i in ids if i not in table]
    return f"unknown {kind} {', '.join(missing)}" if missing else None


def _unknown_criteria(fold: Fold, goal_id: str, criteria: list[str]) -> Optional[str]:
    goal = fold.goals.get(goal_id)
    # Retired criteria are still known: a todo or evidence that crossed the retirement in a
    # merge is kept (it simply no longer counts).
    known = {c["id"] for c in [*goal.acceptance, *goal.retired]} if goal else set()
    missing = [c for c in criteria if c not in known]
    return f"goal {goal_id} has no criterion {', '.join(missing)}" if missing else None


def _check_todo_updated(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoUpdated", event.data)
    todo, why = rule_base.need_todo(fold, data.id)
    if why:
        return why
    why = _unknown(fold.todos, data.add_depends_on, "todo") or _unknown(
        fold.gates, data.add_gates, "gate")
    if why:
        return why
    for dep in data.add_depends_on:
        if dep == data.id or data.id in views.ancestors(fold, dep):
            return f"depending on {dep} would make a cycle ({dep} already waits for {data.id})"
    return None


def _check_todo_claimed(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoClaimed", event.data)
    todo, why = rule_base.need_todo(fold, data.id)
    if why or todo is None:
        return why
    if todo.state != "open":
        return f"todo {todo.id} is {todo.state}"
    why = _others_lease(todo, event, data.takes if event.env.v >= 3 else None)
    if why:
        return why
    why = views.not_ready(fold, todo)
    if why:
        return f"todo {todo.id} is not ready: {why}"
    if event.env.v < 2:
        return None
    spent = views.quota_exhausted(fold, todo.goal)
    if spent:
        scope, name, said = spent
        return (f"{said}: no new claims until it is raised "
                f"(git loopx quota set{f' --goal {scope}' if scope else ''} --{name} N)")
    return _positive_lease(todo.id, event.env.at, data.until)


def _others_lease(todo: Todo, event: Event, takes: Optional[str]) -> Optional[str]:
    """Why ``event`` may not act over someone else's lease on ``todo``, or None. From v3 the
    writer says which lease it judged ended (``takes``, by when its clone first saw it): one
    that names another lease (a claim that crossed this one, a renewal it did not see) is not
    applied, whatever the two clocks say. Earlier versions compare the lease's end with the
    event's own clock, as they were written."""
    if not todo.holder or todo.holder == event.env.actor:
        return None
    if event.env.v >= 3:
        live = takes is None or takes != todo.lease_event
    else:
        live = views.lease_live(todo, event.env.at)
    return f"todo {todo.id} is claimed by {todo.holder} until {todo.until}" if live else None


def _positive_lease(todo_id: str, at: str, until: str) -> Optional[str]:
    if clock.parse_ts(until) <= clock.parse_ts(at):
        return (f"a lease on todo {todo_id} must end after it starts ({until} is not after "
                f"{at}); give a positive --ttl, e.g. 45m")
    return None


def _check_lease_holder(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoRenewed | TodoReleased", event.data)
    todo, why = rule_base.need_todo(fold, data.id)
    if why or todo is None:
        return why
    if todo.holder is None:
        return f"todo {todo.id} is not claimed"
    if todo.holder != event.env.actor and not (
        event.type == "todo.released" and event.env.actor.startswith("human:")
    ):
        return f"todo {todo.id} is claimed by {todo.holder}, not {event.env.actor}"
    return None


def _identity(who: str, verb: str) -> Optional[str]:
    if who.startswith("role:"):
        return f"{verb} an identity (human:EMAIL, agent:NAME@HOST), not a role ({who})"
    return None


def _check_todo_assigned(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoAssigned", event.data)
    todo, why = rule_base.need_todo(fold, data.id)
    if why or todo is None:
        return why
    if todo.state in ("done", "cancelled"):
        return f"todo {todo.id} is {todo.state}"
    return _identity(data.to, "assign a todo to") if data.to else None


def _check_todo_handed_off(fold: Fold, event: Event) -> Optional[str]:
    """Only the holder hands a lease on (a human may hand on anyone's, as they may release
    it). Replay order settles a race: a claim or another handoff applied first leaves this
    writer no longer the holder, and this one is not applied."""
    data = cast("TodoHandedOff", event.data)
    todo, why = rule_base.need_todo(fold, data.id)
    if why or todo is None:
        return why
    if todo.state != "open":
        return f"todo {todo.id} is {todo.state}"
    if todo.holder is None:
        return f"todo {todo.id} is not claimed: assign it instead (git loopx todo assign)"
    if todo.holder != event.env.actor and not event.env.actor.startswith("human:"):
        return f"todo {todo.id} is claimed by {todo.holder}, not {event.env.actor}"
    if data.to == todo.holder:
        return f"todo {todo.id} is held by {data.to} already"
    return _identity(data.to, "hand a lease to") or _positive_lease(
        todo.id, event.env.at, data.until)


def _check_todo_done(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoDone", event.data)
    todo, why = rule_base.need_todo(fold, data.id)
    if why or todo is None:
        return why
    if todo.state in ("done", "cancelled"):
        return f"todo {todo.id} is already {todo.state}"
    why = _others_lease(todo, event, data.takes if event.env.v >= 3 else None)
    if why:
        return why
    why = _past_gates(fold, event, todo, "finishing")
    if why:
        return why
    why = views.cited_problem(fold, todo, data.evidence, beaten=event.env.v >= 4)  # v3: any pass
    if why:
        return why
    why = _unknown(fold.evidence, data.evidence, "evidence")
    if why or event.env.v < 2 or data.reason:
        return why
    _, missing = views.done_evidence(fold, todo, data.evidence)
    if missing:
        return (f"{missing}: record a passing result (git loopx run --todo {todo.id} -- CMD) "
                "or say why it is done without one (--reason TEXT)")
    return None


def _past_gates(fold: Fold, event: Event, todo: Todo, verb: str) -> Optional[str]:
    """Finishing or cancelling a todo that a gate still holds decides past that gate: its
    authority's act (signed where the policy says), for every version of the event."""
    held = authority.holding(fold, todo)
    for gate in held:
        if event.env.actor not in authority.resolve(fold.config, gate.authority):
            return (f"todo {todo.id} waits for gate {gate.id} ({gate.state}"
                    f"{' ' + gate.decision if gate.decision and gate.state == 'answered' else ''}); "
                    f"{verb} it is decided by {authority.named(fold.config, gate.authority)} only; "
                    f"you are {event.env.actor}")
    if not held:
        return None
    return authority.check_signature(
        fold, event, f"{verb} todo {todo.id} past gate {', '.join(g.id for g in held)}")


def _check_todo_acked(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoAcked", event.data)
    todo, why = rule_base.need_todo(fold, data.id)
    if why or todo is None:
        return why
    if todo.holder != event.env.actor and not event.env.actor.startswith("human:"):
        return f"todo {todo.id} is held by {todo.holder or 'nobody'}, not {event.env.actor}"
    unknown = [g for g in data.gates if g not in todo.decisions_since_claim]
    if unknown:
        flagged = ", ".join(todo.decisions_since_claim) or "none"
        return (f"todo {todo.id} has no unacknowledged decision {', '.join(unknown)} "
                f"(flagged: {flagged})")
    return None


def _check_todo_blocked(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoBlocked", event.data)
    todo, why = rule_base.need_todo(fold, data.id)
    if why or todo is None:
        return why
    return None if todo.state == "open" else f"todo {todo.id} is {todo.state}"


def _check_todo_reopened(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoReopened", event.data)
    todo, why = rule_base.need_todo(fold, data.id)
    if why or todo is None:
        return why
    return None if todo.state != "open" else f"todo {todo.id} is already open"


def _check_todo_cancelled(fold: Fold, event: Event) -> Optional[str]:
    data = cast("TodoCancelled", event.data)
    todo, why = rule_base.need_todo(fold, data.id)
    if why or todo is None:
        return why
    if todo.state not in ("open", "blocked"):
        return f"todo {todo.id} is {todo.state}"
    return _past_gates(fold, event, todo, "cancelling")


def _check_gate_opened(fold: Fold, event: Event) -> Optional[str]:
    data = cast("GateOpened", event.data)
    if data.id in fold.gates:
        return f"gate {data.id} already exists"
    roles = fold.config.get("roles") or {}
    missing = [a for a in data.authority if a.startswith("role:") and not roles.get(a[5:])]
    if missing:  # nobody could ever answer it
        return (f"no one holds {', '.join(missing)}; define it first: "
                f"git loopx config set --role {missing[0][5:]}=human:EMAIL")
    return rule_base.need_goal(fold, data.goal) or _unknown(fold.todos, data.blocks, "todo")


def _check_gate_answered(fold: Fold, event: Event) -> Optional[str]:
    data = cast("GateAnswered", event.data)
    gate = fold.gates.get(data.id)
    if gate is None:
        return f"unknown gate {data.id}"
    # An answer to a gate that already has a decision is legal: if it names that decision in
    # `supersedes` it replaces it, else the two did not see each other and the gate becomes
    # conflicted (appliers.decide_gate) until its authority decides again.
    if event.env.actor not in authority.resolve(fold.config, gate.authority):
        return (f"gate {gate.id} is answered by {authority.named(fold.config, gate.authority)} only; "
                f"you are {event.env.actor}")
    if data.decision == "answer" and not data.answer:
        return "a free answer needs its text"
    return authority.check_signature(fold, event, f"the answer to gate {gate.id}")



def _check_config_set(fold: Fold, event: Event) -> Optional[str]:
    return authority.check_signature(fold, event, "a change to roles or signing rules")


def _check_gate_withdrawn(fold: Fold, event: Event) -> Optional[str]:
    data = cast("GateWithdrawn", event.data)
    gate = fold.gates.get(data.id)
    if gate is None:
        return f"unknown gate {data.id}"
    # Withdrawing is a decision too: it unblocks the gate's todos. Its opener may take back
    # a question nobody has decided; once decided (or conflicted), replacing that decision
    # is its authority's alone, or the opener could reverse the authority's reject.
    deciders = authority.resolve(fold.config, gate.authority)
    if gate.state == "open":
        deciders = deciders | {gate.opened_by}
    if event.env.actor not in deciders:
        if gate.state != "open":
            return (f"gate {gate.id} is {gate.state} ({views.conflict_summary(gate)}): it is "
                    f"withdrawn now by {authority.named(fold.config, gate.authority)} only; you are "
                    f"{event.env.actor}")
        return (f"gate {gate.id} is withdrawn by its opener {gate.opened_by} or by "
                f"{authority.named(fold.config, gate.authority)} only; you are {event.env.actor}")
    return authority.check_signature(fold, event, f"the withdrawal of gate {gate.id}")


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
        return rule_base.need_goal(fold, goal, open_=False) or _unknown_criteria(fold, goal, data.criteria)
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
    if data.every and (not data.at or data.on_gate or data.on_ci or data.on_todo):
        return "a recurring wake is a time wake: give it a first time, and no gate, CI or todo"
    return None


def _check_wake_cleared(fold: Fold, event: Event) -> Optional[str]:
    data = cast("WakeCleared", event.data)
    return None if data.id in fold.wakes else f"unknown wake {data.id}"


def _check_wake_fired(fold: Fold, event: Event) -> Optional[str]:
    data = cast("WakeFired", event.data)
    wake = fold.wakes.get(data.id)
    if wake is None:
        return f"unknown wake {data.id}"
    return None if wake.every else f"wake {data.id} is not recurring; clear it instead"


def _check_quota(fold: Fold, event: Event) -> Optional[str]:
    goal = event.env.goal
    if goal is not None:
        return rule_base.need_goal(fold, goal, open_=event.type == "quota.set")
    return None


def _check_quota_spent(fold: Fold, event: Event) -> Optional[str]:
    data = cast("QuotaSpent", event.data)
    why = _check_quota(fold, event)
    if why or event.env.v < 2:
        return why
    if data.force:
        if not data.reason:
            return "spending past the budget needs --reason TEXT"
        return authority.check_signature(fold, event, "spending past the budget (--force)")
    over = views.quota_overrun(fold, event.env.goal,
                               {"turns": data.turns, "tokens": data.tokens, "cost": data.cost})
    return (f"{over}: raise the budget first (git loopx quota set ...), or record it anyway "
            "with --force --reason TEXT") if over else None


def _check_effect_intended(fold: Fold, event: Event) -> Optional[str]:
    data = cast("EffectIntended", event.data)
    if data.id in fold.effects:
        return f"effect {data.id} already exists"
    earlier = fold.effect_keys.get(data.idempotency_key)
    effect = fold.effects.get(earlier) if earlier else None
    if effect is not None and effect.state != "failed":
        return (f"idempotency key {data.idempotency_key} is already used by effect "
                f"{effect.id} ({effect.state})")
    return None


def _check_effect_outcome(fold: Fold, event: Event) -> Optional[str]:
    data = cast("EffectConfirmed | EffectFailed", event.data)
    effect = fold.effects.get(data.id)
    if effect is None:
        return f"unknown effect {data.id}"
    return None if effect.state == "indeterminate" else f"effect {effect.id} is already {effect.state}"


def _check_notice_dismissed(fold: Fold, event: Event) -> Optional[str]:
    data = cast("NoticeDismissed", event.data)
    mine = {p.event for p in fold.problems if p.actor == event.env.actor and p.type != "file"}
    for event_id in data.events:
        if event_id in fold.dismissed:
            return f"the notice about event {event_id} is already dismissed"
        if event_id not in mine:
            return (f"there is no notice about event {event_id} for {event.env.actor} "
                    "(only your own events that were not applied have one)")
    return None


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
    "todo.assigned": _check_todo_assigned,
    "todo.handed_off": _check_todo_handed_off,
    "todo.released": _check_lease_holder,
    "todo.done": _check_todo_done,
    "todo.acked": _check_todo_acked,
    "notice.dismissed": _check_notice_dismissed,
    "todo.blocked": _check_todo_blocked,
    "todo.reopened": _check_todo_reopened,
    "todo.cancelled": _check_todo_cancelled,
    "gate.opened": _check_gate_opened,
    "gate.answered": _check_gate_answered,
    "gate.withdrawn": _check_gate_withdrawn,
    "evidence.recorded": _check_evidence,
    "wake.set": _check_wake_set,
    "wake.cleared": _check_wake_cleared,
    "wake.fired": _check_wake_fired,
    "quota.set": _check_quota,
    "quota.spent": _check_quota_spent,
    "effect.intended": _check_effect_intended,
    "effect.confirmed": _check_effect_outcome,
    "effect.failed": _check_effect_outcome,
    "session.opened": session_rules.opened,
    "session.progress": session_rules.running,
    "session.responded": session_rules.owner,
    "session.interjected": session_rules.open,
    "session.checkpointed": session_rules.checkpointed,
    "session.acked": session_rules.acked,
    "session.closed": session_rules.closed,
}


