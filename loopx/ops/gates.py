"""Gates: questions that wait on a named human authority."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Optional

from loopx.errors import UsageError
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import clock, typed
from loopx.model.ids import new_short_id
from loopx.ops import lookup
from loopx.projection import answers, entities, views

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        Event, GateAnswered, GateOpened, GateWithdrawn,
    )

Gate = answers.Gate  # what listing and show answer: a gate as status shows it

DECISIONS = ("approve", "reject", "answer")


def open_(txn: Txn, goal: str, question: str, *, authority: Sequence[str],
          blocks: Sequence[str] = (), id: Optional[str] = None,
          event_id: Optional[str] = None) -> Event[GateOpened]:
    """Ask ``question`` of ``authority`` (identities or ``role:NAME``); the todos it
    ``blocks`` wait for its approval."""
    fold = txn.fold
    gid = lookup.goal(fold, goal)
    data = {"id": id or new_short_id("q", event_id), "goal": gid, "question": question,
            "authority": list(authority), "blocks": [lookup.todo(fold, t) for t in blocks]}
    return txn.add(Draft("gate.opened", data, gid, event_id))


def answer(txn: Txn, gate: str, *, decision: str, answer: Optional[str] = None,
           comment: Optional[str] = None, supersede: bool = False,
           event_id: Optional[str] = None) -> Event[GateAnswered]:
    """Answer a gate (its authority only): ``approve``, ``reject``, or ``answer`` with text.

    A gate that already has a decision (or conflicting ones) is answered again only with
    ``supersede``: the new answer names the decisions it replaces.
    """
    if decision not in DECISIONS:
        raise UsageError(f"a decision is one of {', '.join(DECISIONS)}, not {decision!r}")
    gid = lookup.gate(txn.fold, gate)
    data = {"id": gid, "decision": decision, "answer": answer, "comment": comment,
            "supersedes": _superseded(txn.fold.gates[gid], supersede, "answer")}
    return txn.add(Draft("gate.answered", data, txn.fold.gates[gid].goal, event_id))


def withdraw(txn: Txn, gate: str, *, reason: Optional[str] = None, supersede: bool = False,
             event_id: Optional[str] = None) -> Event[GateWithdrawn]:
    """Withdraw a question that no longer needs an answer (its opener or authority only);
    a gate already decided is withdrawn only with ``supersede``."""
    gid = lookup.gate(txn.fold, gate)
    data = {"id": gid, "reason": reason,
            "supersedes": _superseded(txn.fold.gates[gid], supersede, "withdraw")}
    return txn.add(Draft("gate.withdrawn", data, txn.fold.gates[gid].goal, event_id))


def _superseded(gate: entities.Gate, supersede: bool, verb: str) -> Optional[list[str]]:
    """The decisions a new one replaces; refuses to replace them unasked."""
    if gate.state == "open":
        return None
    if not supersede:
        said = views.conflict_summary(gate)
        raise UsageError(f"gate {gate.id} is already {gate.state} ({said}); to replace that, "
                         f"{verb} again with --supersede")
    return [d["event"] for d in gate.decisions]


def listing(ledger: Ledger, *, include_closed: bool = False,
            now: Optional[datetime] = None) -> list[answers.Gate]:
    """Open gates (all of them with ``include_closed``)."""
    ledger.require()
    gates = views.snapshot(ledger.fold(), now or clock.now())["gates"]
    return [typed.build(answers.Gate, g) for g in gates
            if include_closed or g["state"] == "open"]


def show(ledger: Ledger, gate: str, *, now: Optional[datetime] = None) -> answers.Gate:
    """One gate as ``status`` shows it."""
    gid = lookup.gate(ledger.fold(), gate)
    gates = views.snapshot(ledger.fold(), now or clock.now())["gates"]
    return typed.build(answers.Gate, next(g for g in gates if g["id"] == gid))
