"""Derived views of a fold: readiness and why not, the frontier, criterion evidence, and the
``status --format json`` snapshot (for a given ``now``). Read-only and pure."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional

from loopx.errors import Ambiguous, NotFound
from loopx.model import clock
from loopx.projection import entities
from loopx.projection.entities import (
    DEFAULT_SESSION_SLOTS, Effect, Evidence, Fold, Gate, Goal, MAX_LEASE_TTL_S, Quota, Session, Todo,
    Wake,
)

# Clocks disagree (docs/design.md, "Clocks"). A writer's `at` is taken as when its event
# happened only while it lies within CLOCK_TOLERANCE before the moment this clone first saw
# the event, and never after it; otherwise the event counts from that first sight. So a lease
# ends at most its ttl after this clone first saw it, whatever the writer's clock said.
CLOCK_TOLERANCE = timedelta(minutes=5)
Seen = Mapping[str, str]  # event id -> when this clone first saw it (its own clock, UTC)


def lease_live(todo: Todo, at: str) -> bool:
    """Whether the lease was live at ``at`` by its writer's clock: how replay judges events
    of the versions before takeovers were recorded (todo.claimed and todo.done v2)."""
    return todo.holder is not None and todo.until is not None and (
        clock.parse_ts(todo.until) > clock.parse_ts(at)
    )


def counted_from(at: str, first_seen: Optional[str]) -> datetime:
    """When an event dated ``at`` counts from for this clone: its ``at``, unless that is
    after ``first_seen`` (a clock running fast) or more than CLOCK_TOLERANCE before it (a
    clock running slow, or an event seen late): then ``first_seen``. Without an observation,
    the writer's ``at``."""
    moment = clock.parse_ts(at)
    if first_seen is None:
        return moment
    seen = clock.parse_ts(first_seen)
    return moment if seen - CLOCK_TOLERANCE <= moment <= seen else seen


def lease_end(todo: Todo, seen: Optional[Seen] = None) -> Optional[datetime]:
    """When the lease on ``todo`` ends for this clone: its ttl (``until`` less the writer's
    ``at``, at most MAX_LEASE_TTL_S) after the moment it counts from; None when unleased."""
    if todo.holder is None or todo.until is None:
        return None
    until = clock.parse_ts(todo.until)
    if todo.lease_at is None or todo.lease_event is None:
        return until
    written = clock.parse_ts(todo.lease_at)
    ttl = min(max(until - written, timedelta(0)), timedelta(seconds=MAX_LEASE_TTL_S))
    return counted_from(todo.lease_at, (seen or {}).get(todo.lease_event)) + ttl


def lease_live_now(todo: Todo, now: datetime, seen: Optional[Seen] = None) -> bool:
    """Whether someone holds a live lease on ``todo`` at ``now``, as this clone judges it."""
    end = lease_end(todo, seen)
    return end is not None and end > now


def wake_due(wake: Wake, seen: Optional[Seen] = None) -> Optional[datetime]:
    """When a time wake is due for this clone: at most its delay (``at`` less the writer's
    clock when it was set) after this clone first saw it. Never later than ``at``: a wake
    that comes early only makes someone look again."""
    if wake.at is None:
        return None
    due = clock.parse_ts(wake.at)
    if wake.set_at is None or wake.set_event is None:
        return due
    first = (seen or {}).get(wake.set_event)
    if first is None:
        return due
    delay = max(due - clock.parse_ts(wake.set_at), timedelta(0))
    return min(due, clock.parse_ts(first) + delay)


def idle_since(session: Session, seen: Optional[Seen] = None) -> datetime:
    """When ``session`` last ran or responded, as this clone counts it (counted_from)."""
    first = (seen or {}).get(session.active_event) if session.active_event else None
    return counted_from(session.active_at, first)


def timed_events(fold: Fold) -> Iterator[str]:
    """The events whose meaning runs on a clock in ``fold``: those that set a lease held
    now, a time wake, or an open session's last activity (what first sight is kept for)."""
    for todo in fold.todos.values():
        if todo.holder is not None and todo.lease_event is not None:
            yield todo.lease_event
    for wake in fold.wakes.values():
        if wake.at is not None and wake.set_event is not None:
            yield wake.set_event
    for session in fold.sessions.values():
        if session.state != "closed" and session.active_event is not None:
            yield session.active_event
    for effect in fold.effects.values():
        if effect.state == "indeterminate" and effect.event is not None and effect.hold:
            yield effect.event


