"""Signed answers and signed checkpoints: which commits of a state branch were signed by a
key the ledger's policy lists.

Whether a commit is signed is not in the event file, so the fold gets the verdicts as data
(``fold.extra["signed"]``, see :mod:`loopx.projection.authority`). This module asks git for them:
one ``git log`` for the commits that added the files in question, one verification per
``allowed_signers`` text (keys rotate). Only ledgers that turn signed answers on pay for it.

The same list decides which checkpoints a fresh clone adopts without a replay
(:func:`checkpoint_signers`, :func:`policy_at`; see :mod:`loopx.ledger.checkpoints`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, cast

from loopx.errors import CodecError, SchemaError, TransitionError, UsageError
from loopx.ledger import layout
from loopx.projection import authority, entities, folding
from loopx.storage import commits, gateway
from loopx.storage.store import Entry, Store

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import ConfigSet, Event

# The events authority.needs_signature covers (the authority acts).
SIGNED_TYPES = ("gate.answered", "gate.withdrawn", "config.set", "todo.done", "todo.cancelled",
                "goal.closed", "quota.spent")

Verdicts = dict[str, dict[str, str]]  # event id -> {signers digest: principal}


def verify(store: Store, commit: str, events: list[Event],
           types: tuple[str, ...] = SIGNED_TYPES) -> Verdicts:
    """Verdicts for the events of ``types`` (SIGNED_TYPES) in signed commits of ``commit``'s
    history.

    Asks git only when some config in ``events`` turns signed answers on.
    """
    texts = signer_texts(events)
    if not texts or not any(e.type in types for e in events):
        return {}
    # A signature vouches for the bytes its commit added: bind each verdict to the blob the
    # tip holds, so a file rewritten after signing is not covered by the old signature.
    current = {e.path: e.oid for e in store.list_files(commit)
               if e.path.endswith(tuple(f".{t}.yaml" for t in types))}
    adders: dict[str, list[str]] = {}
    paths = [f":(glob)events/**/*.{t}.yaml" for t in types]
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
                f"allowed_signers, but git "
                + (f"verified the commit as signed by {principal}" if principal else
                   "found it signed by no key listed there")
                + "; set `git config user.signingkey` (and gpg.format ssh) to that key")
        for event in events:
            claimed[event.id] = {digest: principal}


def verify_checkpoint(store: Store, commit: str, txn: Txn) -> None:
    """Refuse before the ref moves a commit that adds a checkpoint unless git verifies its
    signature by a key the policy in force lists: a clone adopts no other (so one nobody could
    use is not committed)."""
    if not any(path.startswith("checkpoints/") for path in txn.files):
        return
    allowed = checkpoint_signers(txn.fold.config)
    principal = commits.signers(store.cwd, [commit], allowed).get(commit) if allowed else None
    if principal is None:
        raise UsageError(
            "the checkpoint commit is not signed by a key in the ledger's allowed_signers, so no "
            "clone would use it; it was not committed (`git loopx signer add` lists a key)")


def refuse_unsignable_checkpoint(store: Store, config: dict[str, Any]) -> None:
    """Raise UsageError, before any rows are read, when a checkpoint made here could not be
    signed by a key the policy in ``config`` lists (no clone would adopt it)."""
    if checkpoint_signers(config) is None:
        raise UsageError(
            "no checkpoint made: fresh clones adopt only checkpoints signed by a key in the "
            "ledger's allowed_signers, and this ledger lists none; `git loopx signer add "
            "IDENTITY --key KEY.pub` lists one (a clone without a trusted checkpoint replays "
            "the events: slower, as correct)")
    if not any(gateway.out(store.cwd, "config", "--get", name, check=False)
               for name in ("user.signingkey", "gpg.ssh.defaultKeyCommand")):
        raise UsageError(
            "no checkpoint made: fresh clones adopt only checkpoints signed by a key in the "
            "ledger's allowed_signers, and no signing key is configured here; set `git config "
            "gpg.format ssh` and `git config user.signingkey <listed key>`")


def checkpoint_signers(config: dict[str, Any]) -> Optional[str]:
    """The allowed_signers text a checkpoint must be signed by, from the config in force; None
    when the policy signs nothing (then the list itself is not guarded: changing it needs no
    signed commit, so a key on it vouches for nothing, and no checkpoint is trusted)."""
    return config.get("allowed_signers") if authority.signing_on(config) else None


def policy_at(store: Store, tip: str) -> Optional[dict[str, Any]]:
    """The config in force at ``tip``, from its config events alone (few, and named by their
    file names), folded as a replay folds them, signatures included: what a fresh clone knows
    of the policy before it has folded anything else. None when only a replay can tell."""
    entries, events = _config_events(store, tip)
    others = len(entries) - len(events)
    # A replay refuses an event whose clock is far ahead of the events before it, which this
    # fold does not count: the n-th config event has between n and n + others before it. Where
    # the two bounds disagree, only the replay knows whether it was applied.
    if any(folding.clock_ahead(n, e.env.clock) is not None
           and folding.clock_ahead(n + others, e.env.clock) is None
           for n, e in enumerate(events)):
        return None
    fold = entities.Fold()
    fold.extra["signed"] = verify(store, tip, events)
    folding.replay(events, fold)
    return fold.config


def _config_events(store: Store, tip: str) -> tuple[list[Entry], list[Event]]:
    """Every event file of ``tip``, and its config events parsed, in replay order."""
    entries = [e for e in store.list_files(tip) if e.path.startswith("events/")]
    configs = [e for e in entries if e.path.endswith(".config.set.yaml")]
    events = []
    for entry, data in zip(configs, store.read_blobs([e.oid for e in configs])):
        try:
            events.append(layout.read_event(entry.path, data))
        except (CodecError, SchemaError):
            continue  # a replay lists it as a problem and applies nothing of it either
    events.sort(key=lambda e: e.sort_key())
    return entries, events


def unsigned_past(store: Store, tip: str) -> list[tuple[tuple[int, str], tuple[int, str]]]:
    """The stretches of ``tip``'s order where signing was off and a later config turned it on
    (the first key of each trusted on first use): ``(from, to)`` order keys, ``from`` the
    config that turned it off ((0, "") for the start) and ``to`` the one that turned it on.
    Empty when the policy in force at the tip signs nothing.

    Replay orders events by ``(clock, id)``, and a clock is the writer's word: an authority
    act that arrives dated in such a stretch counts unsigned, however long after the key was
    trusted it was written. So a clone that holds the key refuses it (:mod:`loopx.remote.
    incoming`): a config there that lists another key as ``human:alice`` would turn signing on
    first, and alice's own registration would then need that key's signature."""
    _, events = _config_events(store, tip)
    fold = entities.Fold()
    fold.extra["signed"] = verify(store, tip, events, types=("config.set",))
    stretches = []
    start, on = (0, ""), False
    for event in events:
        folding.apply(fold, event)
        now = authority.signing_on(fold.config)
        if now and not on:
            stretches.append((start, event.sort_key()))
        elif on and not now:
            start = event.sort_key()
        on = now
    return stretches if on else []


def signer_texts(events: list[Event]) -> list[str]:
    """The allowed_signers texts of a ledger that (at some point) turns signed answers on."""
    configs = [cast("ConfigSet", e.data) for e in events
               if e.type == "config.set" and e.data is not None]
    if not any(c.signed_answers not in (None, "off") for c in configs):
        return []
    return sorted({c.allowed_signers for c in configs if c.allowed_signers})


def _event_id(path: str) -> str:
    return path.rpartition("/")[2].partition(".")[0]
