"""Replay: the events of a state commit, read and folded. The one read path every reader uses
(status through the cache, diff and validate through :meth:`Reader.fold_at`).

:class:`Reader` keeps one parse per ``(path, blob)`` for its life: files are immutable and
events frozen, so commands that fold several commits (diff, validate) parse each file once.
"""

from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Iterator, Sequence
from typing import Callable, Optional

from loopx.errors import CodecError, SchemaError
from loopx.ledger import layout, signatures
from loopx.model import ids
from loopx.model.events import Event
from loopx.model.paths import event_dirs
from loopx.projection import entities, folding
from loopx.storage.store import Entry, Store
from loopx.storage.trees import BLOB_MODE

PROGRESS_MIN_EVENTS = 2000  # rebuilds smaller than this finish before a bar would help
PARSE_CHUNK = 1000
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


class Reader:
    """Reads and folds the event files of one repository's state commits."""

    def __init__(self, store: Store, progress: Optional[Progress] = None) -> None:
        self.store = store
        self.progress = progress
        self._parsed: dict[tuple[str, str], Event] = {}

    def rebuild(self, tip: str) -> entities.Fold:
        """Replay every event file of ``tip`` (the same fold as :meth:`fold_at`), a chunk at a
        time, so that neither the files nor their parsed events of a long ledger are ever all
        in memory at once.

        Files are listed by date and id, which is the fold's ``(clock, id)`` order whenever
        writers' clocks kept pace with time (one writer, or clones that sync): so they are
        first read, parsed and applied in that order, checking each key is above the last.
        At the first that is not, the rest is done in two passes: each remaining file's clock
        is read from its canonical ``clock: N`` line, then the files are read again in
        ``(clock, id)`` order, parsed and applied (a clock line that lied sends us down the
        plain path).
        """
        with paused_gc():
            return self._rebuild(tip)

    def _rebuild(self, tip: str) -> entities.Fold:
        entries = [e for e in self.store.list_files(tip) if e.path.startswith("events/")]
        # Signed answers are judged during replay, so their verdicts must be known first; the
        # config events that switch signing on are few and named by their file names.
        configs = [e for e in entries if e.path.endswith(".config.set.yaml")]
        signed = signatures.verify(self.store, tip, self._parse_entries(configs, []))
        order: list[tuple[int, str, int]] = []  # (clock, id, index) of the files read so far
        fold = self._apply_in_file_order(entries, signed, order)
        if fold is not None:
            return fold
        for start in range(len(order), len(entries), PARSE_CHUNK):
            chunk = entries[start : start + PARSE_CHUNK]
            blobs = self.store.read_blobs([e.oid for e in chunk])
            for n, (entry, data) in enumerate(zip(chunk, blobs)):
                match = _CLOCK_LINE.search(data) if isinstance(data, bytes) else None
                clock_ = int(match.group(1)) if match else -1  # -1: parse it first, below
                order.append((clock_, _file_id(entry), start + n))
        order.sort()
        fold = self._apply_sorted(entries, order, signed)
        if fold is None:  # a clock line that lied: replay the plain way
            fold = self.fold_at(tip)
        return fold

    def _apply_in_file_order(self, entries: list[Entry], signed: signatures.Verdicts,
                             order: list[tuple[int, str, int]]) -> Optional[entities.Fold]:
        """The fold, when the files in listing order are in ``(clock, id)`` order; else None,
        with ``order`` holding the key of each file read (-1: it did not parse)."""
        fold = _new_fold(signed)
        problems: list[entities.Problem] = []
        last: Optional[tuple[int, str]] = None
        for index, found in self._read_in_order(entries, range(len(entries))):
            if isinstance(found, entities.Problem):
                problems.append(found)
                order.append((-1, _file_id(entries[index]), index))
                continue
            key = found.sort_key()
            order.append((key[0], key[1], index))
            if last is not None and key <= last:
                return None
            last = key
            folding.apply(fold, found)
        fold.problems[:0] = problems
        return fold

    def _apply_sorted(self, entries: list[Entry], order: list[tuple[int, str, int]],
                      signed: signatures.Verdicts) -> Optional[entities.Fold]:
        fold = _new_fold(signed)
        problems: list[tuple[int, entities.Problem]] = []
        pending: list[Event] = []  # files without a canonical clock line, applied by replay
        read = self._read_in_order(entries, [index for _, _, index in order])
        for (clock_, event_id, _), (index, found) in zip(order, read):
            if isinstance(found, entities.Problem):
                problems.append((index, found))
            elif clock_ < 0:
                pending.append(found)
            elif found.sort_key() != (clock_, event_id):
                return None
            else:
                folding.apply(fold, found)
        if pending:  # hand-written files: fine when they sort after the rest, else start over
            if any(e.sort_key() <= fold.last_key for e in pending):
                return None
            folding.replay(pending, fold)
        fold.problems[:0] = [p for _, p in sorted(problems, key=lambda item: item[0])]
        return fold

    def _read_in_order(self, entries: list[Entry], indexes: Sequence[int]
                       ) -> Iterator[tuple[int, Event | entities.Problem]]:
        """The files ``entries[i]`` for each of ``indexes``, in that order, read a chunk at a
        time and parsed (a Problem for one that does not parse); progress after each chunk."""
        for start in range(0, len(indexes), PARSE_CHUNK):
            chunk = indexes[start : start + PARSE_CHUNK]
            blobs = self.store.read_blobs([entries[index].oid for index in chunk])
            for index, data in zip(chunk, blobs):
                path = entries[index].path
                try:
                    yield index, layout.read_event(path, data)
                except (CodecError, SchemaError) as exc:
                    yield index, entities.Problem(path, "file", "", 0, str(exc))
            if self.progress is not None and len(indexes) >= PROGRESS_MIN_EVENTS:
                self.progress(start + len(chunk), len(indexes))

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
        found = {tip: self.read_events(tip, file_problems) for tip in tips}
        events = list({e.id: e for tip_events in found.values() for e in tip_events}.values())
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
        for entry, data in zip(todo, self.store.read_blobs([e.oid for e in todo])):
            try:
                self._parsed[(entry.path, entry.oid)] = layout.read_event(entry.path, data)
            except (CodecError, SchemaError) as exc:
                problems.append(entities.Problem(entry.path, "file", "", 0, str(exc)))
