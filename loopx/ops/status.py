"""Recovery after any interruption: the status document, the single best next action, and
the Markdown brief for a new agent.

    next decision = replay(durable project facts) + inspect(fresh environment)

The status document is ``git loopx status --format json`` (documented in docs/status.md, its
JSON Schema in .loopx-schema/status.schema.json).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from loopx.errors import ClaimLost, TransitionError
from loopx.recovery import host, readback
from loopx.ledger import cache
from loopx.ledger.book import Ledger
from loopx.model import clock, typed
from loopx.ops import effects, lookup
from loopx.projection import answers, compact, decide, views

if TYPE_CHECKING:
    from loopx.model.events import Event, TodoClaimed

StatusDoc = answers.StatusDoc  # the shape of docs/status.md
Action = answers.Action  # one of StatusDoc.actions


def status(ledger: Ledger, *, actor: Optional[str], goal: Optional[str] = None,
           ci: bool = True, offline: bool = False, include_closed: bool = False,
           now: Optional[datetime] = None, detail: bool = True,
           top: int = compact.TOP) -> StatusDoc:
    """The status document: the ledger's snapshot, the environment as inspected now, the
    legal next actions for ``actor`` (None: actions for nobody in particular) and when to
    look again.

    Without ``include_closed`` only goals in play (and what they reference) are listed,
    which keeps a warm status as fast on a long ledger as on a new one. Without ``detail``, the
    answer that fits an agent's context (:func:`loopx.projection.compact.status`): own work,
    the first ``top`` of the frontier, counts for the rest, under ``omitted``.
    """
    snap = _document(ledger, actor=actor, goal=goal, ci=ci, offline=offline,
                     include_closed=include_closed, now=now)
    if not detail:
        snap = compact.status(snap, actor=actor, top=top)
    return typed.build(StatusDoc, snap)


def _document(ledger: Ledger, *, actor: Optional[str], goal: Optional[str], ci: bool,
              offline: bool, include_closed: bool = False, now: Optional[datetime],
              labels: Sequence[str] = (), read_back: bool = True) -> dict[str, Any]:
    """The status document as the plain values the rules compute (briefing, the primer and
    next read these; :func:`status` types them).

    Effects due for ``actor`` are read back first (not ``offline``): a confirmation found is
    recorded, and the document is made from the ledger that holds it."""
    fold = ledger.fold() if (include_closed or goal) else ledger.live_fold()
    if not fold.events:
        ledger.require()
    now = now or ledger.time()
    snap = views.snapshot(fold, now, ledger.first_seen(views.timed_events(fold), now))
    due = [e for e in snap["effects"] if views.effect_due(e, actor, now)] if read_back else []
    if due and not offline:
        seen = effects.read_back_due(ledger, due, actor=actor, now=now)
        doc = _document(ledger, actor=actor, goal=goal, ci=ci, offline=offline,
                        include_closed=include_closed, now=now, read_back=False)
        doc["environment"]["effects"] = {e: typed.plain(found) for e, found in seen.items()}
        doc["actions"] = decide.decide(doc, doc["environment"], now, actor or "",
                                       roles=ledger.fold().config.get("roles") or {})
        return doc
    snap["ref"] = ledger.ref
    started = cache.started_from(fold.extra.get("source"))
    snap["ledger"]["checkpoint"] = (
        {"commit": started[0], "signer": started[1]} if started else None)
    for ev in snap["evidence"]:
        ev["current_commit"] = readback.follow(fold.remaps, ev["commit"]) if ev["commit"] else None
    if goal:
        snap = _only_goal(snap, lookup.goal(fold, goal))
    config = readback.read_config(ledger.repo)
    env = readback.inspect(ledger.repo, state_ref=ledger.ref, snapshot=snap, remaps=fold.remaps,
                           config=config, ci=ci, offline=offline, reader=ledger.store.reader,
                           ignore=fold.config.get("evidence_ignore"),
                           default_scope=fold.config.get("evidence_scope"),
                           ci_criteria=fold.config.get("ci_criteria")).as_dict()
    env["capabilities"] = host.capabilities(
        ledger.repo, tools=host.declared(snap["todos"], config),
        remote=env["state"].get("remote") or "origin", offline=offline)
    decide.annotate(snap, env)
    snap["environment"] = env
    snap["actions"] = decide.decide(snap, env, now, actor or "",
                                    roles=fold.config.get("roles") or {}, labels=labels)
    snap["next_wake"] = decide.next_wake(snap, now)
    return snap


def _only_goal(snap: dict[str, Any], goal_id: str) -> dict[str, Any]:
    """The snapshot narrowed to one goal: its todos, frontier, gates and evidence."""
    todos_ = [t for t in snap["todos"] if t["goal"] == goal_id]
    ids = {t["id"] for t in todos_}
    return dict(snap, goals=[g for g in snap["goals"] if g["id"] == goal_id], todos=todos_,
                frontier=[t for t in snap["frontier"] if t in ids],
                gates=[g for g in snap["gates"] if g["goal"] == goal_id],
                evidence=[e for e in snap["evidence"] if e["goal"] == goal_id])


def is_waiting(action: Action) -> bool:
    """Whether ``action`` is something to wait for (a gate, CI, a lease, a spent budget)."""
    return action.kind in decide.WAIT_KINDS


@dataclass
class Next:
    """The single best action (None: nothing left), what was claimed for it, the number of
    legal actions and when looking again could change things; when a claim was asked for
    and none was made, why not."""

    action: Optional[Action]
    claimed: Optional[Event[TodoClaimed]]
    actions: int
    next_wake: Optional[str]
    not_claimed: Optional[str] = None
    # Ready todos not offered to this actor as work (assigned to someone else, or without a
    # label asked for), each with why: only when nothing else is offered as work.
    passed_over: list[str] = dataclasses.field(default_factory=list)

    @property
    def waiting(self) -> bool:
        """Whether the best thing to do is to wait (exit code 10 of `git loopx next`)."""
        return self.action is not None and is_waiting(self.action)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `git loopx next --format json` (its action as a JSON object)."""
        found = {"action": typed.plain(self.action), "next_wake": self.next_wake,
                 "actions": self.actions,
                 "claimed": self.claimed.to_dict() if self.claimed else None,
                 "not_claimed": self.not_claimed}
        return found | ({"passed_over": self.passed_over} if self.passed_over else {})


