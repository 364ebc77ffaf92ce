"""The projection cache: the fold of one state tip, kept under the common git dir.

Two files per state ref, both derived, both discarded and rebuilt when they do not check out:

- ``<ref>.sqlite``: the whole fold, one row per entity (JSON of its fields), in SQLite. A write
  reads only the rows its checks and appliers touch (:class:`Table` loads them on demand) and
  writes back only those, so an append costs the same at a million events as at a thousand.
  The tip the rows are the fold of is stored with them and moved in the same transaction.
- ``<ref>.live``: the part a default ``status`` shows (goals in play, what they reference,
  everything ledger-wide), as one marshal blob with a SHA-256. Rewritten after every write
  from the rows in play, so its cost follows the work in progress, not the ledger's history,
  and a warm ``status`` reads it without importing SQLite, pydantic or the YAML stack.

Both are keyed by loopx's schema version (and the live file by the Python version, as marshal
is version-specific). Never trusted beyond the events: a file from another version, a wrong
digest, a tip that is not the ref's tip all mean "replay what is missing".
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import marshal
import os
import sqlite3
import sys
from collections.abc import Iterator, MutableMapping, MutableSequence
from pathlib import Path
from typing import Any, Callable, Optional, overload

from loopx.state import entities
from loopx.version import SCHEMA_VERSION, __version__

ROWS_KEY = f"{SCHEMA_VERSION}:{__version__}:rows-1"  # what a row means; checkpoints carry it too
_LIVE_MAGIC = b"LOOPXL1\n"
_LIVE_KEY = f"{ROWS_KEY}:{sys.version_info[:2]}".encode()

# Entity tables of the fold: kind -> dataclass. Their rows carry the goal they belong to, so
# the rows in play can be selected without reading the others.
_TABLES: dict[str, type] = {
    "goals": entities.Goal, "todos": entities.Todo, "gates": entities.Gate,
    "evidence": entities.Evidence, "wakes": entities.Wake, "effects": entities.Effect,
    "quotas": entities.Quota, "sessions": entities.Session, "dismissed": entities.Dismissal,
}
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls))
    for cls in (*_TABLES.values(), entities.Problem)
}
# Kinds whose rows belong to goals and leave the live part when their goal closes.
_BY_GOAL = ("goals", "todos", "gates", "evidence", "quotas")
_LIVE_STATES = ("active", "paused")
_SCALARS = ("name", "config", "notes", "events", "max_clock", "last_key")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rows (
    kind TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, goal TEXT,
    data TEXT NOT NULL, PRIMARY KEY (kind, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS rows_by_seq ON rows (kind, seq);
CREATE INDEX IF NOT EXISTS rows_by_goal ON rows (goal, kind);
"""


