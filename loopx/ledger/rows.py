"""The projection cache's database: the whole fold of a state tip in SQLite, one row per
entity (JSON of its fields), read on demand through :class:`loopx.projection.tables.Table` and written back by the rows a
write touched (see :mod:`loopx.ledger.cache` for the cache as a whole).

Imported only when the rows are needed (a write, a read the live file cannot answer, a
replay): a warm `status` is answered by the live file without loading SQLite.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable, Optional

from loopx.ledger import cache
from loopx.ledger.cache import BY_GOAL, FIELDS, INDEXES, LIVE_STATES, SCALARS, TABLES
from loopx.projection import entities, tables
from loopx.version import SCHEMA_VERSION, __version__

# What a row means; checkpoints carry it too. rows-3: a checkpoint counts only when signed
# (caches that started from an unsigned one under rows-2 are rebuilt).
ROWS_KEY = f"{SCHEMA_VERSION}:{__version__}:rows-3"


def _db_key() -> str:
    """What a database file holds: rows of ROWS_KEY, each sealed (the ``seal`` column)."""
    return f"{ROWS_KEY}:sealed-1"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sealed_rows (
    kind TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, goal TEXT,
    data TEXT NOT NULL, seal BLOB NOT NULL, PRIMARY KEY (kind, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sealed_rows_by_seq ON sealed_rows (kind, seq);
CREATE INDEX IF NOT EXISTS sealed_rows_by_goal ON sealed_rows (goal, kind);
"""


def _encode_row(obj: Any, *, ascii: bool = False) -> str:
    values = [getattr(obj, name) for name in FIELDS[type(obj)]]
    return json.dumps(values, ensure_ascii=ascii, separators=(",", ":"), sort_keys=True)


def _decoder(cls: type) -> Callable[[str], Any]:
    def decode(text: str) -> Any:
        return cls(*json.loads(text))

    return decode


def _json(value: Any, *, ascii: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ascii, separators=(",", ":"), sort_keys=True)


def _goal_of(kind: str, key: str, value: Any) -> Optional[str]:
    if kind == "goals":
        return key
    if kind == "quotas":
        return key or None
    goal = getattr(value, "goal", None)
    return goal if isinstance(goal, str) else None


# A row's columns as read, with whether its seal matches (computed by SQLite, through the
# connection's ``loopx_seal``): a row that does not is never believed.
_SEALED = "data, seal = loopx_seal(kind, id, goal, data), kind, id"


class DoubtfulRow(sqlite3.DatabaseError):
    """A row of the cache whose seal does not match its contents (edited, damaged, or from
    another cache): the cache is rebuilt from the events (see :func:`trouble`)."""


def _checked(decode: Callable[[str], Any]) -> Callable[[Any], Any]:
    def read(row: Any) -> Any:
        data, ok, kind, key = row
        if not ok:
            raise DoubtfulRow(f"row {kind} {key} does not match its seal")
        return decode(data)

    return read


def seal_function(key: bytes) -> Callable[[str, str, Optional[str], str], bytes]:
    """The keyed digest that binds a row to its kind, id, goal and data."""
    def seal(kind: str, id: str, goal: Optional[str], data: str) -> bytes:
        text = f"{kind}\0{id}\0{goal or ''}\0{data}".encode("utf-8", "surrogatepass")
        return hashlib.blake2b(text, key=key, digest_size=16).digest()

    return seal


