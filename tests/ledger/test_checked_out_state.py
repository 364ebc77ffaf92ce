"""loopx/state checked out in a linked work tree (issue 12, item 2), with a real worktree.

Moving a branch under a work tree leaves its index behind, so the next ordinary commit there
deletes every event added meanwhile. loopx refuses to write while the branch is checked out
(and says how to step off it); `doctor` names events a commit deleted, and `sync` refuses to
push a state that deleted events the remote holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git, invoke, run_loopx
from syncutil import STATE, do_sync, event_ids, seeded, tip


@pytest.fixture
def checked_out(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A clone with a ledger, its remote, and a linked work tree with loopx/state checked out."""
    remote, (clone,) = seeded(tmp_path, 1)
    assert invoke(clone, "note", "add", "before the work tree").code == 0
    do_sync(clone)
    where = tmp_path / "state-checkout"
    git(clone, "worktree", "add", "-q", str(where), "loopx/state")
    return remote, clone, where


@pytest.mark.parametrize("args", [("note", "add", "x"), ("goal", "add", "G"), ("sync",),
                                  ("doctor", "--repair")])
def test_loopx_refuses_to_move_a_branch_a_work_tree_has_checked_out(
        checked_out: tuple[Path, Path, Path], args: tuple[str, ...]) -> None:
    remote, clone, where = checked_out
    if args == ("sync",):  # something to merge, so that sync would move the branch
        other = clone.parent / "other"
        git(clone.parent, "clone", "-q", str(remote), str(other))
        assert invoke(other, "note", "add", "from elsewhere").code == 0
        do_sync(other)
    if args[0] == "doctor":  # something to repair
        _delete_by_an_ordinary_commit(clone, where)
    before = tip(clone)
    result = run_loopx(clone, *args)
    assert result.code == 1, result.err
    assert f"checked out in the work tree {where}" in result.err
    assert f"git -C {where} switch --detach" in result.err
    assert tip(clone) == before


def test_a_detached_work_tree_is_no_obstacle(checked_out: tuple[Path, Path, Path]) -> None:
    _, clone, where = checked_out
    git(where, "switch", "-q", "--detach")
    assert invoke(clone, "note", "add", "fine now").code == 0


def _delete_by_an_ordinary_commit(clone: Path, where: Path) -> list[str]:
    """What happened before this fix: the branch moved under the work tree (an old loopx,
    here plain update-ref), then an ordinary commit there, from its stale index, deleted
    the events added meanwhile. Returns their ids."""
    before = set(event_ids(clone))
    for text in ("added under the work tree", "and another"):
        assert invoke(clone, "note", "add", text, "--state-ref", "proposal/p").code == 0
    git(clone, "update-ref", STATE, "refs/heads/proposal/p")
    added = sorted(set(event_ids(clone)) - before)
    (where / "notes.txt").write_text("an unrelated file\n")
    git(where, "add", "notes.txt")
    git(where, "commit", "-q", "-m", "ordinary commit on the checked-out state branch")
    assert not set(added) & set(event_ids(clone)), "the stale index did not delete them"
    return added


def test_doctor_names_events_an_ordinary_commit_deleted_and_repair_puts_them_back(
        checked_out: tuple[Path, Path, Path]) -> None:
    _, clone, where = checked_out
    deleted = _delete_by_an_ordinary_commit(clone, where)
    report = invoke(clone, "doctor", "--json")
    assert report.code == 1
    named = [e["id"] for e in report.json()["health"]["damage"]["deleted_events"]]  # type: ignore[index]
    assert sorted(named) == deleted
    git(where, "switch", "-q", "--detach")  # step off it, as the refusal says
    repaired = invoke(clone, "doctor", "--repair", "--json")
    assert repaired.code == 0, repaired.err
    assert set(deleted) <= set(event_ids(clone))
    assert invoke(clone, "doctor").code == 0


def test_sync_refuses_to_push_a_state_that_deleted_events_the_remote_holds(
        checked_out: tuple[Path, Path, Path]) -> None:
    remote, clone, where = checked_out
    deleted = _delete_by_an_ordinary_commit(clone, where)
    git(clone, "push", "-q", "origin", "refs/heads/proposal/p:refs/heads/loopx/state")
    git(where, "switch", "-q", "--detach")
    theirs = tip(remote)
    result = invoke(clone, "sync")
    assert result.code == 1
    assert "must not get" in result.err and "(deleted)" in result.err
    assert "doctor --repair" in result.err
    assert tip(remote) == theirs and set(deleted) <= set(event_ids(remote))
    assert invoke(clone, "doctor", "--repair").code == 0
    assert invoke(clone, "sync").code == 0
    assert set(deleted) <= set(event_ids(remote))


def test_the_pre_push_hook_does_not_carry_a_deletion_along(
        checked_out: tuple[Path, Path, Path]) -> None:
    remote, clone, where = checked_out
    do_sync(clone)
    deleted = _delete_by_an_ordinary_commit(clone, where)
    git(clone, "push", "-q", "origin", "refs/heads/proposal/p:refs/heads/loopx/state")
    git(where, "switch", "-q", "--detach")
    assert invoke(clone, "hooks", "install").code == 0
    git(clone, "fetch", "-q", "origin")
    (clone / "code.txt").write_text("x\n")
    git(clone, "add", "code.txt")
    git(clone, "commit", "-q", "-m", "code")
    import subprocess

    push = subprocess.run(["git", "push", "-q", "origin", "HEAD:refs/heads/topic"], cwd=clone,
                          capture_output=True, text=True)
    assert push.returncode == 0, push.stderr
    assert set(deleted) <= set(event_ids(remote))


def test_a_commit_made_on_the_state_branch_itself_is_flagged_by_the_hook(
        checked_out: tuple[Path, Path, Path]) -> None:
    _, clone, where = checked_out
    assert invoke(clone, "hooks", "install").code == 0
    (where / "stray.txt").write_text("oops\n")
    git(where, "add", "stray.txt")
    import subprocess

    proc = subprocess.run(["git", "commit", "-q", "-m", "by hand"], cwd=where,
                          capture_output=True, text=True)
    assert proc.returncode == 0
    assert "this commit is on loopx/state itself" in proc.stderr
    assert "git loopx doctor" in proc.stderr


def test_a_state_branch_being_rebased_in_a_work_tree_counts_as_checked_out(
        checked_out: tuple[Path, Path, Path]) -> None:
    _, clone, where = checked_out
    git(where, "switch", "-q", "--detach")
    assert invoke(clone, "note", "add", "second").code == 0
    git(where, "switch", "-q", "loopx/state")
    import subprocess

    stopped = subprocess.run(["git", "rebase", "--exec", "false", "HEAD~1"], cwd=where,
                             capture_output=True, text=True)
    assert stopped.returncode != 0 and (Path(git(where, "rev-parse", "--git-dir"))
                                        / "rebase-merge").is_dir()
    result = invoke(clone, "note", "add", "while it is being rebased")
    assert result.code == 1 and f"checked out in the work tree {where}" in result.err