def clocks_ahead(fold: Fold, now: datetime) -> list[dict[str, Any]]:
    """The writers with events dated more than CLOCK_TOLERANCE after ``now``: their clocks
    run fast (or ours slow). Latest first: ``{actor, event, at, ahead_seconds}``."""
    found = []
    for actor, (at, event) in fold.clocks.items():
        ahead = clock.parse_ts(at) - now
        if ahead > CLOCK_TOLERANCE:
            found.append({"actor": actor, "event": event, "at": at,
                          "ahead_seconds": int(ahead.total_seconds())})
    return sorted(found, key=lambda f: (-f["ahead_seconds"], f["actor"]))


def clock_ahead_text(entry: Mapping[str, Any]) -> str:
    """What status and doctor say about one writer of :func:`clocks_ahead`."""
    ahead = clock.format_duration(timedelta(seconds=entry["ahead_seconds"]))
    return (f"events by {entry['actor']} are dated up to {ahead} ahead of this clock (event "
            f"{entry['event']} at {entry['at']}): its clock runs fast, or this one slow; its "
            "leases, wakes and sessions count from when this clone first saw them")


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


def not_ready(fold: Fold, todo: Todo) -> Optional[str]:
    """Why an open todo cannot be started (every blocker, ``; ``-separated), None when it can."""
    return "; ".join(blockers(fold, todo)) or None


def blockers(fold: Fold, todo: Todo) -> list[str]:
    """Everything an open todo waits for: its goal when not active, else each dependency not
    done and each gate not approved, in the order they were given."""
    goal = fold.goals.get(todo.goal)
    if goal is None:  # only in a status-only partial fold, where closed goals are left out
        return [f"goal {todo.goal} is closed"]
    if goal.state != "active":
        return [f"goal {goal.id} is {goal.state}"]
    found = []
    for dep in todo.depends_on:
        state = fold.todos[dep].state
        if state != "done":
            found.append(f"waits for todo {dep}" + ("" if state == "open" else f" ({state})"))
    for gate_id in todo.gates:
        gate = fold.gates[gate_id]
        if gate.state == "open":
            found.append(f"waits for gate {gate_id} (asks {', '.join(gate.authority)})")
        elif gate.state == "answered" and gate.decision == "reject":
            found.append(f"gate {gate_id} was rejected by {gate.answered_by}")
        elif gate.state == "conflicted":
            found.append(f"gate {gate_id} has decisions that did not see each other "
                         f"({conflict_summary(gate)}); {', '.join(gate.authority)} must decide "
                         "again")
    return found


def conflict_summary(gate: Gate) -> str:
    """``approve by A, reject by B`` for the decisions in force on a conflicted gate."""
    return ", ".join(f"{d['decision'] or 'withdraw'} by {d['actor']}" for d in gate.decisions)


def session_slots(fold: Fold) -> int:
    """How many sessions one owner may hold open (ledger config ``session_slots``)."""
    return int(fold.config.get("session_slots") or DEFAULT_SESSION_SLOTS)



KEPT_OPEN = "never on its own: it is kept open until `git loopx session close {id}` or the reaper"
ONE_SHOT = "when it responds (one-shot)"


def ends(session: Session) -> Optional[str]:
    """How an open session ends: a kept-open one never completes on its own."""
    if session.state == "closed":
        return None
    return KEPT_OPEN.format(id=session.id) if session.keep_open else ONE_SHOT


def unread(session: Session) -> list[dict[str, Any]]:
    """The messages in ``session``'s inbox: sent and not acknowledged, oldest first."""
    acked = set(session.acked)
    return [m for m in session.messages if m["event"] not in acked]


def same_goal(fold: Fold) -> dict[str, list[str]]:
    """Open session id -> the other open sessions on its goal (opened earlier or later): two
    sessions on one goal are worth a look (one was probably meant to be followed up)."""
    by_goal: dict[str, list[str]] = {}
    for s in sorted(fold.sessions.values(), key=lambda s: (s.clock, s.id)):
        if s.state != "closed" and s.goal:
            by_goal.setdefault(s.goal, []).append(s.id)
    return {sid: [o for o in ids if o != sid] for ids in by_goal.values() if len(ids) > 1
            for sid in ids}