def _encode_row(obj: Any) -> str:
    values = [getattr(obj, name) for name in _FIELDS[type(obj)]]
    return json.dumps(values, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _decoder(cls: type) -> Callable[[str], Any]:
    def decode(text: str) -> Any:
        return cls(*json.loads(text))

    return decode


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _goal_of(kind: str, key: str, value: Any) -> Optional[str]:
    if kind == "goals":
        return key
    if kind == "quotas":
        return key or None
    goal = getattr(value, "goal", None)
    return goal if isinstance(goal, str) else None


class Table(MutableMapping[str, Any]):
    """One entity table of a fold backed by the database: rows are read when first asked for
    and every row read or written is written back by :meth:`Projection.commit` (appliers
    change entities in place, so a row read may have changed)."""

    def __init__(self, conn: sqlite3.Connection, kind: str, decode: Callable[[str], Any]) -> None:
        self._conn, self.kind, self._decode = conn, kind, decode
        self.touched: dict[str, Any] = {}
        self.added: list[str] = []  # keys not in the database before, in insertion order
        self.gone: set[str] = set()

    def _row(self, key: str) -> Optional[str]:
        found = self._conn.execute("SELECT data FROM rows WHERE kind=? AND id=?",
                                   (self.kind, key)).fetchone()
        return None if found is None else str(found[0])

    def __getitem__(self, key: str) -> Any:
        if key in self.touched:
            return self.touched[key]
        if key in self.gone or not isinstance(key, str):
            raise KeyError(key)
        text = self._row(key)
        if text is None:
            raise KeyError(key)
        value = self.touched[key] = self._decode(text)
        return value

    def __contains__(self, key: object) -> bool:
        if key in self.touched:
            return True
        return isinstance(key, str) and key not in self.gone and self._row(key) is not None

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in self:
            self.added.append(key)
        self.gone.discard(key)
        self.touched[key] = value

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self.touched.pop(key, None)
        if key in self.added:
            self.added.remove(key)
        else:
            self.gone.add(key)

    def __iter__(self) -> Iterator[str]:
        stored = [str(row[0]) for row in self._conn.execute(
            "SELECT id FROM rows WHERE kind=? ORDER BY seq", (self.kind,))]
        yield from (key for key in stored if key not in self.gone)
        yield from list(self.added)

    def __len__(self) -> int:
        stored = self._conn.execute("SELECT COUNT(*) FROM rows WHERE kind=?",
                                    (self.kind,)).fetchone()[0]
        return int(stored) - len(self.gone) + len(self.added)

    def with_prefix(self, prefix: str, *, limit: int) -> list[str]:
        """Up to ``limit`` ids that start with ``prefix`` (an index range, not a scan)."""
        found = [str(row[0]) for row in self._conn.execute(
            "SELECT id FROM rows WHERE kind=? AND id >= ? AND id < ? ORDER BY id LIMIT ?",
            (self.kind, prefix, prefix + "\U0010ffff", limit + len(self.gone)))]
        found += [key for key in self.added if key.startswith(prefix)]
        return [key for key in found if key not in self.gone][:limit]

    def values(self) -> Any:  # one query for a scan, not one per row
        rows = self._conn.execute("SELECT id, data FROM rows WHERE kind=? ORDER BY seq",
                                  (self.kind,)).fetchall()
        for key, text in rows:
            if key not in self.touched and key not in self.gone:
                self.touched[key] = self._decode(text)
        return [self.touched[key] for key in self]

    def items(self) -> Any:
        return list(zip(list(self), self.values()))


class Appended(MutableSequence[Any]):
    """An append-only list of the fold (problems, unknown events): a write appends without
    reading what is there; iterating reads it all."""

    def __init__(self, conn: sqlite3.Connection, kind: str,
                 decode: Callable[[str], Any]) -> None:
        self._conn, self.kind, self._decode = conn, kind, decode
        self.new: list[Any] = []
        self._stored: Optional[list[Any]] = None

    def _all(self) -> list[Any]:
        if self._stored is None:
            rows = self._conn.execute("SELECT data FROM rows WHERE kind=? ORDER BY seq",
                                      (self.kind,))
            self._stored = [self._decode(text) for (text,) in rows]
        return self._stored + self.new

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def insert(self, index: int, value: Any) -> None:
        if index < len(self):
            raise TypeError(f"{self.kind} in the cache are append-only")
        self.new.append(value)

    def __setitem__(self, index: Any, value: Any) -> None:
        raise TypeError(f"{self.kind} in the cache are append-only")

    def __delitem__(self, index: Any) -> None:
        raise TypeError(f"{self.kind} in the cache are append-only")


def _problem(text: str) -> entities.Problem:
    return entities.Problem(*json.loads(text))


class Projection:
    """The SQLite half of the cache for one state ref (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: Optional[sqlite3.Connection] = None

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # derived data: a lost tail is replayed
            conn.executescript(_SCHEMA)
            self._conn = conn
            if self._meta("key") != ROWS_KEY:
                self.clear()
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _meta(self, key: str) -> Optional[str]:
        found = self.conn.execute("SELECT v FROM meta WHERE k=?", (key,)).fetchone()
        return None if found is None else str(found[0])

    def clear(self) -> None:
        """Forget everything (another schema version, a corrupt file)."""
        conn = self.conn
        self.end()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM rows")
        conn.execute("DELETE FROM meta")
        conn.execute("INSERT INTO meta VALUES ('key', ?)", (ROWS_KEY,))
        conn.execute("COMMIT")

    def tip(self) -> Optional[str]:
        """The state commit the rows are the fold of (None: empty)."""
        try:
            return self._meta("tip")
        except sqlite3.DatabaseError:
            self._reset()
            return None

    def _reset(self) -> None:
        """A database that does not open as one: remove it, so the next use starts afresh."""
        self.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    # --- reading and writing through a transaction ----------------------------------------

    def begin(self, *, write: bool) -> None:
        """Start a transaction: a snapshot to read from, or the one writer's lock. A fold
        read earlier through this connection is not to be used after this."""
        self.end()
        self.conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    def end(self) -> None:
        """End a transaction without writing (a read, or a write that was refused)."""
        if self._conn is not None and self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def fold(self) -> entities.Fold:
        """The fold at :meth:`tip`, its tables read on demand inside the open transaction."""
        conn = self.conn
        scalars = {k: json.loads(v) for k, v in conn.execute(
            f"SELECT k, v FROM meta WHERE k IN ({','.join('?' * len(_SCALARS))})", _SCALARS)}
        fold = entities.Fold(
            remaps=Table(conn, "remaps", json.loads),
            problems=Appended(conn, "problems", _problem),
            unknown=Appended(conn, "unknown", json.loads),
            extra={"signed": Table(conn, "signed", json.loads)},
        )
        for kind, cls in _TABLES.items():
            setattr(fold, kind, Table(conn, kind, _decoder(cls)))
        for name in _SCALARS:
            if name in scalars:
                setattr(fold, name, scalars[name])
        fold.last_key = (int(fold.last_key[0]), str(fold.last_key[1]))
        return fold

    def commit(self, tip: str, fold: entities.Fold) -> None:
        """Write what the transaction's fold read or changed, and the new tip; then commit."""
        conn = self.conn
        for kind in (*_TABLES, "remaps"):
            self._write_table(getattr(fold, kind), kind)
        signed = fold.extra.get("signed")
        if isinstance(signed, Table):
            self._write_table(signed, "signed")
        for name in ("problems", "unknown"):
            seq = self._next_seq(name)
            rows = getattr(fold, name).new
            conn.executemany("INSERT INTO rows VALUES (?, ?, ?, NULL, ?)", [
                (name, f"{seq + n:012d}", seq + n, _encode(value)) for n, value in enumerate(rows)])
        self._write_scalars(tip, fold)
        conn.execute("COMMIT")

    def _write_table(self, table: Any, kind: str) -> None:
        conn = self.conn
        conn.executemany("DELETE FROM rows WHERE kind=? AND id=?",
                         [(kind, key) for key in table.gone])
        added = set(table.added)
        seq = self._next_seq(kind)
        for key, value in table.touched.items():
            if key in added:
                continue
            conn.execute("UPDATE rows SET data=?, goal=? WHERE kind=? AND id=?",
                         (_encode(value), _goal_of(kind, key, value), kind, key))
        conn.executemany("INSERT INTO rows VALUES (?, ?, ?, ?, ?)", [
            (kind, key, seq + n, _goal_of(kind, key, table.touched[key]),
             _encode(table.touched[key])) for n, key in enumerate(table.added)])

    def _next_seq(self, kind: str) -> int:
        found = self.conn.execute("SELECT MAX(seq) FROM rows WHERE kind=?", (kind,)).fetchone()
        return 0 if found[0] is None else int(found[0]) + 1

    def _write_scalars(self, tip: str, fold: entities.Fold) -> None:
        values = [("tip", tip)] + [(name, _json(getattr(fold, name))) for name in _SCALARS]
        self.conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", values)

    def replace(self, tip: str, fold: entities.Fold) -> None:
        """Store a whole in-memory fold (after a replay) as the fold of ``tip``."""
        conn = self.conn
        self.end()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("DELETE FROM rows")
            for kind in _TABLES:  # generators: the rows are never all in memory as text
                table = getattr(fold, kind)
                conn.executemany("INSERT INTO rows VALUES (?, ?, ?, ?, ?)", (
                    (kind, key, n, _goal_of(kind, key, value), _encode_row(value))
                    for n, (key, value) in enumerate(table.items())))
            simple = {"remaps": fold.remaps, "signed": fold.extra.get("signed") or {}}
            for kind, mapping in simple.items():
                conn.executemany("INSERT INTO rows VALUES (?, ?, ?, NULL, ?)", [
                    (kind, key, n, _json(value)) for n, (key, value) in enumerate(mapping.items())])
            for kind in ("problems", "unknown"):
                conn.executemany("INSERT INTO rows VALUES (?, ?, ?, NULL, ?)", [
                    (kind, f"{n:012d}", n, _encode(value))
                    for n, value in enumerate(getattr(fold, kind))])
            self._write_scalars(tip, fold)
            conn.execute("DELETE FROM meta WHERE k='source'")  # replayed here
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    # --- checkpoints: the rows as text, the same for the same events --------------------

    def dump_rows(self) -> Iterator[str]:
        """Every row as one line ``kind TAB id TAB rank TAB goal TAB data``, in (kind, order)
        order; ``rank`` is the row's place in its table, so two caches that reached the same
        fold by different paths (a replay, a run of writes) give the same lines."""
        kind_now, rank = None, 0
        for kind, key, goal, data in self.conn.execute(
                "SELECT kind, id, goal, data FROM rows ORDER BY kind, seq"):
            rank = rank + 1 if kind == kind_now else 0
            kind_now = kind
            yield f"{kind}\t{key}\t{rank}\t{goal or ''}\t{data}\n"

    def scalars(self) -> dict[str, Any]:
        """The fold's values outside its tables (name, config, counters, last key)."""
        return {k: json.loads(v) for k, v in self.conn.execute(
            f"SELECT k, v FROM meta WHERE k IN ({','.join('?' * len(_SCALARS))})", _SCALARS)}

    def load_rows(self, tip: str, lines: Iterator[str], scalars: dict[str, Any],
                  source: str) -> None:
        """Replace everything with rows from :meth:`dump_rows` lines, as the fold of ``tip``;
        ``source`` says where they came from (a checkpoint not yet verified here)."""
        conn = self.conn
        self.end()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("DELETE FROM rows")
            conn.executemany("INSERT INTO rows VALUES (?, ?, ?, ?, ?)", (
                (kind, key, int(rank), goal or None, data)
                for kind, key, rank, goal, data in (line.rstrip("\n").split("\t", 4)
                                                    for line in lines)))
            conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                             [("tip", tip), ("source", source)]
                             + [(k, _json(scalars[k])) for k in _SCALARS if k in scalars])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def source(self) -> Optional[str]:
        """Where the rows came from when not from replaying events here: a checkpoint's name."""
        return self._meta("source")

    def live(self) -> entities.Fold:
        """An in-memory fold of the rows in play (see :func:`split`), read in the open
        transaction: what the live file holds."""
        conn = self.conn
        fold = self.fold()
        goal_state = _FIELDS[entities.Goal].index("state")
        live_goals = [str(key) for key, text in conn.execute(
            "SELECT id, data FROM rows WHERE kind='goals'")
            if json.loads(text)[goal_state] in _LIVE_STATES]
        part = entities.Fold(**{name: getattr(fold, name) for name in _SCALARS},
                             remaps=dict(fold.remaps.items()), problems=list(fold.problems),
                             unknown=list(fold.unknown), extra={"signed": {}})
        source = self.source()
        if source:  # status says when the rows came from a checkpoint not verified here
            part.extra["source"] = source
        for kind in ("wakes", "effects", "sessions", "dismissed"):
            setattr(part, kind, dict(getattr(fold, kind).items()))
        marks = ",".join("?" * len(live_goals))
        for kind in _BY_GOAL:
            rows = conn.execute(
                f"SELECT seq, id, data FROM rows WHERE kind=? AND (goal IS NULL OR goal IN "
                f"({marks}))", (kind, *live_goals)).fetchall()
            setattr(part, kind, _in_order(kind, rows))
        wanted = {kind: _referenced(part, kind) for kind in ("todos", "gates")}
        for kind, keys in wanted.items():
            if keys:
                rows = conn.execute(
                    f"SELECT seq, id, data FROM rows WHERE kind=? AND id IN "
                    f"({','.join('?' * len(keys))})", (kind, *keys)).fetchall()
                setattr(part, kind, {**getattr(part, kind), **_in_order(kind, rows)})
                setattr(part, kind, dict(sorted(getattr(part, kind).items(),
                                                key=lambda item: _SEQ[id(item[1])])))
        return part


