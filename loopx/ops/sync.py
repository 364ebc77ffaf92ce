"""Handing work over: sync, fetch and push the state branch with a remote (docs/sync.md)."""

from __future__ import annotations

from typing import Optional

from loopx.errors import NotFound
from loopx.remote import sync
from loopx.ledger.book import Ledger
from loopx.projection import answers

Report = sync.Report
PATIENCE_S = sync.PATIENCE_S


def sync_(ledger: Ledger, *, remote: Optional[str] = None,
          retries: Optional[int] = sync.DEFAULT_RETRIES, actor: Optional[str] = None,
          allow_unrelated: bool = False, patience: float = sync.PATIENCE_S) -> Report:
    """Fetch, check and merge the remote's state, then push ours (never forced); a remote
    state that fails the incoming check is quarantined and local state left untouched. A
    remote ledger with no history in common with ours merges only with ``allow_unrelated``.
    With ``actor``, ``report.notices`` lists that actor's events the merge left not applied
    (a claim that lost a race)."""
    before = _problem_events(ledger)
    with ledger.progress.doing(f"syncing with {remote or sync.default_remote(ledger.repo)}"):
        report = sync.sync(ledger=ledger, remote=remote, retries=retries,
                           allow_unrelated=allow_unrelated, patience=patience)
    _found(ledger, report)
    report.notices = _new_notices(ledger, actor, before)
    return report


def fetch(ledger: Ledger, *, remote: Optional[str] = None, actor: Optional[str] = None,
          allow_unrelated: bool = False) -> Report:
    """Fetch, check and merge the remote's state (no push); ``actor`` and
    ``allow_unrelated`` as for :func:`sync_`."""
    before = _problem_events(ledger)
    with ledger.progress.doing(f"fetching from {remote or sync.default_remote(ledger.repo)}"):
        report = sync.fetch(ledger=ledger, remote=remote, allow_unrelated=allow_unrelated)
    _found(ledger, report)
    report.notices = _new_notices(ledger, actor, before)
    return report


def push(ledger: Ledger, *, remote: Optional[str] = None) -> Report:
    """Push our state, fast-forward only (sync first when the remote moved)."""
    return sync.push(ledger=ledger, remote=remote)


def _found(ledger: Ledger, report: Report) -> None:
    """Neither side has a ledger: nothing was synced, and saying "in step" would hide it."""
    if ledger.tip() is None:
        raise NotFound(f"neither this repository nor {report.remote} has a loopx ledger yet; "
                       "start one with `git loopx init`")


def _problem_events(ledger: Ledger) -> set[str]:
    return {p.event for p in ledger.live_fold().problems}


def _new_notices(ledger: Ledger, actor: Optional[str], before: set[str]) -> list[answers.Notice]:
    """The actor's events not applied now that were applied (or absent) before."""
    if not actor:
        return []
    fold = ledger.live_fold()
    return [answers.Notice(p.event, p.type, p.reason) for p in fold.problems
            if p.actor == actor and p.type != "file" and p.event not in before
            and p.event not in fold.dismissed]
