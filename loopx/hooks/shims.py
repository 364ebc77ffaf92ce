"""The git hooks loopx installs: thin shell shims that run ``git loopx hook <name>``.

They go into the hooks folder git actually uses (``git rev-parse --git-path hooks``, which
honours worktrees and ``core.hooksPath``, so Husky-style setups keep working). A hook that is
already there is *chained*: moved aside to ``<name>.loopx-chained`` and run by the shim first,
with the same arguments and stdin, its exit status kept. ``uninstall`` renames it back, so
the original bytes, mode (and symlink, if it was one) come back exactly.

What the shims run is :mod:`loopx.ops.hooks`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Optional

from loopx.storage import files, gateway
from loopx.errors import UsageError


HOOK_NAMES = ("post-commit", "post-rewrite", "pre-push")
MARKER = "# loopx-hook-shim v1"
CHAINED = ".loopx-chained"  # a hook that was there before loopx; the shim runs it first
REPLACED = ".loopx-replaced"  # one `install --force` set aside; kept for uninstall, never run


@dataclass(frozen=True)
class HookState:
    """One hook of the hooks folder, as `git loopx hooks status` reports it."""

    name: str
    path: Path
    installed: bool  # our shim is in place
    chained: bool  # a previous hook runs before loopx
    replaced: bool  # a previous hook was set aside by --force (not run)
    other: bool  # some other hook is in place (install would chain it)


def shim_text(name: str, python: str = "") -> str:
    """The shim for hook ``name``; ``python`` is the interpreter to fall back to."""
    template = resources.files("loopx").joinpath("data/hook.sh").read_text(encoding="utf-8")
    return template.replace("@HOOK@", name).replace("@PYTHON@", python.replace("'", ""))


def hooks_dir(cwd: Path | str) -> Path:
    """The folder git runs hooks from for ``cwd`` (worktree- and core.hooksPath-aware)."""
    repo = gateway.discover(cwd)
    configured = _configured_hooks_path(cwd)
    if configured is None:
        return repo.common_dir / "hooks"  # linked worktrees share the main one's hooks
    path = Path(configured).expanduser()
    # A relative core.hooksPath is relative to where hooks run: the top of the work tree.
    return path if path.is_absolute() else (repo.work_tree or repo.git_dir) / path


def _configured_hooks_path(cwd: Path | str) -> Optional[str]:
    # The gateway passes `-c core.hooksPath=/dev/null` to every git call (loopx's own writes
    # run no hooks), so `rev-parse --git-path hooks` would answer /dev/null: read the user's
    # setting from the config files instead, skipping command-line values.
    proc = gateway.run(cwd, "config", "--show-origin", "--path", "--get-all", "core.hooksPath",
                   check=False)
    values = [line.split("\t", 1)[1] for line in proc.stdout.decode().splitlines()
              if "\t" in line and not line.startswith("command line:")]
    return values[-1] if values and values[-1] else None


def is_shim(path: Path) -> bool:
    """Whether ``path`` is a loopx shim (any version)."""
    try:
        with open(path, "rb") as fh:
            return MARKER.encode() in fh.read(200)
    except OSError:
        return False


def records_commits(*, cwd: Path | str) -> bool:
    """Whether loopx's post-commit shim is installed where git runs hooks for ``cwd``: only
    then can a commit's record go missing because its hook was killed."""
    return is_shim(hooks_dir(cwd) / "post-commit")


def status(*, cwd: Path | str) -> list[HookState]:
    """The state of each loopx hook in the hooks folder git uses."""
    folder = hooks_dir(cwd)
    states = []
    for name in HOOK_NAMES:
        path = folder / name
        ours = is_shim(path)
        chained, replaced = (_exists(folder / (name + suffix)) for suffix in (CHAINED, REPLACED))
        states.append(HookState(name, path, ours, chained, replaced, _exists(path) and not ours))
    return states


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def install(*, cwd: Path | str, force: bool = False, python: Optional[str] = None) -> list[str]:
    """Install the shims (idempotent); returns one line per hook saying what happened."""
    folder = hooks_dir(cwd)
    if _exists(folder) and not folder.is_dir():  # core.hooksPath=/dev/null turns hooks off
        raise UsageError(f"git runs hooks from {folder}, which is not a folder (core.hooksPath); "
                         "point core.hooksPath at a folder, or unset it, then install again")
    folder.mkdir(parents=True, exist_ok=True)
    lines = [_install_one(folder, name, force, python or sys.executable) for name in HOOK_NAMES]
    return lines + _tracked_folder_note(cwd, folder)


