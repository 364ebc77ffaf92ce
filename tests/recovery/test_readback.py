"""Readback against real repositories: HEAD, dirty files, operations, the state branch, and
how fresh evidence is after commits, amends, rebases, in detached HEADs and worktrees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import git
from loopx.recovery import readback
from loopx.ledger.book import Ledger
from loopx.storage import gateway

ACTOR = "human:test@example.com"


def _commit(repo: Path, name: str, text: str, *extra: str) -> str:
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
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


def _inspect(ledger: Ledger, path: Path | None = None, **kwargs: Any) -> readback.Environment:
    led = Ledger.open(path) if path else ledger
    snap = led.snapshot()
    return readback.inspect(led.repo, state_ref=led.ref, snapshot=snap,
                            remaps=led.fold().remaps, config={}, **kwargs)


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
    # The work tree is judged as it is: untracked files (not ignored) are code too.
    assert env.evidence["e-1"].changed == ["README", "new.txt"]
    assert env.judged_tree not in (None, env.tree)


def test_amend_without_content_change_stays_fresh(ledger: Ledger, repo: Path) -> None:
    _evidence(ledger, repo, "e-1")
    git(repo, "commit", "-q", "--amend", "-m", "reworded")
    assert _inspect(ledger).evidence["e-1"].state == "fresh"


def test_amend_with_changes_stays_stale_after_the_remap(ledger: Ledger, repo: Path) -> None:
    """A remap moves the commit pointer, never what the evidence vouches for (the tree it ran
    on): an amend that brings a bug in leaves the evidence stale (issue 11: no laundering)."""
    _commit(repo, "a.txt", "one\n")
    _evidence(ledger, repo, "e-1")
    old, tree = git(repo, "rev-parse", "HEAD"), git(repo, "rev-parse", "HEAD^{tree}")
    new = _commit(repo, "a.txt", "two\n", "--amend")
    assert _inspect(ledger).evidence["e-1"].changed == ["a.txt"]
    ledger.append("evidence.remapped", {"mappings": [{"old": old, "new": new}]}, actor=ACTOR)
    stale = _inspect(ledger).evidence["e-1"]
    assert (stale.state, stale.commit, stale.tree, stale.changed) == ("stale", new, tree, ["a.txt"])


def test_a_rebase_to_an_identical_tree_stays_fresh(ledger: Ledger, repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "topic")
    _commit(repo, "feature.txt", "f\n")
    _evidence(ledger, repo, "e-1")
    old = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "upstream, no content")
    git(repo, "checkout", "-q", "topic")
    git(repo, "rebase", "-q", "main")
    new = git(repo, "rev-parse", "HEAD")
    assert new != old
    ledger.append("evidence.remapped", {"mappings": [{"old": old, "new": new}]}, actor=ACTOR)
    fresh = _inspect(ledger).evidence["e-1"]
    assert (fresh.state, fresh.commit) == ("fresh", new)


def test_evidence_of_a_dirty_work_tree_is_fresh_once_exactly_that_is_committed(
        ledger: Ledger, repo: Path) -> None:
    (repo / "README").write_text("edited\n")
    (repo / "new.py").write_text("x = 1\n")
    tree = readback.work_tree_tree(gateway.discover(repo))
    _evidence(ledger, repo, "e-1", commit=git(repo, "rev-parse", "HEAD"), tree=tree, dirty=True)
    assert _inspect(ledger).evidence["e-1"].state == "fresh"  # judged on the work tree
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "exactly what was tested")
    assert git(repo, "rev-parse", "HEAD^{tree}") == tree
    assert _inspect(ledger).evidence["e-1"].state == "fresh"
    (repo / "new.py").write_text("x = 2\n")
    stale = _inspect(ledger).evidence["e-1"]
    assert (stale.state, stale.changed) == ("stale", ["new.py"])


def test_the_work_tree_tree_leaves_the_users_index_alone(repo: Path) -> None:
    (repo / "staged.txt").write_text("s\n")
    git(repo, "add", "staged.txt")
    (repo / "README").write_text("unstaged edit\n")
    (repo / "untracked.txt").write_text("u\n")
    (repo / ".gitignore").write_text("ignored.log\n")
    (repo / "ignored.log").write_text("noise\n")
    index = repo / ".git" / "index"
    before = (index.read_bytes(), git(repo, "status", "--porcelain"))
    tree = readback.work_tree_tree(gateway.discover(repo))
    assert (index.read_bytes(), git(repo, "status", "--porcelain")) == before
    listed = git(repo, "ls-tree", "-r", "--name-only", str(tree)).split()
    assert listed == [".gitignore", "README", "staged.txt", "untracked.txt"]
    assert git(repo, "show", f"{tree}:README") == "unstaged edit"


def test_a_users_index_file_variable_is_not_used(repo: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("GIT_INDEX_FILE", str(repo / "elsewhere"))
    (repo / "x.txt").write_text("x\n")
    tree = readback.work_tree_tree(gateway.discover(repo))
    assert not (repo / "elsewhere").exists()
    assert "x.txt" in git(repo, "ls-tree", "--name-only", str(tree)).split()


def test_a_tree_never_committed_here_is_unknown_not_fresh(ledger: Ledger, repo: Path) -> None:
    _evidence(ledger, repo, "e-1", commit=git(repo, "rev-parse", "HEAD"), tree="d" * 40,
              dirty=True)
    (repo / "README").write_text("edited\n")
    found = _inspect(ledger).evidence["e-1"]
    assert found.state == "unknown" and "not in this repository" in (found.reason or "")


def test_evidence_from_before_trees_were_kept_is_stale_when_dirty(ledger: Ledger, repo: Path) -> None:
    """An older loopx bound a run on a dirty work tree to HEAD's tree: what it ran on is lost."""
    _evidence(ledger, repo, "e-1", commit=git(repo, "rev-parse", "HEAD"),
              tree=git(repo, "rev-parse", "HEAD^{tree}"), dirty=True)
    found = _inspect(ledger).evidence["e-1"]
    assert found.state == "stale" and "did not keep" in (found.reason or "")


def test_scope_counts_only_its_paths_and_the_ignore_list_only_unscoped_evidence(
        ledger: Ledger, repo: Path) -> None:
    _commit(repo, "src/app.py", "print(1)\n")
    _evidence(ledger, repo, "e-all")
    _evidence(ledger, repo, "e-src", paths=["src/**"])
    _evidence(ledger, repo, "e-docs", paths=["docs"])
    _commit(repo, "docs/guide.md", "words\n")
    env = _inspect(ledger, ignore=["docs/**"])
    assert env.evidence["e-all"].state == "fresh"  # the ledger ignores docs/** by default
    assert env.evidence["e-all"].outside_scope == 1
    assert env.evidence["e-src"].state == "fresh"
    docs = env.evidence["e-docs"]  # its own scope wins over the ignore list
    assert (docs.state, docs.changed, docs.paths) == ("stale", ["docs/guide.md"], ["docs"])
    assert _inspect(ledger).evidence["e-all"].changed == ["docs/guide.md"]


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
