"""Notices: your events that the projection did not apply (a claim that lost a race after a
merge, an answer that came second), and dismissing them once read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from loopx.errors import UsageError
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.projection import answers, entities
from loopx.projection.views import resolve_id

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import Event, NoticeDismissed


def listing(ledger: Ledger, *, actor: str, include_dismissed: bool = False
            ) -> list[answers.Problem]:
    """``actor``'s events that were not applied, oldest first: ``{event, type, actor, clock,
    reason, dismissed}`` (the status document's ``problems`` entries)."""
    ledger.require()
    fold = ledger.live_fold()
    return [_notice(fold, p) for p in fold.problems if p.actor == actor and p.type != "file"
            and (include_dismissed or p.event not in fold.dismissed)]


def dismiss(txn: Txn, events: Sequence[str] = (), *, every: bool = False,
            event_id: Optional[str] = None) -> Event[NoticeDismissed]:
    """Dismiss the notices about these events of the actor's (unique prefixes of their ids),
    or with ``every`` all of the actor's notices still showing."""
    fold = txn.fold
    open_ = {p.event: p for p in fold.problems
             if p.actor == txn.actor and p.type != "file" and p.event not in fold.dismissed}
    if every:
        named = list(open_)
        if not named:
            raise UsageError(f"{txn.actor} has no notice to dismiss")
    elif not events:
        raise UsageError("name the notices to dismiss (event ids, see `git loopx notice list`) "
                         "or give --all")
    else:
        named = [resolve_id(open_, prefix, "notice") for prefix in events]
    return txn.add(Draft("notice.dismissed", {"events": list(dict.fromkeys(named))}, None,
                         event_id))


def _notice(fold: entities.Fold, problem: entities.Problem) -> answers.Problem:
    return answers.Problem(problem.event, problem.type, problem.actor, problem.clock,
                           problem.reason, problem.event in fold.dismissed)
