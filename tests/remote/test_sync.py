"""Sync through real bare remotes: convergence, fast-forward-only pushes, handoff by clone."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, invoke, run_loopx
from syncutil import (
    assert_fsck_clean, assert_only_fast_forwarded, bare_remote, clone, do_sync, git_daemon, note,
    open_ledger, seeded, snapshot, state_files, tip,
)


def _converge(clones: list[Path]) -> None:
    for _ in range(2):  # a second round carries the last merges everywhere
        for path in clones:
            do_sync(path)


def _assert_identical(clones: list[Path]) -> None:
    first = snapshot(clones[0])
    files = state_files(clones[0])
    for path in clones[1:]:
        assert snapshot(path) == first
        assert state_files(path) == files


@pytest.mark.parametrize("count", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_interleaved_appends_and_syncs_converge_with_fast_forward_pushes_only(
        tmp_path: Path, count: int) -> None:
    remote, clones = seeded(tmp_path, count)
    rng = random.Random(count)
    written = []
    for step in range(4 * count):
        path = rng.choice(clones)
        if rng.random() < 0.6:
            written.append(note(path, f"agent:c{clones.index(path)}", f"step {step}"))
        else:
            do_sync(path)
    _converge(clones)
    _assert_identical(clones)
    assert snapshot(clones[0])["notes"] == len(written)
    assert tip(remote) == tip(clones[0])
    assert assert_only_fast_forwarded(remote) >= 2
    assert_fsck_clean(remote)


@pytest.mark.slow
def test_concurrent_writers_in_four_clones_converge(tmp_path: Path) -> None:
    remote, clones = seeded(tmp_path, 4)
    script = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[2]);"
        "from syncutil import note, do_sync\n"
        "for i in range(3):\n"
        "    note(Path(sys.argv[1]), 'agent:w', f'{sys.argv[1]} {i}')\n"
        "    do_sync(Path(sys.argv[1]), retries=20)\n"
    )
    tests_dir = str(Path(__file__).parents[1])
    procs = [subprocess.Popen([sys.executable, "-c", script, str(p), tests_dir],
                              stderr=subprocess.PIPE, text=True) for p in clones]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    _converge(clones)
    _assert_identical(clones)
    assert snapshot(clones[0])["notes"] == 12
    assert_only_fast_forwarded(remote)


def test_first_push_creates_the_remote_branch_and_an_empty_clone_adopts_it(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")  # cloned before there was any state
    assert invoke(a, "init").code == 0
    report = do_sync(a)
    assert report.pushed and report.sent == 1 and report.remote_before is None
    fetched = do_sync(b)
    assert fetched.merge == "adopted" and fetched.received == 1
    assert tip(b) == tip(a) == tip(remote)


def test_sync_merges_diverged_tips_with_a_two_parent_union_commit(tmp_path: Path) -> None:
    remote, (a, b) = seeded(tmp_path, 2)
    note(a, "agent:a", "from a")
    note(b, "agent:b", "from b")
    do_sync(a)
    report = do_sync(b)
    assert report.merge == "union" and report.received == 1 and report.sent == 1
    parents = git(b, "rev-list", "--parents", "-n1", "refs/heads/loopx/state").split()[1:]
    assert len(parents) == 2
    assert tip(remote) == tip(b)


def test_fetch_merges_without_pushing_and_push_refuses_to_overwrite(tmp_path: Path) -> None:
    remote, (a, b) = seeded(tmp_path, 2)
    note(a, "agent:a", "a")
    do_sync(a)
    note(b, "agent:b", "b")
    before = tip(remote)
    rejected = invoke(b, "push")
    assert rejected.code == 1 and "run `git loopx sync`" in rejected.err
    fetched = invoke(b, "fetch", "--format", "json")
    assert fetched.code == 0, fetched.err
    assert fetched.json()["merge"] == "union"
    assert tip(remote) == before
    assert invoke(b, "push").code == 0
    assert tip(remote) == tip(b)


def test_sync_reports_unknown_remote(repo: Path) -> None:
    invoke(repo, "init")
    result = invoke(repo, "sync", "nowhere")
    assert result.code == 1 and "no remote named 'nowhere'" in result.err


def test_remote_defaults_to_the_branch_upstream(tmp_path: Path) -> None:
    remote, (a,) = seeded(tmp_path, 1)
    other = bare_remote(tmp_path, "other.git")
    git(a, "remote", "add", "up", str(other))
    git(a, "push", "-q", "-u", "up", "HEAD")
    result = invoke(a, "sync", "--format", "json")
    assert result.json()["remote"] == "up"
    assert tip(other) == tip(a)


def test_a_fresh_clone_shows_exactly_the_origins_projection(tmp_path: Path) -> None:
    remote, (a,) = seeded(tmp_path, 1)
    assert invoke(a, "goal", "add", "Ship it", "--id", "g-1", "--accept", "works").code == 0
    assert invoke(a, "todo", "add", "g-1", "Write it", "--id", "t-1").code == 0
    assert invoke(a, "todo", "claim", "t-1").code == 0
    assert invoke(a, "sync").code == 0
    fresh = clone(remote, tmp_path / "fresh")
    theirs = run_loopx(a, "status", "--format", "json").json()
    ours = run_loopx(fresh, "status", "--format", "json").json()
    for snap in (theirs, ours):  # the work tree, HEAD and upstream are each clone's own
        snap.pop("environment", None)
    assert ours == theirs and ours["todos"][0]["claimed_by"] == "human:test@example.com"
    assert tip(fresh) == tip(a)


def test_two_agents_claiming_one_todo_with_sync_exactly_one_wins_everywhere(tmp_path: Path) -> None:
    remote, (a, b) = seeded(tmp_path, 2)
    assert invoke(a, "goal", "add", "G", "--id", "g-1", "--accept", "x").code == 0
    assert invoke(a, "todo", "add", "g-1", "T", "--id", "t-1").code == 0
    do_sync(a)
    do_sync(b)
    procs = [subprocess.Popen(["git", "loopx", "todo", "claim", "t-1", "--sync"], cwd=path,
                              env=dict(os.environ, LOOPX_ACTOR=actor), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for path, actor in ((a, "agent:a"), (b, "agent:b"))]
    results = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    winners = [i for i, (code, _, _) in enumerate(results) if code == 0]
    assert len(winners) == 1, results
    winner = ("agent:a", "agent:b")[winners[0]]
    loser_err = results[1 - winners[0]][2]
    assert f"went to {winner}" in loser_err
    _converge([a, b])
    for path in (a, b):
        with open_ledger(path) as led:
            todo = led.fold().todos["t-1"]
        assert todo.holder == winner and todo.contested_by == []
    assert not git(a, "for-each-ref", "refs/loopx/proposals/")


def test_claim_sync_when_the_todo_is_already_taken_remotely_names_the_holder(tmp_path: Path) -> None:
    remote, (a, b) = seeded(tmp_path, 2)
    invoke(a, "goal", "add", "G", "--id", "g-1", "--accept", "x")
    invoke(a, "todo", "add", "g-1", "T", "--id", "t-1")
    do_sync(a)
    do_sync(b)
    assert invoke(a, "todo", "claim", "t-1", "--sync", actor="agent:a").code == 0
    lost = invoke(b, "todo", "claim", "t-1", "--sync", actor="agent:b")
    assert lost.code == 1 and "went to agent:a" in lost.err
    assert tip(b) == tip(remote)


@pytest.mark.slow
def test_sync_over_git_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file:git")
    served = tmp_path / "served"
    served.mkdir()
    remote = bare_remote(served, "state.git")
    with git_daemon(served) as base:
        url = f"{base}/state.git"
        clones = [clone(url, tmp_path / f"d{n}") for n in range(2)]
        invoke(clones[0], "init")
        _converge(clones)  # the second adopts the ledger (unrelated ones merge only on request)
        for step in range(6):
            path = clones[step % 2]
            note(path, f"agent:d{step % 2}", f"over git:// {step}")
            do_sync(path)
        _converge(clones)
        _assert_identical(clones)
        assert snapshot(clones[0])["notes"] == 6
        assert_only_fast_forwarded(remote)



def test_clones_that_each_ran_init_before_syncing_merge_their_unrelated_histories(
        tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    invoke(a, "init")
    invoke(b, "init")
    do_sync(a)
    assert do_sync(b).merge == "union"
    do_sync(a)
    _assert_identical([a, b])
    assert snapshot(a)["ledger"]["events"] == 2


@pytest.mark.parametrize("own", [False, True], ids=["fast-forward", "union"])
def test_a_sync_parses_each_file_it_fetches_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 own: bool) -> None:
    """The incoming check parses every file that arrives; the fold after the merge takes
    those events instead of parsing the files again."""
    from loopx.ledger import layout
    from loopx.remote import sync

    _, (a, b) = seeded(tmp_path, 2)
    do_sync(b)
    sent = [note(a, "agent:a", f"sent {n}") for n in range(3)]
    do_sync(a)
    if own:
        note(b, "agent:b", "kept")
    parsed: list[str] = []
    real = layout.read_events  # (read_event too reads through it)
    monkeypatch.setattr(layout, "read_events",
                        lambda files: parsed.extend(p for p, _ in files) or real(files))
    with open_ledger(b) as led:
        led.fold()  # our own state, folded before the sync (as any command has it)
        parsed.clear()
        report = sync.sync(ledger=led)
        assert led.fold().notes == 3 + own
    assert report.received == 3
    fetched = [p for p in parsed if any(event_id in p for event_id in sent)]
    assert sorted(fetched) == sorted(set(fetched)) and len(fetched) == 3