class _Rows:
    """The stored rows of one kind, as values (a :class:`loopx.projection.tables.Source`):
    each row checked against its seal as it is read."""

    def __init__(self, conn: sqlite3.Connection, kind: str, decode: Callable[[str], Any]) -> None:
        self._conn, self.kind = conn, kind
        self._decode = _checked(decode)

    def get(self, key: str) -> Optional[Any]:
        try:
            found = self._conn.execute(f"SELECT {_SEALED} FROM sealed_rows WHERE kind=? AND id=?",
                                       (self.kind, key)).fetchone()
        except UnicodeEncodeError:  # no row has it: a forged file name not in UTF-8 (a problem's)
            return None
        return None if found is None else self._decode(found)

    def ids(self) -> list[str]:
        return [str(row[0]) for row in self._conn.execute(
            "SELECT id FROM sealed_rows WHERE kind=? ORDER BY seq", (self.kind,))]

    def count(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM sealed_rows WHERE kind=?",
                                      (self.kind,)).fetchone()[0])

    def with_prefix(self, prefix: str, *, limit: int) -> list[str]:
        return [str(row[0]) for row in self._conn.execute(
            "SELECT id FROM sealed_rows WHERE kind=? AND id >= ? AND id < ? ORDER BY id LIMIT ?",
            (self.kind, prefix, prefix + "\U0010ffff", limit))]

    def items(self) -> list[tuple[str, Any]]:
        rows = self._conn.execute(f"SELECT id, {_SEALED} FROM sealed_rows WHERE kind=? ORDER BY seq",
                                  (self.kind,)).fetchall()
        return [(str(key), self._decode(row)) for key, *row in rows]

    def all(self) -> list[Any]:
        return [value for _, value in self.items()]


def _table(conn: sqlite3.Connection, kind: str, decode: Callable[[str], Any]) -> tables.Table:
    return tables.Table(_Rows(conn, kind, decode))


def _problem(text: str) -> entities.Problem:
    return entities.Problem(*json.loads(text))


# The longest a command waits for another process's write lock on the cache: past it, the
# command folds in memory (slower, as correct) rather than stall a git hook or a user.
CACHE_WAIT_S = 2.0
# Cache files this process could not use (read-only, locked, no room): folded in memory.
_IN_MEMORY: set[str] = set()
OPENED: set[str] = set()  # every cache file this process opened


def trouble_all(exc: BaseException) -> list[str]:
    """:func:`trouble` for every cache this process opened (an error raised where the path
    is not known: a table read on demand by a view)."""
    return [trouble(exc, Path(path)) for path in sorted(OPENED)]


def trouble(exc: BaseException, path: Path) -> str:
    """Act on an error of the cache at ``path`` and say so in one line: a damaged database is
    removed (the next use rebuilds it from the events); one that cannot be written now
    (read-only, locked, a full disk) is left alone and this process folds in memory."""
    if isinstance(exc, sqlite3.OperationalError) or isinstance(exc, OSError):
        _IN_MEMORY.add(str(path))
        why = str(exc)
        with contextlib.suppress(OSError):
            if why == "disk I/O error" and os.statvfs(path.parent).f_bavail == 0:
                why = "no space left on device"  # what SQLite calls a write that found no room
        return (f"loopx: the cache {path} cannot be used now ({why}); folding in memory "
                "(slower, as correct)")
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            Path(f"{path}{suffix}").unlink()
    return f"loopx: the cache {path} was damaged ({exc}); rebuilding it from the events"


