"""Who a commit found from the reflog is credited to (its post-commit hook was killed): the
actor the dead hook's running mark names, else the one actor who can have made it; when that
is not one actor, no one, said with the commit named. Never whoever runs the next command,
nor every holder of a lease on the branch."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from conftest import git, invoke, run_loopx
from loopx.hooks import unrecorded
from test_hooks import bytecode  # noqa: F401  (autouse: the hooks' processes reuse bytecode)
from test_killed_commits import _commit_killed_at, _recorded_raw

B = "agent:b@box"
A = "human:test@example.com"  # the committer, who holds t1 (leasekit.leased)


@pytest.fixture(autouse=True)
def no_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(unrecorded.GRACE_ENV, "0")


@pytest.fixture
def shared(leased: Path) -> Path:
    """Two agents in one clone: A holds t1, B holds t2, both on main."""
    for args in (("todo", "add", "g1", "T2", "--id", "t2"), ("todo", "claim", "t2")):
        result = invoke(leased, *args, actor=B)
        assert result.code == 0, result.err
    return leased


def _credited(repo: Path) -> list[tuple[str, str]]:
    """(todo, actor) of each commit record."""
    result = invoke(repo, "evidence", "list", "--limit", "100", "--json")
    assert result.code == 0, result.err
    page = result.json()
    assert page["next_offset"] is None  # type: ignore[index]
    return sorted((e["todo"], e["actor"]) for e in page["evidence"]  # type: ignore[index]
                  if e["kind"] == "commit")


def _unhooked_commit(repo: Path) -> str:
    """A commit no post-commit ran for (a hook killed before it wrote anything): no mark."""
    subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty",
                    "-m", f"no hook {uuid.uuid4().hex[:6]}"], cwd=repo, check=True)
    return git(repo, "rev-parse", "HEAD")


def _mark(repo: Path, pid: int, content: bytes) -> Path:
    folder = repo / ".git" / "loopx" / unrecorded.RUNNING
    folder.mkdir(parents=True, exist_ok=True)
    (folder / str(pid)).write_bytes(content)
    return folder / str(pid)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_killed_commit_in_a_shared_clone_is_credited_to_its_maker_not_the_sweeper(
        shared: Path, tmp_path: Path) -> None:
    sha, killed = _commit_killed_at(shared, "start", tmp_path)  # A's shim, marked for A
    assert killed and sha not in _recorded_raw(shared)
    status = run_loopx(shared, "status", actor=B)  # B's command sweeps it
    assert status.code == 0, status.err
    assert f"({sha[:9]}): their evidence is recorded now" in status.err
    assert _credited(shared) == [("t1", A)]  # not t2, not B


def test_a_commit_whose_maker_cannot_be_known_is_recorded_for_no_one_and_named(
        shared: Path) -> None:
    sha = _unhooked_commit(shared)  # no mark: A or B may have made it
    status = run_loopx(shared, "status", actor=B)
    assert status.code == 0, status.err
    line = [s for s in status.err.splitlines() if "did not finish" in s]
    assert len(line) == 1 and f"{sha[:9]} recorded for no one: who made it is not known" in line[0]
    assert "recorded now" not in line[0]
    assert _credited(shared) == []
    again = run_loopx(shared, "status", actor=B)  # said once, not at every command
    assert "did not finish" not in again.err and _credited(shared) == []


def test_with_one_holder_and_no_mark_the_holder_made_it(leased: Path) -> None:
    sha = _unhooked_commit(leased)
    status = run_loopx(leased, "status", actor=B)  # B holds nothing here
    assert status.code == 0 and f"({sha[:9]}): their evidence is recorded now" in status.err
    assert _credited(leased) == [("t1", A)]


def test_a_lease_taken_over_between_commit_and_sweep_is_not_credited_to_the_new_holder(
        leased: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _unhooked_commit(leased)
    monkeypatch.setenv(unrecorded.GRACE_ENV, "3600")  # the commands between do not sweep it
    assert invoke(leased, "todo", "release", "t1").code == 0
    assert invoke(leased, "todo", "claim", "t1", actor=B).code == 0
    monkeypatch.setenv(unrecorded.GRACE_ENV, "0")
    status = run_loopx(leased, "status", actor=B)
    assert status.code == 0 and "recorded for no one" in status.err, status.err
    assert _credited(leased) == []


def test_a_mark_of_a_pid_another_process_reused_is_a_dead_hooks(leased: Path) -> None:
    """A hook killed, its pid given to a later process: the mark was taken for a live hook and
    held the sweep back for as long as that process ran; it is the dead hook's, and names B."""
    sha = _unhooked_commit(leased)
    other = subprocess.Popen(["sleep", "120"])
    try:
        mark = _mark(leased, other.pid, unrecorded.mark_text(B, sha).encode())
        past = time.time() - 600
        os.utime(mark, (past, past))  # written before that process started
        status = run_loopx(leased, "status", actor=A)
        assert status.code == 0 and f"({sha[:9]})" in status.err, status.err
        assert _credited(leased) == []  # B's commit: B holds no lease, A is not credited
        assert not mark.exists()
    finally:
        other.kill()
        other.wait()