_SEQ: dict[int, int] = {}  # row object -> its seq, while live() orders what it read


def _in_order(kind: str, rows: list[tuple[int, str, str]]) -> dict[str, Any]:
    decode = _decoder(_TABLES[kind])
    out: dict[str, Any] = {}
    for seq, key, text in sorted(rows):
        out[str(key)] = value = decode(text)
        _SEQ[id(value)] = seq
    return out


def _referenced(part: entities.Fold, kind: str) -> list[str]:
    """Todos and gates outside the live goals that a live todo depends on or waits for (the
    views read them)."""
    field = "depends_on" if kind == "todos" else "gates"
    table = getattr(part, kind)
    return sorted({ref for todo in part.todos.values() for ref in getattr(todo, field)
                   if ref not in table})


def _encode(value: Any) -> str:
    if dataclasses.is_dataclass(value):
        return _encode_row(value)
    return _json(value)


def paths_for(cache_dir: Path, ref: str) -> tuple[Path, Path]:
    """(the SQLite file, the live file) of ``ref``'s cache."""
    stem = cache_dir / hashlib.sha1(ref.encode()).hexdigest()[:16]
    return stem.with_suffix(".sqlite"), stem.with_suffix(".live")


# --- the live file: marshal, for reads that must start fast ----------------------------------