def interjection_kind(session: Session) -> str:
    """What a message to ``session`` is right now: a correction while it runs, else a follow-up."""
    return "correction" if session.state == "running" else "follow_up"



# --- derived views -----------------------------------------------------------------------------


def passing(evidence: Evidence) -> bool:
    """Not a failure: neither a failed command nor a mere note."""
    return evidence.kind != "note" and evidence.exit_code in (None, 0)


NO_VERDICT = ("note", "commit")  # a note says nothing; a commit is work, not a result


def verdict(evidence: Evidence) -> Optional[bool]:
    """What a piece of evidence says: True it passed, False it failed, None it is no verdict."""
    return None if evidence.kind in NO_VERDICT else evidence.exit_code in (None, 0)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Where a criterion stands: its latest verdict in ledger order, and the passing evidence
    recorded for it since its last revision."""

    latest: Optional[str]
    passed: bool
    support: list[str]


def criterion_verdict(fold: Fold, goal: Goal, crit_id: str) -> Verdict:
    """The latest verdict for one criterion of ``goal`` (kept up to date by the fold)."""
    entry = goal.verdicts.get(crit_id) or {"latest": None, "evidence": []}
    support = [e for e in entry["evidence"] if e in fold.evidence and verdict(fold.evidence[e])]
    latest = entry["latest"]
    passed = latest is not None and latest in fold.evidence and bool(verdict(fold.evidence[latest]))
    return Verdict(latest, passed, support)


def unmet_criteria(fold: Fold, goal_id: str, *, latest: bool = True) -> list[str]:
    """Criteria in force whose latest verdict is not a pass (``latest=False``: that have no
    passing evidence at all, the rule of version 1 ledgers)."""
    goal = fold.goals[goal_id]
    unmet = []
    for crit in goal.acceptance:
        found = criterion_verdict(fold, goal, crit["id"])
        if not (found.passed if latest else found.support):
            unmet.append(crit["id"])
    return unmet


def unfinished_todos(fold: Fold, goal: Goal) -> list[Todo]:
    """The goal's todos still to do: open (claimed or not) or blocked."""
    return [fold.todos[t] for t in goal.todos
            if t in fold.todos and fold.todos[t].state in ("open", "blocked")]


def done_evidence(fold: Fold, todo: Todo, cited: list[str]) -> tuple[list[str], Optional[str]]:
    """The evidence that shows ``todo`` done (passing verdicts: the cited ones, else the latest
    recorded for it) and, when there is none, why not."""
    if cited:
        found = [e for e in cited if e in fold.evidence and verdict(fold.evidence[e])]
        return found, None if found else (
            f"none of the evidence cited for todo {todo.id} is a passing result "
            "(notes and commits are not)")
    latest = latest_verdict(fold, todo)
    if not latest:
        return [], f"todo {todo.id} has no passing evidence"
    if not verdict(fold.evidence[latest[0]]):
        return [], f"the latest evidence for todo {todo.id} ({latest[0]}) failed"
    return latest, None


def cited_problem(fold: Fold, todo: Todo, cited: list[str], *, beaten: bool) -> Optional[str]:
    """Why the evidence cited to finish ``todo`` does not show it done: some of it does not
    pass, or (``beaten``: todo.done from version 4) a pass was followed by a failure of the
    same todo on the same code. None when it may be cited."""
    failing = [e for e in cited if e in fold.evidence and not passing(fold.evidence[e])]
    if failing:
        return (f"evidence {', '.join(failing)} does not pass (failed, or only a note); "
                "cite passing evidence, or block the todo instead")
    for ev_id in cited if beaten else ():
        failed = newer_failure(fold, todo, ev_id)
        if failed:
            return (f"evidence {ev_id} passed, but {failed} failed later on the same code for "
                    f"todo {todo.id}: the latest verdict wins; fix it and run again")
    return None


