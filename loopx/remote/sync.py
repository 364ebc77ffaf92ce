"""Sync the state branch with a remote: fetch, check, merge (fast-forward or union), push.

The protocol (docs/sync.md):

1. ``git fetch <remote> +<state ref>:refs/remotes/<remote>/<branch>``. The ``+`` only lets the
   remote-tracking ref follow a rewritten remote; the incoming check then refuses it.
2. :func:`loopx.incoming.check` judges what arrived; a refused tip is quarantined and local
   state is left as it was (:class:`~loopx.errors.Quarantined`). A tip with no history in
   common with ours is another ledger: it is merged only when the caller says so
   (``allow_unrelated``), unless one side holds nothing but its ``ledger.initialised``.
3. Under the clone lock: adopt, fast-forward, or write a two-parent commit whose tree is the
   union of both sides; the local ref moves only by compare-and-swap.
4. ``git push <remote> <tip>:<state ref>``, never forced. A rejection (someone pushed first)
   parks our tip on the hub under ``refs/loopx/inbox/<clone>``, a ref only this clone writes
   (so that push is never contended), and sends us back to 1 after a jittered backoff. Every
   fetch also brings the inbox refs, each passes the incoming check and is merged in, so
   whichever clone pushes loopx/state next carries the parked tips of all the others with
   it. A sync is done once the hub's loopx/state contains its tip, whoever put it there, or
   once its tip is parked and one attempt after the park lost the race again (the fold is
   then the next pusher's); only while parking fails does it keep trying, for at most
   :data:`PATIENCE_S` seconds.

:func:`publish` is the variant for claims: the write is made on a scratch ref on top of the
remote's state and becomes local state only once the remote accepted it, so the first claim
to reach the remote wins and a loser records nothing.
"""

from __future__ import annotations

import contextlib
import itertools
import random
import re
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

from loopx.errors import GitError, Quarantined, RefRaceError, SyncError, UnrelatedLedger, UsageError
from loopx.remote import inbox, incoming, pushing
from loopx.ledger import book, checkpoints
from loopx.ledger.book import Ledger
from loopx.model import ids, plural
from loopx.projection import answers, folding
from loopx.storage import gateway
from loopx.storage.gateway import Oid
from loopx.storage.store import STATE_REF, Store

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn

T = TypeVar("T")
DEFAULT_RETRIES: Optional[int] = None  # no bound by count: PATIENCE_S bounds a sync by time
PATIENCE_S = 60.0  # how long a sync or a claim keeps trying before it gives up
MERGE_ATTEMPTS = 5  # local merges a concurrent local write may send back before we stop
MERGE_AUTHOR = ("loopx sync", "sync@loopx.invalid")
CHECKPOINT_ACTOR = "agent:loopx-sync"  # the author of the checkpoint commits sync makes
FETCH_LOCK_WAIT_S = 10.0
FOLD_AT_MOST = 8  # inbox tips one attempt checks and merges (a random few: none starves)
BACKOFF_BASE_S = 0.1
BACKOFF_CAP_S = 3.0
PROPOSAL_PREFIX = "refs/loopx/proposals/"
# A push that failed because git could not pack what our tip reaches.
_UNSENDABLE = re.compile(r"unpacker error|pack-objects died|bad object|unable to read|"
                         r"did not receive expected object|missing")


@dataclass
class Report:
    """What a fetch, push or sync moved (the ``--format json`` output)."""
    remote: str
    ref: str
    local_before: Optional[str] = None
    local_after: Optional[str] = None
    remote_before: Optional[str] = None
    remote_after: Optional[str] = None
    merge: str = "none"  # none | adopted | up-to-date | fast-forward | union
    received: int = 0  # event files merged into local state
    sent: int = 0  # event files the remote got from us
    pushed: bool = False
    retries: int = 0
    # Our inbox ref on the remote when the sync returned with our tip there and not yet in
    # the remote's loopx/state (the next sync of any clone folds it); None otherwise.
    parked: Optional[str] = None
    quarantined: list[str] = field(default_factory=list)
    unknown_events: list[str] = field(default_factory=list)
    # The actor's events that the merge left not applied (a claim that lost a race):
    # filled in by the operation that knows the actor.
    notices: list[answers.Notice] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Pushed:
    ok: bool
    retryable: bool
    detail: str
    reached: bool = True  # False: git never got an answer from the remote about our ref
    moved: bool = True  # False: the remote already had our tip (a hook or a plain push sent it)