class Projection:
    """The SQLite half of the cache for one state ref (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: Optional[sqlite3.Connection] = None

    @property
    def in_memory(self) -> bool:
        return str(self.path) in _IN_MEMORY or str(self.path) == ":memory:"

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self._conn = self._open(":memory:" if self.in_memory else self.path)
            except (sqlite3.OperationalError, OSError) as exc:
                print(trouble(exc, self.path), file=sys.stderr, flush=True)
                self._conn = self._open(":memory:")
            if self._meta("key") != _db_key():
                self.clear()
        return self._conn

    def _open(self, where: Path | str) -> sqlite3.Connection:
        if where != ":memory:":
            OPENED.add(str(self.path))
            self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(where, timeout=CACHE_WAIT_S, isolation_level=None)
        self._key = (os.urandom(32) if where == ":memory:"
                     else cache.seal_key(self.path.parent))
        conn.create_function("loopx_seal", 4, seal_function(self._key), deterministic=True)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # derived data: a lost tail is replayed
            conn.executescript(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _meta(self, key: str) -> Optional[str]:
        found = self.conn.execute("SELECT v FROM meta WHERE k=?", (key,)).fetchone()
        return None if found is None else str(found[0])

    def _seal_meta(self) -> None:
        """Seal what the meta table says (the tip, the scalars), inside the transaction."""
        conn = self.conn
        conn.execute("DELETE FROM meta WHERE k='seal'")
        conn.execute("INSERT INTO meta VALUES ('seal', ?)", (self._meta_seal(),))

    def _meta_seal(self) -> str:
        pairs = self.conn.execute("SELECT k, v FROM meta WHERE k != 'seal' ORDER BY k").fetchall()
        return hashlib.blake2b(_json(pairs).encode(), key=self._key, digest_size=16).hexdigest()

    def _check_meta(self) -> None:
        if self._meta("seal") != self._meta_seal():
            raise DoubtfulRow("the cache's tip and counters do not match their seal")

    def clear(self) -> None:
        """Forget everything (another schema version, a corrupt file)."""
        conn = self.conn
        self.end()
        conn.execute("BEGIN IMMEDIATE")
        # Rows of another version (of loopx, or of this table) go; an older loopx keeps its
        # own table, ``rows``, so two versions sharing a clone never misread each other's.
        conn.execute("DROP TABLE IF EXISTS sealed_rows")
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute("DELETE FROM meta")
        conn.execute("INSERT INTO meta VALUES ('key', ?)", (_db_key(),))
        self._seal_meta()
        conn.execute("COMMIT")

    def tip(self) -> Optional[str]:
        """The state commit the rows are the fold of (None: empty)."""
        try:
            self._check_meta()
            return self._meta("tip")
        except DoubtfulRow:
            raise
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
        self._check_meta()
        scalars = {k: json.loads(v) for k, v in conn.execute(
            f"SELECT k, v FROM meta WHERE k IN ({','.join('?' * len(SCALARS))})", SCALARS)}
        fold = entities.Fold(
            remaps=_table(conn, "remaps", json.loads),
            problems=tables.Appended(_Rows(conn, "problems", _problem), "problems"),
            unknown=tables.Appended(_Rows(conn, "unknown", json.loads), "unknown"),
            extra={"signed": _table(conn, "signed", json.loads)},
        )
        for kind, cls in TABLES.items():
            setattr(fold, kind, _table(conn, kind, _decoder(cls)))
        for index in INDEXES:
            setattr(fold, index, _table(conn, index, json.loads))
        for name in SCALARS:
            if name in scalars:
                setattr(fold, name, scalars[name])
        fold.last_key = (int(fold.last_key[0]), str(fold.last_key[1]))
        return fold

    def commit(self, tip: str, fold: entities.Fold) -> None:
        """Write what the transaction's fold read or changed, and the new tip; then commit."""
        conn = self.conn
        for kind in (*TABLES, "remaps", *INDEXES):
            self._write_table(getattr(fold, kind), kind)
        signed = fold.extra.get("signed")
        if isinstance(signed, tables.Table):
            self._write_table(signed, "signed")
        for name in ("problems", "unknown"):
            seq = self._next_seq(name)
            rows = getattr(fold, name).new
            conn.executemany(_INSERT_NO_GOAL, [
                (name, f"{seq + n:012d}", seq + n, _encode(value, ascii=True)) for n, value in enumerate(rows)])
        self._write_scalars(tip, fold)
        conn.execute("COMMIT")

    def _write_table(self, table: Any, kind: str) -> None:
        conn = self.conn
        conn.executemany("DELETE FROM sealed_rows WHERE kind=? AND id=?",
                         [(kind, key) for key in table.gone])
        added = set(table.added)
        seq = self._next_seq(kind)
        for key, value in table.touched.items():
            if key in added:
                continue
            conn.execute("UPDATE sealed_rows SET data=?1, goal=?2, seal=loopx_seal(?3, ?4, ?2, ?1) "
                         "WHERE kind=?3 AND id=?4",
                         (_encode(value), _goal_of(kind, key, value), kind, key))
        conn.executemany(_INSERT, [
            (kind, key, seq + n, _goal_of(kind, key, table.touched[key]),
             _encode(table.touched[key])) for n, key in enumerate(table.added)])

    def _next_seq(self, kind: str) -> int:
        found = self.conn.execute("SELECT MAX(seq) FROM sealed_rows WHERE kind=?", (kind,)).fetchone()
        return 0 if found[0] is None else int(found[0]) + 1

    def _write_scalars(self, tip: str, fold: entities.Fold) -> None:
        values = [("tip", tip)] + [(name, _json(getattr(fold, name))) for name in SCALARS]
        values.append(("live_goals", _json(self._live_goals(fold))))
        self.conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", values)
        self._seal_meta()

    def _live_goals(self, fold: entities.Fold) -> list[str]:
        """The goals in play after this write: those before, updated by the goals it touched
        (a cached fold's), or all of an in-memory fold's: never a scan of every goal row."""
        goals = fold.goals
        if not isinstance(goals, tables.Table):
            return sorted(g for g, goal in goals.items() if goal.state in LIVE_STATES)
        live = set(json.loads(self._meta("live_goals") or "[]")) - goals.gone
        for key, goal in goals.touched.items():
            (live.add if goal.state in LIVE_STATES else live.discard)(key)
        return sorted(live)

    def replace(self, tip: str, fold: entities.Fold) -> None:
        """Store a whole in-memory fold (after a replay) as the fold of ``tip``."""
        conn = self.conn
        self.end()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("DELETE FROM sealed_rows")
            for kind in TABLES:  # generators: the rows are never all in memory as text
                table = getattr(fold, kind)
                conn.executemany(_INSERT, (
                    (kind, key, n, _goal_of(kind, key, value), _encode_row(value))
                    for n, (key, value) in enumerate(table.items())))
            simple = {"remaps": fold.remaps, "signed": fold.extra.get("signed") or {},
                      **{index: getattr(fold, index) for index in INDEXES}}
            for kind, mapping in simple.items():
                conn.executemany(_INSERT_NO_GOAL, [
                    (kind, key, n, _json(value)) for n, (key, value) in enumerate(mapping.items())])
            for kind in ("problems", "unknown"):
                conn.executemany(_INSERT_NO_GOAL, [
                    (kind, f"{n:012d}", n, _encode(value, ascii=True))
                    for n, value in enumerate(getattr(fold, kind))])
            self._write_scalars(tip, fold)
            conn.execute("DELETE FROM meta WHERE k='source'")  # replayed here
            self._seal_meta()
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
        for kind, key, goal, data, ok in self.conn.execute(
                "SELECT kind, id, goal, data, seal = loopx_seal(kind, id, goal, data) FROM sealed_rows "
                "ORDER BY kind, seq"):
            if not ok:
                raise DoubtfulRow(f"row {kind} {key} does not match its seal")
            rank = rank + 1 if kind == kind_now else 0
            kind_now = kind
            yield f"{kind}\t{key}\t{rank}\t{goal or ''}\t{data}\n"

    def scalars(self) -> dict[str, Any]:
        """The fold's values outside its tables (name, config, counters, last key)."""
        return {k: json.loads(v) for k, v in self.conn.execute(
            f"SELECT k, v FROM meta WHERE k IN ({','.join('?' * len(SCALARS))})", SCALARS)}

    def load_rows(self, tip: str, lines: Iterator[str], scalars: dict[str, Any],
                  source: str) -> None:
        """Replace everything with rows from :meth:`dump_rows` lines, as the fold of ``tip``;
        ``source`` says where they came from (a signed checkpoint: checkpoints.source)."""
        conn = self.conn
        self.end()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("DELETE FROM sealed_rows")
            conn.executemany(_INSERT, (
                (kind, key, int(rank), goal or None, data)
                for kind, key, rank, goal, data in (line.rstrip("\n").split("\t", 4)
                                                    for line in lines)))
            state = FIELDS[entities.Goal].index("state")
            live = sorted(str(key) for key, text in conn.execute(
                "SELECT id, data FROM sealed_rows WHERE kind='goals'")
                if json.loads(text)[state] in LIVE_STATES)  # once per checkpoint loaded
            conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                             [("tip", tip), ("source", source), ("live_goals", _json(live))]
                             + [(k, _json(scalars[k])) for k in SCALARS if k in scalars])
            self._seal_meta()
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def doubtful(self) -> int:
        """How many rows do not match their seal (a scan of every row: for `doctor`)."""
        found = self.conn.execute(
            "SELECT COUNT(*) FROM sealed_rows WHERE seal IS NOT loopx_seal(kind, id, goal, data)")
        return int(found.fetchone()[0])

    def source(self) -> Optional[str]:
        """Where the rows came from when not from replaying events here: a checkpoint's name."""
        return self._meta("source")

    def live(self) -> entities.Fold:
        """An in-memory fold of the rows in play (see :func:`split`), read in the open
        transaction: what the live file holds."""
        conn = self.conn
        fold = self.fold()
        live_goals = json.loads(self._meta("live_goals") or "[]")
        part = entities.Fold(**{name: getattr(fold, name) for name in SCALARS},
                             remaps=dict(fold.remaps.items()), problems=list(fold.problems),
                             unknown=list(fold.unknown), extra={"signed": {}})
        source = self.source()
        if source:  # status says when the rows came from a signed checkpoint
            part.extra["source"] = source
        for kind in ("wakes", "effects", "sessions", "dismissed"):
            setattr(part, kind, dict(getattr(fold, kind).items()))
        marks = ",".join("?" * len(live_goals))
        for kind in BY_GOAL:
            rows = conn.execute(
                f"SELECT seq, id, {_SEALED} FROM sealed_rows WHERE kind=? AND (goal IS NULL OR goal IN "
                f"({marks}))", (kind, *live_goals)).fetchall()
            setattr(part, kind, _in_order(kind, rows))
        wanted = {kind: _referenced(part, kind) for kind in ("todos", "gates")}
        for kind, keys in wanted.items():
            if keys:
                rows = conn.execute(
                    f"SELECT seq, id, {_SEALED} FROM sealed_rows WHERE kind=? AND id IN "
                    f"({','.join('?' * len(keys))})", (kind, *keys)).fetchall()
                setattr(part, kind, {**getattr(part, kind), **_in_order(kind, rows)})
                setattr(part, kind, dict(sorted(getattr(part, kind).items(),
                                                key=lambda item: _SEQ[id(item[1])])))
        return part


