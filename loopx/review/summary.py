"""A range of the state branch summarised for a pull request: one Markdown document with
validate's verdict, what the range changes in state terms (from the projection, never the raw
YAML), who wrote its events, the frontier before and after, and a Mermaid picture of the todos
it touches with their direct neighbours (drawn by :mod:`loopx.projection.graph`).

The Actions workflow keeps it as one comment on the pull request (docs/ci). Every value that
came from an event is written with :func:`loopx.model.inert.md` (or as a Mermaid label), so a
title cannot close a block, hide text, link, or mention anyone; every list is cut at
:data:`MOST` items with "and N more", so the document stays a few KB whatever the range.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any, Optional

from loopx.errors import NotFound
from loopx.ledger.book import Ledger
from loopx.model import inert
from loopx.projection import graph
from loopx.review import changes, validate

MOST = 12  # items shown per list
MOST_NODES = 15  # nodes drawn in the picture
TEXT_MAX = 200  # characters of one change's or problem's text
KINDS = ("config", "goal", "todo", "gate", "evidence", "session", "problem")
WORDS = {"added": "new", "changed": "changed", "removed": "gone"}


def markdown(ledger: Ledger, *, base: Optional[str], head: str, now: datetime) -> str:
    """The pull request's view of ``base..head`` (no ``base``: all of head's history):
    judged against their merge base, as :func:`loopx.review.validate.validate` judges it."""
    report = validate.validate(ledger, base=base, head=head)
    head_oid = ledger.store.resolve(head)
    if head_oid is None:
        raise NotFound(f"no commit {head!r} (fetch the state branch first?)")
    diff, after = changes.compare(ledger, report.merge_base, head_oid, now=now)
    return render(report, diff, after)


def render(report: validate.Report, diff: changes.Diff, after: dict[str, Any]) -> str:
    """The document for a validate report, the diff of the same range and the snapshot at its
    head (``loopx.projection.views.snapshot``)."""
    out = [_verdict(report), "", _span(report, diff)]
    if report.findings:
        out += ["", "**Problems**", *_cut([
            f"- `{f.rule}` {_md(f.message)} (commit `{f.commit[:12]}`)"
            for f in report.findings])]
    out += ["", "**What changes**", *_cut(_changes(diff) or ["- nothing in the state"])]
    if report.events:
        out += ["", "**Events**, by who wrote them", *_cut(_writers(report))]
    out += ["", _frontier(diff)]
    out += _picture(diff, after)
    return "\n".join(out) + "\n"


def _verdict(report: validate.Report) -> str:
    if report.ok:
        return "### loopx state change: ✅ valid"
    count = len(report.findings)
    return f"### loopx state change: ❌ {count} problem{'' if count == 1 else 's'}"


def _span(report: validate.Report, diff: changes.Diff) -> str:
    span = f"{report.base}..{report.head}" if report.base else report.head
    commits = f"{report.commits} commit{'' if report.commits == 1 else 's'}"
    return (f"{inert.code(span)} · {commits} · {diff.events.before} → {diff.events.after} "
            "events · checked by `git loopx validate`")


def _changes(diff: changes.Diff) -> list[str]:
    order = {kind: i for i, kind in enumerate(KINDS)}
    ranked = sorted(diff.changes, key=lambda c: order.get(c.kind, len(KINDS)))
    return [f"- {c.kind} {inert.md(c.id)} {WORDS.get(c.change, c.change)}: {_md(c.text)}"
            for c in ranked]


def _writers(report: validate.Report) -> list[str]:
    by_actor: dict[str, Counter[str]] = {}
    for event in report.events:
        by_actor.setdefault(event.actor, Counter())[event.type] += 1
    rows = []
    for actor, types in sorted(by_actor.items(), key=lambda a: (-sum(a[1].values()), a[0])):
        ranked = sorted(types.items(), key=lambda t: (-t[1], t[0]))
        kinds = ", ".join(f"{n} {inert.md(t)}" for t, n in ranked[:6])
        more = f", {len(types) - 6} more types" if len(types) > 6 else ""
        rows.append(f"- {inert.md(actor)}: {sum(types.values())} ({kinds}{more})")
    return rows


def _frontier(diff: changes.Diff) -> str:
    before, after = diff.frontier.before, diff.frontier.after
    if before == after:
        return f"**Frontier** (ready to claim), unchanged: {_ids(after)}"
    return f"**Frontier** (ready to claim): {_ids(before)} → {_ids(after)}"


def _ids(ids: list[str]) -> str:
    shown = ", ".join(inert.md(i) for i in ids[:MOST]) or "(empty)"
    return shown + (f" and {len(ids) - MOST} more" if len(ids) > MOST else "")


def _picture(diff: changes.Diff, after: dict[str, Any]) -> list[str]:
    """The todos and gates the range changed (and the todos of its evidence), with their
    direct neighbours."""
    touched = [c.id for c in diff.changes if c.kind in ("todo", "gate")]
    evidence = {c.id for c in diff.changes if c.kind == "evidence"}
    touched += [e["todo"] for e in after.get("evidence", []) if e["id"] in evidence and e["todo"]]
    plan = graph.plan(after)
    whole = graph.around(plan, touched)
    shown = graph.around(plan, touched, most=MOST_NODES)
    if not shown.nodes:
        return []
    left = len(whole.nodes) - len(shown.nodes)
    return (["", "**The todos it touches**, with their direct neighbours",
             *graph.mermaid_block(shown)]
            + ([f"and {left} more not drawn (`git loopx status` lists them)"] if left else []))


def _cut(rows: list[str]) -> list[str]:
    if len(rows) <= MOST:
        return rows
    return rows[:MOST] + [f"- and {len(rows) - MOST} more (`git loopx diff` lists them all)"]


def _md(text: str) -> str:
    shown = inert.line(text)
    return inert.md(inert.clip(shown, TEXT_MAX))