def default_remote(repo: gateway.Repo) -> str:
    """The current branch's upstream remote, else ``origin``."""
    branch = gateway.out(repo.cwd, "symbolic-ref", "-q", "--short", "HEAD", check=False)
    if branch:
        remote = gateway.out(repo.cwd, "config", f"branch.{branch}.remote", check=False)
        if remote and remote != ".":
            return remote
    return "origin"


def tracking_ref(ref: str, remote: str) -> str:
    """``refs/remotes/<remote>/loopx/state`` for ``refs/heads/loopx/state``."""
    return f"refs/remotes/{remote}/{ref.removeprefix('refs/heads/')}"


def accepted_ref(ref: str, remote: str) -> str:
    """Where we remember the last state of ``remote``'s ``ref`` that passed the incoming check."""
    return f"refs/loopx/accepted/{remote}/{ref.removeprefix('refs/heads/')}"


# --- public entry points ------------------------------------------------------------------------


def adopt(*, ledger: Ledger, remote: str = "origin") -> bool:
    """Point the local loopx/state at ``<remote>``'s when we have none (handoff by clone).

    A hostile remote must not be adopted blindly: its files pass the incoming check and every
    event file must parse and validate as its state is replayed into the cache (one reading
    of each file, not two); else it is quarantined, the cache cleared, and
    :class:`~loopx.errors.Quarantined` says how to go on. The first command after a clone
    therefore finds the cache ready.
    """
    store = ledger.store
    if store.tip(STATE_REF) is not None:
        return False
    theirs = store.tip(tracking_ref(STATE_REF, remote))
    if theirs is None:
        return False
    verdict = incoming.check(store, theirs=theirs, ours=None, parse=False)
    if verdict.ok:  # files that do not parse, and clocks far ahead (found by the replay)
        verdict.findings += [
            incoming.Finding(p.event, p.reason, "schema" if p.type == "file" else "clock")
            for p in ledger.prepare(theirs)
            if p.type == "file" or folding.clock_ahead(verdict.counted, p.clock)]
    if not verdict.ok:
        ledger.projection.clear()
        ref = incoming.quarantine(store, remote=remote, verdict=verdict)
        shown = "\n".join(f"  {f}" for f in verdict.findings[:20])
        raise Quarantined(
            f"{remote}'s loopx/state failed the incoming check and was not adopted "
            f"(quarantined as {ref}):\n{shown}\nreport: {incoming.report_path(store, ref)}\n"
            f"to start without it: git update-ref -d refs/remotes/{remote}/loopx/state")
    with contextlib.suppress(RefRaceError):
        store.update_ref_if(STATE_REF, theirs, expected=None,
                            reason=f"loopx: adopt {remote}/loopx/state")
    return True


def push_along(*, ledger: Ledger, remote: str) -> str:
    """Fast-forward ``remote``'s state branch to ours as code is pushed (pre-push); when the
    remote has other state changes, sync once. A line for the user ("" if nothing moved)."""
    ref, tip = ledger.ref, ledger.tip() or ""
    seen = ledger.store.tip(accepted_ref(ref, remote)) or ledger.store.tip(tracking_ref(ref, remote))
    pushing.refuse_unsendable(ledger.store, remote, seen, tip)
    proc = gateway.run(ledger.repo.cwd, "push", "--porcelain", "--no-verify", remote,
                       f"{tip}:{ref}", check=False)
    if proc.returncode == 0:  # the remote holds our tip: what sync next counts from, as its own
        _accept(ledger.store, Report(remote=remote, ref=ref), tip, last=seen)
        return "" if b"[up to date]" in proc.stdout else f"pushed {ref} to {remote}"
    if b"[rejected]" not in proc.stdout:  # not a lost race: unreachable remote, no permission...
        raise SyncError(pushing.unreachable(ledger.store, remote, proc.stderr, "push"))
    report = sync(ledger=ledger, remote=remote)
    if not report.pushed:
        return f"state not pushed to {remote} after a sync: run `git loopx sync`"
    return (f"{remote} had other state changes: synced ({report.merge}, received "
            f"{plural.counted(report.received, 'event')}, sent {report.sent})")