_SEQ: dict[int, int] = {}  # row object -> its seq, while live() orders what it read


def _in_order(kind: str, rows: list[Any]) -> dict[str, Any]:
    decode = _checked(_decoder(TABLES[kind]))
    out: dict[str, Any] = {}
    for seq, key, *row in sorted(rows, key=lambda r: (r[0], r[1])):
        out[str(key)] = value = decode(row)
        _SEQ[id(value)] = seq
    return out


def _referenced(part: entities.Fold, kind: str) -> list[str]:
    """Todos and gates outside the live goals that a live todo depends on or waits for (the
    views read them)."""
    field = "depends_on" if kind == "todos" else "gates"
    table = getattr(part, kind)
    return sorted({ref for todo in part.todos.values() for ref in getattr(todo, field)
                   if ref not in table})


_INSERT = "INSERT INTO sealed_rows VALUES (?1, ?2, ?3, ?4, ?5, loopx_seal(?1, ?2, ?4, ?5))"
_INSERT_NO_GOAL = "INSERT INTO sealed_rows VALUES (?1, ?2, ?3, NULL, ?4, loopx_seal(?1, ?2, NULL, ?4))"


def _encode(value: Any, *, ascii: bool = False) -> str:
    """A row's text; ``ascii``: all of it (a problem's row names a file as git listed it, and
    a forged name that is not UTF-8 is held as surrogates, which sqlite cannot store: \\u
    escapes read back as the same text)."""
    if dataclasses.is_dataclass(value):
        return _encode_row(value, ascii=ascii)
    return _json(value, ascii=ascii)


