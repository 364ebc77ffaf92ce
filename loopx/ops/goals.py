"""Goals and their acceptance criteria."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Optional

from loopx.errors import TransitionError, UsageError
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import clock, typed
from loopx.model.ids import new_short_id
from loopx.ops import evidence, lookup
from loopx.projection import answers, views

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        Event, GoalClosed, GoalCreated, GoalUpdated,
    )

GoalRecord = answers.GoalRecord  # what listing answers: a goal as the ledger has it
GoalShown = answers.GoalShown  # what show answers: with its todos and gates


def add(txn: Txn, title: str, *, id: Optional[str] = None, accept: Sequence[str] = (),
        scope: Optional[Mapping[str, Sequence[str]]] = None, description: Optional[str] = None,
        links: Sequence[str] = (), event_id: Optional[str] = None) -> Event[GoalCreated]:
    """Create a goal; its acceptance criteria get the ids a1, a2, ... in order. ``scope``
    gives a criterion the paths its evidence is judged on (``{"a1": ["src/**"]}``)."""
    gid = id or new_short_id("g", event_id)
    scope = scope or {}
    data: dict[str, Any] = {"id": gid, "title": title, "description": description,
                            "acceptance": _numbered(accept, 1, scope)}
    _unused(scope, {c["id"] for c in data["acceptance"]})
    if links:
        data["links"] = list(dict.fromkeys(links))
    return txn.add(Draft("goal.created", data, gid, event_id))


def _numbered(texts: Sequence[str], start: int,
              scope: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    return [{"id": f"a{i}", "text": t, "paths": list(scope[f"a{i}"]) if f"a{i}" in scope else None}
            for i, t in enumerate(texts, start)]


def _unused(scope: Mapping[str, Sequence[str]], known: set[str]) -> None:
    stray = sorted(set(scope) - known)
    if stray:
        raise UsageError(f"no criterion {', '.join(stray)} to scope "
                         f"(criteria: {', '.join(sorted(known)) or 'none'})")


def update(txn: Txn, goal: str, *, title: Optional[str] = None,
           description: Optional[str] = None, accept: Sequence[str] = (),
           state: Optional[str] = None, revise: Optional[Mapping[str, str]] = None,
           retire: Sequence[str] = (), scope: Optional[Mapping[str, Sequence[str]]] = None,
           links: Sequence[str] = (), event_id: Optional[str] = None) -> Event[GoalUpdated]:
    """Change a goal's title, description or state (active, paused); add criteria, revise
    their text (evidence recorded before no longer counts for them), retire them (they need no
    evidence any more) or set the paths their evidence is judged on (``scope``); link it to
    more issues and pull requests (``links``: github:OWNER/REPO#N)."""
    gid = lookup.goal(txn.fold, goal)
    found, revise, scope = txn.fold.goals[gid], revise or {}, scope or {}
    added = _numbered(accept, len(found.acceptance) + len(found.retired) + 1, scope)
    new = {c["id"] for c in added}
    _unused(scope, new | {c["id"] for c in found.acceptance})
    data = {"id": gid, "title": title, "description": description, "state": state,
            "add_acceptance": added,
            "revise": [{"id": c, "text": t} for c, t in revise.items()] or None,
            "retire": list(retire) or None,
            "scope": [{"id": c, "paths": list(p)} for c, p in scope.items() if c not in new]
            or None}
    if links:
        data["add_links"] = [link for link in dict.fromkeys(links) if link not in found.links]
    return txn.add(Draft("goal.updated", data, gid, event_id))


def close(txn: Txn, goal: str, *, outcome: str, reason: Optional[str] = None,
          override: bool = False, event_id: Optional[str] = None) -> Event[GoalClosed]:
    """Close a goal as ``achieved`` or ``abandoned``.

    Achieved needs every criterion's latest verdict to pass on evidence that still vouches for
    the code as it is now (fresh), and no todo left open, claimed or blocked; ``override`` is a
    human's decision, with a ``reason``, to close it without that evidence.
    """
    gid = lookup.goal(txn.fold, goal)
    data = {"id": gid, "outcome": outcome, "reason": reason, "override": override}
    event = txn.add(Draft("goal.closed", data, gid, event_id))
    if outcome == "achieved" and not override:
        _require_fresh(txn, gid)  # raising here writes nothing: the commit is not made
    return event


def _require_fresh(txn: Txn, gid: str) -> None:
    """Refuse unless the evidence meeting each criterion vouches for the code as it is now."""
    fold = txn.fold
    goal = fold.goals[gid]
    judged = evidence.judge(txn.ledger, fold)
    for crit in goal.acceptance:
        latest = views.criterion_verdict(fold, goal, crit["id"]).latest
        assert latest is not None  # the check refused unmet criteria already
        fresh = judged.evidence(views.evidence_view(fold.evidence[latest]),
                                criterion_paths=list(crit.get("paths") or []))
        if fresh.state not in ("fresh", "unbound"):
            raise TransitionError(
                f"goal {gid} cannot close as achieved: the evidence for {crit['id']} "
                f"({latest}) is {evidence.stale_note(fresh)}; re-run it (git loopx rerun "
                f"--criterion {gid}:{crit['id']}) or close with --override --reason TEXT "
                "(a human decision)")


def listing(ledger: Ledger, *, include_closed: bool = False,
            now: Optional[datetime] = None) -> list[answers.GoalRecord]:
    """Goals in play (all goals with ``include_closed``), as the ledger has them."""
    ledger.require()
    goals = views.snapshot(ledger.fold(), now or clock.now())["goals"]
    return [typed.build(answers.GoalRecord, g) for g in goals
            if include_closed or g["state"] in ("active", "paused")]


def show(ledger: Ledger, goal: str, *, now: Optional[datetime] = None) -> answers.GoalShown:
    """One goal with its criteria (and their evidence), its todos and its gates."""
    snap = ledger.snapshot(now)  # leases as this clone judges them (docs/design.md#clocks)
    gid = lookup.goal(ledger.fold(), goal)
    found = next(g for g in snap["goals"] if g["id"] == gid)
    return typed.build(answers.GoalShown, dict(
        found, todos=[t for t in snap["todos"] if t["goal"] == gid],
        gates=[g for g in snap["gates"] if g["goal"] == gid]))