def fetch(*, ledger: Ledger, remote: Optional[str] = None, allow_unrelated: bool = False) -> Report:
    """Fetch the remote's state, check it and merge it into local state (no push)."""
    report = _start(ledger, remote)
    _fetch_merge(ledger, report, allow_unrelated)
    report.local_after = ledger.tip()
    return report


def push(*, ledger: Ledger, remote: Optional[str] = None) -> Report:
    """Push local state (fast-forward only); fails if the remote has events we lack."""
    report = _start(ledger, remote)
    ledger.require()
    tip = Oid(ledger.tip() or "")
    report.remote_before = report.remote_after = _remote_tip(ledger.store, report)
    outcome = _push(ledger.store, report, tip)
    if not outcome.reached:
        raise SyncError(outcome.detail)
    if not outcome.ok:
        raise SyncError(f"{report.remote} refused loopx/state: {outcome.detail}; "
                        "run `git loopx sync` to merge its events first")
    _record_push(ledger.store, report, tip, moved=outcome.moved)
    report.local_after = tip
    return report


def sync(*, ledger: Ledger, remote: Optional[str] = None,
         retries: Optional[int] = DEFAULT_RETRIES, allow_unrelated: bool = False,
         patience: float = PATIENCE_S) -> Report:
    """Fetch, check and merge, push, until our tip is on the remote.

    A rejected push parks our tip on our inbox ref on the hub, which any clone's next sync
    folds into loopx/state. We are done when loopx/state contains our tip (pushed by us or
    folded by anyone), or when our tip is parked and an attempt that fetched after the park
    lost to another clone's push (``report.parked`` then names the inbox): the fold is left
    to whoever comes next, so a sync costs at most two attempts however many clones race.
    Retries are bounded by ``patience`` seconds (and by ``retries``, when given) only while
    parking fails.
    A remote ledger with no history in common with ours is refused (:class:`UnrelatedLedger`)
    unless ``allow_unrelated``: merging two ledgers is a choice, never a side effect.
    """
    report = _start(ledger, remote)
    _checkpoint_if_due(ledger)
    deadline = time.monotonic() + patience
    parked = _push_ahead(ledger, report)
    if report.remote_after is not None and not parked:
        return report  # pushed: the remote had nothing we lack
    for attempt in itertools.count():
        started = time.monotonic()
        theirs = _fetch_merge(ledger, report, allow_unrelated, until=parked)
        _checkpoint_if_due(ledger)
        ours = ledger.tip()
        report.local_after = ours
        if ours is None or ours == theirs or (
                parked and theirs and ledger.store.is_ancestor(parked, theirs)):
            _tidy_inbox(ledger, report, parked)
            report.parked = None  # loopx/state holds our tip: nothing waits any more
            return report
        outcome = _push(ledger.store, report, Oid(ours))
        if outcome.ok:
            _record_push(ledger.store, report, Oid(ours), moved=outcome.moved)
            _tidy_inbox(ledger, report, parked)
            report.parked = None
            return report
        if "[remote rejected]" in outcome.detail:
            pushing.clear_remote_lock(ledger.store, report.remote, report.ref)
        if parked and outcome.retryable and "lock" not in outcome.detail:
            # Our tip was on the hub before this fetch and another clone pushed loopx/state
            # after it (or its ref moved under our push): done; the next pusher folds ours.
            return report
        _give_up_unless_retryable(report, outcome, attempt, retries, deadline)
        first, parked = parked is None, parked or _park(ledger, report, Oid(ours))
        # Parked, one more look after about an attempt's time finds our tip folded, or folds it.
        _back_off(report, attempt, deadline,
                  floor=time.monotonic() - started if parked and first else 0.0)
    raise AssertionError("unreachable")


