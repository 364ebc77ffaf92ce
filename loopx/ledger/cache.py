"""The projection cache: the fold of one state tip, kept under the common git dir.

Two files per state ref, both derived, both discarded and rebuilt when they do not check out:

- ``<ref>.sqlite``: the whole fold, one row per entity (JSON of its fields), in SQLite. A write
  reads only the rows its checks and appliers touch (:class:`Table` loads them on demand) and
  writes back only those, so an append costs the same at a million events as at a thousand.
  The tip the rows are the fold of is stored with them and moved in the same transaction.
- ``<ref>.live``: the part a default ``status`` shows (goals in play, what they reference,
  everything ledger-wide), as one marshal blob sealed with this clone's key. Rewritten after every write
  from the rows in play, so its cost follows the work in progress, not the ledger's history,
  and a warm ``status`` reads it without importing SQLite, pydantic or the YAML stack.

Both are keyed by loopx's schema version (and the live file by the Python version, as marshal
is version-specific). Never trusted beyond the events: a file from another version, a wrong
digest, a tip that is not the ref's tip all mean "replay what is missing".
"""

from __future__ import annotations

import dataclasses
import hashlib
import marshal
import math
import os
import sys
from collections.abc import MutableMapping, MutableSequence
from pathlib import Path
from typing import Any, Optional, overload

from loopx.model import clock
from loopx.projection import entities
from loopx.storage import files
from loopx.version import SCHEMA_VERSION, __version__

_LIVE_MAGIC = b"LOOPXL2\n"
LIVE_MOST = 1 << 28  # bytes: a bigger live file is not read (the fold is rebuilt)
_LIVE_KEY = f"{SCHEMA_VERSION}:{__version__}:live-3:{sys.version_info[:2]}".encode()

# Entity tables of the fold: kind -> dataclass. Their rows carry the goal they belong to, so
# the rows in play can be selected without reading the others.
TABLES: dict[str, type] = {
    "goals": entities.Goal, "todos": entities.Todo, "gates": entities.Gate,
    "evidence": entities.Evidence, "wakes": entities.Wake, "effects": entities.Effect,
    "quotas": entities.Quota, "sessions": entities.Session, "dismissed": entities.Dismissal,
}
FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls))
    for cls in (*TABLES.values(), entities.Problem)
}
# Kinds whose rows belong to goals and leave the live part when their goal closes.
BY_GOAL = ("goals", "todos", "gates", "evidence", "quotas")
LIVE_STATES = ("active", "paused")
SCALARS = ("name", "config", "notes", "events", "max_clock", "last_key", "clocks")
INDEXES = ("effect_keys", "open_sessions", "by_commit")  # of the write path; not in the live file

@overload
def seal_key(cache_dir: Path) -> bytes: ...
@overload
def seal_key(cache_dir: Path, *, create: bool) -> Optional[bytes]: ...
def seal_key(cache_dir: Path, *, create: bool = True) -> Optional[bytes]:
    """The key that seals this clone's cache files (rows, live file): 32 random bytes kept
    beside them, never in them, so a file edited or copied in does not carry a valid seal."""
    path = cache_dir / "seal.key"
    try:
        key = files.read(path, 32)
        if len(key) == 32:
            return key
    except OSError:
        pass
    if not create:
        return None
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        tmp.write_bytes(os.urandom(32))
        os.link(tmp, path)  # never over another process's key: its seals would all fail
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    key = files.read(path, 32)
    if len(key) != 32:
        raise OSError(f"{path} is not a cache key; remove it")
    return key


def is_cache_error(exc: BaseException) -> bool:
    """Whether ``exc`` came from the cache's database (told without importing SQLite, which a
    warm read never loads)."""
    return any(cls.__module__ == "sqlite3" for cls in type(exc).__mro__)


def paths_for(cache_dir: Path, ref: str) -> tuple[Path, Path]:
    """(the SQLite file, the live file) of ``ref``'s cache."""
    stem = cache_dir / hashlib.sha1(ref.encode()).hexdigest()[:16]
    return stem.with_suffix(".sqlite"), stem.with_suffix(".live")


# --- the live file: marshal, for reads that must start fast ----------------------------------


def _row(obj: Any) -> tuple[Any, ...]:
    return tuple([getattr(obj, name) for name in FIELDS[type(obj)]])


