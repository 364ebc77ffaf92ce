"""`status` and `log` page like git on a terminal, and never otherwise."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

import pytest

from conftest import run_loopx


@pytest.fixture
def ledger_repo(repo: Path) -> Path:
    assert run_loopx(repo, "init").code == 0
    assert run_loopx(repo, "goal", "add", "G", "--id", "g", "--accept", "works").code == 0
    return repo


def _on_a_terminal(repo: Path, *args: str, env: dict[str, str]) -> str:
    """Run `git loopx ARGS` with its stdout on a pseudo-terminal; what it printed there."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(["git", "loopx", *args], cwd=repo, stdout=follower,
                            stderr=subprocess.PIPE, env=dict(os.environ, **env))
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: the command is done
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_status_goes_through_the_pager_git_would_choose_on_a_terminal(ledger_repo: Path,
                                                                       tmp_path: Path) -> None:
    marker = tmp_path / "paged"
    pager = f"cat > {marker}"
    shown = _on_a_terminal(ledger_repo, "status", env={"GIT_PAGER": pager, "PAGER": "false"})
    assert "On ledger" not in shown and "On ledger" in marker.read_text()
    marker.unlink()
    _on_a_terminal(ledger_repo, "log", env={"PAGER": pager})  # no GIT_PAGER: core.pager, PAGER
    assert "initialised the ledger" in marker.read_text()


@pytest.mark.parametrize("args, env", [(["status", "--no-pager"], {}),
                                       (["status"], {"GIT_PAGER": "cat"}),
                                       (["status"], {"GIT_PAGER_IN_USE": "1"}),
                                       (["status", "--json"], {})])
def test_no_pager_cat_a_pager_in_use_or_json_print_straight(ledger_repo: Path, tmp_path: Path,
                                                            args: list[str], env: dict[str, str]) -> None:
    marker = tmp_path / "paged"
    shown = _on_a_terminal(ledger_repo, *args, env={"PAGER": f"cat > {marker}", **env})
    assert not marker.exists()
    assert "On ledger" in shown or '"ledger"' in shown


def test_a_pipe_is_never_paged(ledger_repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "paged"
    result = run_loopx(ledger_repo, "status", env={"GIT_PAGER": f"cat > {marker}"})
    assert result.code == 0 and result.out.startswith("On ledger") and not marker.exists()