def newer_failure(fold: Fold, todo: Todo, ev_id: str) -> Optional[str]:
    """A failing verdict recorded for ``todo`` after its evidence ``ev_id``, on the same tree:
    the latest verdict on that code, which a pass cited explicitly does not beat (None when
    there is none, or ``ev_id`` is not the todo's own evidence bound to a tree)."""
    ev = fold.evidence.get(ev_id)
    if ev is None or ev.tree is None or ev_id not in todo.evidence:
        return None
    after = todo.evidence[todo.evidence.index(ev_id) + 1:]
    newest = None
    for later in after:
        other = fold.evidence.get(later)
        if other is not None and other.tree == ev.tree and verdict(other) is not None:
            newest = later if verdict(other) is False else None  # a newer pass settles it
    return newest


def latest_verdict(fold: Fold, todo: Todo) -> list[str]:
    """The newest evidence recorded for ``todo`` that passed or failed ([] when none has)."""
    for ev_id in reversed(todo.evidence):
        if ev_id in fold.evidence and verdict(fold.evidence[ev_id]) is not None:
            return [ev_id]
    return []


def dependants(fold: Fold, seeds: list[str]) -> list[str]:
    """``seeds`` and every todo that waits for one of them, directly or through others."""
    seen: list[str] = []
    stack = [t for t in reversed(seeds) if t in fold.todos]
    while stack:
        todo_id = stack.pop()
        if todo_id not in seen:
            seen.append(todo_id)
            stack.extend(t for t in reversed(fold.todos[todo_id].dependants) if t in fold.todos)
    return seen


def quota_scopes(fold: Fold, goal: Optional[str]) -> list[tuple[str, Quota]]:
    """The budgets that cover work on ``goal``: the ledger-wide one and the goal's own."""
    scopes = ["", goal] if goal else [""]
    return [(scope, fold.quotas[scope]) for scope in scopes if scope in fold.quotas]


def _budget(scope: str) -> str:
    return "the ledger-wide budget" if not scope else f"goal {scope}'s budget"


def quota_exhausted(fold: Fold, goal: Optional[str]) -> Optional[tuple[str, str, str]]:
    """(scope, limit name, what to say) of a spent budget covering ``goal``, or None."""
    for scope, quota in quota_scopes(fold, goal):
        for name, limit, spent in _limits(quota):
            if limit is not None and spent >= limit:
                return scope, name, f"{_budget(scope)} is spent ({name} {spent:g}/{limit:g})"
    return None


def quota_overrun(fold: Fold, goal: Optional[str], spend: dict[str, float]) -> Optional[str]:
    """Which budget covering ``goal`` spending ``spend`` would take past its limit, or None."""
    for scope, quota in quota_scopes(fold, goal):
        for name, limit, spent in _limits(quota):
            if limit is not None and spend.get(name) and spent + spend[name] > limit:
                return (f"spending {spend[name]:g} {name} would take {_budget(scope)} past its "
                        f"limit ({spent:g} + {spend[name]:g} > {limit:g})")
    return None


def _limits(quota: Quota) -> list[tuple[str, Optional[float], float]]:
    return [("turns", quota.turns, quota.spent_turns), ("tokens", quota.tokens, quota.spent_tokens),
            ("cost", quota.cost, quota.spent_cost)]


def todo_view(fold: Fold, todo: Todo, now: datetime, seen: Optional[Seen] = None) -> dict[str, Any]:
    end = lease_end(todo, seen)
    live = end is not None and end > now
    until = clock.format_ts(end) if end is not None else None
    state = "claimed" if (todo.state == "open" and live) else todo.state
    why: Optional[str] = None
    waits: list[str] = []
    if todo.state != "open":
        why = todo.state + (f": {todo.reason}" if todo.state == "blocked" and todo.reason else "")
    elif live:
        why = f"claimed by {todo.holder} until {until}"
    else:
        waits = blockers(fold, todo)
        why = "; ".join(waits) or None
    return {
        "id": todo.id, "goal": todo.goal, "title": todo.title, "state": state,
        "depends_on": list(todo.depends_on), "gates": list(todo.gates),
        "claimed_by": todo.holder if live else None,
        "lease_expires": until if live else None,
        "expired_claim_by": todo.holder if (todo.holder and not live) else None,
        "contested_by": list(todo.contested_by),
        "decisions_since_claim": list(todo.decisions_since_claim) if live else [],
        "ready": why is None, "why_not_ready": why, "blockers": waits,
        "evidence": list(todo.evidence),
        "no_evidence_reason": todo.no_evidence_reason,
        "priority": todo.priority, "discovered_from": todo.discovered_from,
        "assignee": todo.assignee, "labels": list(todo.labels) or None,
        **({"links": list(todo.links)} if todo.links else {}),
        "needs": list(todo.needs) or None,
    }


