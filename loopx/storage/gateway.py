"""The one gateway to git: every git process loopx starts goes through :func:`run`.

It fixes the environment (``LC_ALL=C`` so messages can be matched, no prompts), disables the
repository's hooks and makes loopx's own writes durable (``core.fsync``) without touching the
user's configuration, logs argv under ``--debug`` and raises :class:`GitError` on failure.
:class:`ObjectReader` keeps one ``git cat-file --batch`` alive for all object reads.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NewType

from loopx.errors import GitError, NotFound

Oid = NewType("Oid", str)
RefName = NewType("RefName", str)

DEBUG = bool(os.environ.get("LOOPX_DEBUG"))

# Applied to every git call loopx makes, never written to any config file.
#  - core.hooksPath=/dev/null: loopx's own writes run no repository hook, including
#    reference-transaction (git >= 2.28), which update-ref would otherwise run.
#  - core.fsync=committed: objects and refs are fsynced before the ref moves (git >= 2.36;
#    older gits ignore the unknown key and fall back to core.fsyncObjectFiles below).
_SAFE_CONFIG = (
    "-c", f"core.hooksPath={os.devnull}",
    "-c", "core.fsync=committed",
    "-c", "core.fsyncMethod=fsync",
    "-c", "core.fsyncObjectFiles=true",
)


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    env["LANGUAGE"] = "C"
    env["GIT_TERMINAL_PROMPT"] = "0"
    env.pop("GIT_INDEX_FILE", None)  # a user's GIT_INDEX_FILE must never reach our plumbing
    if extra:
        env.update(extra)
    return env


def run(
    cwd: Path | str,
    *args: str,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git <args>`` in ``cwd`` and return the completed process (stdout as bytes)."""
    argv = ["git", *_SAFE_CONFIG, *args]
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            argv, cwd=cwd, input=input, capture_output=True, env=_env(env), timeout=timeout
        )
    except FileNotFoundError as exc:
        if not os.path.isdir(cwd):
            raise NotFound(f"{cwd}: no such directory") from None
        raise GitError(list(args), 127, "git is not installed or not on PATH") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(list(args), 124, f"timed out after {timeout}s") from exc
    if DEBUG:
        ms = (time.perf_counter() - started) * 1000
        print(f"loopx: git {' '.join(args)} -> {proc.returncode} ({ms:.1f} ms)", file=sys.stderr)
    if check and proc.returncode != 0:
        raise GitError(list(args), proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc


def spawn(cwd: Path | str, *args: str) -> None:
    """Start ``git <args>`` in the background and do not wait for it (maintenance): it
    outlives us in its own session, with no terminal to write to."""
    if DEBUG:
        print(f"loopx: git {' '.join(args)} (in the background)", file=sys.stderr)
    # Only the hooks setting: a deprecation warning about core.fsyncObjectFiles (git >= 2.36)
    # would land in gc.log, and a gc.log stops every later `git gc --auto`, the user's too.
    try:
        subprocess.Popen(["git", "-c", f"core.hooksPath={os.devnull}", *args], cwd=cwd,
                         env=_env(None),
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        pass  # maintenance is an optimisation: the next write tries again


def out(cwd: Path | str, *args: str, **kwargs: object) -> str:
    """Run git and return stdout decoded, without the trailing newline."""
    return run(cwd, *args, **kwargs).stdout.decode("utf-8", "surrogateescape").rstrip("\n")  # type: ignore[arg-type]


@dataclass(frozen=True)
class Repo:
    """Where a repository lives: its per-worktree git dir, common dir and work tree."""

    git_dir: Path
    common_dir: Path
    work_tree: Path | None

    @property
    def cwd(self) -> Path:
        return self.work_tree or self.git_dir

    @property
    def loopx_dir(self) -> Path:
        """loopx's private files (lock, cache), shared by all worktrees of the repository."""
        return self.common_dir / "loopx"


def discover(path: Path | str = ".") -> Repo:
    """Find the repository containing ``path``; raises NotFound outside one."""
    # One process: rev-parse prints each answer in order, so where there is no work tree
    # (bare repo, inside .git) --show-toplevel fails last and the first three lines stand.
    proc = run(
        path, "rev-parse", "--absolute-git-dir", "--path-format=absolute", "--git-common-dir",
        "--is-bare-repository", "--show-toplevel", check=False,
    )
    lines = proc.stdout.decode().splitlines()
    if len(lines) < 3:
        raise NotFound(f"{Path(path).resolve()} is not inside a git repository (run `git init`)")
    git_dir, common, bare = lines[:3]
    top = lines[3] if len(lines) > 3 and bare != "true" else ""
    return Repo(Path(git_dir), Path(common).resolve(), Path(top) if top else None)


class ObjectReader:
    """One long-lived ``git cat-file --batch`` process for all object reads of a command."""

    # Requests are written in chunks small enough to fit in the pipe buffer, so git can never
    # block on its stdout while we block on its stdin.
    _CHUNK = 512

    def __init__(self, cwd: Path | str) -> None:
        self._cwd = cwd
        self._proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                ["git", *_SAFE_CONFIG, "cat-file", "--batch"],
                cwd=self._cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, env=_env(None),
            )
        return self._proc

    def read_many(self, names: list[str]) -> list[tuple[str, bytes] | None]:
        """(type, content) for each name, or None where the object is missing."""
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        result: list[tuple[str, bytes] | None] = []
        for start in range(0, len(names), self._CHUNK):
            chunk = names[start : start + self._CHUNK]
            proc.stdin.write(b"".join(n.encode() + b"\n" for n in chunk))
            proc.stdin.flush()
            for _ in chunk:
                result.append(self._read_one(proc.stdout))
        return result

    @staticmethod
    def _read_one(stdout: IO[bytes]) -> tuple[str, bytes] | None:
        header = stdout.readline()
        if not header:
            raise GitError(["cat-file", "--batch"], 1, "cat-file exited unexpectedly")
        parts = header.split()
        if len(parts) != 3:  # "<name> missing" or "<name> ambiguous"
            return None
        size = int(parts[2])
        data = stdout.read(size + 1)[:size]
        return parts[1].decode(), data

    def read(self, name: str) -> tuple[str, bytes] | None:
        return self.read_many([name])[0]

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.stdin:
                self._proc.stdin.close()
            self._proc.wait()
            if self._proc.stdout:
                self._proc.stdout.close()
            self._proc = None

    def __enter__(self) -> ObjectReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
