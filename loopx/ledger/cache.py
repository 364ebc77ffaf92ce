"""The projection cache: the fold of one state tip, saved under the common git dir.

Keyed by the tip, loopx's schema version and the Python version (``marshal`` is
version-specific). The payload carries a SHA-256 of itself: a cache that is truncated,
corrupt or from another version is discarded and rebuilt, never trusted.
"""

from __future__ import annotations

import dataclasses
import hashlib
import marshal
import os
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from loopx.version import SCHEMA_VERSION, __version__
from loopx.state import entities
_MAGIC = b"LOOPXC2\n"
_KEY = f"{SCHEMA_VERSION}:{__version__}:{sys.version_info[:2]}".encode()

# Dataclasses stored inside Fold's dict fields, by the field they live in.
_TABLES: dict[str, type] = {
    "goals": entities.Goal, "todos": entities.Todo, "gates": entities.Gate,
    "evidence": entities.Evidence, "wakes": entities.Wake, "effects": entities.Effect,
    "quotas": entities.Quota, "sessions": entities.Session,
}


def _row(obj: Any) -> tuple[Any, ...]:
    """A dataclass as a shallow tuple (marshal copies what it writes; astuple's deep copy of
    every list is what made saving a long ledger's cache slow)."""
    return tuple([getattr(obj, name) for name in _FIELDS[type(obj)]])


def _fold_to_data(fold: entities.Fold) -> dict[str, Any]:
    """Plain values for marshal. Shares lists with ``fold``: use :func:`copy` for a copy."""
    data: dict[str, Any] = {}
    for f in dataclasses.fields(fold):
        value = getattr(fold, f.name)
        if f.name in _TABLES:
            value = {k: _row(v) for k, v in value.items()}
        elif f.name == "problems":
            value = [_row(p) for p in value]
        data[f.name] = value
    return data


def copy(fold: entities.Fold) -> entities.Fold:
    """A deep copy (through marshal, which is fast for plain values)."""
    return _fold_from_data(marshal.loads(marshal.dumps(_fold_to_data(fold))))


_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls))
    for cls in (*_TABLES.values(), entities.Problem)
}


def _fold_from_data(data: dict[str, Any]) -> entities.Fold:
    fold = entities.Fold()
    for f in dataclasses.fields(fold):
        value = data[f.name]
        if f.name in _TABLES:
            cls = _TABLES[f.name]
            value = {k: cls(*v) for k, v in value.items()}
        elif f.name == "problems":
            value = [entities.Problem(*p) for p in value]
        elif f.name == "last_key":
            value = tuple(value)
        setattr(fold, f.name, value)
    return fold


def path_for(cache_dir: Path, ref: str) -> Path:
    return cache_dir / (hashlib.sha1(ref.encode()).hexdigest()[:16] + ".fold")


# File layout: MAGIC, then the length of the live section (8 bytes, big-endian), the SHA-256
# of each section, the live section, the history section. The live section (goals in play,
# their todos, gates and evidence, and everything ledger-wide) is all a default `status`
# needs, so the warm path reads and unmarshals only that: its cost follows the work in
# progress, not the length of the ledger's history.
_HEADER = len(_MAGIC) + 8 + 32 + 32
_LIVE_GOALS = ("active", "paused")
_SPLIT = ("goals", "todos", "gates", "evidence", "quotas")  # tables with a history part


def split(fold: entities.Fold) -> tuple[entities.Fold, entities.Fold]:
    """(live, history): goals in play and what they reference, and the rest of the tables."""
    live_goals = {g for g, goal in fold.goals.items() if goal.state in _LIVE_GOALS}
    todos = {t for t, todo in fold.todos.items() if todo.goal in live_goals}
    for todo_id in list(todos):  # a live todo's dependencies and gates are read by the views
        todos.update(d for d in fold.todos[todo_id].depends_on if d in fold.todos)
    gates = {g for g, gate in fold.gates.items() if gate.goal in live_goals}
    gates.update(g for t in todos for g in fold.todos[t].gates if g in fold.gates)
    keep: dict[str, Callable[[str, Any], bool]] = {
        "goals": lambda k, v: k in live_goals, "todos": lambda k, v: k in todos,
        "gates": lambda k, v: k in gates,
        "evidence": lambda k, v: v.goal is None or v.goal in live_goals,
        "quotas": lambda k, v: k == "" or k in live_goals,
    }
    live, history = entities.Fold(), entities.Fold()
    for f in dataclasses.fields(fold):
        value = getattr(fold, f.name)
        if f.name in keep:
            setattr(live, f.name, {k: v for k, v in value.items() if keep[f.name](k, v)})
            setattr(history, f.name, {k: v for k, v in value.items() if not keep[f.name](k, v)})
        else:
            setattr(live, f.name, value)
    return live, history


def _merge(live: entities.Fold, history_data: dict[str, Any]) -> entities.Fold:
    for name in _SPLIT:
        cls, part = _TABLES[name], history_data[name]
        rows = {k: cls(*v) for k, v in part["rows"].items()}
        rows.update(getattr(live, name))
        # The order of first appearance, as a replay builds it: snapshots list some tables in it.
        setattr(live, name, {k: rows[k] for k in part["order"]})
    return live


def load(path: Path, *, live_only: bool = False) -> Optional[tuple[str, entities.Fold]]:
    """(tip, fold) from the cache file, or None when absent or not trustworthy.

    With ``live_only`` only the live section is read: a partial fold for reading status.
    """
    try:
        with open(path, "rb") as fh:
            header = fh.read(_HEADER)
            if len(header) != _HEADER or not header.startswith(_MAGIC):
                return None
            size = int.from_bytes(header[len(_MAGIC) : len(_MAGIC) + 8], "big")
            live_digest, history_digest = header[-64:-32], header[-32:]
            live_body = fh.read(size)
            history_body = b"" if live_only else fh.read()
    except OSError:
        return None
    try:
        if hashlib.sha256(live_body).digest() != live_digest:
            return None
        key, tip, data = marshal.loads(live_body)
        if key != _KEY:
            return None
        fold = _fold_from_data(data)
        if live_only:
            return tip, fold
        if hashlib.sha256(history_body).digest() != history_digest:
            return None
        return tip, _merge(fold, marshal.loads(history_body))
    except Exception:  # any decoding trouble means: rebuild
        return None


def save(path: Path, tip: str, fold: entities.Fold) -> None:
    """Write atomically (temp file + rename); a failure only costs a rebuild later."""
    try:
        live, history = split(fold)
        live_body = marshal.dumps((_KEY, tip, _fold_to_data(live)))
        history_body = marshal.dumps({
            name: {"rows": {k: _row(v) for k, v in getattr(history, name).items()},
                   "order": list(getattr(fold, name))}
            for name in _SPLIT})
        header = (_MAGIC + len(live_body).to_bytes(8, "big") + hashlib.sha256(live_body).digest()
                  + hashlib.sha256(history_body).digest())
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(header + live_body + history_body)
        os.replace(tmp, path)
    except (OSError, ValueError):
        pass