def _checkpoint_if_due(ledger: Ledger) -> None:
    """Commit a signed checkpoint (none if we cannot sign) when the ledger grew by an interval
    since the newest (merged events count too), so a fresh clone of the remote starts there."""
    tip = ledger.tip()
    if tip is None:
        return
    newest = next(iter(checkpoints.listed(ledger.store, tip)), None)
    if checkpoints.due(ledger.fold().events, newest.events if newest else 0):
        with contextlib.suppress(UsageError):
            ledger.checkpoint(actor=CHECKPOINT_ACTOR)


def _push_ahead(ledger: Ledger, report: Report) -> Optional[Oid]:
    """When we are strictly ahead of the remote as last seen, push before fetching: one
    that succeeds proves the remote had nothing we lack (``report.remote_after`` is set);
    one that lost the race parks our tip at once, so the attempt that follows may be our
    last (see :func:`sync`). Returns the tip parked."""
    store, ours = ledger.store, ledger.tip()
    seen = store.tip(accepted_ref(report.ref, report.remote))
    if ours is None or seen is None or seen == ours or not store.is_ancestor(seen, ours):
        return None
    report.remote_before = report.remote_after = seen
    outcome = _push(store, report, Oid(ours))
    if not outcome.ok:
        parked = None
        if outcome.retryable and "[rejected]" in outcome.detail:
            parked = _park(ledger, report, Oid(ours))
        report.remote_before = report.remote_after = None
        return parked
    _record_push(store, report, Oid(ours), moved=outcome.moved)
    report.local_after = ours
    _tidy_inbox(ledger, report, None)
    return None


def publish(*, ledger: Ledger, build: Callable[[Txn], T], actor: str,
            remote: Optional[str] = None, retries: Optional[int] = DEFAULT_RETRIES,
            now: Optional[datetime] = None, patience: float = PATIENCE_S) -> tuple[T, Report]:
    """Write ``build``'s events so that they reach the remote before they count locally.

    Each attempt syncs, builds the commit on a scratch ref on top of the merged state and
    pushes it to the remote's loopx/state itself (fast-forward only; never parked on an
    inbox, so the remote's state ref decides: exactly one claim lands first). Only when the
    remote accepts it does local state take it. If someone else pushed first, the next
    attempt re-runs ``build`` against their events, so a claim refused by the projection
    (someone else holds the todo) raises there and nothing of ours is recorded anywhere.
    Retries are bounded by ``patience`` seconds (and by ``retries``, when given).
    """
    report = _start(ledger, remote)
    deadline = time.monotonic() + patience
    for attempt in itertools.count():
        _fetch_merge(ledger, report)
        ledger.require()
        with _proposal(ledger) as proposal:
            result, _ = proposal.write(build, actor=actor, now=now)
            tip = Oid(proposal.tip() or "")
            outcome = _push(ledger.store, report, tip)
            if outcome.ok:
                _record_push(ledger.store, report, tip, moved=outcome.moved)
                _merge(ledger, report, tip, previous=None, label="proposal")
                report.local_after = ledger.tip()
                return result, report
        if "[remote rejected]" in outcome.detail:
            pushing.clear_remote_lock(ledger.store, report.remote, report.ref)
        _give_up_unless_retryable(report, outcome, attempt, retries, deadline)
        _back_off(report, attempt, deadline)
    raise AssertionError("unreachable")


# --- steps ----------------------------------------------------------------------------------


def _start(ledger: Ledger, remote: Optional[str]) -> Report:
    remote = remote or default_remote(ledger.repo)
    remotes = gateway.out(ledger.repo.cwd, "remote").split()
    if remote not in remotes:
        known = ", ".join(remotes) or "none configured"
        raise SyncError(f"no remote named {remote!r} (remotes: {known}); "
                        "pass one, or `git remote add origin URL`")
    return Report(remote=remote, ref=ledger.ref, local_before=ledger.tip())


