"""Handing work over: sync, fetch and push the state branch with a remote (docs/sync.md)."""

from __future__ import annotations

from typing import Optional

from loopx.features import sync
from loopx.ledger.book import Ledger

Report = sync.Report


def sync_(ledger: Ledger, *, remote: Optional[str] = None,
          retries: int = sync.DEFAULT_RETRIES, allow_unrelated: bool = False) -> Report:
    """Fetch, check and merge the remote's state, then push ours (never forced); a remote
    state that fails the incoming check is quarantined and local state left untouched. A
    remote ledger with no history in common with ours merges only with ``allow_unrelated``."""
    return sync.sync(ledger=ledger, remote=remote, retries=retries,
                     allow_unrelated=allow_unrelated)


def fetch(ledger: Ledger, *, remote: Optional[str] = None,
          allow_unrelated: bool = False) -> Report:
    """Fetch, check and merge the remote's state (no push)."""
    return sync.fetch(ledger=ledger, remote=remote, allow_unrelated=allow_unrelated)


def push(ledger: Ledger, *, remote: Optional[str] = None) -> Report:
    """Push our state, fast-forward only (sync first when the remote moved)."""
    return sync.push(ledger=ledger, remote=remote)
