"""Derived views of a fold: readiness and why not, the frontier, criterion evidence, and the
``status --format json`` snapshot (for a given ``now``). Read-only and pure."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any, Optional

from loopx.errors import Ambiguous, NotFound
from loopx.model import clock as clk
from loopx.state.entities import (DEFAULT_SESSION_SLOTS, Evidence, Fold, Gate, Goal, Quota,
                                  Session, Todo)

def lease_live(todo: Todo, at: str) -> bool:
    return todo.holder is not None and todo.until is not None and (
        clk.parse_ts(todo.until) > clk.parse_ts(at)
    )


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


def session_slots(fold: Fold) -> int:
    """How many sessions one owner may hold open (ledger config ``session_slots``)."""
    return int(fold.config.get("session_slots") or DEFAULT_SESSION_SLOTS)



def interjection_kind(session: Session) -> str:
    """What a message to ``session`` is right now: a correction while it runs, else a follow-up."""
    return "correction" if session.state == "running" else "follow_up"



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
        why = not_ready(fold, todo)
    return {
        "id": todo.id, "goal": todo.goal, "title": todo.title, "state": state,
        "depends_on": list(todo.depends_on), "gates": list(todo.gates),
        "claimed_by": todo.holder if live else None,
        "lease_expires": todo.until if live else None,
        "expired_claim_by": todo.holder if (todo.holder and not live) else None,
        "contested_by": list(todo.contested_by),
        "decisions_since_claim": list(todo.decisions_since_claim) if live else [],
        "ready": why is None, "why_not_ready": why, "evidence": list(todo.evidence),
        "priority": todo.priority, "discovered_from": todo.discovered_from,
    }


def frontier(fold: Fold, now: datetime) -> list[str]:
    """Open todos that are ready and unleased: by priority (0 first), then oldest first (by
    clock, then id)."""
    ready = [t for t in fold.todos.values() if todo_view(fold, t, now)["ready"]]
    return [t.id for t in sorted(ready, key=lambda t: (t.priority, t.clock, t.id))]


def by_priority(todos: list[dict[str, Any]]) -> list[str]:
    """The ids of the ready ones among ``todos`` (views in ledger order), in frontier order."""
    return [t["id"] for t in sorted((t for t in todos if t["ready"]), key=lambda t: t["priority"])]


def snapshot(fold: Fold, now: datetime) -> dict[str, Any]:
    """The ledger part of ``git loopx status --format json`` (documented in docs/status.md)."""
    todos = [todo_view(fold, t, now) for t in sorted(fold.todos.values(), key=lambda t: (t.clock, t.id))]
    return {
        "ledger": {"name": fold.name, "events": fold.events, "clock": fold.max_clock},
        "goals": [_goal_view(fold, g) for g in sorted(fold.goals.values(), key=lambda g: (g.clock, g.id))],
        "todos": todos,
        "frontier": by_priority(todos),
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



def resolve_id(table: dict[str, Any], prefix: str, kind: str) -> str:
    """An entity id from its unique prefix, like git's short hashes."""
    if prefix in table:
        return prefix
    matches = [key for key in table if key.startswith(prefix)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise NotFound(f"no {kind} matches {prefix!r} (see `git loopx {kind} list`)")
    raise Ambiguous(f"{prefix!r} matches several {kind}s: {', '.join(sorted(matches)[:8])}")
