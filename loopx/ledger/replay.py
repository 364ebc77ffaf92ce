"""Replay: the events of a state commit, read and folded. The one read path every reader uses
(status through the cache, diff and validate through :meth:`Reader.fold_at`).

:class:`Reader` keeps one parse per ``(path, blob)`` for its life: files are immutable and
events frozen, so commands that fold several commits (diff, validate) parse each file once.
"""

from __future__ import annotations

import contextlib
import gc
import math
import re
from collections.abc import Iterator, Mapping
from typing import Callable, Optional

from loopx.errors import DamagedLedger
from loopx.ledger import layout, signatures
from loopx.model import ids
from loopx.model.events import Event
from loopx.model.paths import event_dirs
from loopx.projection import entities, folding
from loopx.storage.batches import Oversize
from loopx.storage.store import MAX_FILE_BYTES, Entry, Store
from loopx.storage.trees import BLOB_MODE

PROGRESS_MIN_EVENTS = 2000  # rebuilds smaller than this finish before a bar would help
PARSE_CHUNK = 1000
# Files parsed together, stage by stage (layout.read_events), then applied: few enough to
# stay in the processor's caches (a cold replay's CPU was lowest from 50 to 250 at a time).
STAGE = 100
_CLOCK_LINE = re.compile(rb"^clock: ([0-9]{1,18})$", re.M)  # as codec.dump writes it

Progress = Callable[[int, int], None]


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Python's cycle collector off for a bulk read: replay makes hundreds of thousands of
    objects that live on (the fold), and each full collection walks all of them again; with
    it on, a third of a cold replay was the collector. Nothing replay makes is a cycle, so
    reference counting frees what it drops; the collector runs again afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _new_fold(signed: signatures.Verdicts) -> entities.Fold:
    fold = entities.Fold()
    if signed:
        fold.extra["signed"] = signed
    return fold


def _file_id(entry: Entry) -> str:
    """The event id a file's name gives (what orders files of one clock)."""
    return entry.path.rsplit("/", 1)[-1].split(".", 1)[0]


def _once(entries: list[Entry], order: list[tuple[tuple[int, str], int]],
          problems: dict[int, entities.Problem]) -> list[tuple[tuple[int, str], int]]:
    """``order`` with each event id once (:func:`single`); the others' problems by index.
    Each key holds its file's event id (the name's, or the parsed event's, which is the
    name's: read_events refuses a file whose name does not match)."""
    names = [key[1] for key, _ in order]
    if len(set(names)) == len(names):
        return order  # (the usual ledger: one set, no problem)
    kept, found = single([(name, entries[index].path, entries[index].oid)
                          for name, (_, index) in zip(names, order)])
    problems.update((order[n][1], problem) for n, problem in found.items())
    return [order[n] for n in sorted(kept)]


def single(files: list[tuple[str, str, str]]) -> tuple[set[int], dict[int, entities.Problem]]:
    """Which of the ``(event id, path, blob)`` files, in replay order, to apply: each id once,
    and the problem of each file not applied. A second file of an id (by hand: the same event
    at both layouts' paths, or another event under its id) is never applied twice; when the
    files of an id differ, none is, so a copy can neither double an event nor stand in for
    it."""
    by_id: dict[str, list[int]] = {}
    for n, (event_id, _, _) in enumerate(files):
        by_id.setdefault(event_id, []).append(n)
    kept, problems = set(), {}
    for event_id, ns in by_id.items():
        same = len({files[n][2] for n in ns}) == 1
        if same:
            kept.add(ns[0])
        for n in ns[1:] if same else ns:
            path, other = files[n][1], files[ns[1] if n == ns[0] else ns[0]][1]
            problems[n] = entities.Problem(
                path, "file", "", 0, f"event {event_id} is also {other}: "
                + ("counted once" if same else "they differ, so none is applied"))
    return kept, problems


