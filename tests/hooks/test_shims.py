"""A shim whose loopx cannot run says so in one line, and git goes on (real `git commit`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, invoke
from loopx.hooks import shims


def _ledger_and_trailer(repo: Path) -> None:
    """A ledger, and a HEAD whose trailer names a todo: the shim has work for loopx (it
    decides "nothing to record" by itself otherwise, without running loopx at all)."""
    assert invoke(repo, "init").code == 0
    git(repo, "commit", "-q", "--allow-empty", "-m", "work\n\nLoopx-Todo: t1")


def _git_loopx(bindir: Path, body: str) -> Path:
    bindir.mkdir(exist_ok=True)
    path = bindir / "git-loopx"
    path.write_text(body)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("broken", [
    "#!/nonexistent/bin/python3\n",  # the virtualenv it pointed at is gone: exit 127
    f"#!{sys.executable}\nimport loopx_package_that_was_uninstalled\n",  # a traceback, exit 1
    "#!/bin/sh\nexec /nonexistent/bin/python3 -m loopx \"$@\"\n",  # exec fails: exit 127
])
def test_a_shim_whose_loopx_cannot_run_prints_one_line_and_the_commit_goes_on(
        repo: Path, tmp_path: Path, broken: str) -> None:
    bindir = tmp_path / "broken-bin"
    _git_loopx(bindir, broken)
    assert invoke(repo, "init").code == 0
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text(shims.shim_text("post-commit"))
    hook.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    (repo / "f").write_text("x\n")
    git(repo, "add", "f")
    proc = subprocess.run(["git", "commit", "-q", "-m", "x\n\nLoopx-Todo: t1"], cwd=repo,
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("loopx: post-commit hook skipped: git-loopx could not run (exit ")
    assert lines[0].endswith("; reinstall loopx, or remove .git/hooks/post-commit")  # git runs it as $0
    assert git(repo, "log", "-1", "--format=%s", "HEAD") == "x"


def test_loopx_own_lines_still_reach_the_user_through_the_shim(repo: Path, tmp_path: Path) -> None:
    bindir = tmp_path / "talking-bin"
    _git_loopx(bindir, "#!/bin/sh\necho 'loopx: recorded something' >&2\nexit 0\n")
    _ledger_and_trailer(repo)
    hook = tmp_path / "post-commit"
    hook.write_text(shims.shim_text("post-commit"))
    hook.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    proc = subprocess.run([str(hook)], cwd=repo, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "loopx: recorded something\n"


def test_a_strict_loopx_failure_still_stops_git(repo: Path, tmp_path: Path) -> None:
    bindir = tmp_path / "failing-bin"
    _git_loopx(bindir, "#!/bin/sh\necho 'loopx: pre-push hook failed: no' >&2\nexit 1\n")
    git(repo, "config", "loopx.hooks.strict", "true")
    hook = tmp_path / "pre-push"
    hook.write_text(shims.shim_text("pre-push"))
    hook.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    proc = subprocess.run([str(hook), "origin", "url"], cwd=repo, env=env, input="",
                          capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr == "loopx: pre-push hook failed: no\n"