def _fetch_merge(ledger: Ledger, report: Report, allow_unrelated: bool = False,
                 until: Optional[Oid] = None) -> Optional[Oid]:
    """Fetch, check and merge the remote's loopx/state, then the tips parked on its inboxes
    (not needed when its loopx/state holds ``until``, our own parked tip: we are done);
    returns the remote's tip (None when it has no state yet)."""
    store = ledger.store
    tracking = tracking_ref(ledger.ref, report.remote)
    # The remote tip we accepted last time (not the tracking ref, which a plain `git fetch`
    # moves to anything): a new tip that does not contain it means a rewritten history.
    previous = store.tip(accepted_ref(report.ref, report.remote))
    theirs = _fetch(store, report, tracking)
    if report.remote_before is None:
        report.remote_before = theirs
    report.remote_after = theirs
    if theirs is not None:
        _merge(ledger, report, theirs, previous=previous, label=f"{report.remote}/loopx/state",
               allow_unrelated=allow_unrelated)
        if not (until and store.is_ancestor(until, theirs)):
            _merge_inboxes(ledger, report)
    return theirs


def _fetch(store: Store, report: Report, tracking: str) -> Optional[Oid]:
    deadline = time.monotonic() + store.max_wait(FETCH_LOCK_WAIT_S)
    while True:
        # The inbox refs come along (pruned when their owners delete them); see _merge_inboxes.
        proc = gateway.run(store.cwd, "fetch", "--no-tags", "--no-write-fetch-head",
                           "--no-recurse-submodules", "--quiet", "--prune", report.remote,
                           f"+{report.ref}:{tracking}",
                           f"+{inbox.PREFIX}*:{inbox.tracking(report.remote)}*", check=False)
        if proc.returncode == 0:
            return store.tip(tracking)
        err = proc.stderr.decode("utf-8", "replace")
        if "couldn't find remote ref" in err:
            return None  # the remote has no state branch yet: the first push creates it
        if ".lock" in err and time.monotonic() < deadline:
            # A fetch killed mid-update leaves git's lock on the tracking ref behind.
            store.clear_stale_ref_lock(tracking)
            time.sleep(0.05)
            continue
        raise SyncError(pushing.unreachable(store, report.remote, proc.stderr, "fetch"))


def _merge(ledger: Ledger, report: Report, theirs: Oid, *, previous: Optional[str],
           label: str, allow_unrelated: bool = False, accept: bool = True) -> None:
    """Check ``theirs`` and fold it into local state under the clone lock (CAS)."""
    store = ledger.store
    for _ in range(MERGE_ATTEMPTS):
        with store.lock():
            ours = ledger.tip()
            live = ledger.live_fold() if ours else None
            verdict = incoming.check(store, theirs=theirs, ours=ours, previous=previous,
                                     known_events=live.events if live else 0, ours_fold=live,
                                     progress=ledger.progress)
            report.unknown_events += [p for p in verdict.unknown if p not in report.unknown_events]
            if not verdict.ok:
                _refuse(store, report, verdict)
            if not allow_unrelated:
                _refuse_unrelated(store, report, verdict)
            try:
                store.journal()  # a union commit's objects: settled once the ref reaches them
                new, how = _merged(store, verdict, label)
                if new != ours:
                    book.refuse_checked_out(store, ledger.ref)
                    store.update_ref_if(ledger.ref, new, expected=ours, reason=f"loopx: sync {how} {label}")
                store.settle()
            except (RefRaceError, GitError):
                # Something outside loopx moved the ref, or a concurrent `git gc` briefly
                # failed an object write: nothing is published yet, so check and merge again.
                continue
            if verdict.parsed:  # parsed once: the fold reads them next
                ledger.reader.keep(verdict.parsed)
            if accept:  # an inbox tip is not the remote's loopx/state
                _accept(store, report, theirs)
            report.merge = how if report.merge in ("none", "up-to-date") else report.merge
            report.received += verdict.new_events if label != "proposal" else 0
            return
    raise SyncError("local loopx/state kept moving while merging; run the command again")


def _merged(store: Store, verdict: incoming.Verdict, label: str) -> tuple[Oid, str]:
    """The commit local state should move to, and how it was obtained."""
    ours, theirs = verdict.ours, verdict.theirs
    if ours is None:
        return theirs, "adopted"
    if verdict.base == theirs:
        return ours, "up-to-date"
    if verdict.base == ours:
        return theirs, "fast-forward"
    tree = store.write_tree(ours, verdict.new_files)
    commit = store.commit_tree(tree, [ours, theirs], f"loopx: merge {label}\n", author=MERGE_AUTHOR)
    return commit, "union"