def test_a_mark_of_a_live_hook_written_after_it_started_still_holds_the_sweep(
        leased: Path) -> None:
    sha = _unhooked_commit(leased)
    other = subprocess.Popen(["sleep", "120"])
    try:
        time.sleep(0.1)
        mark = _mark(leased, other.pid, unrecorded.mark_text(A, sha).encode())
        status = run_loopx(leased, "status")
        assert status.code == 0 and "did not finish" not in status.err
        assert mark.exists() and _credited(leased) == []
    finally:
        other.kill()
        other.wait()
    assert "did not finish" in run_loopx(leased, "status").err
    assert _credited(leased) == [("t1", A)]


@pytest.mark.parametrize("content", [
    b"", b"agent:b@box\n", b"\xff\xfe" * 100, b"loopx-running v1\n" + b"x" * 100_000,
    b"loopx-running v1\nagent:b@box\nHEAD\nrm -rf /\n", b"loopx-running v2\nagent:b@box\n\n",
])
def test_a_mark_of_garbage_names_no_one_and_is_dropped(leased: Path, content: bytes) -> None:
    sha = _unhooked_commit(leased)
    mark = _mark(leased, _dead_pid(), content)
    status = run_loopx(leased, "status", actor=B)
    assert status.code == 0 and f"({sha[:9]}): their evidence is recorded now" in status.err
    assert _credited(leased) == [("t1", A)] and not mark.exists()


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_a_mark_that_is_no_plain_file_is_not_waited_on(leased: Path, kind: str) -> None:
    sha = _unhooked_commit(leased)
    folder = leased / ".git" / "loopx" / unrecorded.RUNNING
    folder.mkdir(parents=True, exist_ok=True)
    mark = folder / str(_dead_pid())
    if kind == "fifo":
        os.mkfifo(mark)
    elif kind == "device":
        mark.symlink_to("/dev/zero")
    else:
        mark.mkdir()
    status = subprocess.run(["git", "loopx", "status"], cwd=leased, capture_output=True,
                            text=True, timeout=60, env=dict(os.environ, LOOPX_ACTOR=B))
    assert status.returncode == 0 and f"({sha[:9]})" in status.stderr, status.stderr
    assert _credited(leased) == [("t1", A)]


def test_a_mark_naming_the_commit_but_no_identity_credits_no_one(leased: Path) -> None:
    """The dead hook had no identity to record with (an actor no ledger takes): not the
    holder's work either, as far as anyone can tell."""
    sha = _unhooked_commit(leased)
    _mark(leased, _dead_pid(), f"loopx-running v1\nnobody\n{sha}\n".encode())
    status = run_loopx(leased, "status", actor=B)
    assert status.code == 0 and f"{sha[:9]} recorded for no one" in status.err, status.err
    assert _credited(leased) == []


