"""Derived data is checked before use, never required (issue 22): a cache that is damaged,
read-only, locked by another process or cannot be created costs a rebuild or an in-memory
fold with a one-line notice, never an exit 3 and never a wrong answer. Real SQLite files,
real processes holding their locks, real git.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import git, invoke


def _cache(repo: Path) -> Path:
    (found,) = (repo / ".git" / "loopx" / "cache").glob("*.sqlite")
    return found


def _notes(repo: Path, count: int = 6) -> None:
    for n in range(count):
        assert invoke(repo, "note", "add", f"note {n}").code == 0


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for at in range(4096 + 100, len(data), 31):
        data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def _drop_live(repo: Path) -> None:
    for live in (repo / ".git" / "loopx" / "cache").glob("*.live"):
        live.unlink()


def _assert_whole(repo: Path, count: int) -> None:
    listed = invoke(repo, "note", "list")
    assert listed.code == 0, listed.err
    assert all(f"note {n}" in listed.out for n in range(count)), listed.out


def _in_place(db: Path, make: str) -> None:
    """The cache file replaced by something that is not one (a hostile run's neighbours)."""
    db.unlink()
    {"a folder": lambda: (db.mkdir(), (db / "x").write_text("x")),
     "a link to /dev/full": lambda: db.symlink_to("/dev/full"),
     "a link to /dev/null": lambda: db.symlink_to("/dev/null"),
     "a broken link": lambda: db.symlink_to(db.parent / "gone" / "x"),
     "a fifo": lambda: os.mkfifo(db)}[make]()


IN_PLACE = ["a folder", "a link to /dev/full", "a link to /dev/null", "a broken link", "a fifo"]


@pytest.mark.parametrize("damage", ["flipped bytes", "not a database", "empty file",
                                    "an empty seal key", "a folder for the seal key",
                                    *IN_PLACE])
def test_a_damaged_cache_is_rebuilt_with_a_notice(ledger: object, repo: Path,
                                                  damage: str) -> None:
    _notes(repo)
    db = _cache(repo)
    (repo / ".git" / "loopx" / "cache" / f"{db.name}-wal").unlink(missing_ok=True)
    {"flipped bytes": lambda: _flip(db), "not a database": lambda: db.write_bytes(b"x" * 8192),
     "empty file": lambda: db.write_bytes(b""),
     "an empty seal key": lambda: (db.parent / "seal.key").write_bytes(b""),
     "a folder for the seal key": lambda: ((db.parent / "seal.key").unlink(),
                                           (db.parent / "seal.key").mkdir()),
     **{make: lambda: _in_place(db, damage) for make in IN_PLACE}}[damage]()
    _drop_live(repo)
    for args in (("note", "list"), ("note", "add", "after"), ("status", "--all"), ("log",)):
        result = invoke(repo, *args)
        assert result.code == 0, (args, result.err)
    _assert_whole(repo, 6)
    assert "after" in invoke(repo, "note", "list").out
    assert invoke(repo, "doctor", "--verify").code == 0


def test_a_damaged_cache_read_by_a_view_is_answered_from_the_events(ledger: object,
                                                                    repo: Path) -> None:
    _notes(repo)
    db = _cache(repo)
    _flip(db)
    _drop_live(repo)
    result = invoke(repo, "note", "list")
    assert result.code == 0 and "note 5" in result.out, result.err


@pytest.fixture
def immutable(repo: Path) -> Iterator[Path]:
    """The cache file made read-only even for root (chattr +i), undone afterwards."""
    paths: list[Path] = []

    def make(path: Path) -> None:
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not available here")
        paths.append(path)

    yield make  # type: ignore[misc]
    for path in paths:
        subprocess.run(["chattr", "-i", str(path)], check=False)


def test_a_read_only_cache_means_an_in_memory_fold(ledger: object, repo: Path,
                                                  immutable: object) -> None:
    _notes(repo)
    folder = _cache(repo).parent
    for path in [*folder.iterdir(), folder]:  # the database, its -wal and -shm, the folder
        immutable(path)  # type: ignore[operator]
    written = invoke(repo, "note", "add", "on a read-only cache")
    assert written.code == 0, written.err
    assert "folding in memory" in written.err and len(written.err.strip().splitlines()) == 1
    listed = invoke(repo, "note", "list")
    assert listed.code == 0 and "on a read-only cache" in listed.out, listed.err


HOLD = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.read()
"""


def test_a_cache_locked_by_another_process_means_an_in_memory_fold(ledger: object,
                                                                   repo: Path) -> None:
    _notes(repo, 2)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(_cache(repo))],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        written = invoke(repo, "note", "add", "beside a lock")
        assert written.code == 0, written.err
        assert "database is locked" in written.err and "folding in memory" in written.err
    finally:
        holder.communicate("")
    _drop_live(repo)
    _assert_whole(repo, 2)
    assert "beside a lock" in invoke(repo, "note", "list").out


def test_a_cache_folder_that_cannot_be_made_means_an_in_memory_fold(repo: Path) -> None:
    assert invoke(repo, "init").code == 0
    cache = repo / ".git" / "loopx" / "cache"
    for path in cache.iterdir():
        path.unlink()
    cache.rmdir()
    cache.write_text("a file where the folder was\n")
    _notes(repo, 2)
    _assert_whole(repo, 2)
    assert git(repo, "rev-list", "--count", "refs/heads/loopx/state") == "3"


def _edit_rows(db: Path, sql: str) -> int:
    import sqlite3

    conn = sqlite3.connect(db, isolation_level=None)
    try:
        return conn.execute(sql).rowcount
    finally:
        conn.close()


def test_wrong_rows_in_a_valid_database_are_never_believed(ledger: object, repo: Path) -> None:
    """A todo marked done by hand in the cache (valid SQLite, valid JSON): a read shows it
    open, as the events say, and the claim that follows is checked against the events."""
    assert invoke(repo, "goal", "add", "G", "--accept", "it works", "--id", "g").code == 0
    assert invoke(repo, "todo", "add", "g", "first step", "--id", "t").code == 0
    db = _cache(repo)
    assert _edit_rows(db, "UPDATE sealed_rows SET data = replace(data, '\"open\"', '\"done\"') "
                          "WHERE kind = 'todos'") == 1
    _drop_live(repo)
    shown = invoke(repo, "todo", "show", "t")
    assert shown.code == 0 and "does not match its seal" in shown.err, shown.err
    assert "open" in shown.out and "done" not in shown.out, shown.out
    assert _edit_rows(_cache(repo), "UPDATE sealed_rows SET data = replace(data, '\"open\"', "
                                    "'\"done\"') WHERE kind = 'todos'") == 1
    claimed = invoke(repo, "todo", "claim", "t")
    assert claimed.code == 0, claimed.err
    assert invoke(repo, "doctor", "--verify").code == 0


def test_an_edited_row_makes_the_write_use_a_fold_of_the_events(ledger: object,
                                                                repo: Path) -> None:
    _notes(repo, 2)
    db = _cache(repo)
    assert _edit_rows(db, "UPDATE meta SET v = '0' WHERE k = 'events'") == 1
    _drop_live(repo)
    written = invoke(repo, "note", "add", "after the edit")
    assert written.code == 0 and "match their seal" in written.err, written.err
    verified = invoke(repo, "doctor", "--verify")
    assert verified.code == 0, verified.out + verified.err
    _assert_whole(repo, 2)


def test_rows_copied_from_another_clones_cache_are_never_believed(ledger: object, repo: Path,
                                                                  tmp_path: Path) -> None:
    _notes(repo, 2)
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(repo), str(other))
    git(other, "fetch", "-q", "origin", "refs/heads/loopx/state:refs/heads/loopx/state")
    assert invoke(other, "note", "list").code == 0
    assert invoke(other, "note", "add", "only in the other").code == 0
    theirs = _cache(other)
    ours = _cache(repo)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{ours}{suffix}").unlink(missing_ok=True)
    ours.write_bytes(theirs.read_bytes())
    _drop_live(repo)
    listed = invoke(repo, "note", "list")
    assert listed.code == 0 and "only in the other" not in listed.out, listed.out
    assert "note 1" in listed.out


def test_doctor_reports_a_cache_it_cannot_trust_and_verify_rebuilds_it(ledger: object,
                                                                        repo: Path) -> None:
    assert invoke(repo, "goal", "add", "G", "--accept", "it works", "--id", "g").code == 0
    assert "cache" not in invoke(repo, "doctor").out
    assert _edit_rows(_cache(repo), "UPDATE sealed_rows SET data = data || ' '") >= 1
    report = invoke(repo, "doctor")
    assert report.code == 0 and "do not match their seal" in report.out, report.out
    assert invoke(repo, "doctor", "--verify").code == 0
    assert "seal" not in invoke(repo, "doctor").out


def test_a_commit_beside_a_locked_cache_is_recorded_without_a_stall(repo: Path) -> None:
    """A real `git commit` with the hooks installed while another process holds the cache's
    write lock: the commit returns and its evidence is recorded (through an in-memory fold,
    after a wait of at most 2 s; the stall was 37 s before)."""
    for args in (("init",), ("goal", "add", "G", "--id", "g1", "--accept", "works"),
                 ("todo", "add", "g1", "T", "--id", "t1"), ("hooks", "install")):
        assert invoke(repo, *args).code == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(_cache(repo))],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        (repo / "file").write_text("x\n")
        git(repo, "add", "file")
        proc = subprocess.run(["git", "commit", "-q", "-m", "Fix it\n\nLoopx-Todo: t1"],
                              cwd=repo, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    finally:
        holder.communicate("")
    listed = invoke(repo, "evidence", "list", "--json")
    assert listed.code == 0, listed.err
    assert [e["commit"] for e in listed.json()["evidence"]] == [git(repo, "rev-parse", "HEAD")]  # type: ignore[index, union-attr]