class Reader:
    """Reads and folds the event files of one repository's state commits."""

    def __init__(self, store: Store, progress: Optional[Progress] = None) -> None:
        self.store = store
        self.progress = progress
        self._parsed: dict[tuple[str, str], Event] = {}

    def rebuild(self, tip: str) -> entities.Fold:
        """Replay every event file of ``tip`` (the same fold as :meth:`fold_at`), parsing each
        file once and holding no more than its bytes until it is applied.

        Every file's order key is known before any is parsed: the clock from its canonical
        ``clock: N`` line and the id from its name (a file without such a line is parsed
        first, for its key). So files are parsed and applied in ``(clock, id)`` order however
        they are listed: one out of listing order (a clone whose clock lagged) costs only its
        place in one sort, never a second parse of the history. A clock line that lied (the
        parsed key is another) sends us down the plain path.
        """
        with paused_gc():
            return self._rebuild(tip)

    def _rebuild(self, tip: str) -> entities.Fold:
        entries = [e for e in self.store.list_files(tip) if e.path.startswith("events/")]
        # Signed answers are judged during replay, so their verdicts must be known first; the
        # config events that switch signing on are few and named by their file names.
        configs = [e for e in entries if e.path.endswith(".config.set.yaml")]
        signed = signatures.verify(self.store, tip, self._parse_entries(configs, []))
        try:
            held, keys, problems = self._read_keyed(entries)
        except DamagedLedger:  # a file's blob missing or not a blob: the plain path names it
            return self.fold_at(tip)
        order = _once(entries, sorted(
            (key, index) for index, key in enumerate(keys) if key is not None), problems)
        fold = self._apply_in_order(entries, held, order, problems, signed)
        if fold is None:  # a clock line that lied: replay the plain way
            fold = self.fold_at(tip)
        return fold

    def _read_keyed(self, entries: list[Entry]) -> tuple[
            list[bytes | Event | None], list[Optional[tuple[int, str]]],
            dict[int, entities.Problem]]:
        """Each file's bytes (or its event, when it had to be parsed for its key), its order
        key (None for a file that does not parse) and the problems of those that do not.

        The blobs not parsed already are read in bulk (:meth:`ObjectReader.read_bulk`: git
        answers into a file, not a pipe); raises DamagedLedger when one is missing."""
        held: list[bytes | Event | None] = []
        keys: list[Optional[tuple[int, str]]] = []
        problems: dict[int, entities.Problem] = {}
        search = _CLOCK_LINE.search
        known: list[Optional[Event]] = ([self._parsed.get((e.path, e.oid)) for e in entries]
                                         if self._parsed else [None] * len(entries))
        blobs = iter(self.store.reader.read_bulk(
            [e.oid for e, event in zip(entries, known) if event is None],
            max_size=MAX_FILE_BYTES))
        for n, (entry, event) in enumerate(zip(entries, known)):
            data = next(blobs) if event is None else None
            match = search(data) if isinstance(data, bytes) else None
            if match is not None and isinstance(data, bytes):
                held.append(data)
                keys.append((int(match.group(1)), _file_id(entry)))
                continue
            found = event or self._parse(entry, data)
            if isinstance(found, entities.Problem):
                problems[n] = found
                held.append(None)
                keys.append(None)
            else:
                held.append(found)
                keys.append(found.sort_key())
        return held, keys, problems

    def _parse(self, entry: Entry, data: Optional[bytes | Oversize]) -> Event | entities.Problem:
        return self._parse_many([(entry, data)])[0]

    @staticmethod
    def _parse_many(files: list[tuple[Entry, Optional[bytes | Oversize]]]) -> list[
            Event | entities.Problem]:
        """Each file's event, or the problem that names why it is none (stage by stage:
        :func:`layout.read_events`). A file that is not a plain one (a symlink or an
        executable committed by hand) is a problem under the rule sync and validate apply."""
        found = layout.read_events([(entry.path, data) for entry, data in files])
        return [entities.Problem(entry.path, "file", "", 0, broken.message)
                if entry.mode != BLOB_MODE and (broken := layout.mode_rule(entry.mode))
                else item if isinstance(item, Event)
                else entities.Problem(entry.path, "file", "", 0,
                                      str(item).removeprefix(f"{entry.path}: "))
                for (entry, _), item in zip(files, found)]

    def _apply_in_order(self, entries: list[Entry], held: list[bytes | Event | None],
                        order: list[tuple[tuple[int, str], int]],
                        problems: dict[int, entities.Problem],
                        signed: signatures.Verdicts) -> Optional[entities.Fold]:
        """The fold of the files in ``order`` (their keys from :meth:`_read_keyed`), parsed a
        stage of files at a time (:data:`STAGE`), applied and then let go; None when a parsed
        key is not the planned one. Progress after each chunk of files."""
        fold = _new_fold(signed)
        report = self.progress if len(entries) >= PROGRESS_MIN_EVENTS else None
        total = len(order) + len(problems)
        fold_in = folding.apply  # (looked up once, not once per file)
        step = math.gcd(STAGE, PARSE_CHUNK)  # (each stage ends where a chunk may)
        for start in range(0, len(order), step):
            stage = order[start : start + step]
            items = [held[index] for _, index in stage]
            for _, index in stage:
                held[index] = None
            parsed = iter(self._parse_many([(entries[index], item) for (_, index), item
                                            in zip(stage, items) if isinstance(item, bytes)]))
            for (key, index), item in zip(stage, items):
                found = next(parsed) if isinstance(item, bytes) else item
                if isinstance(found, entities.Problem):  # (a clock line in a broken file)
                    problems[index] = found
                elif found is None or found.sort_key() != key:
                    return None
                else:
                    fold_in(fold, found)
            done = start + len(stage)
            if report is not None and done % PARSE_CHUNK == 0:
                report(done, total)
        if report is not None and total % PARSE_CHUNK:
            report(total, total)
        fold.problems[:0] = [problems[index] for index in sorted(problems)]
        return fold

    def keep(self, parsed: Mapping[tuple[str, str], Event]) -> None:
        """Take events another check already parsed, by ``(path, blob)`` (sync's incoming
        check: the files a fetch brings), so that reading them again parses none twice. Keyed
        by the blob's id, so an entry stands only for the very bytes it was parsed from."""
        self._parsed.update(parsed)

    def advance(self, old: str, fold: entities.Fold, tip: str) -> Optional[entities.Fold]:
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
        if signatures.signer_texts(events) or (fold.config.get("allowed_signers") and any(
                e.type in signatures.SIGNED_TYPES for e in events)):
            return None  # answers to verify against the signers in force: replay everything
        return folding.replay(events, fold)

    def fold_at(self, commit: str, *, held: frozenset[str] = frozenset()) -> entities.Fold:
        """The projection of any commit of a state branch, read afresh (no cache): the one
        fold that status, diff and validate all use. The config events named in ``held``
        change no roles, signers or signing policy (review judges a range by its base's)."""
        return self.fold_merged([commit], held=held)

    def fold_merged(self, tips: list[str], *,
                    held: frozenset[str] = frozenset()) -> entities.Fold:
        """The projection of the union of several commits' events: what merging them gives."""
        with paused_gc():
            return self._fold_merged(tips, held)

    def _fold_merged(self, tips: list[str], held: frozenset[str]) -> entities.Fold:
        file_problems: list[entities.Problem] = []
        by_path: dict[str, Event] = {}
        event_oid: dict[str, str] = {}
        for tip in tips:
            entries = [e for e in self.store.list_files(tip) if e.path.startswith("events/")]
            self._parse_entries(entries, file_problems)
            for entry in entries:
                if (entry.path, entry.oid) in self._parsed:
                    by_path[entry.path] = self._parsed[(entry.path, entry.oid)]
                    event_oid[entry.path] = entry.oid
        located = sorted(by_path.items(), key=lambda item: (item[1].sort_key(), item[0]))
        kept, copies = single([(event.id, path, event_oid[path]) for path, event in located])
        events = [located[n][1] for n in sorted(kept)]
        file_problems += [copies[n] for n in sorted(copies)]
        fold = entities.Fold()
        if held:
            fold.extra["held"] = held
        for tip in tips:  # a signature is found in the history of the tip that has the file
            for event_id, verdicts in signatures.verify(self.store, tip, events).items():
                fold.extra.setdefault("signed", {}).setdefault(event_id, {}).update(verdicts)
        folding.replay(events, fold)
        fold.problems[:0] = list({p.event: p for p in file_problems}.values())
        return fold

    def read_events(self, commit: str, problems: list[entities.Problem]) -> list[Event]:
        """Every event file in ``commit``, parsed; files that fail land in ``problems``."""
        entries = [e for e in self.store.list_files(commit) if e.path.startswith("events/")]
        return self._parse_entries(entries, problems)

    def find_event(self, base: Optional[str], event_id: str) -> Optional[Event]:
        """The event with this id on ``base``, if any (its date directory holds it)."""
        if base is None or not ids.is_event_id(event_id):
            return None
        for directory in event_dirs(event_id):  # the layout written now, then the older one
            for name, (mode, oid) in self.store.read_tree(f"{base}:{directory}").items():
                if name.startswith(event_id + ".") and mode == BLOB_MODE:
                    return layout.read_event(f"{directory}/{name}",
                                             self.store.read_blobs([oid])[0])
        return None

    def _parse_entries(self, entries: list[Entry],
                       problems: list[entities.Problem]) -> list[Event]:
        report = self.progress if len(entries) >= PROGRESS_MIN_EVENTS else None
        for start in range(0, len(entries), PARSE_CHUNK):
            self._parse_chunk(entries[start : start + PARSE_CHUNK], problems)
            if report is not None:
                report(min(start + PARSE_CHUNK, len(entries)), len(entries))
        return [self._parsed[(e.path, e.oid)] for e in entries if (e.path, e.oid) in self._parsed]

    def _parse_chunk(self, entries: list[Entry], problems: list[entities.Problem]) -> None:
        todo = [e for e in entries if (e.path, e.oid) not in self._parsed]
        blobs = self.store.read_blobs([e.oid for e in todo])
        for entry, found in zip(todo, self._parse_many(list(zip(todo, blobs)))):
            if isinstance(found, entities.Problem):
                problems.append(found)
            else:
                self._parsed[(entry.path, entry.oid)] = found
