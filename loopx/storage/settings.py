"""Git settings as git reads them, with one ``git config -z --list --show-origin`` per
repository and process, instead of one ``git config KEY`` per setting a command looks at.

The listing is kept, per working directory and the environment variables git's config
depends on, with the identity (inode, size, mtime, ctime) of every file it came from and of
the files that could add to it (the global and system files); a later call stats those and
reads again when any differs. Like git's index with racy timestamps, a listing whose files
changed within the last two seconds is not kept, and neither is one with
``include``/``includeIf`` (their conditions follow HEAD and paths, not file identity) or
``extensions.worktreeConfig``. So a command server's child (loopx/cli/server.py), forked
with its parent's listing, answers from it only while no file behind it has changed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

from loopx.storage import gateway

Values = dict[str, list[Optional[str]]]  # key as git prints it -> values (None: no "=")
_Stamp = tuple[tuple[str, Optional[tuple[int, int, int, int]]], ...]
_HELD: dict[tuple[str, ...], tuple[_Stamp, Values]] = {}
_RACY_NS = 2_000_000_000
_TRUE, _FALSE = ("true", "yes", "on"), ("false", "no", "off", "")
# Settings whose effect no file identity shows: a listing with them is read again each time.
_UNSTAMPED = ("include.", "includeif.", "extensions.worktreeconfig")


def values(cwd: Path | str) -> Values:
    """Every setting git sees in ``cwd``: key (section and name lower-cased, a subsection as
    written, as ``git config --list`` prints it) -> its values in order."""
    where = os.path.abspath(cwd)
    key = (where, *sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(
        ("GIT_CONFIG", "GIT_DIR", "GIT_COMMON_DIR", "XDG_CONFIG_HOME", "HOME"))))
    held = _HELD.get(key)
    if held is not None and _stamp([name for name, _ in held[0]]) == held[0]:
        return held[1]
    started = time.time_ns()
    proc = gateway.run(where, "config", "-z", "--list", "--show-origin", check=False)
    found: Values = {}
    origins: list[str] = []
    fields = proc.stdout.decode("utf-8", "replace").split("\0")
    for origin, item in zip(fields[::2], fields[1::2]):
        name, newline, value = item.partition("\n")
        found.setdefault(name, []).append(value if newline else None)
        if origin.startswith("file:"):
            origins.append(os.path.join(where, origin.removeprefix("file:")))
    stamp = _stamp([*dict.fromkeys([*origins, *_candidates()])])
    if proc.returncode == 0 and not any(k.startswith(_UNSTAMPED) for k in found) and all(
            s is None or started - s[2] > _RACY_NS for _, s in stamp):
        _HELD[key] = (stamp, found)
    return found


def get(cwd: Path | str, key: str) -> Optional[str]:
    """``git config KEY``: the last value ("" for a key without one), or None when unset."""
    held = values(cwd).get(_normal(key))
    return None if not held else held[-1] or ""


def get_all(cwd: Path | str, key: str) -> list[str]:
    """``git config --get-all KEY``."""
    return [v or "" for v in values(cwd).get(_normal(key), [])]


def get_bool(cwd: Path | str, key: str) -> Optional[bool]:
    """``git config --bool KEY``: None when unset or when any value is not a boolean (git
    refuses the key then)."""
    held = values(cwd).get(_normal(key))
    if not held:
        return None
    read = [True if v is None else _bool(v) for v in held]
    return None if None in read else read[-1]


def _bool(value: str) -> Optional[bool]:
    low = value.strip().lower()
    if low in _TRUE or low in _FALSE:
        return low in _TRUE
    try:
        return int(low, 0) != 0  # git takes any integer
    except ValueError:
        return None


def _normal(key: str) -> str:
    """A key as ``--list`` prints it: section and name lower-cased, the subsection kept."""
    section, _, rest = key.partition(".")
    middle, _, name = rest.rpartition(".")
    return ".".join(p for p in (section.lower(), middle, name.lower()) if p) if rest else key


def _candidates() -> list[str]:
    """Files that would add settings if they appeared: the global and system ones (the
    repository's own file is always there, so among the origins)."""
    home = os.environ.get("HOME", "")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    found = ([os.environ["GIT_CONFIG_GLOBAL"]] if "GIT_CONFIG_GLOBAL" in os.environ else
             [os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")])
    if not os.environ.get("GIT_CONFIG_NOSYSTEM"):
        found.append(os.environ.get("GIT_CONFIG_SYSTEM", "/etc/gitconfig"))
    return found


def _stamp(files: list[str]) -> _Stamp:
    out: list[tuple[str, Optional[tuple[int, int, int, int]]]] = []
    for name in files:
        try:
            st = os.stat(name)
            out.append((name, (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)))
        except OSError:
            out.append((name, None))
    return tuple(out)
