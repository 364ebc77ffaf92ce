"""The generated man page and CLI reference: up to date, well-formed, reachable from git."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, invoke
from loopx.cli import manpage


def test_checked_in_man_page_and_cli_reference_are_up_to_date() -> None:
    assert manpage.main(["--check", "--root", str(ROOT)]) == 0, "run `python -m loopx.cli.manpage`"


def test_check_fails_on_a_stale_page(tmp_path: Path) -> None:
    for rel in (manpage.MAN_PATH, manpage.CLI_DOC_PATH):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    (tmp_path / manpage.MAN_PATH).write_text("stale\n")
    assert manpage.main(["--check", "--root", str(tmp_path)]) == 1


def test_every_visible_command_is_documented_and_hidden_ones_are_not() -> None:
    text = (ROOT / manpage.CLI_DOC_PATH).read_text()
    for name in ("git loopx hooks install", "git loopx run", "git loopx todo claim"):
        assert f"`{name}`" in text
    assert "`git loopx hook`" not in text


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_the_man_page_renders_without_warnings() -> None:
    proc = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(ROOT / manpage.MAN_PATH)],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == ""


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
def test_git_loopx_dash_dash_help_opens_the_man_page(repo: Path, tmp_path: Path) -> None:
    # Where `pip install` puts it (share/man/man1 of the prefix); MANPATH stands in for the
    # PATH-to-manpath mapping man-db does for a venv.
    man1 = tmp_path / "share" / "man" / "man1"
    man1.mkdir(parents=True)
    shutil.copy(ROOT / manpage.MAN_PATH, man1)
    env = dict(os.environ, MANPATH=str(tmp_path / "share" / "man"), MANPAGER="cat", PAGER="cat",
               MANWIDTH="80")
    proc = subprocess.run(["git", "loopx", "--help"], cwd=repo, env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert "GIT-LOOPX(1)" in proc.stdout and "git loopx hooks install" in proc.stdout


def test_dash_h_and_help_print_usage(repo: Path) -> None:
    assert invoke(repo, "-h").out.startswith("Usage: git loopx")
    assert "Usage: git loopx run" in invoke(repo, "help", "run").out
