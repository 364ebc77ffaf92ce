"""`git loopx doctor`: is the state branch whole and valid, and what is left lying around?

Checks that every object the state tip reaches is present, naming each event lost
(:mod:`loopx.upkeep.salvage`) and each event deleted by a later commit, then ``git fsck
--connectivity-only`` from that tip and the incoming check on every file; that the branch has
a reflog; and reports leftover locks, quarantined remote tips and abandoned proposals.
:func:`repair` makes the branch whole again keeping every event still at hand;
:func:`rollback` moves it back to its newest healthy reflog entry (CAS), listing the events
that drops.
"""

from __future__ import annotations

import contextlib
import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

from loopx.errors import DamagedRef, GitError, LoopxError
from loopx.remote import incoming
from loopx.upkeep import salvage
from loopx.hooks import spool
from loopx.remote.sync import PROPOSAL_PREFIX
from loopx.ledger import book, cache, checkpoints
from loopx.ledger.book import Ledger
from loopx.projection import views
from loopx.storage import gateway
from loopx.storage.store import STALE_REF_LOCK_S, STATE_REF, Store


def examine(*, ledger: Ledger, now: Optional[datetime] = None) -> dict[str, Any]:
    """A health report of ``ledger``'s state branch; ``ok`` is False when something is wrong.
    Writers whose events are dated more than a few minutes after ``now`` are warned of."""
    store = ledger.store
    broken = ref_damage(store, ledger.ref)
    # What the ref holds, even a commit that is missing; nothing when git cannot read it.
    tip = None if broken else store.ref_target(ledger.ref)
    problems: list[str] = []
    damage = None
    if broken is not None:
        problems.append(f"{str(broken).partition('; nothing was changed')[0]}; "
                        f"{_restore_offer(store, ledger.ref)}")
    elif tip is None:
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
    warnings += cache_warnings(ledger)
    folder = store.repo.loopx_dir
    warnings += [f"{folder} is not a folder (a file or a broken link): every write is refused "
                 "until it is moved aside"] if (folder.is_symlink() or folder.exists()) and (
                     not folder.is_dir()) else []
    if tip is not None and ledger.ref == STATE_REF:
        doubt = cache.hooks_state_trouble(cache.hooks_state_path(store.repo.loopx_dir), tip)
        warnings += [f"{cache.hooks_state_path(store.repo.loopx_dir)} is {doubt}: post-commit "
                     "asks loopx instead (slower), and loopx rewrites it"] if doubt else []
    locks = _locks(store, ledger.ref)
    problems += [lock["problem"] for lock in locks if lock.get("problem")]
    ahead = views.clocks_ahead(ledger.live_fold(), now or ledger.time()) if (
        damage is not None and damage.whole) else []
    warnings += [views.clock_ahead_text(entry) for entry in ahead]
    return {
        "clocks_ahead": ahead,
        "ref": ledger.ref, "tip": tip, "ok": not problems, "problems": problems,
        "ref_damage": broken.kind if broken else None,
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
    source = (cache.started_from(ledger.projection.source()) or ("", ""))[0]
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


def cache_warnings(ledger: Ledger) -> list[str]:
    """What is wrong with the cache, if anything: damaged rows or file, or a file that cannot
    be written now (commands then rebuild it, or fold in memory). Changes nothing."""
    from loopx.ledger import rows  # only doctor looks at the file itself

    path = ledger.projection.path
    if not path.exists():
        return []
    projection = rows.Projection(path)
    try:
        projection.begin(write=True)
        projection.tip()
        doubtful = projection.doubtful()
        projection.end()
        if doubtful:
            return [f"the cache {path} has {doubtful} row(s) that do not match their seal: "
                    "commands rebuild it; `git loopx doctor --verify` rebuilds it now"]
        if projection.in_memory:
            return [f"the cache {path} cannot be opened: commands fold in memory (slower)"]
    except Exception as exc:
        if not cache.is_cache_error(exc):
            raise
        return [f"the cache {path} is not usable ({exc}): commands rebuild it or fold in "
                "memory; `git loopx doctor --verify` rebuilds it now"]
    finally:
        projection.close()
    return []


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
        restored = restore_ref(ledger.store, ledger.ref)
        done = salvage.repair(ledger.store, ledger.ref)
        if restored:
            done["ref_restored"] = restored
        return done


def ref_damage(store: Store, ref: str) -> Optional[DamagedRef]:
    """The damage of ``ref`` itself (unreadable, wrong type, gone from its reflog), if any; a
    ref whose commit is missing is not this but lost objects (:mod:`salvage`)."""
    try:
        store.tip(ref)
    except DamagedRef as exc:
        return None if exc.kind == "missing" else exc
    return None


def _restore_offer(store: Store, ref: str) -> str:
    try:
        good = _last_good(store, ref, None)
    except LoopxError as exc:
        return str(exc)
    return f"`git loopx doctor --repair` puts it back at {good[:12]}, its last good tip in the reflog"


def restore_ref(store: Store, ref: str) -> Optional[dict[str, Any]]:
    """Put a damaged ``ref`` back at its last good tip from the reflog (under the clone lock):
    the damaged ref file, or its line of packed-refs, is moved aside into
    ``<loopx dir>/damaged/`` first, never just deleted. None when the ref is not damaged."""
    broken = ref_damage(store, ref)
    if broken is None:
        return None
    good = _last_good(store, ref, None)
    kept = _set_aside(store, ref)
    store.update_ref_if(ref, good, expected=None, reason="loopx: doctor restored from reflog")
    still = ref_damage(store, ref)
    if still is not None:
        raise LoopxError(f"{ref} could not be restored: {still}")
    return {"damage": str(broken).partition("; nothing was changed")[0], "to": good,
            "kept": kept}


def _set_aside(store: Store, ref: str) -> list[str]:
    """Move ``ref``'s loose file and its packed-refs lines into the loopx dir's damaged/."""
    common, aside = store.repo.common_dir, store.repo.loopx_dir / "damaged"
    aside.mkdir(parents=True, exist_ok=True)
    stamp = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    kept = []
    loose = common / ref
    if loose.is_file():
        target = aside / f"{ref.replace('/', '_')}.{stamp}"
        os.replace(loose, target)
        kept.append(str(target))
    packed = common / "packed-refs"
    with contextlib.suppress(FileNotFoundError):
        lines = packed.read_bytes().splitlines(keepends=True)
        keep: list[bytes] = []
        drop: list[bytes] = []
        after_ours = False
        for line in lines:
            ours = line.rstrip(b"\r\n").endswith(b" " + ref.encode())
            peeled_of_ours = line.startswith(b"^") and after_ours
            (drop if ours or peeled_of_ours else keep).append(line)
            after_ours = ours or peeled_of_ours
        if drop:
            target = aside / f"packed-refs.{stamp}"
            target.write_bytes(b"".join(drop))
            kept.append(str(target))
            _rewrite_packed(packed, b"".join(keep))
    return kept


def _rewrite_packed(packed: Path, content: bytes) -> None:
    """Replace packed-refs the way git does: write ``packed-refs.lock`` (created exclusively,
    so a git writing it meanwhile makes us stop), then rename it over."""
    lock = packed.with_name("packed-refs.lock")
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise LoopxError(f"{lock} exists: another git is writing packed-refs; try again") from None
    try:
        os.write(fd, content)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(lock, packed)


def rollback(*, ledger: Ledger) -> dict[str, Any]:
    """Move the state branch back to its newest healthy reflog entry; lists what that drops."""
    store = ledger.store
    with store.lock():
        book.refuse_checked_out(store, ledger.ref)
        restored = restore_ref(store, ledger.ref)
        if restored:
            return {"rolled_back": True, "from": None, "to": restored["to"], "dropped": [],
                    "ref_restored": restored}
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
