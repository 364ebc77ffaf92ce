"""The ledger is read as written (issue 22): replace refs, grafts and inherited variables that
point git at other objects or refs change nothing loopx reads or writes. Real git throughout:
a real `git replace`, a real graft file, each variable set in the process that runs loopx.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import git, invoke, run_loopx
from syncutil import STATE, event_ids


def _history(repo: Path, count: int = 3) -> list[str]:
    for n in range(count):
        assert invoke(repo, "note", "add", f"note {n}").code == 0
    return event_ids(repo)


def _plain(repo: Path, *args: str) -> str:
    """git as the test reads it: no replace refs, no grafts."""
    return git(repo, "--no-replace-objects", *args)


def test_a_replace_ref_on_the_state_tip_drops_no_event(ledger: object, repo: Path) -> None:
    events = _history(repo)
    empty = git(repo, "commit-tree", git(repo, "hash-object", "-t", "tree", "-w", "/dev/null"),
                input="empty\n")
    git(repo, "replace", git(repo, "rev-parse", STATE), empty)
    assert invoke(repo, "status").code == 0
    assert invoke(repo, "note", "add", "after the replace").code == 0
    after = [p.rsplit("/", 1)[1].split(".")[0] for p in
             _plain(repo, "ls-tree", "-r", "--name-only", STATE).splitlines()
             if p.startswith("events/")]
    assert set(events) < set(after) and len(after) == len(events) + 1
    shown = invoke(repo, "note", "list")
    assert all(f"note {n}" in shown.out for n in range(3)), shown.out


def test_a_replace_ref_on_a_tree_changes_no_fold(ledger: object, repo: Path) -> None:
    _history(repo)
    tree = git(repo, "rev-parse", f"{STATE}^{{tree}}")
    git(repo, "replace", tree, git(repo, "hash-object", "-t", "tree", "-w", "/dev/null"))
    (repo / ".git" / "loopx" / "cache").rename(repo / ".git" / "loopx" / "cache-old")  # replay
    shown = invoke(repo, "note", "list")
    assert shown.code == 0 and all(f"note {n}" in shown.out for n in range(3)), shown.out


def test_a_graft_file_cuts_no_history(ledger: object, repo: Path) -> None:
    _history(repo)
    tip = git(repo, "rev-parse", STATE)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "grafts").write_text(tip + "\n")  # the tip as a root
    shown = invoke(repo, "log")
    assert shown.code == 0 and "initialised the ledger" in shown.out, shown.out
    assert invoke(repo, "note", "add", "grafted").code == 0
    (repo / ".git" / "info" / "grafts").unlink()
    assert _plain(repo, "rev-list", "--count", STATE) == "5"


def _other_repo(repo: Path) -> Path:
    other = repo.parent / "other"
    git(repo.parent, "init", "-q", str(other))
    git(other, "commit", "-q", "--allow-empty", "-m", "x")
    return other


# Each variable, set as hostile as it can be: the value spoils what git reads if loopx kept it.
SPOILERS: dict[str, Callable[[Path], str]] = {
    "GIT_OBJECT_DIRECTORY": lambda repo: str(repo.parent / "empty-objects"),
    "GIT_ALTERNATE_OBJECT_DIRECTORIES": lambda repo: str(_other_repo(repo) / ".git" / "objects"),
    "GIT_COMMON_DIR": lambda repo: str(_other_repo(repo) / ".git"),
    "GIT_NAMESPACE": lambda repo: "elsewhere",
    "GIT_REPLACE_REF_BASE": lambda repo: "refs/heads/",
    "GIT_NO_REPLACE_OBJECTS": lambda repo: "",
    "GIT_SHALLOW_FILE": lambda repo: _file(repo, "shallow", git(repo, "rev-parse", f"{STATE}~1")),
    "GIT_GRAFT_FILE": lambda repo: _file(repo, "grafts", git(repo, "rev-parse", STATE)),
    "GIT_QUARANTINE_PATH": lambda repo: str(repo.parent / "empty-objects"),
    "GIT_INDEX_FILE": lambda repo: str(repo.parent / "index"),
    "GIT_CONFIG_PARAMETERS": lambda repo: "'core.usereplacerefs'='true'",
    # neighbours (a name, a space, what it tries): "0" is not "unset"; settings that choose
    # the work tree or the repository's format, given the way `git -c ... loopx` gives them
    "GIT_NO_REPLACE_OBJECTS 0": lambda repo: "0",
    "GIT_CONFIG_PARAMETERS core.bare": lambda repo: "'core.bare'='true'",
    "GIT_CONFIG_PARAMETERS core.worktree": lambda repo: f"'core.worktree'='{repo.parent}'",
    "GIT_CONFIG_PARAMETERS extensions": lambda repo: ("'extensions.objectformat'='sha256' "
                                                     "'extensions.refstorage'='reftable'"),
}


def _file(repo: Path, name: str, line: str) -> str:
    path = repo.parent / name
    path.write_text(line + "\n")
    return str(path)


@pytest.mark.parametrize("name", list(SPOILERS))
def test_an_inherited_variable_changes_nothing_loopx_reads_or_writes(
        ledger: object, repo: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    events = _history(repo)
    (repo.parent / "empty-objects").mkdir()
    value = SPOILERS[name](repo)
    empty = git(repo, "commit-tree", git(repo, "hash-object", "-t", "tree", "-w", "/dev/null"),
                input="empty\n")
    git(repo, "replace", git(repo, "rev-parse", STATE), empty)  # for the replace variables
    variable = name.split(" ")[0]
    monkeypatch.setenv(variable, value)
    shown = invoke(repo, "log")
    assert shown.code == 0 and "initialised the ledger" in shown.out, shown.out + shown.err
    written = invoke(repo, "note", "add", "with " + name)
    assert written.code == 0, written.err
    listed = invoke(repo, "note", "list")
    assert "with " + name in listed.out and "note 0" in listed.out
    monkeypatch.delenv(variable)
    assert set(events) < set(event_ids(repo)) and len(event_ids(repo)) == len(events) + 1
    git(repo, "fsck", "--no-dangling", "--connectivity-only")
    assert os.listdir(repo.parent / "empty-objects") == []


def test_git_dir_and_work_tree_given_by_the_caller_are_honoured(ledger: object, repo: Path,
                                                                 tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    """`git --git-dir=... --work-tree=... loopx` (and a git hook) name the repository in
    GIT_DIR: loopx works on that one, wherever it runs."""
    _history(repo, 1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(repo))
    written = invoke(elsewhere, "note", "add", "through GIT_DIR")
    assert written.code == 0, written.err
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_WORK_TREE")
    assert "through GIT_DIR" in invoke(repo, "note", "list").out


def test_a_git_dir_that_is_no_repository_is_named_as_the_callers(ledger: object, repo: Path,
                                                                  tmp_path: Path) -> None:
    """The line named the work tree ("... is not inside a git repository (run `git init`)"),
    which is one; it is the inherited GIT_DIR that is wrong."""
    events = _history(repo, 1)
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    result = run_loopx(repo, "note", "add", "refused", env={"GIT_DIR": str(nowhere)})
    assert result.code == 1 and f"GIT_DIR={nowhere} is not a git repository" in result.err
    assert "git init" not in result.err and len(result.err.strip().splitlines()) == 1
    assert event_ids(repo) == events
