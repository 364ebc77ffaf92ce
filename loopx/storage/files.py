"""Files loopx keeps beside git (``<git common dir>/loopx/...``): written whole or not at
all, and read only when they are regular files of a bounded size.

A file is written to a temporary name in its own folder and renamed over its place, so a
reader sees the old content or the new, never part of it. A write that fails (no room, a
file-size limit, a read-only folder) removes its temporary file before the error goes on:
on a full disk every command would otherwise leave one more behind.

Anything can be put where such a file should be: a fifo (opening it to read waits for a
writer forever), a link to ``/dev/zero`` or ``/dev/urandom`` (reading it never ends), a
file of gigabytes. ``read`` opens without waiting, reads regular files only and no more than
the caller's bound; anything else is an OSError, as a missing file is, so every caller's
"damaged or missing: do without it" applies.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO, Optional

from loopx.errors import NotAFile


def replace(path: Path, data: bytes, *, mode: Optional[int] = None, durable: bool = False) -> None:
    """Write ``data`` to ``path`` atomically (temp file in the same folder, then rename);
    ``mode`` sets the file's permission bits, ``durable`` fsyncs the file before the rename.
    Raises the OSError of the failed step, with no temporary file left."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:  # a signal turned exception too: the temp name is ours alone
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def read(path: Path, most: int, *, prefix: bool = False) -> bytes:
    """The content of the regular file at ``path`` (a symlink followed); OSError when there
    is none, when it is anything else (a fifo is not waited on, a device not read) or when
    it holds more than ``most`` bytes (with ``prefix``, its first ``most`` bytes then)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link to itself (or a loop of them): no file at all
            raise NotAFile(path) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotAFile(path)
        chunks, size = [], 0
        while chunk := os.read(fd, most + 1 - size):
            chunks.append(chunk)
            size += len(chunk)
            if size > most:
                if prefix:
                    return b"".join(chunks)[:most]
                raise OSError(f"{path}: more than {most} bytes, not read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def open_plain(path: Path, flags: int) -> int:
    """A descriptor of the plain file at ``path`` opened with ``flags`` (made when missing),
    never waited on and never through a link: NotAFile for a link, a fifo or a device."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW's answer for a link
            raise NotAFile(path) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotAFile(path)
    return fd


def log(path: Path) -> BinaryIO:
    """``path`` open to append to (a detached process's log); the null device when anything
    but a plain file is there: opening a fifo to write waits for a reader forever (the hook
    that starts a drain, and the commit with it), and a link would be written through. A log
    not written loses nothing."""
    try:
        return os.fdopen(open_plain(path, os.O_WRONLY | os.O_APPEND), "ab")
    except OSError:  # not a plain file, a fifo with no reader (ENXIO), no room
        return open(os.devnull, "ab")
