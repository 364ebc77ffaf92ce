"""Todos: dependencies, gates, claims (leases) and completion."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Optional

from loopx.errors import ClaimLost, TransitionError, UsageError
from loopx.recovery import readback
from loopx.remote import sync
from loopx.hooks import unrecorded
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import clock, limits, typed
from loopx.model import needs as needs_
from loopx.model.ids import new_short_id
from loopx.ops import evidence, lookup
from loopx.projection import answers, entities, views

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        Event, TodoAcked, TodoAdded, TodoAssigned, TodoBlocked, TodoCancelled, TodoClaimed,
        TodoDone, TodoHandedOff, TodoReleased, TodoRenewed, TodoReopened, TodoUpdated,
    )

Todo = answers.Todo  # what listing and show answer: a todo as status shows it


def add(txn: Txn, goal: str, title: str, *, id: Optional[str] = None,
        after: Sequence[str] = (), gates: Sequence[str] = (), criteria: Sequence[str] = (),
        description: Optional[str] = None, priority: Optional[int] = None,
        discovered_from: Optional[str] = None, labels: Sequence[str] = (),
        links: Sequence[str] = (),
        needs: Sequence[str] = (),
        event_id: Optional[str] = None) -> Event[TodoAdded]:
    """Add a todo to ``goal``; it waits for the todos ``after`` and the approval of ``gates``.

    ``priority`` runs from 0 (most urgent) to 4 (default 2) and orders the frontier;
    ``discovered_from`` names the todo whose work turned this one up; ``labels`` are what
    `todo list`, `next` and MCP filter by; ``links`` the issues and pull requests it is about
    (github:OWNER/REPO#N: status shows their state).
    ``needs`` the tools (``python>=3.11``, ``docker``) a host must have for `next` to offer
    it there.
    """
    fold = txn.fold
    gid = lookup.goal(fold, goal)
    data = {"id": id or new_short_id("t", event_id), "goal": gid, "title": title,
            "description": description, "criteria": list(criteria),
            "depends_on": [lookup.todo(fold, t) for t in after],
            "gates": [lookup.gate(fold, g) for g in gates],
            "priority": _priority(priority),
            "discovered_from": lookup.optional(fold.todos, discovered_from, "todo"),
            "labels": _labels(labels) or None,
            "needs": _needs(needs)}
    if links:
        data["links"] = list(dict.fromkeys(links))
    return txn.add(Draft("todo.added", data, gid, event_id))


def _labels(labels: Sequence[str]) -> list[str]:
    """``labels`` once each, in order; a label that is not one is refused by name."""
    for label in labels:
        if not re.fullmatch(limits.LABEL_PATTERN, label):
            raise UsageError(f"{label!r} is not a label: letters, digits and . _ : / - "
                             "(at most 64, starting with a letter or digit)")
    return list(dict.fromkeys(labels))


def label(txn: Txn, todo: str, *, add: Sequence[str] = (), remove: Sequence[str] = (),
          event_id: Optional[str] = None) -> Event[TodoUpdated]:
    """Add labels to a todo and take others off (a label both added and removed goes)."""
    if not (add or remove):
        raise UsageError("nothing to change: give a label to add or to remove")
    tid = lookup.todo(txn.fold, todo)
    data = {"id": tid, "add_labels": _labels(add) or None, "remove_labels": _labels(remove) or None}
    return txn.add(Draft("todo.updated", data, txn.fold.todos[tid].goal, event_id))


def assign(txn: Txn, todo: str, who: Optional[str], *,
           event_id: Optional[str] = None) -> Event[TodoAssigned]:
    """Say who is meant to do a todo (``who`` None: nobody in particular). `next` offers it
    to them first and to nobody else; it takes no lease (see :func:`handoff`)."""
    tid = lookup.todo(txn.fold, todo)
    return txn.add(Draft("todo.assigned", {"id": tid, "to": who}, txn.fold.todos[tid].goal,
                         event_id))


def handoff(txn: Txn, todo: str, to: str, *, note: Optional[str] = None,
            ttl: Optional[int] = None, event_id: Optional[str] = None) -> Event[TodoHandedOff]:
    """Hand your lease on a todo to ``to`` (a human may hand on anyone's): ``to`` holds it
    from now for ``ttl`` seconds (default: the ledger's lease length) and is its assignee;
    ``note`` is what they should know. You no longer hold it."""
    tid = lookup.todo(txn.fold, todo)
    if to == txn.actor:
        raise UsageError(f"you cannot hand todo {tid} to yourself; renew it instead "
                         f"(git loopx todo renew {tid})")
    until = clock.format_ts(txn.now + timedelta(seconds=lease_seconds(txn.fold, ttl)))
    return txn.add(Draft("todo.handed_off", _given(id=tid, to=to, until=until, note=note),
                         txn.fold.todos[tid].goal, event_id))


def _needs(values: Sequence[str]) -> Optional[list[str]]:
    try:
        return needs_.split(list(values)) or None
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def update(txn: Txn, todo: str, *, title: Optional[str] = None,
           description: Optional[str] = None, after: Sequence[str] = (),
           gates: Sequence[str] = (), priority: Optional[int] = None,
           event_id: Optional[str] = None) -> Event[TodoUpdated]:
    """Change a todo's title, description or priority, or make it wait for more todos and
    gates (a dependency that would make a cycle is refused)."""
    if not (title or description is not None or after or gates or priority is not None):
        raise UsageError("nothing to change: give a title, description, priority, todo or gate")
    fold = txn.fold
    tid = lookup.todo(fold, todo)
    data = {"id": tid, "title": title, "description": description,
            "add_depends_on": [lookup.todo(fold, t) for t in after],
            "add_gates": [lookup.gate(fold, g) for g in gates], "priority": _priority(priority)}
    return txn.add(Draft("todo.updated", data, fold.todos[tid].goal, event_id))


def _priority(value: Optional[int]) -> Optional[int]:
    if value is not None and not limits.PRIORITY_MIN <= value <= limits.PRIORITY_MAX:
        raise UsageError(f"a priority is {limits.PRIORITY_MIN} (most urgent) to "
                         f"{limits.PRIORITY_MAX} (least), not {value}")
    return value


def lease_seconds(fold: entities.Fold, ttl: Optional[int]) -> int:
    """The length of a new lease: ``ttl`` seconds, else the ledger's default (45 minutes)."""
    if ttl is not None and ttl <= 0:
        raise UsageError(f"a lease must last a positive time, not {ttl}s (e.g. --ttl 45m)")
    if ttl is not None and ttl > entities.MAX_LEASE_TTL_S:
        raise UsageError(f"a lease lasts at most {entities.MAX_LEASE_TTL_S // 86400} days, not "
                         f"{clock.format_duration(timedelta(seconds=ttl))}; renew it before it runs out "
                         "(git loopx todo renew)")
    return ttl or int(fold.config.get("lease_ttl_seconds") or entities.DEFAULT_LEASE_TTL_S)


def claim(txn: Txn, todo: str, *, ttl: Optional[int] = None,
          event_id: Optional[str] = None) -> Event[TodoClaimed]:
    """Claim a todo: a lease of ``ttl`` seconds that expires unless renewed. The branch checked
    out is recorded with it: commits without a Loopx-Todo trailer count for the lease only
    there (see docs/hooks.md). Refused while a budget covering the todo is spent."""
    branch = readback.current_branch(txn.ledger.repo)
    if branch is not None:  # so that a commit whose post-commit hook was killed is found
        unrecorded.watch(txn.ledger.repo.loopx_dir, branch, actor=txn.actor,
                         state_ref=txn.ledger.ref)
    return _lease(txn, "todo.claimed", todo, ttl, event_id, branch=branch)


def renew(txn: Txn, todo: str, *, ttl: Optional[int] = None,
          event_id: Optional[str] = None) -> Event[TodoRenewed]:
    """Extend your lease on a todo to ``ttl`` seconds from now."""
    return _lease(txn, "todo.renewed", todo, ttl, event_id)


def _lease(txn: Txn, event_type: str, todo: str, ttl: Optional[int],
           event_id: Optional[str], **extra: Optional[str]) -> Event[Any]:
    tid = lookup.todo(txn.fold, todo)
    if event_type == "todo.claimed":
        extra.update(_takeover(txn, tid))
    until = clock.format_ts(txn.now + timedelta(seconds=lease_seconds(txn.fold, ttl)))
    return txn.add(Draft(event_type, {"id": tid, "until": until, **extra},
                         txn.fold.todos[tid].goal, event_id))


def _takeover(txn: Txn, tid: str) -> dict[str, Optional[str]]:
    """``{"takes": event}`` when someone else's lease on ``tid`` has ended as this clone judges
    it (views.lease_end: by when it first saw the lease), recorded so that replay takes this
    judgement rather than compare two clocks; raises while that lease is live."""
    todo = txn.fold.todos[tid]
    if todo.holder is None or todo.holder == txn.actor or todo.lease_event is None:
        return {}
    end = views.lease_end(todo, txn.ledger.first_seen([todo.lease_event], txn.now))
    if end is not None and end > txn.now:
        raise TransitionError(f"todo {tid} is claimed by {todo.holder} until {clock.format_ts(end)}")
    return {"takes": todo.lease_event}


def claim_synced(ledger: Ledger, todo: str, *, actor: str, ttl: Optional[int] = None,
                 remote: Optional[str] = None, now: Optional[datetime] = None,
                 event_id: Optional[str] = None) -> tuple[Event[TodoClaimed], sync.Report]:
    """Claim so that the claim counts only once the remote has it.

    Raises :class:`~loopx.errors.ClaimLost` naming the holder when someone else's claim
    reached the remote first; then nothing was recorded for ``actor`` anywhere.
    """
    def build(txn: Txn) -> Event[TodoClaimed]:
        return claim(txn, todo, ttl=ttl, event_id=event_id)

    try:
        return sync.publish(ledger=ledger, build=build, actor=actor, remote=remote, now=now)
    except TransitionError as exc:
        fold = ledger.fold()
        tid = lookup.optional(fold.todos, todo, "todo")
        holder = fold.todos[tid].holder if tid else None
        if holder is None or holder == actor:
            raise
        raise ClaimLost(f"todo {tid} went to {holder}: their claim reached the remote first; "
                        f"nothing was recorded for you ({exc})") from None


def release(txn: Txn, todo: str, *, reason: Optional[str] = None,
            event_id: Optional[str] = None) -> Event[TodoReleased]:
    """Give up your claim on a todo (a human may release anyone's)."""
    return lookup.about(txn, "todos", todo, "todo", "todo.released", _given(reason=reason),
                        event_id)


def done(txn: Txn, todo: str, *, evidence: Sequence[str] = (), summary: Optional[str] = None,
         reason: Optional[str] = None, event_id: Optional[str] = None) -> Event[TodoDone]:
    """Mark a todo done, citing the evidence that shows it: a passing result that still vouches
    for the code as it is now (the ones cited, else the latest recorded for the todo). Without
    such evidence, ``reason`` says why it is done anyway (recorded, shown in log, brief, diff)."""
    fold = txn.fold
    cited = [views.resolve_id(fold.evidence, e, "evidence") for e in evidence]
    tid = lookup.todo(fold, todo)
    shown, _ = views.done_evidence(fold, fold.todos[tid], cited)
    taken = _takeover(txn, tid) if fold.todos[tid].state == "open" else {}
    event = lookup.about(txn, "todos", tid, "todo", "todo.done",
                         _given(evidence=cited, summary=summary, reason=reason, **taken), event_id)
    if reason is None and shown:
        _require_fresh(txn, tid, shown)  # raising here writes nothing: the commit is not made
    return event


def _require_fresh(txn: Txn, tid: str, shown: list[str]) -> None:
    judged = evidence.judge(txn.ledger, txn.fold)
    verdicts = {e: judged.evidence(views.evidence_view(txn.fold.evidence[e])) for e in shown}
    if any(f.state in ("fresh", "unbound") for f in verdicts.values()):
        return
    ev_id, fresh = next(iter(verdicts.items()))
    raise TransitionError(
        f"the evidence for todo {tid} ({ev_id}) is {evidence.stale_note(fresh)}; re-run it "
        f"(git loopx rerun --todo {tid}) or say why it is done without it (--reason TEXT)")


def ack(txn: Txn, todo: str, *, gates: Sequence[str] = (),
        event_id: Optional[str] = None) -> Event[TodoAcked]:
    """Acknowledge decisions made since the todo was claimed (all of them by default): the
    holder has re-planned with them, and the ``replan`` action goes away."""
    fold = txn.fold
    tid = lookup.todo(fold, todo)
    named = [lookup.gate(fold, g) for g in gates] or list(fold.todos[tid].decisions_since_claim)
    if not named:
        raise UsageError(f"todo {tid} has no decision to acknowledge")
    return txn.add(Draft("todo.acked", {"id": tid, "gates": named}, fold.todos[tid].goal,
                         event_id))


def block(txn: Txn, todo: str, *, reason: str, event_id: Optional[str] = None) -> Event[TodoBlocked]:
    """Mark a todo blocked, saying why."""
    return lookup.about(txn, "todos", todo, "todo", "todo.blocked", {"reason": reason}, event_id)


def reopen(txn: Txn, todo: str, *, reason: Optional[str] = None,
           event_id: Optional[str] = None) -> Event[TodoReopened]:
    """Reopen a done, blocked or cancelled todo."""
    return lookup.about(txn, "todos", todo, "todo", "todo.reopened", _given(reason=reason),
                        event_id)


def cancel(txn: Txn, todo: str, *, reason: Optional[str] = None,
           event_id: Optional[str] = None) -> Event[TodoCancelled]:
    """Cancel a todo."""
    return lookup.about(txn, "todos", todo, "todo", "todo.cancelled", _given(reason=reason),
                        event_id)


def _given(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v not in (None, [], ())}


STATES = ("open", "claimed", "done", "blocked", "cancelled")


def listing(ledger: Ledger, *, goal: Optional[str] = None, ready: bool = False,
            include_closed: bool = False, priority: Sequence[int] = (),
            state: Optional[str] = None, claimant: Optional[str] = None,
            labels: Sequence[str] = (), assignee: Optional[str] = None,
            now: Optional[datetime] = None) -> list[answers.Todo]:
    """Todos with their state and why each is not ready, in ledger order: open ones by
    default, done and cancelled ones too with ``include_closed`` (or a ``state`` that asks for
    them). ``ready`` gives the frontier, in its order (priority, then ledger order); the other
    filters keep todos of one of the ``priority`` values, in ``state``, held by ``claimant``,
    carrying every one of ``labels``, assigned to ``assignee``."""
    if state is not None and state not in STATES:
        raise UsageError(f"a todo state is one of {', '.join(STATES)}, not {state!r}")
    ledger.require()
    fold = ledger.fold()
    todos = ledger.snapshot(now)["todos"]
    if goal:
        gid = lookup.goal(fold, goal)
        todos = [t for t in todos if t["goal"] == gid]
    if ready:
        order = {tid: n for n, tid in enumerate(views.by_priority(todos))}
        todos = sorted((t for t in todos if t["id"] in order), key=lambda t: order[t["id"]])
    elif state is None and not include_closed:
        todos = [t for t in todos if t["state"] not in ("done", "cancelled")]
    return [typed.build(answers.Todo, t) for t in todos if (not priority or t["priority"] in priority)
            and (state is None or t["state"] == state)
            and (claimant is None or t["claimed_by"] == claimant)
            and (assignee is None or t["assignee"] == assignee)
            and all(label in (t["labels"] or ()) for label in labels)]


def show(ledger: Ledger, todo: str, *, now: Optional[datetime] = None) -> answers.Todo:
    """One todo as ``status`` shows it."""
    fold = ledger.fold()
    tid = lookup.todo(fold, todo)
    found, moment = fold.todos[tid], now or ledger.time()
    lease = [found.lease_event] if found.lease_event else []
    return typed.build(answers.Todo, views.todo_view(fold, found, moment,
                                                     ledger.first_seen(lease, moment)))