def _fold_to_data(fold: entities.Fold) -> dict[str, Any]:
    """Plain values of an in-memory fold, for marshal."""
    data: dict[str, Any] = {}
    for f in dataclasses.fields(fold):
        value = getattr(fold, f.name)
        if f.name in TABLES:
            value = {k: _row(v) for k, v in value.items()}
        elif f.name == "problems":
            value = [_row(p) for p in value]
        elif f.name == "extra":  # no signed verdicts and an empty table of them are alike
            value = {k: dict(v.items()) if isinstance(v, MutableMapping) else v
                     for k, v in value.items() if v or k != "signed"}
        elif isinstance(value, MutableMapping):
            value = dict(value.items())
        elif isinstance(value, MutableSequence):
            value = list(value)
        data[f.name] = value
    return data


def _fold_from_data(data: dict[str, Any]) -> entities.Fold:
    fold = entities.Fold()
    for f in dataclasses.fields(fold):
        value = data[f.name]
        if f.name in TABLES:
            cls = TABLES[f.name]
            value = {k: cls(*v) for k, v in value.items()}
        elif f.name == "problems":
            value = [entities.Problem(*p) for p in value]
        elif f.name == "last_key":
            value = tuple(value)
        setattr(fold, f.name, value)
    return fold


def content(fold: entities.Fold) -> dict[str, Any]:
    """What ``fold`` says, as plain values, without where the cache got it from: two folds of
    the same events have the same content however they were computed."""
    data = _fold_to_data(fold)
    data["extra"] = {k: v for k, v in data["extra"].items() if k != "source"}
    return data


def materialize(fold: entities.Fold) -> entities.Fold:
    """An in-memory fold with everything ``fold`` holds (reading all rows of a cached one)."""
    return _fold_from_data(_fold_to_data(fold))


def copy(fold: entities.Fold) -> entities.Fold:
    """A deep copy of an in-memory fold (through marshal, which is fast for plain values)."""
    return _fold_from_data(marshal.loads(marshal.dumps(_fold_to_data(fold))))


def load_live(path: Path) -> Optional[tuple[str, entities.Fold]]:
    """(tip, live fold) from the live file, or None when absent or not trustworthy."""
    try:
        raw = files.read(path, LIVE_MOST)
    except OSError:
        return None
    head = len(_LIVE_MAGIC) + 32
    key = seal_key(path.parent, create=False)
    if key is None or not raw.startswith(_LIVE_MAGIC) or (
            _live_seal(key, raw[head:]) != raw[len(_LIVE_MAGIC):head]):
        return None
    try:
        key, tip, data = marshal.loads(raw[head:])
        return (tip, _fold_from_data(data)) if key == _LIVE_KEY else None
    except Exception:  # any decoding trouble means: rebuild
        return None


def _live_seal(key: bytes, body: bytes) -> bytes:
    return hashlib.blake2b(body, key=key, digest_size=32).digest()


def save_live(path: Path, tip: str, fold: entities.Fold) -> None:
    """Write atomically (temp file + rename); a failure only costs a rebuild later."""
    try:
        body = marshal.dumps((_LIVE_KEY, tip, _fold_to_data(fold)))
        path.parent.mkdir(parents=True, exist_ok=True)
        seal = _live_seal(seal_key(path.parent), body)
        files.replace(path, _LIVE_MAGIC + seal + body)
    except (OSError, ValueError):
        pass


def hooks_state_path(loopx_dir: Path) -> Path:
    """The file post-commit's shim reads to see, without Python, that it has nothing to do."""
    return loopx_dir / "hooks.state"


HOOKS_STATE_FORMAT = "2"
HOOKS_STATE_MOST = 1 << 24  # bytes: a line per live lease


def hooks_ids_path(loopx_dir: Path) -> Path:
    """The open todos and goals a trailer may name, for the shim (next to ``hooks.state``)."""
    return loopx_dir / "hooks.ids"


