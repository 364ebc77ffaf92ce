"""Checkpoints: the projection's rows at a state commit, committed beside the events, so that
a fresh clone of a long ledger is ready in seconds instead of replaying every event.

A checkpoint of commit C is ``checkpoints/<C>/manifest.json`` plus ``rows-NNNN.tsv`` chunks:
the rows of the cache's database (:meth:`loopx.ledger.rows.Projection.dump_rows`) for the
fold of exactly the events in C's tree, and the fold's other values. The same events give the
same bytes on every clone with the same loopx (the manifest names the cache's schema key, and
a checkpoint of another version is not used).

Derived data, trusted no further than the events and the ledger's signers (docs/design.md,
"Checkpoints"):

- *Who vouches for it* (:func:`signer`): a clone adopts a checkpoint without replaying the
  events only when the commit that put its manifest's bytes on the branch is signed by a key
  in the ledger's allowed_signers, while the policy signs (its list is then guarded:
  :func:`loopx.ledger.signatures.checkpoint_signers`). Anyone who can push can commit a
  well-formed checkpoint whose rows say what no event says; only a listed signer can make one
  a clone believes. An unsigned one, or one signed by another key, is not used: the clone
  replays the events and says so in one notice.
- *Which events it folds* is cheap to prove: they are C's events. A clone uses it only when C
  is an ancestor of its tip and every event added since C sorts after the checkpoint's last
  key ``(clock, id)`` (else the fold of the tip is not "checkpoint + newer events", and the
  cache falls back to an older checkpoint or a replay).
- *That it is the fold of C, not of another commit* is checked on open, cheaply
  (:func:`binding`): its counters agree with its manifest, the event its last key names is
  in C's tree with that clock, and no event C's own commit added sorts after that key. One
  that fails is not used (a notice says why; an older checkpoint or a replay is used).
- *That it is that fold* is what :func:`verify` recomputes: ``git loopx validate`` does it for
  every checkpoint a pull request adds, ``git loopx doctor --verify`` for the one a clone
  started from.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from loopx.ledger import cache, rows
from loopx.storage import commits
from loopx.model.ids import is_event_id
from loopx.model.paths import CHECKPOINT_CHUNK_BYTES, PATH_RE, checkpoint_path, event_dirs
from loopx.storage.store import Store

# The largest checkpoint file the layout allows (ledger.layout.AREAS): nothing bigger is read.
_CAP = 2 * CHECKPOINT_CHUNK_BYTES

FORMAT = 1
# The schedule: a checkpoint at 2,000 events, then each time the ledger grew by a fifth (at
# least 2,000, at most 10,000 events), so a fresh clone replays at most that many events on
# top of its checkpoint, and a ledger of N events holds O(log N + N / 10,000) of them.
FIRST = 2_000
EVERY = 10_000  # the longest run of events between two checkpoints
ACTOR = "agent:loopx"  # the author of the checkpoint commits loopx makes on its own


def interval(events: int) -> int:
    """How many events after a checkpoint of ``events`` events the next one is due."""
    return min(EVERY, max(FIRST, events // 5))


def due(events: int, newest: int) -> bool:
    """Whether a ledger of ``events`` events whose newest checkpoint holds ``newest`` needs
    another one."""
    return events - newest >= interval(newest)


def crossed(before: int, after: int) -> bool:
    """Whether growing from ``before`` to ``after`` events passed a point of the schedule
    (0, then each point ``interval`` after the last)."""
    point = interval(0)
    while point <= before:
        point += interval(point)
    return point <= after


@dataclass(frozen=True)
class Manifest:
    """What a checkpoint says about itself (``manifest.json``)."""

    commit: str
    events: int
    last_key: tuple[int, str]
    scalars: dict[str, Any]
    chunks: list[tuple[str, str, int]]  # file name, sha256, lines

    def to_json(self) -> bytes:
        return (json.dumps({"format": FORMAT, "key": rows.ROWS_KEY, "commit": self.commit,
                            "events": self.events, "last_key": list(self.last_key),
                            "scalars": self.scalars,
                            "chunks": [{"file": f, "sha256": h, "rows": n}
                                       for f, h, n in self.chunks]},
                           ensure_ascii=False, sort_keys=True, indent=1) + "\n").encode()


def _parse_manifest(data: bytes) -> Optional[Manifest]:
    try:
        doc = json.loads(data)
        if doc.get("format") != FORMAT or doc.get("key") != rows.ROWS_KEY:
            return None  # another loopx wrote it: its rows may mean something else
        return Manifest(str(doc["commit"]), int(doc["events"]),
                        (int(doc["last_key"][0]), str(doc["last_key"][1])), dict(doc["scalars"]),
                        [(str(c["file"]), str(c["sha256"]), int(c["rows"]))
                         for c in doc["chunks"]])
    except (ValueError, KeyError, TypeError, IndexError):
        return None


def files(commit: str, scalars: dict[str, Any], lines: Iterator[str]
          ) -> Iterator[tuple[str, bytes]]:
    """The files of the checkpoint of ``commit``, from the cache's rows at that commit: each
    chunk as soon as it is full (one in memory at a time), the manifest last."""
    chunks: list[tuple[str, str, int]] = []
    current: list[bytes] = []
    size = 0

    def chunk() -> tuple[str, bytes]:
        data = b"".join(current)
        name = f"rows-{len(chunks):04d}.tsv"
        chunks.append((name, hashlib.sha256(data).hexdigest(), len(current)))
        return checkpoint_path(commit, name), data

    for line in lines:
        raw = line.encode()
        if current and size + len(raw) > CHECKPOINT_CHUNK_BYTES:
            yield chunk()
            current, size = [], 0
        current.append(raw)
        size += len(raw)
    if current or not chunks:
        yield chunk()
    last = scalars.get("last_key") or (0, "")
    manifest = Manifest(commit, int(scalars.get("events", 0)), (int(last[0]), str(last[1])),
                        scalars, chunks)
    yield checkpoint_path(commit, "manifest.json"), manifest.to_json()


def listed(store: Store, tip: str) -> list[Manifest]:
    """The checkpoints in ``tip``'s tree of commits in its history, newest (most events)
    first."""
    dirs = store.read_tree(f"{tip}:checkpoints")
    names = [f"{tip}:checkpoints/{commit}/manifest.json" for commit in dirs]
    found = []
    for item in store.read_blobs(names, max_size=_CAP):  # sized from the header first
        manifest = _parse_manifest(item) if isinstance(item, bytes) else None
        if manifest is not None and manifest.commit in dirs and store.is_ancestor(
                manifest.commit, tip):
            found.append(manifest)
    return sorted(found, key=lambda m: (-m.events, m.commit))


def binding(store: Store, manifest: Manifest) -> Optional[str]:
    """Why the checkpoint is not bound to its commit C (None: it is), from a few reads: its
    counters and its manifest agree; the event its last key names is in C's tree with that
    clock; no event C's commit added (against its first parent) sorts after that key. Rows of
    another commit (older: C's own events sort after them; newer: their last event is not in
    C) fail here. That the rows are the fold of those events is :func:`verify`'s replay.
    Reads raw files only (the ``clock:`` line), so a fresh clone loads no event model."""
    scalars = manifest.scalars
    last = scalars.get("last_key") or [0, ""]
    if scalars.get("events") != manifest.events or [int(last[0]), str(last[1])] != list(
            manifest.last_key):
        return "its counters do not match its manifest"
    clock, last_id = manifest.last_key
    if manifest.events == 0:
        return None if clock == 0 else "its last key names an event of an empty ledger"
    found = [oid for directory in event_dirs(last_id) for name, (_, oid) in
             store.read_tree(f"{manifest.commit}:{directory}").items()
             if name.startswith(last_id + ".")] if is_event_id(last_id) else []
    if not found or _clock_of(store, found[0]) != clock:
        return (f"the event its last key names ({last_id}) is not in {manifest.commit[:12]} "
                "with that clock")
    parent = _first_parent(store, manifest.commit)
    added = [(match.group(4), entry.oid) for status, _, entry in (
        store.added_files(parent, manifest.commit) if parent else [])
        if status == "A" and (match := PATH_RE.fullmatch(entry.path))]
    for (event_id, oid), data in zip(added, store.read_blobs([oid for _, oid in added])):
        clock_of = _clock_of_data(data)
        if clock_of is not None and (clock_of, event_id) > manifest.last_key:
            return f"{manifest.commit[:12]} holds event {event_id}, which sorts after its last key"
    return None


def signer(store: Store, tip: str, manifest: Manifest, allowed: Optional[str]
           ) -> tuple[Optional[str], str]:
    """(who signed the checkpoint, "") or (None, why it is not trusted): the principal whose
    key in ``allowed`` (the signers in force, :func:`signatures.checkpoint_signers`) made a
    good signature on the commit that gave ``tip`` the manifest's bytes (the manifest holds
    every chunk's sha256, so that signature covers the rows)."""
    if not allowed:
        return None, ("the ledger's policy lists no signers (`git loopx signer add`), so no "
                      "checkpoint is trusted without a replay")
    name = checkpoint_path(manifest.commit, "manifest.json")
    current = store.read_tree(f"{tip}:checkpoints/{manifest.commit}").get("manifest.json")
    made = next((found.oid for found in commits.walk(store.cwd, [tip], paths=[name])
                 for change in found.changes
                 if current and change.path == name and change.oid == current[1]), None)
    principal = commits.signers(store.cwd, [made], allowed).get(made) if made else None
    if principal is None:
        return None, (f"the commit that made it{f' ({made[:12]})' if made else ''} is not "
                      "signed by a key in the ledger's allowed_signers")
    return principal, ""