def _refuse_unrelated(store: Store, report: Report, verdict: incoming.Verdict) -> None:
    """Two ledgers that share no history are two projects (or one started twice): their ids
    may collide (goal g-1 of one is not g-1 of the other), so they merge only on request.
    A side that holds nothing but its initialisation has nothing to collide with."""
    if verdict.ours is None or verdict.base is not None:
        return
    ours, theirs = (_first_events(store, tip) for tip in (verdict.ours, verdict.theirs))
    if not ours[1] or not theirs[1]:
        return
    raise UnrelatedLedger(
        f"{report.remote}'s loopx/state ({verdict.theirs[:12]}) shares no history with local "
        f"loopx/state ({verdict.ours[:12]}): it is another ledger (it began with "
        f"{theirs[0]}; ours with {ours[0]}). Nothing was merged or pushed. If they are one "
        f"project, merge them once with `git loopx sync {report.remote} --allow-unrelated`; "
        "otherwise use another remote")


def _first_events(store: Store, tip: str) -> tuple[str, bool]:
    """The oldest event file of ``tip`` (its name) and whether it holds any event other
    than ``ledger.initialised``."""
    out = gateway.out(store.cwd, "ls-tree", "-r", "--name-only", "-z", tip, "--", "events/")
    names = sorted(p.rsplit("/", 1)[-1] for p in out.split("\0") if p)
    first = names[0].removesuffix(".yaml") if names else "no events"
    return first, any(not n.endswith(".ledger.initialised.yaml") for n in names)


def _refuse(store: Store, report: Report, verdict: incoming.Verdict) -> None:
    ref = incoming.quarantine(store, remote=report.remote, verdict=verdict)
    report.quarantined.append(ref)
    raise Quarantined(verdict.refusal(report.remote, ref, incoming.report_path(store, ref)))


def _remote_tip(store: Store, report: Report) -> Optional[str]:
    return store.tip(tracking_ref(report.ref, report.remote))


def _push(store: Store, report: Report, tip: Oid) -> _Pushed:
    """Push ``tip`` to the remote's state ref, never forced; never one that deleted or
    changed event files the remote holds."""
    pushing.refuse_unsendable(store, report.remote, report.remote_after, tip)
    proc = gateway.run(store.cwd, "push", "--porcelain", "--no-verify", report.remote,
                   f"{tip}:{report.ref}", check=False)
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        flag, _, rest = line.partition("\t")
        if not rest.split("\t")[0].endswith(f":{report.ref}"):
            continue
        summary = rest.partition("\t")[2]
        if flag in (" ", "*", "="):
            return _Pushed(True, False, summary, moved=flag != "=")
        # [rejected] (fetch first / non-fast-forward): someone pushed first. A remote that
        # could not take its ref lock in time is busy with another push: also worth a retry.
        retry = "[rejected]" in summary or "lock" in summary or "failed to update" in summary
        return _Pushed(False, retry, not retry and pushing.refusal(proc.stderr, report.remote) or summary)
    return _Pushed(False, False, pushing.unreachable(store, report.remote, proc.stderr, "push"),
                   reached=False)


def _record_push(store: Store, report: Report, tip: Oid, *, moved: bool = True) -> None:
    """Count what the remote got from us (nothing when it already had ``tip``: not
    ``moved``) and move our remote-tracking ref along."""
    before = report.remote_after
    start = before or store.hash_tree(b"")
    if moved:  # (=, not +=: a tip parked first counted its events already, among these)
        report.sent = sum(1 for _, _, e in store.added_files(start, tip)
                          if e.path.startswith("events/"))
    report.pushed, report.remote_after = True, tip
    _accept(store, report, tip, last=before)  # the push fast-forwarded what we last saw
    tracking = tracking_ref(report.ref, report.remote)
    with contextlib.suppress(RefRaceError):
        if (seen := store.tip(tracking)) != tip:
            store.update_ref_if(tracking, tip, expected=seen, reason="loopx: pushed")