CLAIM_TRIES = 10  # races `next --claim` may lose in one call, deciding again after each


def next_action(ledger: Ledger, *, actor: str, claim: bool = False, ttl: Optional[int] = None,
                ci: bool = True, offline: bool = False, now: Optional[datetime] = None,
                synced: bool = False, labels: Sequence[str] = ()) -> Next:
    """The single best action for ``actor``. With ``claim``, when working on a frontier todo
    is the best action, claim it in the same call; ``synced``: each claim counts only once the
    remote has it (:func:`loopx.ops.todos.claim_synced`), so agents on several hosts never
    share a todo. A claim that loses the race (another agent's reached the remote first)
    decides again from the state that claim fetched, and claims what is best there: up to
    :data:`CLAIM_TRIES` todos, until nothing is ready.

    New work is never a todo assigned to someone else, and one assigned to ``actor`` comes
    first; ``labels``: only todos that carry every one of them. When no work is offered,
    ``passed_over`` says which ready todos were left out and why."""
    lost: list[str] = []  # why each todo tried went to someone else
    tried: set[str] = set()
    while True:
        result, actions = _decided(ledger, actor=actor, ci=ci, offline=offline, now=now,
                                   labels=labels, skip=tried)
        best = result.action
        if not claim:
            return result
        if best is None or best.kind != "work" or not best.todo:
            why = _why_not_claimed(best, actions)
            if result.passed_over and (best is None or best.kind != "continue"):
                why += f" ({'; '.join(result.passed_over[:3])})"
            result.not_claimed = "; ".join([*lost, why])
            return result
        if len(tried) >= CLAIM_TRIES:
            result.not_claimed = "; ".join([*lost, (
                f"gave up after {len(tried)} lost races: run git loopx next --claim again")])
            return result
        tried.add(best.todo)
        event, why_lost = _claim(ledger, best.todo, actor, ttl, now, synced)
        if event is not None:
            result.claimed = event
            result.action = dataclasses.replace(
                best, kind="continue", priority=decide.PRIORITY["continue"],
                command=f"git loopx todo show {best.todo}",
                reason=f"you claimed {best.todo} until {event.data.until}: "
                f"{best.reason.removeprefix(best.todo + ' is ready: ')}")
            return result
        lost.append(why_lost)


def _decided(ledger: Ledger, *, actor: str, ci: bool, offline: bool, now: Optional[datetime],
             labels: Sequence[str], skip: set[str]) -> tuple[Next, list[Action]]:
    """What :func:`next_action` answers without a claim, from the ledger as it is now, and the
    actions it chose from; new work on the todos in ``skip`` (tried already) left out."""
    plain = _document(ledger, actor=actor, goal=None, ci=ci, offline=offline, now=now,
                      labels=labels)
    snap = typed.build(StatusDoc, plain)
    actions = [a for a in snap.actions if not (a.kind == "work" and a.todo in skip)]
    result = Next(actions[0] if actions else None, None, len(actions), snap.next_wake)
    if not any(a.kind == "work" for a in actions):
        result.passed_over = decide.passed_over(plain, actor, labels)
    return result, actions