def test_the_python_hooks_mark_names_its_actor_then_its_commit(tmp_path: Path) -> None:
    with unrecorded.running(tmp_path, B) as noted:
        mark = tmp_path / unrecorded.RUNNING / str(os.getpid())
        assert mark.read_text() == unrecorded.mark_text(B, "")
        noted("a" * 40)
        dead = unrecorded._read_mark(mark)
        assert (dead.actor, dead.sha, dead.known) == (B, "a" * 40, True)
    assert not mark.exists()


def test_a_maker_whose_lease_was_taken_over_is_told_nothing_was_recorded(
        leased: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mark names A, whose lease on t1 went to B before the sweep: not B's evidence, and
    the line said "their evidence is recorded now" of a record that was never made."""
    monkeypatch.setenv(unrecorded.GRACE_ENV, "3600")  # the commands between do not sweep it
    sha, killed = _commit_killed_at(leased, "start", tmp_path)
    assert killed
    assert invoke(leased, "todo", "release", "t1").code == 0
    assert invoke(leased, "todo", "claim", "t1", actor=B).code == 0
    monkeypatch.setenv(unrecorded.GRACE_ENV, "0")
    status = run_loopx(leased, "status", actor=B)
    assert status.code == 0, status.err
    assert (f"({sha[:9]}): nothing was recorded; nothing to record for {sha[:9]} (no lease of "
            "its maker covers it now)") in status.err, status.err
    assert _credited(leased) == []


def test_a_file_among_the_marks_not_named_by_a_pid_names_no_one(leased: Path) -> None:
    sha = _unhooked_commit(leased)
    folder = leased / ".git" / "loopx" / unrecorded.RUNNING
    folder.mkdir(parents=True, exist_ok=True)
    stray = folder / "notes"
    stray.write_text(unrecorded.mark_text(B, sha))
    status = run_loopx(leased, "status", actor=B)
    assert status.code == 0 and f"({sha[:9]}): their evidence is recorded now" in status.err
    assert _credited(leased) == [("t1", A)] and not stray.exists()


def test_an_agents_hook_killed_before_it_decided_leaves_its_commit_to_no_one(
        leased: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Agent B (no lease) commits in A's clone; its shim is killed before it decided anything:
    the commit was credited to A, the one holder of a lease on the branch. The shim marks an
    agent's hook at work from its start, so B is one who may have made it: no one is credited."""
    monkeypatch.setenv("LOOPX_ACTOR", B)
    sha, killed = _commit_killed_at(leased, "marked", tmp_path)
    assert killed
    monkeypatch.delenv("LOOPX_ACTOR")
    status = run_loopx(leased, "status", actor=A)
    assert status.code == 0 and f"{sha[:9]} recorded for no one" in status.err, status.err
    assert _credited(leased) == []


def test_a_hook_the_shim_marked_that_finishes_leaves_no_mark(leased: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPX_ACTOR", B)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "B's, nothing to record"],
                   cwd=leased, check=True)
    monkeypatch.setenv("LOOPX_ACTOR", A)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "A's, queued"], cwd=leased,
                   check=True)
    monkeypatch.delenv("LOOPX_ACTOR")
    status = run_loopx(leased, "status", actor=A)
    assert status.code == 0 and "did not finish" not in status.err, status.err
    assert _credited(leased) == [("t1", A)]
    deadline = time.monotonic() + 60  # (the detached drain removes the queued one's mark)
    while list((leased / ".git" / "loopx" / unrecorded.RUNNING).iterdir()) and \
            time.monotonic() < deadline:
        time.sleep(0.1)
    assert list((leased / ".git" / "loopx" / unrecorded.RUNNING).iterdir()) == []


def test_a_dead_hooks_mark_with_the_sweepers_own_pid_is_a_dead_hooks(leased: Path) -> None:
    """The command that sweeps may have been given a dead hook's pid: that mark is not this
    command at work (it held back its sweep, or was dropped unread)."""
    sha = _unhooked_commit(leased)
    mark = _mark(leased, os.getpid(), unrecorded.mark_text(A, sha).encode())
    past = time.time() - 600
    os.utime(mark, (past, past))
    status = invoke(leased, "status", actor=B)
    assert status.code == 0 and f"({sha[:9]}): their evidence is recorded now" in status.err
    assert _credited(leased) == [("t1", A)] and not mark.exists()
