"""flock-based locks: waiting for one, and who holds one.

The kernel drops an ``flock`` when its holder dies, so a killed process never leaves a lock
that needs a manual unlock. A holder writes its pid into the file, for messages.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path

from loopx.errors import LockTimeout
from loopx.storage import files


def open_file(path: Path) -> int:
    """A descriptor of the lock file at ``path``, made when missing. NotAFile when something
    else is there: a fifo or a device cannot be written as a lock file (``ftruncate``
    fails), and a symbolic link is not followed, so no file elsewhere is truncated."""
    return files.open_plain(path, os.O_RDWR)


def flock(fd: int, *, blocking: bool) -> None:
    fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))


def acquire(fd: int, path: Path, timeout: float, *, patient: bool = True) -> None:
    """Wait for the lock. Only one holder keeping it past ``timeout`` is an error: under heavy
    contention the lock changes hands constantly and waiting longer is progress, not a hang.
    Not ``patient``: ``timeout`` is the whole wait, however often the lock changes hands."""
    holder, deadline = None, time.monotonic() + timeout
    delay = 0.001
    while True:
        if try_flock(fd):
            return
        current = read_holder(path)
        if current != holder and patient:
            holder, deadline = current, time.monotonic() + timeout
        elif time.monotonic() > deadline:
            raise LockTimeout(
                f"another loopx writer (pid {holder or 'unknown'}) has held {path} for over "
                f"{timeout:.0f}s; it is released automatically when that process exits"
            )
        import random  # only a contended lock waits: start-up time of every command

        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 0.01)


def wait_for(fd: int, timeout: float) -> bool:
    """Take the lock within ``timeout`` seconds (0: only if free now); whether it was taken."""
    deadline, delay = time.monotonic() + timeout, 0.002
    while not try_flock(fd):
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.02)
    return True


def try_flock(fd: int) -> bool:
    try:
        flock(fd, blocking=False)
        return True
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            raise
        return False


def read_holder(path: Path) -> str:
    try:
        return files.read(path, 4096).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def pid_of(text: str) -> int | None:
    """The process id ``text`` holds (a pid file's line, a mark's name), or None when it is
    not one: ASCII digits only (str.isdigit() takes superscripts, which int() refuses) and
    within what the kernel gives (os.kill() overflows on a longer number)."""
    text = text.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 10):
        return None
    pid = int(text)
    return pid if 0 < pid < 2**31 else None


def alive(pid: int) -> bool:
    """Whether process ``pid`` is at work: it exists (one of another user counts) and is not
    a zombie (killed, and not yet reaped by its parent: a hook's git, say)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc (macOS): existing is all we can know


def started_at(pid: int) -> float | None:
    """When process ``pid`` started, in Unix time (Linux's /proc: its start in clock ticks
    after boot); None where that cannot be told (no /proc, the process gone)."""
    try:
        ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[19])
        boot = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")