def _row(obj: Any) -> tuple[Any, ...]:
    return tuple([getattr(obj, name) for name in _FIELDS[type(obj)]])


def _fold_to_data(fold: entities.Fold) -> dict[str, Any]:
    """Plain values of an in-memory fold, for marshal."""
    data: dict[str, Any] = {}
    for f in dataclasses.fields(fold):
        value = getattr(fold, f.name)
        if f.name in _TABLES:
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
        if f.name in _TABLES:
            cls = _TABLES[f.name]
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
        raw = path.read_bytes()
    except OSError:
        return None
    head = len(_LIVE_MAGIC) + 32
    if not raw.startswith(_LIVE_MAGIC) or hashlib.sha256(raw[head:]).digest() != raw[len(_LIVE_MAGIC):head]:
        return None
    try:
        key, tip, data = marshal.loads(raw[head:])
        return (tip, _fold_from_data(data)) if key == _LIVE_KEY else None
    except Exception:  # any decoding trouble means: rebuild
        return None


def save_live(path: Path, tip: str, fold: entities.Fold) -> None:
    """Write atomically (temp file + rename); a failure only costs a rebuild later."""
    try:
        body = marshal.dumps((_LIVE_KEY, tip, _fold_to_data(fold)))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(_LIVE_MAGIC + hashlib.sha256(body).digest() + body)
        os.replace(tmp, path)
    except (OSError, ValueError):
        pass


def split(fold: entities.Fold) -> entities.Fold:
    """The live part of an in-memory fold: goals in play and what they reference, and
    everything ledger-wide (the same selection as :meth:`Projection.live`)."""
    live_goals = {g for g, goal in fold.goals.items() if goal.state in _LIVE_STATES}
    part = dataclasses.replace(fold)
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