def _accept(store: Store, report: Report, tip: str, last: Optional[str] = None) -> None:
    """Remember ``tip`` as the newest remote state we checked and took in. ``last``, when
    given, is what we remember now (an ancestor of ``tip``): tried first, with no read."""
    ref = accepted_ref(report.ref, report.remote)
    if last is not None and last != tip:
        with contextlib.suppress(RefRaceError, GitError):
            store.update_ref_if(ref, tip, expected=last, reason="loopx: accepted")
            return
    old = store.tip(ref)
    if old != tip and (old is None or store.is_ancestor(old, tip)):
        with contextlib.suppress(RefRaceError):
            store.update_ref_if(ref, tip, expected=old, reason="loopx: accepted")


def _give_up_unless_retryable(report: Report, outcome: _Pushed, attempt: int,
                              retries: Optional[int], deadline: float) -> None:
    """Raise when the rejection is not a lost race, or when retrying is over (by time, or
    by count when the caller bounded it)."""
    if not outcome.reached:
        raise SyncError(outcome.detail)
    if not outcome.retryable:
        hint = ("; objects it needs may be missing here: `git loopx doctor` names them"
                if _UNSENDABLE.search(outcome.detail) else "")
        raise SyncError(f"{report.remote} refused loopx/state: {outcome.detail}{hint}")
    if (retries is not None and attempt >= retries) or time.monotonic() >= deadline:
        waiting = (f"; our tip waits on {report.remote} as {report.parked}, and the next sync "
                   "of any clone puts it into loopx/state" if report.parked else "")
        raise SyncError(
            f"gave up after {plural.counted(attempt, 'retry', 'retries')}: "
            f"{report.remote}'s loopx/state kept moving ({outcome.detail}){waiting}; "
            "local state is intact, run `git loopx sync` again")


def _back_off(report: Report, attempt: int, deadline: float, floor: float = 0.0) -> None:
    """Exponential backoff with full jitter, so that racing pushers spread out instead of
    colliding again in lockstep (with a ``floor``: between it and three times it); never past
    the deadline."""
    report.retries += 1
    pause = (random.uniform(floor, 3 * floor) if floor else
             random.uniform(0.02, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** attempt)))
    time.sleep(max(0.0, min(pause, deadline - time.monotonic())))


def _merge_inboxes(ledger: Ledger, report: Report) -> None:
    """Fold every tip parked on the remote's inboxes that local state lacks, each checked
    by the incoming check like the remote's loopx/state. A tip that fails it is quarantined
    and left out (it is one clone's, and must not stop the others); so is one from another
    ledger, or one already quarantined."""
    for tip, owner in inbox.pending(ledger.store, report.remote, ledger.tip())[:FOLD_AT_MOST]:
        with contextlib.suppress(Quarantined, UnrelatedLedger):
            _merge(ledger, report, tip, previous=None, label=f"{report.remote} inbox {owner}",
                   accept=False)


def _park(ledger: Ledger, report: Report, tip: Oid) -> Optional[Oid]:
    """Park ``tip`` on our inbox on the remote; the tip when the remote holds it there, else
    None (we keep racing on loopx/state alone)."""
    parked = inbox.park(ledger.repo, report.remote, tip)
    if parked is None:
        return None
    report.parked, report.pushed = parked, True
    if report.remote_after:
        report.sent = sum(1 for _, _, e in ledger.store.added_files(report.remote_after, tip)
                          if e.path.startswith("events/"))
    return tip


def _tidy_inbox(ledger: Ledger, report: Report, parked: Optional[Oid]) -> None:
    inbox.tidy(ledger.store, ledger.repo, report.remote, parked=parked, state=report.remote_after)


@contextlib.contextmanager
def _proposal(ledger: Ledger) -> Any:
    """A scratch ledger on ``refs/loopx/proposals/<id>`` starting at local state; removed after."""
    store, base = ledger.store, ledger.tip()
    ref = PROPOSAL_PREFIX + ids.new_event_id()
    store.update_ref_if(ref, base or "", expected=None, reason="loopx: propose")
    proposal = Ledger(ledger.repo, ref=ref, cache_of=ledger.ref,  # not a replay of its own
                      scrub=ledger.scrub)
    try:
        yield proposal
    finally:
        proposal.close()
        tip = store.tip(ref)
        if tip is not None:
            store.delete_ref_if(ref, expected=tip)
