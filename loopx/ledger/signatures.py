"""Signed answers: which events of a state branch came in commits signed by their actor.

Whether a commit is signed is not in the event file, so the fold gets the verdicts as data
(``fold.extra["signed"]``, see :mod:`loopx.projection.authority`). This module asks git for them:
one ``git log`` for the commits that added the files in question, one verification per
``allowed_signers`` text (keys rotate). Only ledgers that turn signed answers on pay for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from loopx.errors import TransitionError
from loopx.projection import authority
from loopx.storage import commits
from loopx.storage.store import Store

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import ConfigSet, Event

# The events authority.needs_signature covers (the authority acts).
SIGNED_TYPES = ("gate.answered", "gate.withdrawn", "config.set", "todo.done", "todo.cancelled",
                "goal.closed", "quota.spent")

Verdicts = dict[str, dict[str, str]]  # event id -> {signers digest: principal}


def verify(store: Store, commit: str, events: list[Event]) -> Verdicts:
    """Verdicts for the events of SIGNED_TYPES in signed commits of ``commit``'s history.

    Asks git only when some config in ``events`` turns signed answers on.
    """
    texts = signer_texts(events)
    if not texts or not any(e.type in SIGNED_TYPES for e in events):
        return {}
    # A signature vouches for the bytes its commit added: bind each verdict to the blob the
    # tip holds, so a file rewritten after signing is not covered by the old signature.
    current = {e.path: e.oid for e in store.list_files(commit)
               if e.path.endswith(tuple(f".{t}.yaml" for t in SIGNED_TYPES))}
    adders: dict[str, list[str]] = {}
    paths = [f":(glob)events/**/*.{t}.yaml" for t in SIGNED_TYPES]
    for found in commits.walk(store.cwd, [commit], paths=paths):
        for change in found.added:
            if current.get(change.path) == change.oid:
                adders.setdefault(_event_id(change.path), []).append(found.oid)
    every = sorted({oid for oids in adders.values() for oid in oids})
    result: Verdicts = {}
    for text in texts:
        verdicts = commits.signers(store.cwd, every, text)
        for event_id, oids in adders.items():
            principal = next((verdicts[o] for o in oids if verdicts.get(o)), None)
            if principal:
                result.setdefault(event_id, {})[authority.signers_digest(text)] = principal
    return result


def verify_own(store: Store, commit: str, txn: Txn) -> None:
    """Refuse before the ref moves when git does not verify our own signature as the actor,
    by the allowed_signers in force before each event (not after: a change to the signers
    is judged by the list it changes, or a key could vouch for its own registration)."""
    claimed = txn.fold.extra.get("signed", {})
    for digest, allowed in txn.signers.items():
        events = [e for e in txn.events if digest in claimed.get(e.id, {})]
        if not events:
            continue  # signed by choice (--sign), not because the config requires it
        principal = commits.signers(store.cwd, [commit], allowed).get(commit)
        if principal is None or not authority.signer_matches(principal, txn.actor):
            raise TransitionError(
                f"this change must be signed by {txn.actor}'s key in the ledger's "
                f"allowed_signers, but git verified the commit as "
                f"{principal or 'not validly signed'}; set `git config user.signingkey` (and "
                "gpg.format ssh) to that key")
        for event in events:
            claimed[event.id] = {digest: principal}


def signer_texts(events: list[Event]) -> list[str]:
    """The allowed_signers texts of a ledger that (at some point) turns signed answers on."""
    configs = [cast("ConfigSet", e.data) for e in events
               if e.type == "config.set" and e.data is not None]
    if not any(c.signed_answers not in (None, "off") for c in configs):
        return []
    return sorted({c.allowed_signers for c in configs if c.allowed_signers})


def _event_id(path: str) -> str:
    return path.rpartition("/")[2].partition(".")[0]