def _why_not_claimed(best: Optional[Action], actions: list[Action]) -> str:
    """Why `next --claim` took nothing: it never claims past a more important action."""
    if best is None:
        return "nothing is left to do"
    if best.kind == "continue":
        return f"you hold {best.todo} already: carry on with it (or release it) first"
    if not any(a.kind == "work" for a in actions):
        return "no todo is ready for you to claim"
    return f"{best.kind} comes before new work"


def _claim(ledger: Ledger, todo: str, actor: str, ttl: Optional[int],
           now: Optional[datetime], synced: bool
           ) -> tuple[Optional[Event[TodoClaimed]], str]:
    """Claim ``todo``: the event, or None and why not (whose claim came first)."""
    from loopx.ops import todos  # only `next --claim` writes: `status` starts without it

    try:
        if synced:
            event, _ = todos.claim_synced(ledger, todo, actor=actor, ttl=ttl, now=now)
        else:
            event = ledger.run(todos.claim, todo, ttl=ttl, actor=actor, now=now)
    except (TransitionError, ClaimLost) as exc:
        found = ledger.fold().todos.get(todo)
        holder = found.holder if found else None
        return None, (f"{todo} went to {holder} first" if holder and holder != actor
                      else f"{todo}: {exc}")
    return event, ""


def brief(ledger: Ledger, *, actor: Optional[str], goal: Optional[str] = None,
          ci: bool = True, offline: bool = False,
          now: Optional[datetime] = None) -> tuple[str, StatusDoc]:
    """A Markdown handoff packet a new agent can start from with nothing else, and the status
    document it was made from."""
    snap = _document(ledger, actor=actor, goal=goal, ci=ci, offline=offline, now=now)
    goal_id = snap["goals"][0]["id"] if goal and snap["goals"] else None
    from loopx.recovery import briefing  # brief only: the start-up time of status and next

    return briefing.markdown(snap, goal_id=goal_id), typed.build(StatusDoc, snap)


@dataclass(frozen=True)
class PrimerTodo:
    """A todo as the primer lists it (a lease of the actor's, or the top of the frontier)."""

    id: str
    title: str
    goal: str
    priority: int
    until: Optional[str]  # when its lease ends


@dataclass(frozen=True)
class PrimerStep:
    """A gate waiting on the actor, or evidence to re-run: why, and the command."""

    reason: str
    command: Optional[str]


@dataclass(frozen=True)
class PrimerAttention:
    """An action that must not be missed (a repair, a lease to renew, a wake due)."""

    kind: answers.ActionKind
    reason: str
    command: Optional[str]


@dataclass(frozen=True)
class PrimerInbox:
    """One of the actor's sessions with messages not read yet."""

    session: str
    task: str
    unread: int


@dataclass(frozen=True)
class PrimerSession:
    """One of the actor's open sessions, and the others open on its goal."""

    session: str
    task: str
    state: str
    keep_open: bool
    ends: Optional[str]
    same_goal: list[str]


@dataclass(frozen=True)
class PrimerFacts:
    """What matters to one actor now (:func:`loopx.recovery.primer.facts`), as `prime` answers
    it under ``primer``."""

    actor: Optional[str]
    now: str
    ledger: Optional[str]
    next: Optional[Action]
    next_wake: Optional[str]
    leases: list[PrimerTodo]
    frontier: list[PrimerTodo]
    frontier_size: int
    gates: list[PrimerStep]
    inboxes: list[PrimerInbox]
    sessions: list[PrimerSession]
    stale: list[PrimerStep]
    attention: list[PrimerAttention]


@dataclass
class Primer:
    """`git loopx prime`: the facts that matter to one actor now, and their Markdown."""

    facts: PrimerFacts
    markdown: str

    def to_dict(self) -> dict[str, Any]:
        return {"markdown": self.markdown, "primer": typed.plain(self.facts)}


def prime(ledger: Ledger, *, actor: Optional[str], ci: bool = True, offline: bool = False,
          now: Optional[datetime] = None) -> Primer:
    """A short Markdown primer for ``actor`` at the start of a session or after compaction:
    what loopx is, the commands it needs, and its leases, the top of the frontier, the gates
    waiting on it, its sessions' inboxes and stale evidence."""
    now = now or clock.now()
    snap = _document(ledger, actor=actor, goal=None, ci=ci, offline=offline, now=now)
    from loopx.recovery import primer  # prime only: the start-up time of status and next

    facts = primer.facts(snap, actor=actor, now=clock.format_ts(now))
    return Primer(typed.build(PrimerFacts, facts), primer.markdown(facts))