def frontier(fold: Fold, now: datetime, seen: Optional[Seen] = None) -> list[str]:
    """Open todos that are ready and unleased: by priority (0 first), then oldest first (by
    clock, then id)."""
    ready = [t for t in fold.todos.values() if todo_view(fold, t, now, seen)["ready"]]
    return [t.id for t in sorted(ready, key=lambda t: (t.priority, t.clock, t.id))]


def by_priority(todos: list[dict[str, Any]]) -> list[str]:
    """The ids of the ready ones among ``todos`` (views in ledger order), in frontier order."""
    return [t["id"] for t in sorted((t for t in todos if t["ready"]), key=lambda t: t["priority"])]


def snapshot(fold: Fold, now: datetime, seen: Optional[Seen] = None) -> dict[str, Any]:
    """The ledger part of ``git loopx status --format json`` (documented in docs/status.md);
    ``seen``: when this clone first saw the events of :func:`timed_events`."""
    todos = [todo_view(fold, t, now, seen)
             for t in sorted(fold.todos.values(), key=lambda t: (t.clock, t.id))]
    shared = same_goal(fold)
    return {
        "ledger": {"name": fold.name, "events": fold.events, "clock": fold.max_clock,
                   "clocks_ahead": clocks_ahead(fold, now)},
        "goals": [_goal_view(fold, g) for g in sorted(fold.goals.values(), key=lambda g: (g.clock, g.id))],
        "todos": todos,
        "frontier": by_priority(todos),
        "gates": [_gate_view(g) for g in fold.gates.values()],
        "evidence": [evidence_view(e) for e in fold.evidence.values()],
        "wakes": [wake_view(w, seen) for w in fold.wakes.values()],
        "quota": {scope or "*": _quota_view(q) for scope, q in sorted(fold.quotas.items())},
        "effects": [effect_view(e, seen) for e in fold.effects.values()],
        "problems": [dict(dataclasses.asdict(p), dismissed=p.event in fold.dismissed)
                     for p in fold.problems],
        "unknown_events": list(fold.unknown),
        "notes": fold.notes,
        "sessions": [session_view(s, now, seen, also=shared.get(s.id, [])) for s in
                     sorted(fold.sessions.values(), key=lambda s: (s.clock, s.id))],
    }


def effect_view(effect: Effect, seen: Optional[Seen] = None) -> dict[str, Any]:
    """One effect as status shows it: when its owner reads it back (``readback_at``: its grace
    after the intent) and until when only the owner does (``held_until``), for this clone."""
    view = dataclasses.asdict(effect)
    event = view.pop("event")
    start = counted_from(effect.at, (seen or {}).get(event) if event else None)
    view["readback_at"] = clock.format_ts(start + timedelta(seconds=effect.grace))
    view["held_until"] = clock.format_ts(start + timedelta(seconds=max(effect.hold, effect.grace)))
    return view


def effect_due(effect: Mapping[str, Any], actor: Optional[str], now: datetime) -> bool:
    """Whether ``actor`` reads ``effect`` (an :func:`effect_view`) back at ``now``: it has a
    readback and no outcome, and its owner's grace (anyone else: the owner's hold) is over."""
    if effect["state"] != "indeterminate" or not effect.get("readback") or not actor:
        return False
    start = effect["readback_at"] if actor == effect.get("owner") else effect["held_until"]
    return clock.parse_ts(start) <= now


def wake_view(wake: Wake, seen: Optional[Seen] = None) -> dict[str, Any]:
    """One wake as status shows it: ``at`` is when it is due for this clone (wake_due)."""
    view = dataclasses.asdict(wake)
    del view["set_event"], view["set_at"]
    due = wake_due(wake, seen)
    if due is not None and due != clock.parse_ts(view["at"]):
        view["at"] = clock.format_ts(due)
    return view


