"""The ledger: the one write path (validate -> append -> project) and the one read path.

>>> from loopx import Ledger
>>> ledger = Ledger.open(".")                      # doctest: +SKIP
>>> ledger.append("note.added", {"id": "n-1", "text": "hi"}, actor="agent:me")  # doctest: +SKIP
>>> ledger.snapshot()["frontier"]                  # doctest: +SKIP

The path of one write, from :meth:`Ledger.write` to the ref, is in docs/design.md.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

from loopx.version import __version__
from loopx.errors import (CheckedOut, GitError, LoopxError, NotFound, RefRaceError,
                          UsageError, refused_write)
from loopx.ledger import cache, progress, seen
from loopx.ledger.draft import Draft
from loopx.model import clock
from loopx.model.paths import file_path
from loopx.projection import entities, views
from loopx.storage import gateway
from loopx.storage.store import STATE_REF, Store

if TYPE_CHECKING:
    from loopx.ledger.replay import Reader
    from loopx.ledger.rows import Projection
    from loopx.ledger.txn import Txn
    from loopx.model.events import Event

T = TypeVar("T")
MAX_RACE_RETRIES = 5
# How many writes this process has published (moved a ref for): a command that wrote is never
# run a second time (see loopx.cli.root.main, on a cache that failed a read).
published = 0


class Ledger:
    """A repository's ledger on ``refs/heads/loopx/state`` (or another state ref)."""

    def __init__(self, repo: gateway.Repo, *, ref: str = STATE_REF,
                 cache_of: Optional[str] = None,
                 scrub: Optional[Callable[[str], str]] = None) -> None:
        self.repo = repo
        self.ref = ref
        # Applied to every free text of every event before anything is written (Txn.add):
        # secret redaction, loopx.redaction.redact.scrub, for every ledger opened through
        # loopx.ops.ledgers.open_ledger. A bare Ledger writes text as given.
        self.scrub = scrub
        self.store = Store(repo)
        # A scratch proposal reads the cache of the ref it forks from (``cache_of``) and never
        # writes it: its commits reach that ref, if at all, through a merge.
        self._cache_owner = cache_of is None or cache_of == ref
        self._db_path, self._live_path = cache.paths_for(repo.loopx_dir / "cache", cache_of or ref)
        self._projection: Optional[Projection] = None
        self._fold: Optional[tuple[str, entities.Fold]] = None
        self._reader: Optional[Reader] = None
        # Where long work (a rebuild, a fetch's check, validate) reports how far it got; the
        # CLI sets its report on a terminal (loopx.ledger.progress).
        self.progress = progress.Progress()
        # Lines about hook work done when the ledger was opened (commits whose post-commit
        # hook was killed, recorded now: loopx.ops.ledgers.open_ledger); the CLI shows them.
        self.notices: list[str] = []
        self._seen = False  # whether tip() has found a commit (a ledger is never deleted)
        # How many times this ledger folded every event of a tip (a cache rebuilt from the
        # events, not from a checkpoint or the rows of an earlier tip).
        self.replays = 0
        # The latest 256 commits this object wrote, each with its parent: moved_by_others.
        self._own: dict[str, Optional[str]] = {}
        # This clone's clock (the CLI sets it to --now): when it first saw each timed event.
        self.time: Callable[[], datetime] = clock.now
        self._first_seen_path = seen.path_for(self._live_path)

    @classmethod
    def open(cls, path: Path | str = ".", *, ref: str = STATE_REF,
             scrub: Optional[Callable[[str], str]] = None) -> Ledger:
        """Open the ledger of the repository at ``path`` (it need not exist yet).

        :func:`loopx.ops.ledgers.open_ledger` also redacts secrets in every text written
        (``scrub``) and, in a fresh clone, adopts ``origin``'s state branch after checking it;
        this constructor only opens.
        """
        return cls(gateway.discover(path), ref=ref, scrub=scrub)

    def close(self) -> None:
        self.store.close()
        if self._projection is not None:
            self._projection.close()

    @property
    def projection(self) -> Projection:
        """The cache's database (the rows of the fold at the tip it names)."""
        if self._projection is None:
            # Imported here: a warm read is answered by the live file and must not load SQLite
            # (start-up time; see loopx.ledger.cache).
            from loopx.ledger.rows import Projection

            self._projection = Projection(self._db_path)
        return self._projection

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reading ----------------------------------------------------------------------------

    def tip(self) -> Optional[str]:
        """The ref's commit; a proposal ref that does not exist yet starts at loopx/state's.

        Raises DamagedLedger when the ref exists but its commit is missing (pruned): that is
        not "no ledger", and nothing may be written on it.
        """
        tip = self.store.tip(self.ref)  # raises DamagedRef on a ref it cannot read
        if tip is None and self.ref != STATE_REF:
            tip = self.store.tip(STATE_REF)
        self._seen = self._seen or tip is not None
        return tip

    def moved_by_others(self, since: Optional[str], tip: Optional[str]) -> bool:
        """Whether ``tip`` holds a commit ``since`` lacks that this object did not write:
        the ref moved for a reason other than its own writes."""
        while tip != since and tip in self._own:
            tip = self._own[tip]
        return tip != since

    def exists(self) -> bool:
        # A ledger is never deleted: once seen, it exists; and its ref's file says so without
        # a git process (a ref whose commit is missing is found by the read or write that
        # follows: tip() raises DamagedLedger).
        return self._seen or bool(self.store.has_ref(self.ref)) or self.tip() is not None

    def require(self) -> None:
        if not self.exists():
            raise NotFound(self._missing())

    def _missing(self) -> str:
        """Why there is no ledger, and what to run: with a remote, the ledger may be there
        (a clone made before the remote had one), and `init` must not start a second one."""
        remotes = gateway.out(self.repo.cwd, "remote", check=False).split()
        if not remotes:
            return "this repository has no loopx ledger yet; run `git loopx init`"
        remote = "origin" if "origin" in remotes else remotes[0]
        return (f"no loopx ledger here yet; if {remote} has one, fetch it with `git loopx sync` "
                f"(`git loopx init` also looks at {remote} first, and starts one if it has none)")

    def fold(self) -> entities.Fold:
        """The projection of the current tip, its tables read from the cache on demand."""
        tip = self.tip()
        if tip is None:
            return entities.Fold()
        if self._fold is not None and self._fold[0] == tip:
            return self._fold[1]
        return self._cached(lambda: self._fold_of(tip))

    def _cached(self, read: Callable[[], T]) -> T:
        """``read()``; once more, on a rebuilt or in-memory cache, if the cache failed it."""
        try:
            return read()
        except Exception as exc:
            if not cache.is_cache_error(exc):
                raise
            self.cache_trouble(exc)
            return read()

    def cache_trouble(self, exc: BaseException) -> None:
        """The cache failed with ``exc``: drop it (damaged) or fold in memory (read-only,
        locked, no room), saying so on stderr; derived data is never required."""
        from loopx.ledger import rows  # sqlite3 is loaded already: it raised ``exc``

        self._fold = None
        if self._projection is not None:
            with contextlib.suppress(Exception):
                self._projection.close()
            self._projection = None
        print(rows.trouble(exc, self._db_path), file=sys.stderr, flush=True)
        if self._cache_owner:
            with contextlib.suppress(OSError):
                self._live_path.unlink(missing_ok=True)

    def _fold_of(self, tip: str) -> entities.Fold:
        self.projection.end()
        self._bring_up_to(tip)
        self.projection.begin(write=False)  # a snapshot: later writers do not change it
        fold = self.projection.fold()
        source = self.projection.source()
        if source:  # the rows came from a signed checkpoint, not from the events here
            fold.extra["source"] = source
        self._fold = (tip, fold)
        return fold

    def live_fold(self) -> entities.Fold:
        """The goals in play, what they reference, and everything ledger-wide: all a default
        `status` shows. Read-only (never validate a write against it). Comes from the cache's
        live file when it matches the tip, so its cost does not grow with history."""
        tip = self.tip()
        if tip is None:
            return entities.Fold()
        cached = cache.load_live(self._live_path)
        if cached is not None and cached[0] == tip:
            return cached[1]
        live = self._cached(lambda: (self.fold(), self.projection.live())[1])
        if self._cache_owner:
            cache.save_live(self._live_path, tip, live)
            if self.ref == STATE_REF:
                cache.save_hooks_state(cache.hooks_state_path(self.repo.loopx_dir), tip, live)
        return live

    def prepare(self, tip: str) -> list[entities.Problem]:
        """Bring the cache up to ``tip`` before the ref points there (adopting a clone's
        origin); returns the problems of the fold of ``tip``, so that the caller can refuse it.
        """
        def problems() -> list[entities.Problem]:
            self.projection.end()
            self._bring_up_to(tip)
            self.projection.begin(write=False)
            try:
                return list(self.projection.fold().problems)
            finally:
                self.projection.end()

        return self._cached(problems)

    def _bring_up_to(self, tip: str) -> None:
        """Make the cache's rows the fold of ``tip``: apply what was added since the tip they
        are of; in an empty cache, start from the newest usable checkpoint; replay everything
        when neither works."""
        projection = self.projection
        if projection.tip() == tip:
            return
        if projection.tip() is None and self._from_checkpoint(tip):
            return
        if self._advance_to(tip):
            return
        projection.replace(tip, self.replay(tip))
        self._save_live(tip)

    def replay(self, tip: str) -> entities.Fold:
        """The fold of ``tip`` from every one of its events (counted in :attr:`replays`)."""
        self.replays += 1
        return self.reader.rebuild(tip)

    def _advance_to(self, tip: str) -> bool:
        """Apply the event files added since the cache's tip, if that is all that changed."""
        projection = self.projection
        projection.begin(write=True)
        try:
            old = projection.tip()  # again, now that we are the one writer of the cache
            if old == tip:
                projection.end()
                return True
            advanced = self.reader.advance(old, projection.fold(), tip) if old else None
            if advanced is None:
                projection.end()
                return False
            projection.commit(tip, advanced)
        except BaseException:
            projection.end()
            raise
        self._save_live(tip)
        return True

    def _from_checkpoint(self, tip: str) -> bool:
        """Fill an empty cache from the newest checkpoint in ``tip``'s tree that a listed
        signer signed and that the events added since it extend (see
        :mod:`loopx.ledger.checkpoints`); one notice names those not used, and why."""
        from loopx.ledger import checkpoints, signatures  # only an empty cache looks for them

        listed = checkpoints.listed(self.store, tip)
        policy = signatures.policy_at(self.store, tip) if listed else {}
        allowed = signatures.checkpoint_signers(policy) if policy is not None else None
        skipped: list[tuple[str, str]] = []
        for manifest in listed:
            why = checkpoints.binding(self.store, manifest)
            principal = None
            if why is None and policy is None:
                why = "the signing policy has config events only a replay can judge"
            elif why is None:
                principal, why = checkpoints.signer(self.store, tip, manifest, allowed)
            if principal and not checkpoints.load(self.projection, self.store, tip, manifest,
                                                  signer=principal):
                why = "a chunk is missing or fails its digest"
            if not why and self._advance_to(tip):
                _skipped_notice(skipped, f"checkpoint {manifest.commit[:12]}")
                return True
            if why:
                skipped.append((manifest.commit, why))
            self.projection.clear()
        _skipped_notice(skipped, "the events")
        return False

    def recache(self, fold: entities.Fold) -> None:
        """Replace the cache with ``fold``, the fold of the tip replayed from its events."""
        tip = self.tip()
        if tip is not None:
            self._fold = None
            self.projection.replace(tip, fold)
            self._save_live(tip)

    def checkpoint(self, *, actor: str) -> Optional[str]:
        """Commit a checkpoint of the tip's fold on the state branch, in a commit signed with
        this clone's key (None when the tip has one already); returns the commit it is a
        checkpoint of. Fresh clones adopt only checkpoints signed by a key the ledger's
        allowed_signers lists, so without one nothing is committed: UsageError says what to
        set."""
        from loopx.ledger import checkpoints, signatures  # only this command makes them

        tip = self.tip()
        if tip is None or any(m.commit == tip for m in checkpoints.listed(self.store, tip)):
            return None
        signatures.refuse_unsignable_checkpoint(self.store, self.fold().config)
        scalars = self.projection.scalars()  # the cache at the tip, in fold()'s transaction

        def build(txn: Txn) -> None:  # the rows stream into blobs, a chunk at a time
            if txn.base != tip:  # the rows read below are the base's: they must be the tip's
                raise LoopxError("the state branch moved while the checkpoint was being made; "
                                 "run `git loopx checkpoint` again")
            for path, data in checkpoints.files(tip, scalars, self.projection.dump_rows()):
                txn.attach({path: data})

        self.write(build, actor=actor, sign=True,
                   message=f"loopx: checkpoint of {tip[:12]} ({scalars.get('events', 0)} events)")
        return tip

    def _save_live(self, tip: str, now: Optional[datetime] = None) -> None:
        if not self._cache_owner:
            return
        self.projection.begin(write=False)
        try:
            live = self.projection.live()
        finally:
            self.projection.end()
        cache.save_live(self._live_path, tip, live)
        # The moment this clone folds an event is when it first saw it (see loopx.ledger.seen).
        seen.observe(self._first_seen_path, views.timed_events(live), now or self.time(),
                     prune=True)
        if self.ref == STATE_REF:
            cache.save_hooks_state(cache.hooks_state_path(self.repo.loopx_dir), tip, live)

    def snapshot(self, now: Optional[datetime] = None) -> dict[str, Any]:
        fold, moment = self.fold(), now or self.time()
        return views.snapshot(fold, moment, self.first_seen(views.timed_events(fold), moment))

    def first_seen(self, events: Iterable[str], now: Optional[datetime] = None) -> dict[str, str]:
        """When this clone first saw each of ``events`` (now, for one it sees for the first
        time): what leases, wakes and idle sessions are judged by (loopx.ledger.seen)."""
        return seen.observe(self._first_seen_path, events, now or self.time())

    @property
    def reader(self) -> Reader:
        """The replay reader of this ledger's repository (parses each event file once)."""
        if self._reader is None:
            # Imported here, not at the top: a warm read is answered by the cache and never
            # parses an event file, so it must not pay for the event models (pydantic).
            from loopx.ledger.replay import Reader

            self._reader = Reader(self.store, self.progress)
        self._reader.progress = self.progress
        return self._reader

    def fold_at(self, commit: str, *, held: frozenset[str] = frozenset()) -> entities.Fold:
        """The projection of any commit of a state branch, read afresh (no cache): the one
        fold that status, diff and validate all use (``held``: see Reader.fold_at)."""
        return self.reader.fold_at(commit, held=held)

    def fold_merged(self, tips: list[str]) -> entities.Fold:
        """The projection of the union of several commits' events: what merging them gives."""
        return self.reader.fold_merged(tips)

    def read_events(self, commit: str, problems: list[entities.Problem]) -> list[Event]:
        """Every event file in ``commit``, parsed; files that fail land in ``problems``."""
        return self.reader.read_events(commit, problems)

    def find_event(self, base: Optional[str], event_id: str) -> Optional[Event]:
        """The event with this id on commit ``base`` (a retried append finds its earlier copy)."""
        return self.reader.find_event(base, event_id)

    # --- writing ----------------------------------------------------------------------------

    def write(self, build: Callable[[Txn], T], *, actor: str, message: Optional[str] = None,
              now: Optional[datetime] = None, sign: bool = False) -> tuple[T, Txn]:
        """Run ``build`` in a transaction and commit what it staged, as one commit.

        ``build`` may be run again (from the new tip) if another writer moved the ref.
        ``sign`` signs the commit (``commit-tree -S``); answers the config requires signed
        are signed anyway.
        """
        # Imported here: only writes need the event models (pydantic); see `reader`.
        from loopx.ledger.txn import Txn

        for attempt in range(MAX_RACE_RETRIES):
            with self.store.lock():
                expected = self.store.tip(self.ref)
                base = expected or self.tip()
                fold = self._cached(lambda: self._writable(base))
                txn = Txn(self, fold, base, actor, now or clock.now(), sign=sign,
                          expected=expected)
                self.store.journal()  # every object this attempt writes, for _settle
                try:
                    result = build(txn)
                    if not txn.events and not txn.files:
                        self.projection.end()
                        return result, txn
                    refuse_checked_out(self.store, self.ref)
                    new = self._commit(base, txn, message)
                except (RefRaceError, GitError) as exc:
                    # GitError too: a concurrent `git gc` can make object writes fail for a
                    # moment (loose objects packed away, object dirs pruned); nothing was
                    # published before the CAS, so building the commit again is safe.
                    self._end_quietly()
                    if attempt == MAX_RACE_RETRIES - 1 or refused_write(exc):
                        raise
                    continue
                except Exception as exc:
                    if not cache.is_cache_error(exc) or attempt == MAX_RACE_RETRIES - 1:
                        self._end_quietly()
                        raise
                    # The cache failed before anything was published: build again on a
                    # rebuilt or in-memory fold (never acknowledge a write on a doubtful one).
                    self.cache_trouble(exc)
                    continue
                except BaseException:
                    self._end_quietly()
                    raise
                self._keep(new, txn.fold, base, txn.now)
                self._own[new] = base
                if len(self._own) > 256:
                    del self._own[next(iter(self._own))]
                self.store.maintain()
            self._checkpoint_when_due(txn)  # outside the lock: it is a write of its own
            return result, txn
        raise AssertionError("unreachable")

    def _checkpoint_when_due(self, txn: Txn) -> None:
        """Commit a checkpoint when this write carried the ledger past the next point of the
        checkpoint schedule, so that whatever shares the branch (sync, the pre-push hook, a
        plain `git push`) gives fresh clones one to start from. One write in thousands pays
        for it; a checkpoint that cannot be made now (the branch moved) waits for the next
        point, or for a sync."""
        # Imported here: the schedule is all most writes need of the module.
        from loopx.ledger import checkpoints

        after = txn.fold.events
        if not self._cache_owner or not checkpoints.crossed(after - len(txn.events), after):
            return
        with contextlib.suppress(LoopxError):
            self.checkpoint(actor=checkpoints.ACTOR)

    def _writable(self, base: Optional[str]) -> entities.Fold:
        """The fold of ``base`` a write is checked against: read from the cache on demand, in
        a transaction that holds the cache for this writer until :meth:`_keep` commits it."""
        self._fold = None
        self.projection.end()
        if base is None:
            return entities.Fold()  # the ledger's first event
        self._bring_up_to(base)
        self.projection.begin(write=True)
        if self.projection.tip() != base:  # someone replaced the rows between the two steps
            self.projection.end()
            return self._writable(base)
        return self.projection.fold()

    def _keep(self, new: str, fold: entities.Fold, base: Optional[str],
              now: Optional[datetime] = None) -> None:
        """Store the fold of the new tip in the cache (the transaction :meth:`_writable`
        opened), or drop it for a proposal, whose cache is its parent's. The write is
        published already: a cache that fails now is dropped, never an error."""
        if not self._cache_owner:
            self._end_quietly()
            return
        try:
            if base is None:
                self.projection.replace(new, fold)
            else:
                self.projection.commit(new, fold)
            self._save_live(new, now)
        except Exception as exc:
            if not cache.is_cache_error(exc):
                raise
            self.cache_trouble(exc)

    def _end_quietly(self) -> None:
        """End the cache's transaction, if the cache can still say so."""
        if self._projection is not None:
            try:
                self._projection.end()
            except Exception as exc:
                if not cache.is_cache_error(exc):
                    raise

    def run(self, op: Callable[..., T], *args: Any, actor: str, now: Optional[datetime] = None,
            **kwargs: Any) -> T:
        """One operation as one commit: ``op(txn, *args, **kwargs)`` (see :mod:`loopx.ops`)."""
        result, _ = self.write(lambda txn: op(txn, *args, **kwargs), actor=actor, now=now)
        return result

    def append(self, type: str, data: dict[str, Any], *, actor: str, goal: Optional[str] = None,
               event_id: Optional[str] = None, now: Optional[datetime] = None) -> Event:
        """Validate and append one raw event; returns it (or the earlier copy of a retried id)."""
        event, _ = self.write(lambda txn: txn.add(Draft(type, data, goal, event_id)),
                              actor=actor, now=now)
        return event

    def _commit(self, base: Optional[str], txn: Txn, message: Optional[str]) -> str:
        # Imported here, with the transaction: a read on a warm cache writes no YAML.
        from loopx.model import codec

        blobs = self.store.write_blobs([codec.dump(e.to_dict()) for e in txn.events])
        paths = {file_path(e.id, e.type): oid for e, oid in zip(txn.events, blobs)}
        paths.update(txn.files)
        tree = self.store.write_tree(base, paths)
        subject = message or _summary(txn.events)
        if message and self.scrub is not None:  # a caller's message is free text too
            subject = self.scrub(message)
        try:
            commit = self.store.commit_tree(
                tree, [base] if base else [], subject + "\n", author=_identity(txn.actor),
                sign=txn.sign,
            )
        except GitError as exc:
            if not txn.sign:
                raise
            # What git said, not its argv cut at three words ("git commit-tree TREE -p").
            said = exc.stderr.strip().splitlines()[-1] if exc.stderr.strip() else (
                f"exit {exc.returncode}")
            raise UsageError(
                f"could not sign the commit (git: {said}); this ledger requires signed commits for "
                "authority acts (gate decisions, overrides, finishing gated work, changes to "
                "roles, signers or policy): set `git config gpg.format ssh` and "
                "`git config user.signingkey <key>`") from None
        if txn.sign:
            from loopx.ledger import signatures  # only a write that signs needs it (tempfile)

            signatures.verify_own(self.store, commit, txn)
            signatures.verify_checkpoint(self.store, commit, txn)
        self.store.update_ref_if(self.ref, commit, expected=txn.expected,
                                 reason=f"loopx: {subject}")
        global published
        published += 1
        self._settle()
        return commit

    def _settle(self) -> None:
        """An append is acknowledged only once its objects are known to be on disk: a
        `git gc --prune=now` beside us may have deleted them before the CAS made them
        reachable; the store rewrites those from the bytes it still holds."""
        self.store.settle()

    def init(self, *, actor: str, name: Optional[str] = None) -> Optional[Event]:
        """Create the ledger if it does not exist yet (idempotent); returns the new event."""
        if self.exists():
            return None

        def build(txn: Txn) -> Optional[Event]:
            if txn.base is not None:
                return None
            return txn.add(Draft("ledger.initialised", {"name": name, "loopx_version": __version__}))

        event, _ = self.write(build, actor=actor)
        return event


