"""Reviewing state like code: ``git loopx log`` and ``git loopx diff``.

Both read through the ledger: :func:`log` maps every event file to the commit that added it
(one ``git log``) and reads the files through the one ``cat-file --batch-command``; :func:`diff`
folds two commits with the same projection every reader uses and compares them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional

from loopx.storage import commits
from loopx.storage.batches import Oversize
from loopx.projection import history
from loopx.projection import entities, views
from loopx.errors import NotFound, SchemaError, UsageError
from loopx.model import inert, plain, typed
from loopx.model.codec import MAX_BYTES
from loopx.ledger.book import Ledger


@dataclass(frozen=True)
class LogEvent:
    """One event a commit added, described (a file that does not read is one too, of type
    ``file``)."""

    id: str
    type: str
    clock: int
    actor: Optional[str]
    at: Optional[str]
    goal: Optional[str]
    text: str
    applied: bool
    refused: Optional[str] = typed.optional()  # why it was not applied
    signed_by: Optional[list[str]] = typed.optional()


@dataclass(frozen=True)
class LogCommit:
    """A commit of the state branch and the events it added, newest first."""

    commit: str
    parents: list[str]
    author: str
    email: str
    date: str
    subject: str
    events: list[LogEvent]


def log(
    ledger: Ledger, spec: Optional[str] = None, *, max_count: Optional[int] = None
) -> list[LogCommit]:
    """The commits of ``spec`` (a revision or ``A..B``; default the state ref), newest first,
    each with the events it added, described, newest first."""
    revs, tip = _revs(ledger, spec)
    walked = commits.walk(ledger.store.cwd, revs, max_count=max_count)
    files = [(c, ch) for c in walked for ch in c.added if ch.path.startswith("events/")]
    blobs = ledger.store.read_blobs([ch.oid for _, ch in files])
    fold = ledger.fold() if tip == ledger.tip() else ledger.fold_at(tip)
    refused = {p.event: p.reason for p in fold.problems}
    signed = fold.extra.get("signed", {})
    rows: dict[str, list[dict[str, Any]]] = {c.oid: [] for c in walked}
    for (commit, change), data in zip(files, blobs):
        rows[commit.oid].append(_event_row(change.path, data, refused, signed))
    return [typed.build(LogCommit, _commit_row(
        c, sorted(rows[c.oid], key=lambda r: (r["clock"], r["id"]), reverse=True)))
        for c in walked]


def _revs(ledger: Ledger, spec: Optional[str]) -> tuple[list[str], str]:
    spec = spec or ledger.tip() or ledger.ref  # a proposal not written yet is loopx/state
    if "..." in spec:
        raise UsageError("use A..B (the commits in B that are not in A)")
    start, sep, end = spec.partition("..")
    end = end or (ledger.ref if sep else start)
    tip = ledger.store.resolve(end)
    if tip is None or (sep and start and ledger.store.resolve(start) is None):
        raise NotFound(
            f"no such revision in {spec!r} (is the ledger initialised, the branch fetched?)"
        )
    state_commit(ledger, tip, end)
    return ([tip, f"^{start}"] if sep and start else [tip]), tip


def state_commit(ledger: Ledger, oid: str, name: str) -> str:
    """``oid`` (given as ``name``) when it is a commit of a state branch, whose tree always
    holds ``events/``; else a UsageError. A code commit (``HEAD~1..HEAD``, ``master``) was read
    as a ledger of 0 events: its log had no events, a diff to it said every goal was gone."""
    if oid != ledger.tip() and "events" not in ledger.store.read_tree(f"{oid}^{{tree}}"):
        raise UsageError(f"{name} is not a commit of a loopx state branch (its tree has no "
                         f"events/): name one like loopx/state, loopx/state~1 or "
                         "origin/loopx/state")
    return oid


def _event_row(
    path: str, data: Optional[bytes | Oversize], refused: dict[str, str], signed: dict[str, Any]
) -> dict[str, Any]:
    # Read for display only (no event models: a warm `log` starts fast); what validation
    # says of the file is the fold's verdict, in ``refused``.
    try:
        if path in refused:
            raise SchemaError(refused[path])
        if isinstance(data, Oversize):  # sized from its header, never read
            raise SchemaError(f"{data.size} bytes is over the {MAX_BYTES // 1024} KiB limit")
        event = plain.read(path, data)
        text = history.describe(event)
    except Exception as exc:  # a broken file is shown, never fatal: log is for looking
        return {
            "id": path,
            "type": "file",
            "clock": 0,
            "actor": None,
            "at": None,
            "goal": None,
            "text": f"unreadable file {path}: {exc}",
            "applied": False,
        }
    row = {
        "id": event.id,
        "type": event.type,
        "clock": event.env.clock,
        "actor": event.env.actor,
        "at": event.env.at,
        "goal": event.env.goal,
        "text": text,
        "applied": event.id not in refused,
    }
    if event.id in refused:
        row["refused"] = refused[event.id]
    if event.id in signed:
        row["signed_by"] = sorted(set(signed[event.id].values()))
    return row


def _commit_row(commit: commits.Commit, events: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "commit": commit.oid,
        "parents": commit.parents,
        "author": commit.author,
        "email": commit.email,
        "date": commit.date,
        "subject": commit.subject,
        "events": events,
    }


def log_text(rows: list[LogCommit], *, oneline: bool = False) -> str:
    """``git log``-like text: one header per commit, one line per event (or ``--oneline``)."""
    if oneline:
        return "\n".join(f"{row.commit[:12]} {inert.line(e.actor or row.author)}: "
                         f"{e.text}"
                         + ("" if e.applied else "  [NOT APPLIED]")
                         for row in rows for e in row.events) or "no commits"
    out: list[str] = []
    for row in rows:
        actors = sorted({e.actor for e in row.events if e.actor})
        who = ", ".join(actors) or row.author
        when = row.events[0].at if row.events and row.events[0].at else row.date
        merge = (
            "  merge of " + ", ".join(p[:12] for p in row.parents)
            if len(row.parents) > 1
            else ""
        )
        out.append(f"commit {row.commit[:12]}  {inert.line(when)}  {inert.line(who)}{merge}")
        for e in row.events:
            line = f"    {e.text}"
            if e.signed_by is not None:
                line += f"  (signed by {', '.join(e.signed_by)})"
            if not e.applied:
                line += f"  [NOT APPLIED: {e.refused or 'unreadable'}]"
            out.append(line)
    return "\n".join(out) if out else "no commits"


@dataclass(frozen=True)
class Change:
    """One entity that changed: its kind, id, how (added, changed, removed) and what."""

    kind: str
    id: str
    change: str
    text: str


@dataclass(frozen=True)
class Frontiers:
    before: list[str]
    after: list[str]


@dataclass(frozen=True)
class Counts:
    before: int
    after: int


@dataclass(frozen=True)
class Diff:
    """What changed in the state between two commits (`git loopx diff`)."""

    changes: list[Change]
    frontier: Frontiers
    events: Counts
    from_: str = field(metadata={typed.KEY: "from"})  # a Python keyword
    to: str


def default_diff(ledger: Ledger) -> str:
    """What `git loopx diff` compares with no argument: unpushed changes, else the last commit."""
    if ledger.store.resolve("refs/remotes/origin/loopx/state") is not None:
        return "refs/remotes/origin/loopx/state.." + ledger.ref
    if ledger.store.resolve(f"{ledger.ref}~1") is not None:
        return f"{ledger.ref}~1..{ledger.ref}"
    raise UsageError("the ledger has one commit: nothing to compare it with (give A..B)")


def diff(ledger: Ledger, spec: str, *, now: datetime) -> Diff:
    """What changed in the ledger's state between two commits (``A..B``, or ``A`` for A..tip)."""
    start, sep, end = spec.partition("..")
    if "..." in spec or not start:
        raise UsageError("give A..B or A (compared with the state ref's tip)")
    a, b = ledger.store.resolve(start), ledger.store.resolve(end or ledger.tip() or ledger.ref)
    if a is None or b is None:
        raise NotFound(f"no such revision in {spec!r}")
    state_commit(ledger, a, start)
    state_commit(ledger, b, end or "the state ref")
    return compare(ledger, a, b, now=now)[0]