def session_view(session: Session, now: datetime, seen: Optional[Seen] = None, *,
                 also: Sequence[str] = ()) -> dict[str, Any]:
    """One session as ``status --format json`` shows it (documented in docs/sessions.md);
    ``also``: the other open sessions on its goal."""
    idle = None
    if session.state != "closed":
        idle = max(0, int((now - idle_since(session, seen)).total_seconds()))
    return {
        "id": session.id, "state": session.state, "owner": session.owner, "task": session.task,
        "goal": session.goal, "todo": session.todo,
        "workspace": {"host": session.host, "path": session.path},
        "idle_seconds": idle,
        "inbox": [{k: m[k] for k in ("event", "seq", "from", "at", "kind", "message")}
                  for m in unread(session)],
        "keep_open": session.keep_open, "keep_open_reason": session.keep_open_reason,
        "closed_reason": session.closed_reason, "last_response": session.last_response,
        "last_progress": session.last_progress, "opened_at": session.opened_at,
        "checkpoints": len(session.checkpoints),
        "ends": ends(session), "same_goal": list(also),
    }


def _goal_view(fold: Fold, goal: Goal) -> dict[str, Any]:
    return {
        "id": goal.id, "title": goal.title, "state": goal.state, "reason": goal.reason,
        "acceptance": [_criterion_view(fold, goal, c) for c in goal.acceptance],
        "retired": [{"id": c["id"], "text": c["text"]} for c in goal.retired],
        "override": goal.override,
        **({"links": list(goal.links)} if goal.links else {}),
    }


def serving(fold: Fold, goal: Goal, crit_id: str) -> list[str]:
    """The goal's unfinished todos that serve criterion ``crit_id`` (added with it)."""
    return [t.id for t in unfinished_todos(fold, goal) if crit_id in t.criteria]


def _criterion_view(fold: Fold, goal: Goal, crit: dict[str, Any]) -> dict[str, Any]:
    # Not met while work serving it is open: a pass recorded early does not finish that work.
    found = criterion_verdict(fold, goal, crit["id"])
    open_work = serving(fold, goal, crit["id"])
    return {
        "id": crit["id"], "text": crit["text"], "met": found.passed and not open_work,
        "open_work": open_work, "evidence": found.support,
        "latest": found.latest, "verdict": None if found.latest is None else (
            "pass" if found.passed else "fail"),
        "paths": list(crit.get("paths") or []), "revision": crit.get("revision", 0),
    }


def _gate_view(gate: Gate) -> dict[str, Any]:
    return {
        "id": gate.id, "goal": gate.goal, "state": gate.state, "question": gate.question,
        "authority": list(gate.authority), "blocks": list(gate.blocks),
        "decision": gate.decision, "answer": gate.answer, "comment": gate.comment,
        "answered_by": gate.answered_by,
        "conflict": [dict(d) for d in gate.decisions] if gate.state == "conflicted" else [],
    }


def evidence_view(ev: Evidence) -> dict[str, Any]:
    return {
        "id": ev.id, "kind": ev.kind, "goal": ev.goal, "todo": ev.todo, "criteria": list(ev.criteria),
        "commit": ev.commit, "tree": ev.tree, "dirty": ev.dirty, "exit_code": ev.exit_code,
        "summary": ev.summary, "command": ev.command, "actor": ev.actor, "at": ev.at,
        "url": ev.url, "paths": list(ev.paths), "check": ev.check,
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



def resolve_id(table: Mapping[str, Any], prefix: str, kind: str) -> str:
    """An entity id from its unique prefix, like git's short hashes."""
    if prefix in table:
        return prefix
    if isinstance(table, entities.PrefixSearch):
        matches = table.with_prefix(prefix, limit=9)
    else:
        matches = [key for key in table if key.startswith(prefix)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise NotFound(f"no {kind} matches {prefix!r} (see `git loopx {kind} list`)")
    kinds = kind if kind == "evidence" else f"{kind}s"  # "evidence" has no plural
    raise Ambiguous(f"{prefix!r} matches several {kinds}: {', '.join(sorted(matches)[:8])}")
