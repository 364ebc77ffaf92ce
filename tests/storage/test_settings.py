"""loopx.storage.settings: git's settings from one listing, the same answers as `git config`,
read again whenever a file behind the listing changes (real git, real files)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import git
from loopx.storage import settings

CONFIG = """[s]
\tbare
\tempty =
\tmulti = a
\tmulti = b
\tyes = yes
\toff = off
\tnum = 2
\tbad = maybe
[Sec "SubSec"]
\tKey = v
[loopx]
\tX = 1
"""
KEYS = ["s.bare", "s.empty", "s.multi", "s.yes", "s.off", "s.num", "s.bad", "S.YES",
        "sec.SubSec.key", "Sec.subsec.key", "SEC.SubSec.KEY", "loopx.x", "s.unset", "nope"]


def _git_config(repo: Path, *args: str) -> str | None:
    proc = subprocess.run(["git", "config", *args], cwd=repo, capture_output=True, text=True)
    return proc.stdout.rstrip("\n") if proc.returncode == 0 else None


def _aged(*paths: Path) -> None:
    """Files last changed a minute ago: past the window in which a listing is not kept."""
    past = time.time() - 60
    for path in paths:
        os.utime(path, (past, past))


@pytest.fixture
def configured(repo: Path) -> Path:
    with open(repo / ".git" / "config", "a") as config:
        config.write(CONFIG)
    settings._HELD.clear()
    return repo


@pytest.mark.parametrize("key", KEYS)
def test_each_answer_is_gits(configured: Path, key: str) -> None:
    assert settings.get(configured, key) == _git_config(configured, key)
    assert settings.get_all(configured, key) == (
        (_git_config(configured, "--get-all", key) or "").split("\n")
        if _git_config(configured, key) is not None else [])
    expected = _git_config(configured, "--bool", key)
    assert settings.get_bool(configured, key) == (None if expected is None else expected == "true")


def test_one_listing_answers_every_key_until_a_file_behind_it_changes(
        configured: Path, spawned: list[tuple[str, ...]]) -> None:
    _aged(configured / ".git" / "config", Path(os.environ["GIT_CONFIG_GLOBAL"]))
    for key in KEYS:
        settings.get(configured, key)
    assert len(spawned) == 1 and spawned[0][:2] == ("config", "-z")
    git(configured, "config", "loopx.x", "2")  # git writes a new file (lock and rename)
    assert settings.get(configured, "loopx.x") == "2" and len(spawned) == 2
    _aged(configured / ".git" / "config")
    Path(os.environ["GIT_CONFIG_GLOBAL"]).write_text("[user]\n\temail = other@example.com\n")
    _aged(Path(os.environ["GIT_CONFIG_GLOBAL"]))
    assert settings.get(configured, "user.email") == "other@example.com" and len(spawned) == 3
    assert settings.get(configured, "user.email") == "other@example.com" and len(spawned) == 3


def test_a_file_that_appears_is_seen(configured: Path, spawned: list[tuple[str, ...]],
                                     monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A global file that did not exist (its absence is part of what is kept)."""
    later = tmp_path / "later.gitconfig"
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(later))
    _aged(configured / ".git" / "config")
    assert settings.get(configured, "user.email") is None
    later.write_text("[user]\n\temail = late@example.com\n")
    assert settings.get(configured, "user.email") == "late@example.com" and len(spawned) == 2


def test_files_changed_just_now_are_read_again(configured: Path,
                                               spawned: list[tuple[str, ...]]) -> None:
    """Two writes in one timestamp tick could leave size and time alone: within two seconds
    of a change nothing is kept (git's racy-index rule)."""
    settings.get(configured, "loopx.x")
    settings.get(configured, "loopx.x")
    assert len(spawned) == 2


@pytest.mark.parametrize("line", ["[include]\n\tpath = other.inc\n",
                                  '[includeIf "onbranch:main"]\n\tpath = other.inc\n',
                                  "[extensions]\n\tworktreeConfig = true\n"])
def test_settings_no_file_identity_shows_are_read_each_time(
        configured: Path, spawned: list[tuple[str, ...]], line: str) -> None:
    (configured / ".git" / "other.inc").write_text("[loopx]\n\tfrom = include\n")
    with open(configured / ".git" / "config", "a") as config:
        config.write(line)
    _aged(configured / ".git" / "config", configured / ".git" / "other.inc")
    for _ in range(3):
        settings.get(configured, "loopx.x")
    assert len(spawned) == 3


def test_the_environment_is_part_of_the_key(configured: Path, spawned: list[tuple[str, ...]],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`git -c` and GIT_CONFIG_COUNT reach git through the environment: another listing."""
    _aged(configured / ".git" / "config", Path(os.environ["GIT_CONFIG_GLOBAL"]))
    assert settings.get(configured, "loopx.x") == "1"
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "loopx.x")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "from-env")
    assert settings.get(configured, "loopx.x") == "from-env" and len(spawned) == 2


def test_another_directory_is_another_listing(configured: Path, tmp_path: Path) -> None:
    """A worktree or another repository never answers from this one's listing."""
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", str(other))
    git(other, "config", "loopx.x", "other")
    _aged(configured / ".git" / "config", other / ".git" / "config")
    assert settings.get(configured, "loopx.x") == "1"
    assert settings.get(other, "loopx.x") == "other"
