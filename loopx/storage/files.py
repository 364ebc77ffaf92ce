"""Files loopx keeps beside git (``<git common dir>/loopx/...``), written whole or not at all.

A file is written to a temporary name in its own folder and renamed over its place, so a
reader sees the old content or the new, never part of it. A write that fails (no room, a
file-size limit, a read-only folder) removes its temporary file before the error goes on:
on a full disk every command would otherwise leave one more behind.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Optional


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