def _first_parent(store: Store, commit: str) -> Optional[str]:
    """The first parent of ``commit``, read through the open object reader (no process)."""
    found = store.reader.read_capped([commit], 1 << 20)[0]
    if not isinstance(found, tuple) or found[0] != "commit":
        return None
    for line in found[1].split(b"\n\n", 1)[0].splitlines():
        if line.startswith(b"parent "):
            return line[7:].decode()
    return None


_CLOCK_LINE = re.compile(rb"^clock: ([0-9]{1,18})$", re.M)  # as codec.dump writes it


def _clock_of(store: Store, oid: str) -> Optional[int]:
    return _clock_of_data(store.read_blobs([oid])[0])


def _clock_of_data(data: object) -> Optional[int]:
    match = _CLOCK_LINE.search(data) if isinstance(data, bytes) else None
    return int(match.group(1)) if match else None


class _Unreadable(Exception):
    """A chunk is missing, fails its sha256 or holds another number of rows."""


def _chunks(store: Store, tip: str, manifest: Manifest) -> Iterator[list[str]]:
    """The lines of each chunk in turn, each checked before it is given (one chunk in memory
    at a time: loading a long ledger's checkpoint costs its largest chunk, not its size)."""
    for name, digest, count in manifest.chunks:
        item = store.read_blobs([f"{tip}:{checkpoint_path(manifest.commit, name)}"],
                                max_size=_CAP)[0]  # sized from the header first
        if not isinstance(item, bytes) or hashlib.sha256(item).hexdigest() != digest:
            raise _Unreadable(name)
        chunk = item.decode("utf-8", "replace").splitlines(keepends=True)
        if len(chunk) != count:
            raise _Unreadable(name)
        yield chunk


