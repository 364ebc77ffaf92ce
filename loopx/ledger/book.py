"""The ledger: the one write path (validate -> append -> project) and the one read path.

>>> from loopx import Ledger
>>> ledger = Ledger.open(".")                      # doctest: +SKIP
>>> ledger.append("note.added", {"id": "n-1", "text": "hi"}, actor="agent:me")  # doctest: +SKIP
>>> ledger.snapshot()["frontier"]                  # doctest: +SKIP
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar, cast

from loopx import __version__
from loopx.ledger import cache
from loopx.model import clock
from loopx.storage import gateway as git
from loopx.model import ids
from loopx.state import authority, checks, entities, folding, views
from loopx.errors import (
    Ambiguous, CodecError, ConflictError, GitError, NotFound, Quarantined, RefRaceError,
    SchemaError, TransitionError, UsageError,
)
from loopx.storage.store import BLOB_MODE, STATE_REF, Store

if TYPE_CHECKING:
    from loopx.model.events import ConfigSet, Event

# loopx.model (pydantic) is imported where events are parsed or made, not at import time:
# a warm `status` reads the cached fold and never needs it.

T = TypeVar("T")
MAX_RACE_RETRIES = 5
PROGRESS_MIN_EVENTS = 2000  # rebuilds smaller than this finish before a bar would help
PARSE_CHUNK = 1000
_CLOCK_LINE = re.compile(rb"^clock: ([0-9]{1,18})$", re.M)  # as codec.dump writes it


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
    fold: entities.Fold
    base: Optional[str]
    actor: str
    now: datetime
    events: list[Event] = field(default_factory=list)
    duplicates: list[Event] = field(default_factory=list)
    sign: bool = False  # set when an event needs a signed commit (see _claim_signature)
    # The ref's own tip: None for a proposal ref that does not exist yet, whose first commit
    # forks from loopx/state (``base``) and creates the ref.
    expected: Optional[str] = None
    files: dict[str, git.Oid] = field(default_factory=dict)  # non-event path -> blob oid

    def attach(self, files: dict[str, bytes]) -> dict[str, git.Oid]:
        """Stage non-event files (session transcripts) for this commit; returns their blob oids.

        Only session transcript chunks are allowed, by the same rules sync and validate apply
        (:mod:`loopx.rules`): everything else on the state branch is an event. The blobs are
        written now (one process); they become reachable only if the commit is made.
        """
        from loopx.ledger import layout as rules

        for path, data in files.items():
            broken = rules.path_rule(path, BLOB_MODE) or rules.size_rule(path, len(data))
            if broken is not None or rules.is_event(path):
                why = broken.message if broken else "is an event path"
                raise SchemaError(f"{path}: not a path loopx stores beside events ({why})")
        oids = self.ledger.store.write_blobs(list(files.values()))
        staged = dict(zip(files, oids))
        self.files.update(staged)
        return staged

    def add(self, draft: Draft) -> Event:
        """Validate ``draft`` against the state so far and stage it; raises TransitionError."""
        from loopx.model.events import make_event

        event_id = draft.event_id or ids.new_event_id()
        event = make_event(
            type=draft.type, data=draft.data, event_id=event_id, at=clock.format_ts(self.now),
            clock=self.fold.max_clock + 1, actor=self.actor, goal=draft.goal,
        )
        if draft.event_id is not None:
            earlier = self.ledger._find_event(self.base, event_id, staged=self.events)
            if earlier is not None:
                return self._duplicate(earlier, event)
        self._claim_signature(event)
        reason = checks.check(self.fold, event)
        if reason is not None:
            raise TransitionError(reason)
        folding.apply_checked(self.fold, event)
        self.events.append(event)
        return event

    def _claim_signature(self, event: Event) -> None:
        """An event that must be signed (authority.needs_signature): sign this commit and,
        until git has verified the signature (before the ref moves, in Ledger._verify_signed),
        take the writer's word."""
        allowed = self.fold.config.get("allowed_signers")
        if not event.known or not allowed or not authority.needs_signature(self.fold, event):
            return
        self.sign = True
        signed = self.fold.extra.setdefault("signed", {})
        signed[event.id] = {authority.signers_digest(allowed): event.env.actor}

    def _duplicate(self, earlier: Event, event: Event) -> Event:
        from loopx.model.events import RETRY_VOLATILE

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
        self._fold: Optional[tuple[str, entities.Fold]] = None
        self._parsed: dict[tuple[str, str], Event] = {}
        # Called as progress(done, total) while a long rebuild parses event files; the CLI
        # sets it when stderr is a terminal.
        self.progress: Optional[Callable[[int, int], None]] = None
        self._seen = False  # whether tip() has found a commit (a ledger is never deleted)

    @classmethod
    def open(cls, path: Path | str = ".", *, ref: str = STATE_REF, adopt: bool = True) -> Ledger:
        """Open the repository at ``path``; adopts ``origin``'s state branch in a fresh clone."""
        ledger = cls(git.discover(path), ref=ref)
        if adopt and ref == STATE_REF:
            ledger.adopt_remote()
        elif adopt and ledger.store.tip(ref) is None:
            with cls(ledger.repo) as state:  # a new proposal forks from loopx/state: adopt it too
                state.adopt_remote()
        return ledger

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reading ----------------------------------------------------------------------------

    def tip(self) -> Optional[str]:
        """The ref's commit; a proposal ref that does not exist yet starts at loopx/state's."""
        tip = self.store.tip(self.ref) or (
            self.store.tip(STATE_REF) if self.ref != STATE_REF else None)
        self._seen = self._seen or tip is not None
        return tip

    def exists(self) -> bool:
        # A ledger is never deleted: once seen, it exists (saves a git process per write).
        return self._seen or self.tip() is not None

    def adopt_remote(self, remote: str = "origin") -> bool:
        """Point the local state branch at ``<remote>``'s when we have none (handoff by clone)."""
        if self.store.tip(self.ref) is not None:
            self._seen = True  # so exists() need not ask git again
            return False
        theirs = self.store.tip(f"refs/remotes/{remote}/loopx/state")
        if theirs is None:
            return False
        self._check_adoptable(remote, theirs)
        try:
            self.store.update_ref_if(self.ref, theirs, expected=None,
                                     reason=f"loopx: adopt {remote}/loopx/state")
        except RefRaceError:
            pass
        return True

    def _check_adoptable(self, remote: str, theirs: str) -> None:
        """A hostile origin must not be adopted blindly: run the incoming check first."""
        from loopx.features import incoming

        verdict = incoming.check(self.store, theirs=theirs, ours=None)
        if verdict.ok:
            return
        ref = incoming.quarantine(self.store, remote=remote, verdict=verdict)
        shown = "\n".join(f"  {f}" for f in verdict.findings[:20])
        raise Quarantined(
            f"{remote}'s loopx/state failed the incoming check and was not adopted "
            f"(quarantined as {ref}):\n{shown}\nreport: {incoming.report_path(self.store, ref)}\n"
            f"to start without it: git update-ref -d refs/remotes/{remote}/loopx/state"
        )

    def fold(self) -> entities.Fold:
        """The projection of the current tip (from the cache when possible)."""
        tip = self.tip()
        if tip is None:
            return entities.Fold()
        if self._fold is not None and self._fold[0] == tip:
            return self._fold[1]
        fold = self._load_fold(tip)
        self._fold = (tip, fold)
        return fold

    def live_fold(self) -> entities.Fold:
        """The goals in play, what they reference, and everything ledger-wide: all a default
        `status` shows. Read-only (never validate a write against it). Comes from the cache's
        live section when it matches the tip, so its cost does not grow with history."""
        tip = self.tip()
        if tip is None:
            return entities.Fold()
        if self._fold is not None and self._fold[0] == tip:
            return cache.split(self._fold[1])[0]
        cached = cache.load(self._cache_path(), live_only=True)
        if cached is not None and cached[0] == tip:
            return cached[1]
        return cache.split(self.fold())[0]

    def snapshot(self, now: Optional[datetime] = None) -> dict[str, Any]:
        return views.snapshot(self.fold(), now or clock.now())

    def _cache_path(self) -> Path:
        return cache.path_for(self.repo.loopx_dir / "cache", self.ref)

    def _load_fold(self, tip: str) -> entities.Fold:
        path = self._cache_path()
        cached = cache.load(path)
        if cached is not None and cached[0] == tip:
            return cached[1]
        fold = None
        if cached is not None:
            fold = self._advance(cached[0], cached[1], tip)
        if fold is None:
            fold = self._rebuild(tip)
        cache.save(path, tip, fold)
        return fold

    def _rebuild(self, tip: str) -> entities.Fold:
        """Replay every event file of ``tip`` (the same fold as ``replay(read_events(tip))``).

        Holds the raw files, sorted by ``(clock, id)``, and parses and applies them a chunk at
        a time, so the parsed events of a long ledger are never all in memory at once. The
        clock is read from the canonical ``clock: N`` line and checked after parsing; a file
        where that does not hold sends us down the plain path.
        """
        entries = [e for e in self.store.list_files(tip) if e.path.startswith("events/")]
        raw: list[tuple[int, str, int, str, Optional[bytes]]] = []
        for start in range(0, len(entries), PARSE_CHUNK):
            chunk = entries[start : start + PARSE_CHUNK]
            for n, (entry, data) in enumerate(zip(chunk, self.store.read_blobs([e.oid for e in chunk]))):
                match = _CLOCK_LINE.search(data) if data is not None else None
                clock_ = int(match.group(1)) if match else -1  # -1: parse it first, below
                raw.append((clock_, entry.path.rsplit("/", 1)[-1].split(".", 1)[0], start + n,
                            entry.path, data))
        # Signed answers are judged during replay, so their verdicts must be known first; the
        # config events that switch signing on are few and named by their file names.
        configs = [e for e in entries if e.path.endswith(".config.set.yaml")]
        signed = self.verify_signatures(tip, self._parse_entries(configs, []))
        del entries
        raw.sort(key=lambda item: item[:3])
        fold = self._apply_sorted(raw, signed)
        if fold is None:  # a clock line that lied: replay the plain way
            fold = self.fold_at(tip)
        return fold

    def _apply_sorted(self, raw: list[tuple[int, str, int, str, Optional[bytes]]],
                      signed: dict[str, dict[str, str]]) -> Optional[entities.Fold]:
        fold = entities.Fold()
        if signed:
            fold.extra["signed"] = signed
        problems: list[tuple[int, entities.Problem]] = []
        pending: list[Event] = []  # files without a canonical clock line, applied by replay
        for done, (clock_, event_id, index, path, data) in enumerate(raw, 1):
            try:
                event = self._parse_file(path, data)
            except (CodecError, SchemaError) as exc:
                problems.append((index, entities.Problem(path, "file", "", 0, str(exc))))
                continue
            if clock_ < 0:
                pending.append(event)
            elif event.sort_key() != (clock_, event_id):
                return None
            else:
                folding.apply(fold, event)
            if self.progress is not None and len(raw) >= PROGRESS_MIN_EVENTS and (
                    done % PARSE_CHUNK == 0 or done == len(raw)):
                self.progress(done, len(raw))
        if pending:  # hand-written files: fine when they sort after the rest, else start over
            if any(e.sort_key() <= fold.last_key for e in pending):
                return None
            folding.replay(pending, fold)
        fold.problems[:0] = [p for _, p in sorted(problems, key=lambda item: item[0])]
        return fold

    def fold_at(self, commit: str) -> entities.Fold:
        """The projection of any commit of a state branch, read afresh (no cache): the one
        fold that status, diff and validate all use."""
        return self.fold_merged([commit])

    def fold_merged(self, tips: list[str]) -> entities.Fold:
        """The projection of the union of several commits' events: what merging them gives."""
        file_problems: list[entities.Problem] = []
        found = {tip: self.read_events(tip, file_problems) for tip in tips}
        events = list({e.id: e for tip_events in found.values() for e in tip_events}.values())
        fold = entities.Fold()
        for tip in tips:  # a signature is found in the history of the tip that has the file
            for event_id, verdicts in self.verify_signatures(tip, events).items():
                fold.extra.setdefault("signed", {}).setdefault(event_id, {}).update(verdicts)
        folding.replay(events, fold)
        fold.problems[:0] = list({p.event: p for p in file_problems}.values())
        return fold

    def verify_signatures(self, commit: str, events: list[Event]) -> dict[str, dict[str, str]]:
        """event id -> {signers digest: principal} for events of SIGNED_TYPES in signed commits.

        Asks git only when some config in ``events`` turns signed answers on: one ``git log``
        to find the commits that added those files, one per allowed_signers text to verify.
        """
        texts = _signer_texts(events)
        if not texts or not any(e.type in SIGNED_TYPES for e in events):
            return {}
        from loopx.storage import commits  # only ledgers that sign answers need it (keeps tempfile off)

        # A signature vouches for the bytes its commit added: bind each verdict to the blob
        # the tip holds, so a file rewritten after signing is not covered by the old signature.
        current = {e.path: e.oid for e in self.store.list_files(commit)
                   if e.path.endswith(tuple(f".{t}.yaml" for t in SIGNED_TYPES))}
        adders: dict[str, list[str]] = {}
        paths = [f":(glob)events/**/*.{t}.yaml" for t in SIGNED_TYPES]
        for found in commits.walk(self.store.cwd, [commit], paths=paths):
            for change in found.added:
                if current.get(change.path) == change.oid:
                    adders.setdefault(_event_id(change.path), []).append(found.oid)
        every = sorted({oid for oids in adders.values() for oid in oids})
        result: dict[str, dict[str, str]] = {}
        for text in texts:
            verdicts = commits.signers(self.store.cwd, every, text)
            for event_id, oids in adders.items():
                principal = next((verdicts[o] for o in oids if verdicts.get(o)), None)
                if principal:
                    result.setdefault(event_id, {})[authority.signers_digest(text)] = principal
        return result

    def _advance(self, old: str, fold: entities.Fold, tip: str) -> Optional[entities.Fold]:
        """Apply only the files added since ``old``; None when a full rebuild is needed."""
        if self.store.resolve(old) is None or not self.store.is_ancestor(old, tip):
            return None
        changes = self.store.added_files(old, tip)
        if any(status != "A" for status, _, _ in changes):
            return None
        problems: list[entities.Problem] = []
        events = self._parse_entries(
            [entry for _, _, entry in changes if entry.path.startswith("events/")], problems)
        if problems or any(e.sort_key() <= fold.last_key for e in events):
            return None  # merged events that sort earlier: replay everything
        if _signer_texts(events) or (fold.config.get("allowed_signers") and any(
                e.type in SIGNED_TYPES for e in events)):
            return None  # answers to verify against the signers in force: replay everything
        return folding.replay(events, fold)

    def read_events(self, commit: str, problems: list[entities.Problem]) -> list[Event]:
        """Every event file in ``commit``, parsed; files that fail land in ``problems``."""
        entries = [e for e in self.store.list_files(commit) if e.path.startswith("events/")]
        return self._parse_entries(entries, problems)

    def _parse_entries(self, entries: list[Any], problems: list[entities.Problem]) -> list[Event]:
        report = self.progress if len(entries) >= PROGRESS_MIN_EVENTS else None
        for start in range(0, len(entries), PARSE_CHUNK):
            self._parse_chunk(entries[start : start + PARSE_CHUNK], problems)
            if report is not None:
                report(min(start + PARSE_CHUNK, len(entries)), len(entries))
        return [self._parsed[(e.path, e.oid)] for e in entries if (e.path, e.oid) in self._parsed]

    def _parse_chunk(self, entries: list[Any], problems: list[entities.Problem]) -> None:
        # Files are immutable and events frozen: one parse per (path, blob) for the life of
        # this Ledger, so commands that fold several commits (diff, validate) parse each once.
        todo = [e for e in entries if (e.path, e.oid) not in self._parsed]
        for entry, data in zip(todo, self.store.read_blobs([e.oid for e in todo])):
            try:
                self._parsed[(entry.path, entry.oid)] = self._parse_file(entry.path, data)
            except (CodecError, SchemaError) as exc:
                problems.append(entities.Problem(entry.path, "file", "", 0, str(exc)))

    @staticmethod
    def _parse_file(path: str, data: Optional[bytes]) -> Event:
        from loopx.ledger import layout as rules

        return rules.read_event(path, data)

    def _find_event(self, base: Optional[str], event_id: str, staged: list[Event]) -> Optional[Event]:
        for event in staged:
            if event.id == event_id:
                return event
        if base is None or not ids.ULID_RE.match(event_id):
            return None
        from loopx.model.paths import event_dir

        directory = event_dir(event_id)
        for name, (_, oid) in self.store.read_tree(f"{base}:{directory}").items():
            if name.startswith(event_id + "."):
                return self._parse_file(f"{directory}/{name}", self.store.read_blobs([oid])[0])
        return None

    # --- writing ----------------------------------------------------------------------------

    def write(self, build: Callable[[Txn], T], *, actor: str, message: Optional[str] = None,
              now: Optional[datetime] = None, sign: bool = False) -> tuple[T, Txn]:
        """Run ``build`` in a transaction and commit what it staged, as one commit.

        ``build`` may be run again (from the new tip) if another writer moved the ref.
        ``sign`` signs the commit (``commit-tree -S``); answers the config requires signed
        are signed anyway.
        """
        for attempt in range(MAX_RACE_RETRIES):
            with self.store.lock():
                expected = self.store.tip(self.ref)
                base = expected or self.tip()
                fold = self._load_fold(base) if base else entities.Fold()
                fold = cache_copy(fold)
                txn = Txn(self, fold, base, actor, now or clock.now(), sign=sign, expected=expected)
                result = build(txn)
                if not txn.events:
                    return result, txn
                try:
                    new = self._commit(base, txn, message)
                except (RefRaceError, GitError):
                    # GitError too: a concurrent `git gc` can make object writes fail for a
                    # moment (loose objects packed away, object dirs pruned); nothing was
                    # published before the CAS, so building the commit again is safe.
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
        from loopx.model import codec
        from loopx.model.events import event_path

        blobs = self.store.write_blobs([codec.dump(e.to_dict()) for e in txn.events])
        paths = {event_path(e): oid for e, oid in zip(txn.events, blobs)}
        paths.update(txn.files)
        tree = self.store.write_tree(base, paths)
        subject = message or _summary(txn.events)
        try:
            commit = self.store.commit_tree(
                tree, [base] if base else [], subject + "\n", author=_identity(txn.actor),
                sign=txn.sign,
            )
        except GitError as exc:
            if not txn.sign:
                raise
            raise UsageError(
                f"could not sign the commit ({exc}); this ledger requires signed commits for gate "
                "answers and for changes to roles or signing rules: "
                "set `git config gpg.format ssh` and `git config user.signingkey <key>`") from None
        if txn.sign:
            self._verify_signed(commit, txn)
        self.store.update_ref_if(self.ref, commit, expected=txn.expected,
                                 reason=f"loopx: {subject}")
        return commit

    def _verify_signed(self, commit: str, txn: Txn) -> None:
        """Refuse before the ref moves when git does not verify our own signature as the actor."""
        allowed = txn.fold.config.get("allowed_signers")
        claimed = [e for e in txn.events if e.id in txn.fold.extra.get("signed", {})]
        if not allowed or not claimed:
            return  # signed by choice (--sign), not because the config requires it
        from loopx.storage import commits

        principal = commits.signers(self.store.cwd, [commit], allowed).get(commit)
        if principal is None or not authority.signer_matches(principal, txn.actor):
            raise TransitionError(
                f"this change must be signed by {txn.actor}'s key in the ledger's allowed_signers, "
                f"but git verified the commit as {principal or 'not validly signed'}; set "
                "`git config user.signingkey` (and gpg.format ssh) to that key")
        for event in claimed:
            txn.fold.extra["signed"][event.id] = {authority.signers_digest(allowed): principal}

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


SIGNED_TYPES = ("gate.answered", "config.set")  # the events authority.needs_signature covers


def _event_id(path: str) -> str:
    return path.rpartition("/")[2].partition(".")[0]


def _signer_texts(events: list[Event]) -> list[str]:
    """The allowed_signers texts of a ledger that (at some point) turns signed answers on."""
    configs = [cast("ConfigSet", e.data) for e in events
               if e.type == "config.set" and e.data is not None]
    if not any(c.signed_answers not in (None, "off") for c in configs):
        return []
    return sorted({c.allowed_signers for c in configs if c.allowed_signers})


def cache_copy(fold: entities.Fold) -> entities.Fold:
    """A deep copy, so a failed transaction never leaks into the cached fold."""
    return cache.copy(fold)


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
