"""Remote tips that carry only events we already have: what a squash or rebase merge of a
pull request against loopx/state produces on the remote. Built with plumbing on the bare
remote; fetch and sync must merge them (a two-parent commit, nothing received) and push."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import git
from syncutil import (
    STATE, assert_fsck_clean, assert_only_fast_forwarded, do_sync, note, open_ledger, seeded,
    state_files, tip,
)


def _share_objects(clone: Path) -> None:
    """Put the clone's state objects on the remote without moving its loopx/state (the pull
    request's branch)."""
    git(clone, "push", "-q", "origin", f"{STATE}:refs/heads/pr")


def _remote_commit(remote: Path, tree: str, *parents: str, message: str = "merged") -> str:
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    commit = git(remote, *args, "-m", message)
    git(remote, "update-ref", STATE, commit)
    return commit


def _tree_without(clone: Path, rev: str, drop: list[str]) -> str:
    """The tree of ``rev`` less some files (a pull request that carried only part of them)."""
    env = dict(os.environ, GIT_INDEX_FILE=str(clone / ".git" / "scratch-index"))
    subprocess.run(["git", "read-tree", rev], cwd=clone, env=env, check=True)
    for path in drop:
        subprocess.run(["git", "update-index", "--force-remove", path], cwd=clone, env=env,
                       check=True)
    return subprocess.run(["git", "write-tree"], cwd=clone, env=env, capture_output=True,
                          check=True).stdout.decode().strip()


@pytest.mark.parametrize("command", ["sync", "fetch"])
def test_a_squash_merge_of_our_own_events_is_merged_not_a_crash(tmp_path: Path, command: str) -> None:
    remote, (ours, other) = seeded(tmp_path, 2)
    mine = note(ours, "agent:ours", "written locally, merged upstream by squash")
    _share_objects(ours)
    tree = git(ours, "rev-parse", f"{STATE}^{{tree}}")
    squash = _remote_commit(remote, tree, tip(remote) or "", message="Squash PR")
    with open_ledger(ours) as led:
        from loopx.remote import sync

        report = getattr(sync, command)(ledger=led)
    assert report.merge == "union" and report.received == 0
    assert git(ours, "rev-parse", f"{STATE}^{{tree}}") == tree
    assert git(ours, "merge-base", "--is-ancestor", squash, STATE) == ""
    if command == "sync":
        assert report.pushed and tip(remote) == tip(ours)
        assert_only_fast_forwarded(remote)
    do_sync(other)
    assert mine in {p.rsplit("/", 1)[1].split(".")[0] for p in state_files(other)}
    assert_fsck_clean(ours)


def test_a_remote_tip_with_a_subset_of_our_new_events_merges_the_rest(tmp_path: Path) -> None:
    remote, (ours,) = seeded(tmp_path, 1)
    before = set(state_files(ours))
    first = note(ours, "agent:ours", "in the pull request")
    second = note(ours, "agent:ours", "written after the pull request")
    _share_objects(ours)
    later = [p for p in set(state_files(ours)) - before if second in p]
    tree = _tree_without(ours, STATE, later)
    _remote_commit(remote, tree, tip(remote) or "", message="Squash PR (first event only)")
    report = do_sync(ours)
    assert report.merge == "union" and report.received == 0 and report.pushed
    files = set(state_files(remote))
    assert any(first in p for p in files) and any(second in p for p in files)
    assert_only_fast_forwarded(remote)


def test_an_empty_diff_merge_on_the_remote_is_a_fast_forward(tmp_path: Path) -> None:
    remote, (ours,) = seeded(tmp_path, 1)
    note(ours, "agent:ours", "pushed to a branch, then merged with a no-op merge")
    _share_objects(ours)
    pr_tip = git(remote, "rev-parse", "refs/heads/pr")
    # A merge whose tree is the pull request's own: an empty diff against our tip.
    merged = _remote_commit(remote, git(remote, "rev-parse", f"{pr_tip}^{{tree}}"),
                            tip(remote) or "", pr_tip)
    report = do_sync(ours)
    assert report.merge == "fast-forward" and tip(ours) == merged == tip(remote)
    assert_fsck_clean(ours)


def test_a_merge_that_keeps_only_the_remote_side_is_refused_as_a_deletion(tmp_path: Path) -> None:
    from loopx.errors import Quarantined

    remote, (ours,) = seeded(tmp_path, 1)
    mine = note(ours, "agent:ours", "dropped by a `merge -s ours` upstream")
    _share_objects(ours)
    upstream = tip(remote) or ""
    pr_tip = git(remote, "rev-parse", "refs/heads/pr")
    _remote_commit(remote, git(remote, "rev-parse", f"{upstream}^{{tree}}"), upstream, pr_tip)
    before = tip(ours)
    with pytest.raises(Quarantined, match="deleted"):
        do_sync(ours)
    assert tip(ours) == before and any(mine in p for p in state_files(ours))


def test_a_rebase_merge_replaying_our_commits_is_merged(tmp_path: Path) -> None:
    remote, (ours,) = seeded(tmp_path, 1)
    note(ours, "agent:ours", "one")
    note(ours, "agent:ours", "two")
    _share_objects(ours)
    upstream = tip(remote) or ""
    # Replay each of our commits on the remote tip (new commit ids, same trees).
    replayed = upstream
    for commit in git(ours, "rev-list", "--reverse", f"{upstream}..{STATE}").splitlines():
        replayed = _remote_commit(remote, git(ours, "rev-parse", f"{commit}^{{tree}}"),
                                  replayed, message="rebased")
    report = do_sync(ours)
    assert report.merge == "union" and report.received == 0 and report.pushed
    assert git(ours, "rev-parse", f"{STATE}^{{tree}}") == git(remote, "rev-parse", f"{replayed}^{{tree}}")
    assert_only_fast_forwarded(remote)