def _tracked_folder_note(cwd: Path | str, folder: Path) -> list[str]:
    """A warning when the hooks folder is part of the work tree and not ignored (Husky < 9
    keeps its hooks in a tracked .husky/): git status will list the shims there."""
    repo = gateway.discover(cwd)
    work_tree, inside = repo.work_tree, folder.resolve()
    if work_tree is None or not inside.is_relative_to(work_tree.resolve()):
        return []
    if inside.is_relative_to(repo.git_dir.resolve()) or inside.is_relative_to(repo.common_dir):
        return []  # .git/hooks sits under the work tree's folder but is not part of it
    probe = folder.resolve() / HOOK_NAMES[0]
    if gateway.run(work_tree, "check-ignore", "-q", str(probe), check=False).returncode == 0:
        return []
    return [f"note: {folder} is in the work tree: `git status` lists the loopx shims and the "
            f"*{CHAINED} files there; commit them or add them to .git/info/exclude"]


def _install_one(folder: Path, name: str, force: bool, python: str) -> str:
    path = folder / name
    text = shim_text(name, python)
    if is_shim(path):
        if path.read_text(encoding="utf-8") == text and os.access(path, os.X_OK):
            return f"{name}: already installed"
        _write_executable(path, text)
        return f"{name}: updated"
    note = ""
    if _exists(path):
        aside = path.with_name(name + (REPLACED if force else CHAINED))
        if _exists(aside):
            raise UsageError(f"{aside} already exists; move it away, then install again")
        os.rename(path, aside)  # rename keeps bytes, mode and symlinks exactly
        note = (f" (replaced the existing hook WITHOUT chaining it; it is kept as {aside.name} "
                "and put back by uninstall)" if force
                else f" (chained the existing hook, now {aside.name})")
    _write_executable(path, text)
    return f"{name}: installed{note}"


def _write_executable(path: Path, text: str) -> None:
    files.replace(path, text.encode(), mode=0o755)


def uninstall(*, cwd: Path | str) -> list[str]:
    """Remove the shims and put back whatever was there before; one line per hook."""
    folder = hooks_dir(cwd)
    return [_uninstall_one(folder, name) for name in HOOK_NAMES]


def _uninstall_one(folder: Path, name: str) -> str:
    path = folder / name
    if not is_shim(path):
        other = " (left the hook that is there alone)" if _exists(path) else ""
        return f"{name}: not installed{other}"
    path.unlink()
    for suffix in (CHAINED, REPLACED):
        aside = folder / (name + suffix)
        if _exists(aside):
            os.rename(aside, path)
            return f"{name}: removed; restored the previous hook"
    return f"{name}: removed"


# `git loopx --help` is `git help loopx`, which only runs a man viewer: without `man` (most
# containers) or without the page on man's path (an editable install, a symlinked git-loopx)
# it fails. A repository can name its own viewer: this one shows loopx's page from the
# installed package, or the built-in help when man cannot, and hands every other page to man
# as git would. git runs `sh -c "<cmd> <page>"`: <cmd> ends by calling a function, so the page
# is its $1.
HELP_VIEWER = "loopx"
HELP_VIEWER_CMD = ('loopx_man() { if [ "$1" = git-loopx ] && command -v git-loopx >/dev/null 2>&1; '
                   'then exec git-loopx help --man; fi; exec man "$1"; }; loopx_man')


def install_help_viewer(*, cwd: Path | str, scope: str = "--local") -> bool:
    """Make `git loopx --help` work without man: git config ``man.viewer`` in this repository
    (``scope`` ``--global``: for the user); True when it was set now. Left alone when another
    viewer is configured."""
    viewers = gateway.out(cwd, "config", "--get-all", "man.viewer", check=False).split()
    if viewers and HELP_VIEWER not in viewers:
        return False  # the user chose their viewer: theirs it stays
    cmd = gateway.out(cwd, "config", scope, f"man.{HELP_VIEWER}.cmd", check=False)
    if HELP_VIEWER in viewers and cmd == HELP_VIEWER_CMD:
        return False
    gateway.run(cwd, "config", scope, f"man.{HELP_VIEWER}.cmd", HELP_VIEWER_CMD)
    if HELP_VIEWER not in gateway.out(cwd, "config", scope, "--get-all", "man.viewer",
                                      check=False).split():
        gateway.run(cwd, "config", scope, "--add", "man.viewer", HELP_VIEWER)
    return True


def uninstall_help_viewer(*, cwd: Path | str) -> bool:
    """Undo :func:`install_help_viewer`; True when something was removed."""
    cmd = gateway.out(cwd, "config", "--local", f"man.{HELP_VIEWER}.cmd", check=False)
    if cmd != HELP_VIEWER_CMD:
        return False
    gateway.run(cwd, "config", "--local", "--unset-all", "man.viewer", f"^{HELP_VIEWER}$",
                check=False)
    gateway.run(cwd, "config", "--local", "--remove-section", f"man.{HELP_VIEWER}", check=False)
    return True


def render_repo_hooks(root: Path) -> dict[Path, str]:
    """The top-level ``hooks/`` shims of the source tree (no interpreter fallback)."""
    return {root / "hooks" / name: shim_text(name) for name in HOOK_NAMES}
