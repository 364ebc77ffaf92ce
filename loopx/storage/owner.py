"""One repository, one loopx folder: ``<git common dir>/loopx`` names the repository it
belongs to, and a folder that belongs to another repository still in use (shared through a
symlink or a bind mount) is refused.

The folder holds the clone lock, the hook queue and the cache: shared by two repositories,
one would drain the other's queue into the wrong ledger. Its file ``owner`` records the
common dir it was made for, by path and by device and inode. A folder whose recorded
repository is gone or is not the same directory any more (the repository was moved, copied,
restored from a backup) is taken over; one that *is* the recorded repository's own folder,
reached from another repository, is refused.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from loopx.errors import ForeignStateDir
from loopx.storage import files

_MAGIC = "loopx-owner v1"
_CHECKED: set[str] = set()  # loopx folders (path, device and inode) checked by this process


def checked(loopx_dir: Path, common_dir: Path) -> Path:
    """``loopx_dir``, once it is known to be this repository's own (or is not made yet);
    raises ForeignStateDir when it is another repository's. Checked once per process."""
    try:  # the folder itself, not its name: a folder swapped for a link is checked again
        key = f"{loopx_dir} {_identity(os.stat(loopx_dir))}"
    except OSError:
        key = str(loopx_dir)
    if key in _CHECKED:
        return loopx_dir
    try:
        ours = os.stat(common_dir)
        recorded = files.read(loopx_dir / "owner", 1 << 16).decode("utf-8", "replace").splitlines()
    except FileNotFoundError:
        _claim(loopx_dir, common_dir)
        _CHECKED.add(key)
        return loopx_dir
    except OSError:
        return loopx_dir  # unreadable: the write that needs it says why
    if len(recorded) == 3 and recorded[0] == _MAGIC and recorded[2] != _identity(ours):
        _refuse_if_shared(loopx_dir, Path(recorded[1]), recorded[2], common_dir)
        _claim(loopx_dir, common_dir)  # moved, copied or restored: this repository's now
    elif len(recorded) != 3 or recorded[0] != _MAGIC:
        _claim(loopx_dir, common_dir)
    _CHECKED.add(key)
    return loopx_dir


def _identity(info: os.stat_result) -> str:
    return f"{info.st_dev} {info.st_ino}"


def _refuse_if_shared(loopx_dir: Path, other: Path, identity: str, common_dir: Path) -> None:
    try:
        still_there = _identity(os.stat(other)) == identity
        same_folder = os.path.samefile(loopx_dir, other / "loopx")
    except OSError:
        return  # the recorded repository is gone: nothing shares the folder
    if still_there and same_folder:
        raise ForeignStateDir(
            f"{loopx_dir} is the loopx folder of another repository ({other}); two "
            f"repositories must not share one (its hook queue and lock are that one's), so "
            f"nothing was done. Remove the link (`rm {loopx_dir}` if it is a symlink) and "
            f"loopx makes {common_dir / 'loopx'} afresh")


def _claim(loopx_dir: Path, common_dir: Path) -> None:
    """Record ``common_dir`` as the owner of ``loopx_dir`` (when the folder exists)."""
    if not loopx_dir.is_dir():
        return
    with contextlib.suppress(OSError):
        body = f"{_MAGIC}\n{common_dir}\n{_identity(os.stat(common_dir))}\n"
        files.replace(loopx_dir / "owner", body.encode())
