"""A process id read from a file (a pid file, a claim's or a mark's name) that is not one:
superscripts and other scripts' digits pass str.isdigit(), and int() refuses the first and
reads the second; a number past the kernel's range passes int() and makes os.kill()
overflow. Each stopped the command that met it ("unexpected ValueError/OverflowError")."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import invoke
from loopx.hooks import spool, unrecorded
from loopx.storage import gateway, locks
from loopx.storage.store import Store

NOT_PIDS = ["²", "³4", "٣", "１２", "99999999999999999999", "2147483648", "0", "-1", "", "1 2",
            "0x10"]


@pytest.mark.parametrize("text", NOT_PIDS)
def test_text_that_is_not_a_pid_is_none(text: str) -> None:
    assert locks.pid_of(text) is None


def test_a_pid_is_read_with_its_line_break() -> None:
    assert locks.pid_of(" 4242\n") == 4242 and locks.pid_of(str(os.getpid())) == os.getpid()


def test_a_zombie_is_not_alive_and_a_reaped_one_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert locks.alive(child.pid)
    os.kill(child.pid, signal.SIGKILL)
    for _ in range(500):  # killed but not reaped: a zombie until we wait for it
        if not locks.alive(child.pid):
            break
        time.sleep(0.01)
    assert not locks.alive(child.pid)
    child.wait()
    assert not locks.alive(child.pid)


@pytest.mark.parametrize("text", ["²", "99999999999999999999"])
def test_a_claim_named_with_no_pid_is_taken_back(tmp_path: Path, text: str) -> None:
    entry = spool.append(tmp_path, hook="h", inputs={}, actor="a")
    entry.path.rename(entry.path.with_name(f"{entry.path.name}.claimed-{text}"))
    assert [e.id for e in spool.pending(tmp_path)] == [entry.id]


@pytest.mark.parametrize("text", ["²", "99999999999999999999", "٣"])
def test_a_gc_pid_git_would_not_honour_names_no_gc(repo: Path, text: str) -> None:
    """git's gc reads gc.pid as "<number> <host>" no older than 12 hours (builtin/gc.c):
    any other names no running gc, to git and so to a write that would outwait one."""
    pid_file = repo / ".git" / "gc.pid"
    store = Store(gateway.discover(repo))
    pid_file.write_text(f"{text} {socket.gethostname()}")
    assert store._running_gc() is None
    pid_file.write_text(f"{os.getpid()} {socket.gethostname()}")
    assert store._running_gc() is not None
    pid_file.write_text(f"{os.getpid()} elsewhere.example")
    assert store._running_gc() is not None
    old = time.time() - 13 * 3600
    os.utime(pid_file, (old, old))
    assert store._running_gc() is None


@pytest.mark.parametrize("text", ["²", "99999999999999999999", "٣"])
def test_a_write_beside_a_hand_edited_gc_pid_or_lock_goes_on(repo: Path, text: str) -> None:
    assert invoke(repo, "init").code == 0
    (repo / ".git" / "gc.pid").write_text(f"{text} {socket.gethostname()}")
    assert invoke(repo, "note", "add", "beside a gc.pid").code == 0
    (repo / ".git" / "loopx" / "write.lock").write_text(text)
    result = invoke(repo, "note", "add", "beside a write.lock")
    assert result.code == 0 and "unexpected" not in result.err, result.err


@pytest.mark.parametrize("text", ["²", "99999999999999999999"])
def test_a_hook_mark_or_reflog_time_with_no_number_is_not_one(tmp_path: Path, text: str) -> None:
    marks = tmp_path / unrecorded.RUNNING
    marks.mkdir()
    (marks / text).write_text("")
    alive, dead = unrecorded._marks(tmp_path)  # a dead hook's, naming no one
    assert not alive and [(d.path.name, d.known) for d in dead] == [(text, False)]
    unrecorded.mark_read(tmp_path, {}, [d.path for d in dead])
    assert not (marks / text).exists()
    sha = "a" * 40
    line = f"{'0' * 40} {sha} A U Thor <a@x> {text} +0000\tcommit: x\n"
    assert [found[0] for found in unrecorded._commits(line)] == (
        [sha] if text.isascii() else [])
