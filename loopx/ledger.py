"""The ledger: the one write path (validate -> append -> project) and the one read path.

>>> from loopx import Ledger
>>> ledger = Ledger.open(".")                      # doctest: +SKIP
>>> ledger.append("note.added", {"id": "n-1", "text": "hi"}, actor="agent:me")  # doctest: +SKIP
>>> ledger.snapshot()["frontier"]                  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

from loopx import __version__, cache, clock, codec, git, ids, projection
from loopx.errors import (
    Ambiguous, CodecError, ConflictError, NotFound, RefRaceError, SchemaError, TransitionError,
)
from loopx.model import (
    PATH_RE, RETRY_VOLATILE, SESSION_FILE_RE, Event, event_dir, event_path, make_event, parse_event,
)
from loopx.store import STATE_REF, Store

T = TypeVar("T")
MAX_RACE_RETRIES = 5


@dataclass
class Draft:
    """An event to append, before the ledger gives it a clock and a time."""

    type: str
    data: dict[str, Any]
    goal: Optional[str] = None
    event_id: Optional[str] = None


@dataclass
class Txn:
    """One commit being built: events are validated against the fold as they are added."""

    ledger: "Ledger"
    fold: projection.Fold
    base: Optional[str]
    actor: str
    now: datetime
    events: list[Event] = field(default_factory=list)
    duplicates: list[Event] = field(default_factory=list)
    files: dict[str, git.Oid] = field(default_factory=dict)  # non-event path -> blob oid

    def attach(self, files: dict[str, bytes]) -> dict[str, git.Oid]:
        """Stage non-event files (session transcripts) for this commit; returns their blob oids.

        Only paths matching ``model.SESSION_FILE_RE`` are allowed: everything else on the state
        branch is an event. The blobs are written now (one process); they become reachable
        only if the commit is made.
        """
        bad = [p for p in files if not SESSION_FILE_RE.match(p)]
        if bad:
            raise SchemaError(f"{bad[0]}: not a path loopx stores beside events")
        oids = self.ledger.store.write_blobs(list(files.values()))
        staged = dict(zip(files, oids))
        self.files.update(staged)
        return staged

    def add(self, draft: Draft) -> Event:
        """Validate ``draft`` against the state so far and stage it; raises TransitionError."""
        event_id = draft.event_id or ids.new_event_id()
        event = make_event(
            type=draft.type, data=draft.data, event_id=event_id, at=clock.format_ts(self.now),
            clock=self.fold.max_clock + 1, actor=self.actor, goal=draft.goal,
        )
        if draft.event_id is not None:
            earlier = self.ledger._find_event(self.base, event_id, staged=self.events)
            if earlier is not None:
                return self._duplicate(earlier, event)
        reason = projection.check(self.fold, event)
        if reason is not None:
            raise TransitionError(reason)
        self.fold.apply(event)
        self.events.append(event)
        return event

    def _duplicate(self, earlier: Event, event: Event) -> Event:
        def meaning(e: Event) -> tuple[Any, ...]:
            doc = e.to_dict()
            volatile = RETRY_VOLATILE.get(e.type, frozenset())
            data = {k: v for k, v in doc["data"].items() if k not in volatile}
            return (doc["type"], doc["actor"], doc.get("goal"), data)

        if meaning(earlier) != meaning(event):
            raise ConflictError(
                f"event {event.id} already exists with different content; "
                "use a new id (or none) for a different event"
            )
        self.duplicates.append(earlier)
        return earlier


class Ledger:
    """A repository's ledger on ``refs/heads/loopx/state`` (or another state ref)."""

    def __init__(self, repo: git.Repo, *, ref: str = STATE_REF) -> None:
        self.repo = repo
        self.ref = ref
        self.store = Store(repo)
        self._fold: Optional[tuple[str, projection.Fold]] = None
        self._seen = False  # whether the state ref has been seen to exist

    @classmethod
    def open(cls, path: Path | str = ".", *, ref: str = STATE_REF, adopt: bool = True) -> Ledger:
        """Open the repository at ``path``; adopts ``origin``'s state branch in a fresh clone."""
        ledger = cls(git.discover(path), ref=ref)
        if adopt and ref == STATE_REF:
            ledger.adopt_remote()
        return ledger

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reading ----------------------------------------------------------------------------

    def tip(self) -> Optional[str]:
        tip = self.store.tip(self.ref)
        self._seen = self._seen or tip is not None
        return tip

    def exists(self) -> bool:
        # A ledger is never deleted: once seen, it exists (saves a git process per write).
        return self._seen or self.tip() is not None

    def adopt_remote(self, remote: str = "origin") -> bool:
        """Point the local state branch at ``<remote>``'s when we have none (handoff by clone)."""
        if self.tip() is not None:
            return False
        theirs = self.store.tip(f"refs/remotes/{remote}/loopx/state")
        if theirs is None:
            return False
        try:
            self.store.update_ref_if(self.ref, theirs, expected=None,
                                     reason=f"loopx: adopt {remote}/loopx/state")
        except RefRaceError:
            pass
        return True

    def fold(self) -> projection.Fold:
        """The projection of the current tip (from the cache when possible)."""
        tip = self.tip()
        if tip is None:
            return projection.Fold()
        if self._fold is not None and self._fold[0] == tip:
            return self._fold[1]
        fold = self._load_fold(tip)
        self._fold = (tip, fold)
        return fold

    def snapshot(self, now: Optional[datetime] = None) -> dict[str, Any]:
        return projection.snapshot(self.fold(), now or clock.now())

    def _cache_path(self) -> Path:
        return cache.path_for(self.repo.loopx_dir / "cache", self.ref)

    def _load_fold(self, tip: str) -> projection.Fold:
        path = self._cache_path()
        cached = cache.load(path)
        if cached is not None and cached[0] == tip:
            return cached[1]
        fold = None
        if cached is not None:
            fold = self._advance(cached[0], cached[1], tip)
        if fold is None:
            file_problems: list[projection.Problem] = []
            fold = projection.replay(self.read_events(tip, file_problems))
            fold.problems[:0] = file_problems
        cache.save(path, tip, fold)
        return fold

    def _advance(self, old: str, fold: projection.Fold, tip: str) -> Optional[projection.Fold]:
        """Apply only the files added since ``old``; None when a full rebuild is needed."""
        if self.store.resolve(old) is None or not self.store.is_ancestor(old, tip):
            return None
        changes = self.store.added_files(old, tip)
        if any(status != "A" for status, _, _ in changes):
            return None
        problems: list[projection.Problem] = []
        events = self._parse_entries(
            [entry for _, _, entry in changes if entry.path.startswith("events/")], problems)
        if problems or any(e.sort_key() <= fold.last_key for e in events):
            return None  # merged events that sort earlier: replay everything
        return projection.replay(events, fold)

    def read_events(self, commit: str, problems: list[projection.Problem]) -> list[Event]:
        """Every event file in ``commit``, parsed; files that fail land in ``problems``."""
        entries = [e for e in self.store.list_files(commit) if e.path.startswith("events/")]
        return self._parse_entries(entries, problems)

    def _parse_entries(self, entries: list[Any], problems: list[projection.Problem]) -> list[Event]:
        blobs = self.store.read_blobs([e.oid for e in entries])
        events = []
        for entry, data in zip(entries, blobs):
            try:
                events.append(self._parse_file(entry.path, data))
            except (CodecError, SchemaError) as exc:
                problems.append(projection.Problem(entry.path, "file", "", 0, str(exc)))
        return events

    @staticmethod
    def _parse_file(path: str, data: Optional[bytes]) -> Event:
        match = PATH_RE.match(path)
        if match is None:
            raise SchemaError(f"{path}: not an event path (events/YYYY/MM/DD/<ulid>.<type>.yaml)")
        if data is None:
            raise SchemaError(f"{path}: blob is missing from the object database")
        event = parse_event(codec.load(data, path), path)
        if event_path(event) != path:
            raise SchemaError(f"{path}: file name does not match its id, type or date")
        return event

    def _find_event(self, base: Optional[str], event_id: str, staged: list[Event]) -> Optional[Event]:
        for event in staged:
            if event.id == event_id:
                return event
        if base is None or not ids.ULID_RE.match(event_id):
            return None
        directory = event_dir(event_id)
        for name, (_, oid) in self.store.read_tree(f"{base}:{directory}").items():
            if name.startswith(event_id + "."):
                return self._parse_file(f"{directory}/{name}", self.store.read_blobs([oid])[0])
        return None

    # --- writing ----------------------------------------------------------------------------

    def write(self, build: Callable[[Txn], T], *, actor: str, message: Optional[str] = None,
              now: Optional[datetime] = None) -> tuple[T, Txn]:
        """Run ``build`` in a transaction and commit what it staged, as one commit.

        ``build`` may be run again (from the new tip) if another writer moved the ref.
        """
        for attempt in range(MAX_RACE_RETRIES):
            with self.store.lock():
                base = self.tip()
                fold = self._load_fold(base) if base else projection.Fold()
                fold = cache_copy(fold)
                txn = Txn(self, fold, base, actor, now or clock.now())
                result = build(txn)
                if not txn.events:
                    return result, txn
                try:
                    new = self._commit(base, txn, message)
                except RefRaceError:
                    if attempt == MAX_RACE_RETRIES - 1:
                        raise
                    continue
                cache.save(self._cache_path(), new, txn.fold)
                self._fold = (new, txn.fold)
                return result, txn
        raise AssertionError("unreachable")

    def append(self, type: str, data: dict[str, Any], *, actor: str, goal: Optional[str] = None,
               event_id: Optional[str] = None, now: Optional[datetime] = None) -> Event:
        """Validate and append one event; returns it (or the earlier copy of a retried id)."""
        event, _ = self.write(lambda txn: txn.add(Draft(type, data, goal, event_id)),
                              actor=actor, now=now)
        return event

    def _commit(self, base: Optional[str], txn: Txn, message: Optional[str]) -> str:
        blobs = self.store.write_blobs([codec.dump(e.to_dict()) for e in txn.events])
        paths = {event_path(e): oid for e, oid in zip(txn.events, blobs)}
        paths.update(txn.files)
        tree = self.store.write_tree(base, paths)
        subject = message or _summary(txn.events)
        commit = self.store.commit_tree(
            tree, [base] if base else [], subject + "\n", author=_identity(txn.actor),
        )
        self.store.update_ref_if(self.ref, commit, expected=base, reason=f"loopx: {subject}")
        return commit

    def init(self, *, actor: str, name: Optional[str] = None) -> Optional[Event]:
        """Create the ledger if it does not exist yet (idempotent); returns the new event."""
        self.adopt_remote()
        if self.exists():
            return None

        def build(txn: Txn) -> Optional[Event]:
            if txn.base is not None:
                return None
            return txn.add(Draft("ledger.initialised", {"name": name, "loopx_version": __version__}))

        event, _ = self.write(build, actor=actor)
        return event

    def require(self) -> None:
        if not self.exists():
            raise NotFound("this repository has no loopx ledger yet; run `git loopx init`")


def cache_copy(fold: projection.Fold) -> projection.Fold:
    """A deep copy, so a failed transaction never leaks into the cached fold."""
    return cache._fold_from_data(cache._fold_to_data(fold))


def _summary(events: list[Event]) -> str:
    first = events[0]
    label = f"{first.type} {getattr(first.data, 'id', '') or ''}".strip()
    return label if len(events) == 1 else f"{label} (+{len(events) - 1} more)"


def _identity(actor: str) -> tuple[str, str]:
    """Commit author for an actor: human:alice@x -> ("alice@x", "alice@x")."""
    kind, _, name = actor.partition(":")
    email = name if "@" in name else f"{name}@{kind}.loopx.invalid"
    return actor, email


def resolve_id(table: dict[str, Any], prefix: str, kind: str) -> str:
    """An entity id from its unique prefix, like git's short hashes."""
    if prefix in table:
        return prefix
    matches = [key for key in table if key.startswith(prefix)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise NotFound(f"no {kind} matches {prefix!r} (see `git loopx {kind} list`)")
    raise Ambiguous(f"{prefix!r} matches several {kind}s: {', '.join(sorted(matches)[:8])}")
