"""A foreign ledger (issue 12, item 10): a remote whose loopx/state shares no history with ours
is another ledger; sync and fetch refuse to merge it, and never push ours into it, unless the
user chooses to with --allow-unrelated."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git, invoke, run_loopx
from syncutil import STATE, bare_remote, clone, do_sync, open_ledger, snapshot, state_files, tip


def _ledger_with_goal(path: Path, title: str) -> None:
    # --offline: a ledger of its own, without adopting the remote's (what `init` does first)
    for args in (("init", "--offline"), ("goal", "add", title, "--id", "g-1")):
        result = invoke(path, *args)
        assert result.code == 0, result.err


@pytest.fixture
def two_ledgers(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Two clones of one repository that each started a ledger (goal g-1) before syncing; the
    first pushed its ledger."""
    remote = bare_remote(tmp_path)
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    _ledger_with_goal(a, "Ours upstream")
    do_sync(a)
    _ledger_with_goal(b, "A different project's goal")
    return remote, a, b


@pytest.mark.parametrize("command", ["sync", "fetch"])
def test_a_remote_ledger_with_no_common_history_is_refused(
        two_ledgers: tuple[Path, Path, Path], command: str) -> None:
    remote, _, b = two_ledgers
    ours, theirs = tip(b), tip(remote)
    result = run_loopx(b, command)
    assert result.code == 1
    assert "shares no history with local loopx/state" in result.err
    assert "--allow-unrelated" in result.err
    assert tip(b) == ours and tip(remote) == theirs  # nothing merged, nothing pushed
    assert snapshot(b)["goals"][0]["title"] == "A different project's goal"


def test_allow_unrelated_merges_the_two_ledgers_once(two_ledgers: tuple[Path, Path, Path]) -> None:
    remote, a, b = two_ledgers
    result = run_loopx(b, "sync", "--allow-unrelated", "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["merge"] == "union" and tip(remote) == tip(b)  # type: ignore[index]
    assert git(b, "rev-list", "--count", "--merges", STATE) == "1"
    assert do_sync(a).merge == "fast-forward"  # related from now on
    assert run_loopx(b, "sync").code == 0


def test_a_foreign_remote_never_gets_our_events_through_the_pre_push_hook(
        two_ledgers: tuple[Path, Path, Path]) -> None:
    remote, _, b = two_ledgers
    theirs = tip(remote)
    assert invoke(b, "hooks", "install").code == 0
    (b / "code.txt").write_text("code\n")
    git(b, "add", "code.txt")
    git(b, "commit", "-q", "-m", "code")
    import subprocess

    push = subprocess.run(["git", "push", "-q", "origin", "HEAD:refs/heads/feature"], cwd=b,
                          capture_output=True, text=True)
    assert push.returncode == 0, push.stderr  # the code push goes on (fail open)
    assert "shares no history" in push.stderr
    assert tip(remote) == theirs
    assert git(remote, "rev-parse", "refs/heads/feature") == git(b, "rev-parse", "HEAD")


def test_a_fresh_local_ledger_holding_only_its_initialisation_merges_without_asking(
        tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    _ledger_with_goal(a, "Upstream")
    do_sync(a)
    assert invoke(b, "init", "--offline").code == 0  # b started its own ledger, not looking
    assert do_sync(b).merge == "union"
    assert [g["title"] for g in snapshot(b)["goals"]] == ["Upstream"]


def test_a_second_remote_of_another_project_is_refused(tmp_path: Path) -> None:
    ours_remote, other_remote = bare_remote(tmp_path, "ours.git"), bare_remote(tmp_path, "other.git")
    mine = clone(ours_remote, tmp_path / "mine")
    stranger = clone(other_remote, tmp_path / "stranger")
    _ledger_with_goal(mine, "Mine")
    _ledger_with_goal(stranger, "Theirs")
    do_sync(mine)
    do_sync(stranger)
    git(mine, "remote", "add", "other", str(other_remote))
    before = state_files(other_remote)
    result = run_loopx(mine, "sync", "other")
    assert result.code == 1 and "another ledger" in result.err
    assert state_files(other_remote) == before
    with open_ledger(mine) as led:
        assert led.fold().goals["g-1"].title == "Mine"