def save_hooks_state(path: Path, tip: str, live: entities.Fold) -> None:
    """What post-commit needs to know (loopx/data/hook.sh reads it with sed and awk): the tip
    it was written for, and each live lease as ``lease ACTOR BRANCH-REF UNTIL-EPOCH``, bound
    by a last line ``check <git blob id of the lines above>`` that the shim recomputes with
    ``git hash-object`` (a truncated or damaged file is not believed: loopx decides, and
    rewrites it). ``ids <blob id>`` names the content of ``hooks.ids`` beside it: one
    ``todo ID`` or ``goal ID`` line for each todo of an open goal and each open goal, what a
    ``Loopx-Todo``/``Loopx-Goal`` trailer may name for the shim to queue the commit itself
    (read only for a commit with trailers; a file of other content is not believed)."""
    open_goals = {g for g, goal in live.goals.items() if goal.state in LIVE_STATES}
    todos = sorted(t for t, todo in live.todos.items() if todo.goal in open_goals)
    named = "".join([*(f"todo {t}\n" for t in todos),
                     *(f"goal {g}\n" for g in sorted(open_goals))]).encode()
    lines = ["# loopx: what post-commit needs to know; kept by loopx (docs/hooks.md)",
             f"format {HOOKS_STATE_FORMAT}", f"tip {tip}"]
    for todo in live.todos.values():
        if todo.state == "open" and todo.holder and todo.until and todo.branch:
            until = math.ceil(clock.parse_ts(todo.until).timestamp())  # never early
            lines.append(f"lease {todo.holder} {todo.branch} {until}")
    lines.append(f"ids {_blob_id(named)}")
    body = ("\n".join(lines) + "\n").encode()
    try:
        files.replace(hooks_ids_path(path.parent), named)
        files.replace(path, body + f"check {_blob_id(body)}\n".encode())
    except OSError:
        pass  # without the file the shim asks loopx itself: slower, never wrong


def _blob_id(data: bytes) -> str:
    """The id ``git hash-object`` gives ``data`` (SHA-1 repositories; the shim compares
    what its own git computes, so another object format only makes it ask loopx)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def hooks_state_trouble(path: Path, tip: str) -> Optional[str]:
    """Why the hook state at ``path`` cannot be believed for ``tip`` although it claims to
    be of it (damaged, truncated, another format); None when it checks out, is absent, or
    is plainly of another tip (then it is only out of date, which the shim sees itself)."""
    try:
        raw = files.read(path, HOOKS_STATE_MOST)
    except OSError:
        return None
    body, _, last = raw.rstrip(b"\n").rpartition(b"\n")
    text = raw.decode("utf-8", "replace")
    if f"\ntip {tip}\n" not in text:
        return None
    if f"\nformat {HOOKS_STATE_FORMAT}\n" not in text:
        return "written by another loopx version"
    if last != b"check " + _blob_id(body + b"\n").encode():
        return "damaged or truncated (its check line does not match)"
    return None


def source(commit: str, signer: str) -> str:
    """What the rows say they started from when a signed checkpoint filled them
    (``Projection.source``, ``fold.extra["source"]``), instead of a replay here."""
    return f"checkpoint {commit} signed by {signer}"


def started_from(named: Optional[str]) -> Optional[tuple[str, str]]:
    """(commit, signer) of the checkpoint a :func:`source` line names, or None."""
    if not named or not named.startswith("checkpoint "):
        return None
    commit, _, signer = named.removeprefix("checkpoint ").partition(" signed by ")
    return commit, signer


def split(fold: entities.Fold) -> entities.Fold:
    """The live part of an in-memory fold: goals in play and what they reference, and
    everything ledger-wide (the same selection as :meth:`Projection.live`)."""
    live_goals = {g for g, goal in fold.goals.items() if goal.state in LIVE_STATES}
    part = dataclasses.replace(fold, effect_keys={}, open_sessions={}, by_commit={})
    part.goals = {k: v for k, v in fold.goals.items() if k in live_goals}
    part.todos = {k: v for k, v in fold.todos.items() if v.goal in live_goals}
    part.gates = {k: v for k, v in fold.gates.items() if v.goal in live_goals}
    part.evidence = {k: v for k, v in fold.evidence.items()
                     if v.goal is None or v.goal in live_goals}
    part.quotas = {k: v for k, v in fold.quotas.items() if k == "" or k in live_goals}
    todos = {ref for todo in part.todos.values() for ref in todo.depends_on} | set(part.todos)
    part.todos = {k: v for k, v in fold.todos.items() if k in todos}
    gates = {ref for todo in part.todos.values() for ref in todo.gates} | set(part.gates)
    part.gates = {k: v for k, v in fold.gates.items() if k in gates}
    return part