def lines_of(store: Store, tip: str, manifest: Manifest) -> Optional[list[str]]:
    """The lines of a checkpoint's chunks, or None when one is missing or fails its sha256."""
    try:
        return [line for chunk in _chunks(store, tip, manifest) for line in chunk]
    except _Unreadable:
        return None


def load(projection: rows.Projection, store: Store, tip: str, manifest: Manifest, *,
         signer: str) -> bool:
    """Fill the cache from a checkpoint ``signer`` signed (as the fold of its commit),
    streaming its chunks; False (and the cache left empty) when one does not read back whole."""
    try:
        projection.load_rows(manifest.commit,
                             (line for chunk in _chunks(store, tip, manifest) for line in chunk),
                             manifest.scalars, source=cache.source(manifest.commit, signer))
    except _Unreadable:
        return False
    return True


def verify(reader_fold: Any, store: Store, tip: str, manifest: Manifest) -> list[str]:
    """Why the checkpoint is not the fold of its commit's events (empty: it is).

    ``reader_fold`` is the fold of ``manifest.commit`` replayed from its events; the check
    writes it into a scratch database and compares the rows, line by line.
    """
    lines = lines_of(store, tip, manifest)
    if lines is None:
        return [f"checkpoint {manifest.commit[:12]}: a chunk is missing or fails its sha256"]
    scratch = rows.Projection(Path(":memory:"))
    try:
        scratch.replace(manifest.commit, reader_fold)
        expected = list(scratch.dump_rows())
        scalars = scratch.scalars()
    finally:
        scratch.close()
    problems = []
    if scalars != manifest.scalars:
        changed = sorted(k for k in set(scalars) | set(manifest.scalars)
                         if scalars.get(k) != manifest.scalars.get(k))
        problems.append(f"checkpoint {manifest.commit[:12]}: {', '.join(changed)} differ from "
                        "the replay of its events")
    if expected != lines:
        wrong = next((n for n, (a, b) in enumerate(zip(expected, lines)) if a != b),
                     min(len(expected), len(lines)))
        shown = (lines[wrong] if wrong < len(lines) else "(missing)").split("\t")[:2]
        problems.append(f"checkpoint {manifest.commit[:12]}: row {wrong + 1} ({' '.join(shown)}) "
                        f"differs from the replay of its events ({len(lines)} rows, replay "
                        f"{len(expected)})")
    return problems
