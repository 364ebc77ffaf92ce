"""`git loopx doctor`: is the state branch whole and valid, and what is left lying around?

Checks that every object the state tip reaches is present, naming each event lost
(:mod:`loopx.features.salvage`) and each event deleted by a later commit, then ``git fsck
--connectivity-only`` from that tip and the incoming check on every file; that the branch has
a reflog; and reports leftover locks, quarantined remote tips and abandoned proposals.
:func:`repair` makes the branch whole again keeping every event still at hand;
:func:`rollback` moves it back to its newest healthy reflog entry (CAS), listing the events
that drops.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any, Optional

from loopx.errors import GitError, LoopxError
from loopx.features import incoming, salvage, spool
from loopx.features.sync import PROPOSAL_PREFIX
from loopx.ledger import book, cache, checkpoints
from loopx.ledger.book import Ledger
from loopx.state import views
from loopx.storage import gateway
from loopx.storage.store import STALE_REF_LOCK_S, Store


def examine(*, ledger: Ledger, now: Optional[datetime] = None) -> dict[str, Any]:
    """A health report of ``ledger``'s state branch; ``ok`` is False when something is wrong.
    Writers whose events are dated more than a few minutes after ``now`` are warned of."""
    store = ledger.store
    tip = store.ref_target(ledger.ref)  # what the ref holds, even a commit that is missing
    problems: list[str] = []
    damage = None
    if tip is None:
        problems.append(f"{ledger.ref} does not exist (run `git loopx init` or `git loopx sync`)")
    else:
        damage = salvage.scan(store, ledger.ref, tip)
        problems += damage.problems()
        if damage.whole:
            problems += tip_problems(store, tip)
    reflog = store.reflog(ledger.ref)
    warnings = [] if reflog or tip is None else [f"{ledger.ref} has no reflog: rollback is impossible"]
    queued = spool.pending(store.repo.loopx_dir)
    warnings += [f"{len(queued)} hook entries are queued (the next loopx command records "
                 "them)"] if queued else []
    warnings += [f"queued hook entry {path} was set aside: {spool.reason(path)}"
                 for path in spool.failed(store.repo.loopx_dir)]
    locks = _locks(store, ledger.ref)
    problems += [lock["problem"] for lock in locks if lock.get("problem")]
    ahead = views.clocks_ahead(ledger.live_fold(), now or ledger.time()) if (
        damage is not None and damage.whole) else []
    warnings += [views.clock_ahead_text(entry) for entry in ahead]
    return {
        "clocks_ahead": ahead,
        "ref": ledger.ref, "tip": tip, "ok": not problems, "problems": problems,
        "damage": damage.to_dict() if damage else None,
        "warnings": warnings, "reflog_entries": len(reflog), "locks": locks,
        "quarantines": [{"ref": ref, "tip": store.tip(ref),
                         "report": str(incoming.report_path(store, ref))}
                        for ref in incoming.quarantined(store)],
        "proposals": _refs(store, PROPOSAL_PREFIX),
    }


def verify(*, ledger: Ledger) -> dict[str, Any]:
    """Recompute the derived data from the events and compare: the cache's fold at the tip,
    and the checkpoints a clone would start from (the newest on the tip, and the one this
    cache came from). A cache that differs is rebuilt from the events; a checkpoint that
    differs is a problem (``git loopx validate`` refuses one in a pull request).
    """
    tip = ledger.tip()
    if tip is None:
        return {"ok": True, "checked": [], "problems": []}
    replayed = ledger.reader.rebuild(tip)
    checked, problems = ["cache"], []
    source = (ledger.projection.source() or "").removeprefix("checkpoint ")
    if cache.content(ledger.fold()) != cache.content(replayed):
        problems.append("the cache differed from a replay of the events; it was rebuilt")
        source = ""
    ledger.recache(replayed)  # either way: what is cached is now verified
    manifests = checkpoints.listed(ledger.store, tip)
    for manifest in [m for n, m in enumerate(manifests) if n == 0 or m.commit == source]:
        checked.append(f"checkpoint {manifest.commit}")
        problems += checkpoints.verify(ledger.fold_at(manifest.commit), ledger.store, tip,
                                       manifest)
    return {"ok": not problems, "checked": checked, "problems": problems}


def tip_problems(store: Store, tip: str) -> list[str]:
    """Why the commit ``tip`` is not a healthy state (missing objects, invalid files)."""
    proc = gateway.run(store.cwd, "fsck", "--connectivity-only", "--no-dangling", "--no-progress",
                   tip, check=False)
    if proc.returncode != 0:
        text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
        lines = [line for line in text.strip().splitlines()
                 if not line.startswith("warning:")]  # e.g. the gateway's fsync settings
        return [f"objects missing or broken: {line}" for line in lines[:10]] or ["git fsck failed"]
    verdict = incoming.check(store, theirs=tip, ours=None)
    return [str(f) for f in verdict.findings]


def repair(*, ledger: Ledger) -> dict[str, Any]:
    """Make the state branch whole again, keeping every event still at hand: missing objects
    fetched back from the remotes, else a new commit of every readable event file (deleted
    ones put back) on the newest whole commit; lists the events lost."""
    with ledger.store.lock():
        book.refuse_checked_out(ledger.store, ledger.ref)
        return salvage.repair(ledger.store, ledger.ref)


def rollback(*, ledger: Ledger) -> dict[str, Any]:
    """Move the state branch back to its newest healthy reflog entry; lists what that drops."""
    store = ledger.store
    with store.lock():
        book.refuse_checked_out(store, ledger.ref)
        tip = store.ref_target(ledger.ref)
        if tip is not None and not tip_problems(store, tip):
            return {"rolled_back": False, "tip": tip, "dropped": [],
                    "reason": f"{ledger.ref} is healthy; nothing to roll back"}
        good = _last_good(store, ledger.ref, tip)
        dropped = _dropped(store, good, tip)
        store.update_ref_if(ledger.ref, good, expected=tip, reason="loopx: doctor rollback")
    return {"rolled_back": True, "from": tip, "to": good, "dropped": dropped}


def _last_good(store: Store, ref: str, tip: Optional[str]) -> str:
    zero = "0" * store.hash_len
    for _, new, _ in store.reflog(ref):
        if new not in (tip, zero) and store.resolve(new) and not tip_problems(store, new):
            return new
    raise LoopxError(f"no healthy entry in the reflog of {ref}; nothing to roll back to "
                     "(`git loopx doctor --repair` keeps every event still readable)")


def _dropped(store: Store, good: str, tip: Optional[str]) -> list[str]:
    """Event files on ``tip`` that ``good`` lacks (best effort when tip's objects are gone)."""
    if tip is None:
        return []
    try:
        changes = store.added_files(good, tip)
    except GitError:
        return ["(unknown: the current tip's objects are missing)"]
    return [e.path for status, _, e in changes if status == "A" and e.path.startswith("events/")]


def _locks(store: Store, ref: str) -> list[dict[str, Any]]:
    found = []
    holder = store.lock_holder()
    if holder is not None:
        found.append({"lock": str(store.repo.loopx_dir / "write.lock"), "pid": holder,
                      "note": "held by a running loopx writer; released when it exits"})
    common = store.repo.common_dir
    for path in [common / f"{ref}.lock", common / "packed-refs.lock",
                 *(common / "refs" / "remotes").glob("*/loopx/*.lock")]:
        if path.exists():
            age = time.time() - path.stat().st_mtime
            entry: dict[str, Any] = {"lock": str(path), "age_seconds": round(age, 1)}
            if age > STALE_REF_LOCK_S:
                entry["problem"] = (f"stale git lock {path} ({age:.0f}s old); loopx removes it on "
                                    "its next write, or delete it")
            found.append(entry)
    return found


def _refs(store: Store, prefix: str) -> list[str]:
    out = gateway.out(store.cwd, "for-each-ref", "--format=%(refname)", prefix)
    return [line for line in out.splitlines() if line]