def _skipped_notice(skipped: list[tuple[str, str]], instead: str) -> None:
    """One line on stderr for the checkpoints a fresh cache did not start from (if any)."""
    if skipped:
        (commit, why), *older = skipped
        more = f" (nor {len(older)} older one{'s' if len(older) > 1 else ''})" if older else ""
        print(f"loopx: checkpoint {commit[:12]} not used{more}: {why}; folding from {instead}",
              file=sys.stderr, flush=True)


def refuse_checked_out(store: Store, ref: str) -> None:
    """Raise CheckedOut when a work tree has ``ref`` checked out (see Store.checked_out)."""
    where = store.checked_out(ref)
    if where:
        raise CheckedOut(
            f"{ref} is checked out in the work tree {where[0]}: moving it there would let an "
            "ordinary commit in that work tree delete events. Nothing was written. Detach it "
            f"(`git -C {where[0]} switch --detach`) or remove it (`git worktree remove "
            f"{where[0]}`), then run this again")


def _summary(events: list[Event]) -> str:
    first = events[0]
    label = f"{first.type} {getattr(first.data, 'id', '') or ''}".strip()
    return label if len(events) == 1 else f"{label} (+{len(events) - 1} more)"


def _identity(actor: str) -> tuple[str, str]:
    """Commit author for an actor: human:alice@x -> ("alice@x", "alice@x")."""
    kind, _, name = actor.partition(":")
    email = name if "@" in name else f"{name}@{kind}.loopx.invalid"
    return actor, email
