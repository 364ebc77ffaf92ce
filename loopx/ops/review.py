"""Reviewing state like code: its history, what changed between two commits, and whether a
range of state commits may be merged (docs/review.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Optional

from loopx.review import changes, summary, validate
from loopx.ledger.book import Ledger
from loopx.model import clock


def log(ledger: Ledger, spec: Optional[str] = None, *,
        max_count: Optional[int] = None) -> list[changes.LogCommit]:
    """The commits of ``spec`` (a revision or ``A..B``; default the state ref), newest first,
    each with the events it added, described."""
    ledger.require()
    return changes.log(ledger, spec, max_count=max_count)


def diff(ledger: Ledger, spec: Optional[str] = None, *,
         now: Optional[datetime] = None) -> changes.Diff:
    """What changed in the state between two commits (``A..B``, or ``A`` for A..tip); by
    default what is not pushed yet, else the last state commit."""
    ledger.require()
    return changes.diff(ledger, spec or changes.default_diff(ledger), now=now or clock.now())


def check_range(ledger: Ledger, span: Optional[str] = None) -> validate.Report:
    """Check ``BASE..HEAD`` (or one revision: its whole history) before it is merged; the
    default is a proposal against loopx/state, else loopx/state against origin's."""
    base, head = _range(ledger, span)
    with ledger.progress.doing(f"validating {f'{base}..' if base else ''}{head}"):
        return validate.validate(ledger, base=base, head=head)


def markdown(ledger: Ledger, span: Optional[str] = None, *,
            now: Optional[datetime] = None) -> str:
    """``BASE..HEAD`` (the same default as :func:`check_range`) as the Markdown a pull request
    shows: validate's verdict, the state diff, who wrote the events, and a Mermaid picture of
    the todos it touches; bounded, with every text from an event inert."""
    base, head = _range(ledger, span)
    return summary.markdown(ledger, base=base, head=head, now=now or clock.now())


def _range(ledger: Ledger, span: Optional[str]) -> tuple[Optional[str], str]:
    if span is None:
        return validate.default_range(ledger)
    start, sep, end = span.partition("..")
    return (start or None, end or ledger.ref) if sep else (None, span)