def compare(ledger: Ledger, a: Optional[str], b: str, *,
            now: datetime) -> tuple[Diff, dict[str, Any]]:
    """What changed from commit ``a`` (None: an empty ledger) to commit ``b``, and the
    snapshot of ``b`` it was read from."""
    before, after = (ledger.fold_at(a) if a else entities.Fold()), ledger.fold_at(b)
    shown = views.snapshot(after, now)
    result = history.diff(views.snapshot(before, now), shown)
    result["changes"][:0] = history.config_changes(before.config, after.config)
    result.update({"from": a or "", "to": b})
    return typed.build(Diff, result), shown


def diff_text(result: Diff) -> str:
    out = [
        f"ledger {result.from_[:12]}..{result.to[:12]}: "
        f"{result.events.before} -> {result.events.after} events"
    ]
    for c in result.changes:
        out.append(f"  {_MARK[c.change]} {c.kind:<9} {c.id:<12} {inert.line(c.text)}")
    if len(out) == 1:
        out.append("  no change in state")
    before, after = result.frontier.before, result.frontier.after
    if before != after:
        out.append(f"frontier: {', '.join(before) or '(empty)'} -> {', '.join(after) or '(empty)'}")
    else:
        out.append(f"frontier unchanged: {', '.join(after) or '(empty)'}")
    return "\n".join(out)


_MARK = {"added": "+", "changed": "~", "removed": "-"}
