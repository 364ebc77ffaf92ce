"""Long work shows a progress bar on a terminal and nothing elsewhere: the real command in a
real process, its stdout and stderr each on a pseudo-terminal (the pty module) or on pipes.

The bar waits a second before it shows (so quick work stays silent); these runs set that
wait to 0 in the process they start, so that a bar shows however fast this machine is.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from conftest import git

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import ledgers  # noqa: E402  (benchmarks/ledgers.py: a long ledger in a second)

EVENTS = 2500  # above loopx.ledger.progress.MIN_ITEMS: long enough to report
NOW = "2026-01-01T00:00:00Z"
MAIN = ("import sys; from loopx.cli import terminal; terminal.Bar.DELAY_S = 0; "
        "from loopx.cli.launch import main; main(sys.argv[1:])")
SGR = re.compile(rb"\x1b\[[0-9;]*m")  # the colours a terminal gets and a pipe does not


def _pty() -> tuple[int, int]:
    """A pseudo-terminal of 100x30, as a terminal window is (a bare pty reports 0x0)."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    return main, child


def _run(cwd: Path, *args: str, terminal: bool) -> tuple[bytes, bytes, int]:
    """``git loopx ARGS`` with stdout and stderr on two terminals (or two pipes); what each
    received, with a terminal's CR LF read back as LF, and the exit code."""
    env = dict(os.environ, LOOPX_ACTOR="agent:a@x", GIT_PAGER="cat")
    argv = [sys.executable, "-c", MAIN, "--now", NOW, *args]
    if not terminal:
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=300)
        return proc.stdout, proc.stderr, proc.returncode
    (out_main, out_child), (err_main, err_child) = _pty(), _pty()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=out_child, stderr=err_child)
    os.close(out_child)
    os.close(err_child)
    got = {out_main: b"", err_main: b""}
    while len(got) > sum(1 for fd in got if fd < 0):
        ready, _, _ = select.select([fd for fd in got if fd >= 0], [], [], 300)
        assert ready, "the command printed nothing for 300 s"
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the other side is closed
                data = b""
            if data:
                got[fd] += data
            else:
                got[-fd - 1] = got.pop(fd)  # done: kept under a closed key
    code = proc.wait(timeout=60)
    out, err = got[-out_main - 1], got[-err_main - 1]
    os.close(out_main)
    os.close(err_main)
    return out.replace(b"\r\n", b"\n"), err.replace(b"\r\n", b"\n"), code


def _bar(err: bytes, task: str) -> bool:
    """Whether ``err`` holds tqdm's bar for ``task`` (its description and a percentage)."""
    return f"loopx: {task}:".encode() in err and re.search(rb"\d+%\|", err) is not None


@pytest.fixture
def long(tmp_path: Path) -> ledgers.Built:
    return ledgers.make_repo(tmp_path, EVENTS, name="origin")


def _cold(repo: Path) -> None:
    """Forget the projection cache, so the next command replays every event file."""
    for name in ("cache",):
        subprocess.run(["rm", "-rf", str(repo / ".git" / "loopx" / name)], check=True)


def test_a_cold_replay_shows_a_bar_on_a_terminal_and_prints_the_same_answer(
        long: ledgers.Built) -> None:
    _cold(long.path)
    out_tty, err_tty, code_tty = _run(long.path, "todo", "list", terminal=True)
    _cold(long.path)
    out_pipe, err_pipe, code_pipe = _run(long.path, "todo", "list", terminal=False)
    assert code_tty == code_pipe == 0
    assert _bar(err_tty, "replaying the ledger")
    assert b"%|" not in err_pipe and b"loopx: replaying" not in err_pipe
    assert SGR.sub(b"", out_tty) == out_pipe and b"t-g-" in out_pipe
    assert b"\r" not in out_tty  # the bar never touched stdout


def test_json_on_a_terminal_draws_no_bar(long: ledgers.Built) -> None:
    _cold(long.path)
    out, err, code = _run(long.path, "todo", "list", "--format", "json", terminal=True)
    assert code == 0 and out.startswith(b"{")
    assert b"%|" not in err


def test_a_fresh_clone_shows_its_adoption_and_a_big_fetch_its_check(
        long: ledgers.Built, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(long.path), str(clone))
    out_tty, err_tty, code = _run(clone, "todo", "list", terminal=True)
    assert code == 0 and _bar(err_tty, "adopting origin/loopx/state")
    long.more(EVENTS)  # the origin moves on by as many events again
    out_fetch, err_fetch, code = _run(clone, "fetch", terminal=True)
    assert code == 0, err_fetch
    assert _bar(err_fetch, "fetching from origin") and b"received" in out_fetch


def test_a_piped_adoption_and_fetch_print_no_bar(long: ledgers.Built, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(long.path), str(clone))
    assert _run(clone, "todo", "list", terminal=False)[1] == b""
    long.more(EVENTS)
    out, err, code = _run(clone, "fetch", terminal=False)
    assert code == 0 and b"%|" not in err and b"received" in out


def test_validate_over_the_whole_history_shows_a_bar_and_the_same_verdict(
        long: ledgers.Built) -> None:
    out_tty, err_tty, code_tty = _run(long.path, "validate", terminal=True)
    out_pipe, err_pipe, code_pipe = _run(long.path, "validate", terminal=False)
    assert code_tty == code_pipe == 0
    assert _bar(err_tty, "validating refs/heads/loopx/state") and b"%|" not in err_pipe
    assert SGR.sub(b"", out_tty) == out_pipe and b"OK (1 commit" in out_pipe
