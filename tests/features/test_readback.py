"""Readback against real repositories: HEAD, dirty files, operations, the state branch, and
how fresh evidence is after commits, amends, rebases, in detached HEADs and worktrees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import git
from loopx.features import readback
from loopx.ledger.book import Ledger

ACTOR = "human:test@example.com"


def _commit(repo: Path, name: str, text: str, *extra: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", *extra, "-m", f"change {name}")
    return git(repo, "rev-parse", "HEAD")


def _evidence(ledger: Ledger, repo: Path, ev_id: str, **binding: Any) -> None:
    if "commit" not in binding:
        binding["commit"] = git(repo, "rev-parse", "HEAD")
        binding["tree"] = git(repo, "rev-parse", "HEAD^{tree}")
    if not ledger.fold().goals:
        ledger.append("goal.created", {"id": "g-1", "title": "G",
                                       "acceptance": [{"id": "c-1", "text": "works"}]}, actor=ACTOR)
    ledger.append("evidence.recorded", {"id": ev_id, "kind": "test", "criteria": ["c-1"], **binding},
                  actor=ACTOR, goal="g-1")


def _inspect(ledger: Ledger, path: Path | None = None) -> readback.Environment:
    led = Ledger.open(path) if path else ledger
    snap = led.snapshot()
    return readback.inspect(led.repo, state_ref=led.ref, snapshot=snap,
                            remaps=led.fold().remaps, config={})


def test_clean_head_is_fresh(ledger: Ledger, repo: Path) -> None:
    _evidence(ledger, repo, "e-1")
    env = _inspect(ledger)
    assert env.branch == "main" and not env.detached and env.dirty == []
    assert env.evidence["e-1"].state == "fresh"


def test_new_commit_makes_evidence_stale_and_names_the_files(ledger: Ledger, repo: Path) -> None:
    _evidence(ledger, repo, "e-1")
    _commit(repo, "src.py", "print(1)\n")
    fresh = _inspect(ledger).evidence["e-1"]
    assert (fresh.state, fresh.changed) == ("stale", ["src.py"])


def test_dirty_tree_makes_evidence_stale(ledger: Ledger, repo: Path) -> None:
    _evidence(ledger, repo, "e-1")
    (repo / "README").write_text("edited\n")
    (repo / "new.txt").write_text("untracked\n")
    env = _inspect(ledger)
    assert env.dirty == ["README"] and env.untracked == ["new.txt"]
    assert env.evidence["e-1"].state == "stale"
    assert env.evidence["e-1"].changed == ["README"]


def test_amend_without_content_change_stays_fresh(ledger: Ledger, repo: Path) -> None:
    _evidence(ledger, repo, "e-1")
    git(repo, "commit", "-q", "--amend", "-m", "reworded")
    assert _inspect(ledger).evidence["e-1"].state == "fresh"


def test_amend_with_changes_is_stale_and_remaps_are_followed(ledger: Ledger, repo: Path) -> None:
    _commit(repo, "a.txt", "one\n")
    _evidence(ledger, repo, "e-1")
    old = git(repo, "rev-parse", "HEAD")
    new = _commit(repo, "a.txt", "two\n", "--amend")
    assert _inspect(ledger).evidence["e-1"].changed == ["a.txt"]
    ledger.append("evidence.remapped", {"mappings": [{"old": old, "new": new}]}, actor=ACTOR)
    fresh = _inspect(ledger).evidence["e-1"]
    assert (fresh.state, fresh.commit) == ("fresh", new)


def test_commit_not_in_repository_is_unknown(ledger: Ledger, repo: Path) -> None:
    _evidence(ledger, repo, "e-1", commit="f" * 40, tree="e" * 40)
    assert _inspect(ledger).evidence["e-1"].state == "unknown"


def test_evidence_without_a_commit_is_unbound(ledger: Ledger, repo: Path) -> None:
    _evidence(ledger, repo, "e-1", commit=None)
    assert _inspect(ledger).evidence["e-1"].state == "unbound"


def test_detached_head(ledger: Ledger, repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD")
    _evidence(ledger, repo, "e-1")
    _commit(repo, "b.txt", "b\n")
    git(repo, "checkout", "-q", "--detach", first)
    env = _inspect(ledger)
    assert env.detached and env.branch is None and env.head == first
    assert env.evidence["e-1"].state == "fresh"


def test_worktree_sees_its_own_head_and_the_shared_ledger(ledger: Ledger, repo: Path,
                                                          tmp_path: Path) -> None:
    _evidence(ledger, repo, "e-1")
    other = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "side", str(other))
    _commit(other, "side.txt", "side\n")
    env = _inspect(ledger, other)
    assert env.branch == "side"
    assert env.evidence["e-1"].state == "stale" and env.evidence["e-1"].changed == ["side.txt"]
    assert _inspect(ledger).evidence["e-1"].state == "fresh"


def test_merge_in_progress_is_reported(ledger: Ledger, repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    _commit(repo, "README", "theirs\n")
    git(repo, "checkout", "-q", "main")
    _commit(repo, "README", "ours\n")
    proc = __import__("subprocess").run(["git", "merge", "-q", "other"], cwd=repo,
                                        capture_output=True)
    assert proc.returncode != 0
    assert _inspect(ledger).in_progress == "merge"


def test_upstream_ahead_behind(ledger: Ledger, repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    _commit(repo, "x.txt", "x\n")
    env = _inspect(ledger)
    assert env.upstream == {"name": "origin/main", "ahead": 1, "behind": 0}


def test_state_branch_unpushed_and_unmerged_events(ledger: Ledger, repo: Path,
                                                   tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "loopx/state")
    git(repo, "fetch", "-q", "origin")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    git(clone, "fetch", "-q", "origin", "loopx/state:loopx/state")
    with Ledger.open(clone) as theirs:
        theirs.append("note.added", {"id": "n-1", "text": "from the clone"}, actor=ACTOR)
        theirs.append("note.added", {"id": "n-2", "text": "again"}, actor=ACTOR)
    git(clone, "push", "-q", "origin", "loopx/state")
    ledger.append("note.added", {"id": "n-3", "text": "local"}, actor=ACTOR)
    git(repo, "fetch", "-q", "origin")
    state = _inspect(ledger).state
    assert state["tracking"] == "refs/remotes/origin/loopx/state"
    assert (state["unpushed"], state["unmerged"]) == (1, 2)


def test_parse_status_handles_renames_and_conflicts() -> None:
    raw = ("# branch.oid " + "a" * 40 + "\0# branch.head main\0"
           "2 R. N... 100644 100644 100644 " + "b" * 40 + " " + "c" * 40 + " R100 new name.txt\0old.txt\0"
           "1 .M N... 100644 100644 100644 " + "d" * 40 + " " + "d" * 40 + " with space.txt\0"
           "? untracked.txt\0").encode()
    env = readback.Environment()
    readback.parse_status(raw, env)
    assert env.dirty == ["new name.txt", "with space.txt"]
    assert env.untracked == ["untracked.txt"]
    assert env.head == "a" * 40 and env.upstream is None
