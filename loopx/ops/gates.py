"""Gates: questions that wait on a named human authority."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Optional

from loopx.errors import UsageError
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import clock, inert, typed
from loopx.model.ids import new_short_id
from loopx.ops import effects, lookup
from loopx.projection import answers, authority, entities, environment, views
from loopx.recovery import readback

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


NOTIFY_KEY = "gate-notify:{gate}"  # one comment per gate, whatever the retries


def notify_target(fold: entities.Fold, goal: str, blocks: Sequence[str], via: str) -> str:
    """Where ``gate open --notify VIA`` comments: VIA itself when it names an issue or pull
    request (github:OWNER/REPO#N), else (``github``) the first link of the todos the gate
    blocks, then of its goal. Told before the gate is written: bad input writes nothing."""
    if via.startswith("github:"):
        return via
    if via != "github":
        raise UsageError(f"--notify is github or github:OWNER/REPO#N, not {via!r}")
    todos = [fold.todos[lookup.todo(fold, t)] for t in blocks]
    links = [link for t in todos for link in t.links] + fold.goals[lookup.goal(fold, goal)].links
    if not links:
        raise UsageError("no issue or pull request to notify on: link the goal or a todo it "
                         "blocks (--link github:OWNER/REPO#N), or say --notify "
                         "github:OWNER/REPO#N")
    return links[0]


def mentions(fold: entities.Fold, asked: Sequence[str], logins: dict[str, str]) -> list[str]:
    """The GitHub users to mention for the authority ``asked``: ``github:LOGIN`` identities,
    and those ``git config loopx.github.logins`` maps (``IDENTITY=LOGIN,...``); roles
    expanded."""
    found = []
    for who in sorted(authority.resolve(fold.config, list(asked))):
        login = who.removeprefix("github:") if who.startswith("github:") else logins.get(who)
        if login and re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})", login):
            found.append(f"@{login}")
    return found


def notify_github(ledger: Ledger, gate: str, *, target: str, actor: str,
                  now: Optional[datetime] = None) -> environment.Posted:
    """Ask the gate's question as a comment on ``target``, mentioning its authority; an effect
    keyed by the gate, so a retry never posts twice."""
    fold = ledger.fold()
    found = fold.gates[lookup.gate(fold, gate)]
    config = readback.read_config(ledger.repo)
    logins = dict(pair.split("=", 1) for pair in config.get("loopx.github.logins", "").split(",")
                  if "=" in pair)
    who = mentions(fold, found.authority, {k.strip(): v.strip() for k, v in logins.items()})
    asked = ", ".join(who + [inert.code(a) for a in found.authority if not who])
    body = (f"**loopx gate {found.id}** (goal {found.goal}) asks {asked}:\n\n"
            f"> {inert.md(found.question)}\n\n"
            f"Answer with {inert.code(f'git loopx gate answer {found.id} --approve')} "
            f"(or --reject, --answer TEXT).")
    return effects.github_comment(ledger, target, body, key=NOTIFY_KEY.format(gate=found.id),
                                  actor=actor, goal=found.goal, now=now)
