"""Evidence: results bound to the code they vouch for (tests, CI, reviews, receipts), recorded
by hand or by running a command (``git loopx run``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any, Optional

from loopx.errors import LoopxError, NotFound
from loopx.features import capture, redact
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import clock
from loopx.model.ids import new_short_id
from loopx.ops import lookup
from loopx.state import views
from loopx.storage import gateway

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        Event, EvidenceRecorded,
    )

KINDS = ("test", "ci", "commit", "review", "receipt", "note")


def binding(ledger: Ledger, rev: Optional[str] = None) -> dict[str, Any]:
    """The commit, tree and dirty flag evidence is bound to: ``rev``, by default HEAD with
    the state of the work tree (no commits yet: nothing)."""
    repo = ledger.repo
    commit = ledger.store.resolve(rev or "HEAD")
    if commit is None:
        if rev:
            raise NotFound(f"no commit {rev!r}")
        return {}
    tree = gateway.out(repo.cwd, "rev-parse", f"{commit}^{{tree}}")
    dirty = False
    if rev is None and repo.work_tree is not None:
        dirty = bool(gateway.out(repo.cwd, "status", "--porcelain", "--untracked-files=no"))
    return {"commit": commit, "tree": tree, "dirty": dirty}


def add(txn: Txn, kind: str, *, bound: Mapping[str, Any], todo: Optional[str] = None,
        goal: Optional[str] = None, criteria: Sequence[str] = (), command: Optional[str] = None,
        exit_code: Optional[int] = None, duration_s: Optional[float] = None,
        summary: Optional[str] = None, url: Optional[str] = None, digest: Optional[str] = None,
        output_tail: Optional[str] = None, id: Optional[str] = None,
        event_id: Optional[str] = None) -> Event[EvidenceRecorded]:
    """Record evidence of ``kind`` for a todo or goal (and the criteria it meets), bound to
    the code described by ``bound`` (see :func:`binding`)."""
    tid = lookup.optional(txn.fold.todos, todo, "todo")
    data = {"id": id or new_short_id("e", event_id), "kind": kind, **bound, "command": command,
            "exit_code": exit_code, "duration_s": duration_s, "summary": summary, "url": url,
            "digest": digest, "output_tail": output_tail, "todo": tid,
            "criteria": list(criteria)}
    return txn.add(Draft("evidence.recorded", data, lookup.goal_of(txn.fold, goal, tid),
                         event_id))


@dataclass
class RunResult:
    """A command run by :func:`run`: its outcome and the evidence recorded for it.

    ``error`` is set (and ``event`` None) when the command failed *and* recording failed too:
    the command's own exit code is then the more important one to pass on.
    """

    outcome: capture.RunOutcome
    event: Optional[Event[EvidenceRecorded]]
    error: Optional[LoopxError] = None


def run(ledger: Ledger, argv: Sequence[str], *, actor: str, kind: str = "test",
        todo: Optional[str] = None, goal: Optional[str] = None, criteria: Sequence[str] = (),
        summary: Optional[str] = None, id: Optional[str] = None,
        event_id: Optional[str] = None, now: Optional[datetime] = None,
        environ: Optional[Mapping[str, str]] = None, stdout: Optional[IO[bytes]] = None,
        stderr: Optional[IO[bytes]] = None) -> RunResult:
    """Run ``argv`` (its output streamed to ``stdout``/``stderr``) and record it as evidence.

    Without ``todo`` or ``goal`` the evidence goes to the one todo ``actor`` holds, if any.
    Secrets are redacted before anything is written.
    """
    ledger.require()
    fold = ledger.fold()  # unknown ids fail now, not after a long run
    lookup.optional(fold.todos, todo, "todo")
    lookup.optional(fold.goals, goal, "goal")
    if not todo and not goal:  # like a commit: the todo you hold is what you work on
        held = held_by(ledger, actor, now=now)
        todo = held[0] if len(held) == 1 else None
    bound = binding(ledger)  # before the command runs: it may change the work tree
    environ = os.environ if environ is None else environ
    outcome = capture.run_command(list(argv), environ=environ,
                                  stdout=stdout or sys.stdout.buffer,
                                  stderr=stderr or sys.stderr.buffer)
    text = redact.redact(summary, environ) if summary else capture.run_summary(outcome)

    def build(txn: Txn) -> Event[EvidenceRecorded]:
        return add(txn, kind, bound=bound, todo=todo, goal=goal, criteria=criteria,
                   command=outcome.command, exit_code=outcome.exit_code,
                   duration_s=outcome.duration_s, summary=text, digest=outcome.digest,
                   output_tail=outcome.tail or None, id=id, event_id=event_id)

    try:
        event, _ = ledger.write(build, actor=actor, now=now)
    except LoopxError as exc:
        if not outcome.exit_code:
            raise
        return RunResult(outcome, None, exc)
    return RunResult(outcome, event)


def held_by(ledger: Ledger, actor: str, *, now: Optional[datetime] = None) -> list[str]:
    """The todos ``actor`` holds a live lease on."""
    todos = views.snapshot(ledger.fold(), now or clock.now())["todos"]
    return [t["id"] for t in todos if t["claimed_by"] == actor]


def listing(ledger: Ledger, *, todo: Optional[str] = None, goal: Optional[str] = None,
            now: Optional[datetime] = None) -> list[dict[str, Any]]:
    """Evidence, optionally of one todo or goal (id prefixes match)."""
    items: list[dict[str, Any]] = views.snapshot(ledger.fold(), now or clock.now())["evidence"]
    if todo:
        items = [e for e in items if e["todo"] and e["todo"].startswith(todo)]
    if goal:
        items = [e for e in items if e["goal"] and e["goal"].startswith(goal)]
    return items
