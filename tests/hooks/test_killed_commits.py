"""A killed commit is not forgotten (issue 22): a post-commit hook killed by a real signal
before it queued anything, after it queued but before its drain started, or in the middle
of the drain, leaves a commit that the next loopx command records (or names); and an entry
queued while a drain is finishing does not wait for a later command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import ROOT, git, invoke, run_loopx
from loopx.hooks import spool, unrecorded
from test_hooks import bytecode  # noqa: F401  (autouse: the hooks' processes reuse bytecode)


@pytest.fixture(autouse=True)
def no_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next command runs at once after a kill here: no grace for young reflog lines (a
    hook still alive is waited for all the same: see the slow-hook tests)."""
    monkeypatch.setenv(unrecorded.GRACE_ENV, "0")


def _recorded(repo: Path) -> list[str]:
    result = invoke(repo, "evidence", "list", "--json")
    assert result.code == 0, result.err
    return [e["commit"] for e in result.json()["evidence"] if e["kind"] == "commit"]  # type: ignore[index]


def _stopped(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "T"
    except OSError:
        return False


def _wait_for_pid(pid_file: Path, proc: subprocess.Popen[bytes],
                  timeout: float = 60.0) -> int | None:
    """The pid stopped at the pause point; None when the commit ended without one."""
    deadline, ended = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        if proc.poll() is not None and ended is None:
            ended = time.monotonic()  # the detached drain may stop a little after git ends
        if ended is not None and time.monotonic() - ended > 15 and not pid_file.exists():
            return None
        if pid_file.exists() and pid_file.read_text().strip():
            pid = int(pid_file.read_text())
            if _stopped(pid):
                return pid
        time.sleep(0.01)
    raise AssertionError(f"no process stopped at {pid_file.name}")


def _commit_killed_at(repo: Path, point: str, tmp_path: Path, strict: bool = True
                      ) -> tuple[str, bool]:
    """A real `git commit` whose post-commit hook (or the drain it starts) stops itself at
    ``point`` and is killed there with SIGKILL; the commit's sha."""
    deadline = time.monotonic() + 60  # a drain still at work would take this entry itself
    while spool.drain_running(repo / ".git" / "loopx") and time.monotonic() < deadline:
        time.sleep(0.05)
    name = f"f-{uuid.uuid4().hex[:8]}"
    (repo / name).write_text("work\n")
    git(repo, "add", name)
    pid_file = tmp_path / f"pid-{name}"
    env = dict(os.environ, **{spool.PAUSE_ENV: f"{point}:{pid_file}"})
    proc = subprocess.Popen(["git", "commit", "-q", "-m", f"work {name}"], cwd=repo, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pid = _wait_for_pid(pid_file, proc)
    if pid is None:  # a drain already at work (a later round of one) took the entry itself
        assert not strict, f"nothing stopped at {point}"
        assert proc.wait(timeout=60) == 0
        return git(repo, "rev-parse", "HEAD"), False
    os.kill(pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == 0  # git goes on: post-commit's status is ignored
    return git(repo, "rev-parse", "HEAD"), True


@pytest.mark.parametrize("point", ["start", "queued", "draining"])
def test_a_commit_whose_hook_is_killed_is_recorded_by_the_next_command(
        leased: Path, tmp_path: Path, point: str) -> None:
    sha, _ = _commit_killed_at(leased, point, tmp_path)
    assert sha not in _recorded_raw(leased)  # nothing was written by the killed process
    status = run_loopx(leased, "status")  # a real process: the next loopx command
    assert status.code == 0, status.err
    assert _recorded(leased) == [sha]
    if point == "start":  # nothing was queued: only the reflog knew
        assert f"found 1 commit(s) whose post-commit hook did not finish ({sha[:9]})" in status.err
    again = run_loopx(leased, "status")
    assert "post-commit hook did not finish" not in again.err and _recorded(leased) == [sha]


def _recorded_raw(repo: Path) -> str:
    """The state branch's files as text, read with git only (no loopx command, which would
    apply the queue)."""
    return subprocess.run(["git", "log", "-p", "refs/heads/loopx/state"], cwd=repo,
                          capture_output=True, text=True, check=True).stdout


def _commit(repo: Path, message: str) -> None:
    (repo / f"f-{uuid.uuid4().hex[:8]}").write_text(message + "\n")
    git(repo, "add", "-A")
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo, check=True)


def test_several_killed_commits_and_finished_ones_are_each_recorded_once(
        leased: Path, tmp_path: Path) -> None:
    killed = [_commit_killed_at(leased, "start", tmp_path)[0] for _ in range(2)]
    _commit(leased, "finished normally")
    killed.append(_commit_killed_at(leased, "queued", tmp_path)[0])
    assert invoke(leased, "hooks", "drain").code == 0
    commits = _recorded(leased)
    assert sorted(commits) == sorted([*killed, git(leased, "rev-parse", "HEAD~1")])
    assert len(commits) == len(set(commits)) == 4


def test_commits_on_another_branch_or_after_the_lease_ended_are_not_attributed(
        leased: Path, tmp_path: Path) -> None:
    git(leased, "switch", "-q", "-c", "side")
    _commit(leased, "not the branch the lease was taken on")
    git(leased, "switch", "-q", "main")
    assert invoke(leased, "todo", "release", "t1").code == 0
    _commit(leased, "the lease is gone")  # (the shim itself knows: no loopx process runs)
    status = run_loopx(leased, "status")
    assert status.code == 0 and _recorded(leased) == []
    watched = json.loads((leased / ".git" / "loopx" / unrecorded.WATCH).read_text())
    assert watched["branches"] == {}  # the ended lease is no longer watched


def test_a_warm_read_with_watched_branches_and_no_commit_loads_no_event_model(
        leased: Path) -> None:
    assert (leased / ".git" / "loopx" / unrecorded.WATCH).is_file()
    assert invoke(leased, "status", "--no-ci").code == 0
    probe = ("import json, sys\nfrom loopx.cli.launch import main\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
             "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", probe, "status", "--no-ci"], cwd=leased,
                          capture_output=True, text=True,
                          env=dict(os.environ, LOOPX_ACTOR="human:test@example.com"))
    loaded = json.loads(proc.stderr.strip().splitlines()[-1])
    heavy = [m for m in loaded if m.startswith(("pydantic", "loopx.hooks.capture",
                                                "loopx.model.events"))]
    assert heavy == []


def test_a_damaged_watch_file_is_dropped_never_an_error(leased: Path) -> None:
    (leased / ".git" / "loopx" / unrecorded.WATCH).write_text("{not json")
    assert run_loopx(leased, "status").code == 0
    assert invoke(leased, "todo", "claim", "t1").code == 0  # a claim watches again
    doc = json.loads((leased / ".git" / "loopx" / unrecorded.WATCH).read_text())
    assert list(doc["branches"]) == ["refs/heads/main"]


# --- an entry queued while a drain finishes -------------------------------------------------

ENQUEUE = """
import sys
from pathlib import Path
from loopx.hooks import spool
loopx_dir = Path(sys.argv[1])
spool.append(loopx_dir, hook="post-commit", inputs={"n": "late"}, actor="agent:x")
# What post-commit does next: start a drain unless one is running. One is (ours, finishing).
print("running" if spool.drain_running(loopx_dir) else "free")
"""


def test_an_entry_queued_while_a_drain_finishes_is_applied_by_that_drain(tmp_path: Path) -> None:
    loopx_dir = tmp_path / "loopx"
    spool.append(loopx_dir, hook="post-commit", inputs={"n": "first"}, actor="agent:x")
    applied: list[str] = []
    said: list[str] = []

    def handler(entry: spool.Entry) -> None:
        applied.append(entry.inputs["n"])
        if entry.inputs["n"] == "first":  # a real process queues one as this drain ends
            proc = subprocess.run([sys.executable, "-c", ENQUEUE, str(loopx_dir)], cwd=ROOT,
                                  capture_output=True, text=True, check=True)
            said.append(proc.stdout.strip())

    done = spool.drain(loopx_dir, {"post-commit": handler})
    assert said == ["running"]  # so the enqueuer started no drain of its own
    assert applied == ["first", "late"] and len(done.applied) == 2
    assert not spool.has_pending(loopx_dir)


def test_a_drain_that_cannot_apply_an_entry_yet_does_not_spin(tmp_path: Path) -> None:
    loopx_dir = tmp_path / "loopx"
    spool.append(loopx_dir, hook="post-commit", inputs={}, actor="agent:x")
    calls: list[int] = []

    def later(entry: spool.Entry) -> None:
        calls.append(1)
        raise spool.Later("busy")

    done = spool.drain(loopx_dir, {"post-commit": later})
    assert len(calls) == 1 and len(done.kept) == 1 and spool.has_pending(loopx_dir)


def _poll(check, guard: float = 100.0) -> bool:  # type: ignore[no-untyped-def]
    """Poll ``check`` until it holds or the hang guard runs out (not a measurement)."""
    end = time.monotonic() + guard
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.2)
    return bool(check())


def test_a_commit_queued_while_a_real_drain_is_held_is_recorded_when_it_finishes(
        leased: Path, tmp_path: Path) -> None:
    """A real detached drain stopped in the middle of its entry (holding the queue), a second
    real commit queued meanwhile (its hook sees the drain and starts none), then the drain
    goes on: both commits are recorded with no further loopx command."""
    loopx_dir = leased / ".git" / "loopx"
    name = f"f-{uuid.uuid4().hex[:8]}"
    (leased / name).write_text("first\n")
    git(leased, "add", name)
    pid_file = tmp_path / "drain.pid"
    env = dict(os.environ, **{spool.PAUSE_ENV: f"draining:{pid_file}"})
    proc = subprocess.Popen(["git", "commit", "-q", "-m", "first"], cwd=leased, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pid = _wait_for_pid(pid_file, proc)
    assert pid is not None and proc.wait(timeout=60) == 0
    first = git(leased, "rev-parse", "HEAD")
    try:
        assert spool.drain_running(loopx_dir)
        _commit(leased, "second")  # no pause: its hook queues and sees the drain running
        second = git(leased, "rev-parse", "HEAD")
        assert second not in _recorded_raw(leased) and spool.has_pending(loopx_dir)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert _poll(lambda: all(sha in _recorded_raw(leased) for sha in (first, second))
                 and not spool.has_pending(loopx_dir))
    assert sorted(_recorded(leased)) == sorted([first, second])


HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # held until the test closes our stdin
"""


@pytest.mark.slow
def test_a_commit_queued_while_the_clone_lock_is_held_is_recorded_once_it_is_free(
        leased: Path) -> None:
    """The detached drain post-commit starts finds the state branch busy (another process
    holds the clone lock longer than it waits) and outwaits it, instead of leaving the entry
    for a later command."""
    loopx_dir = leased / ".git" / "loopx"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(loopx_dir / "write.lock")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        _commit(leased, "while busy")
        sha = git(leased, "rev-parse", "HEAD")
        # Past the drain's own wait for the lock (ledgers.READ_WAIT_S): it must try again.
        time.sleep(12)
        assert sha not in _recorded_raw(leased) and spool.has_pending(loopx_dir)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)
    assert _poll(lambda: sha in _recorded_raw(leased) and not spool.has_pending(loopx_dir))
    assert _recorded(leased) == [sha]


@pytest.mark.stress
def test_25_of_30_commits_killed_at_every_point_are_all_recorded(leased: Path,
                                                                   tmp_path: Path) -> None:
    points = ["start", "queued", "draining", "start", "start"]
    made, kills = [], 0
    for i in range(30):
        if i % 6 == 5:
            _commit(leased, f"finished {i}")
            made.append(git(leased, "rev-parse", "HEAD"))
        else:
            sha, killed = _commit_killed_at(leased, points[i % 5], tmp_path, strict=False)
            made.append(sha)
            kills += killed
    status = run_loopx(leased, "status")
    assert status.code == 0, status.err
    commits = _recorded(leased)
    assert sorted(commits) == sorted(made) and len(commits) == 30
    assert kills >= 20  # of 25 attempts (a drain at work may apply a "draining" entry first)


def test_a_slow_post_commit_still_running_is_not_taken_for_killed(
        leased: Path, tmp_path: Path) -> None:
    """A real post-commit stopped (alive) at its start while a foreground command runs: the
    command neither records the commit nor names it killed; the hook, continued, records it
    once."""
    name = f"f-{uuid.uuid4().hex[:8]}"
    (leased / name).write_text("slow\n")
    git(leased, "add", name)
    pid_file = tmp_path / "slow.pid"
    env = dict(os.environ, **{spool.PAUSE_ENV: f"start:{pid_file}"})
    proc = subprocess.Popen(["git", "commit", "-q", "-m", "slow"], cwd=leased, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pid = _wait_for_pid(pid_file, proc)
    assert pid is not None
    sha = git(leased, "rev-parse", "HEAD")
    try:
        status = run_loopx(leased, "status")  # beside the hook, past any grace period
        assert status.code == 0, status.err
        assert "did not finish" not in status.err
        assert sha not in _recorded_raw(leased)
        assert not spool.has_pending(leased / ".git" / "loopx")
    finally:
        os.kill(pid, signal.SIGCONT)
    proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert _poll(lambda: sha in _recorded_raw(leased))
    after = run_loopx(leased, "status")
    assert after.code == 0 and "did not finish" not in after.err, after.err
    assert _recorded(leased) == [sha]


def test_a_young_reflog_line_waits_out_the_grace_period(
        leased: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit whose hook has not even started yet (a reflog line seconds old, no hook
    marked running) is left for a later sweep; once older than the grace it is found."""
    monkeypatch.delenv(unrecorded.GRACE_ENV)
    loopx_dir = leased / ".git" / "loopx"
    subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty",
                    "-m", "no hook ran"], cwd=leased, check=True)
    sha = git(leased, "rev-parse", "HEAD")
    made = int(git(leased, "log", "-1", "--format=%ct"))
    found, offsets, _ = unrecorded.sweep(loopx_dir, now=made + 1)
    assert found == []
    unrecorded.mark_read(loopx_dir, offsets)
    assert unrecorded.grown(loopx_dir)  # the line is still to be read
    found, _, _ = unrecorded.sweep(loopx_dir, now=made + unrecorded.GRACE_S + 1)
    assert [m.sha for m in found] == [sha]


def test_a_reflog_line_dated_ahead_does_not_hold_back_the_lines_after_it(
        leased: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit whose clock was ahead (GIT_COMMITTER_DATE, a clock since set back) and whose
    hook never ran: its reflog line was "young" until that date (2100 here), and the sweep
    stops at a young line, so no killed commit after it was ever recorded."""
    monkeypatch.delenv(unrecorded.GRACE_ENV)
    loopx_dir = leased / ".git" / "loopx"
    shas = []
    for date in ("@4102444800 +0000", None):
        env = dict(os.environ, **({"GIT_COMMITTER_DATE": date} if date else {}))
        subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty",
                        "-m", "no hook ran"], cwd=leased, env=env, check=True)
        shas.append(git(leased, "rev-parse", "HEAD"))
    made = int(git(leased, "log", "-1", "--format=%ct"))
    found, offsets, _ = unrecorded.sweep(loopx_dir, now=made + unrecorded.GRACE_S + 1)
    assert [m.sha for m in found] == shas
    unrecorded.mark_read(loopx_dir, offsets)
    subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty",
                    "-m", "young"], cwd=leased, check=True)
    found, _, _ = unrecorded.sweep(loopx_dir, now=int(git(leased, "log", "-1", "--format=%ct")))
    assert found == []  # a line seconds old still waits out the grace


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_done_file_that_is_no_plain_file_stops_no_commit(tmp_path: Path, kind: str) -> None:
    """post-commit notes the commits it finished in hooks.done while a branch is watched: a
    fifo there was opened for appending, which waits for a reader, so every commit on a held
    lease hung for good; a link there was written through. Neither is waited on or written."""
    loopx_dir = tmp_path / "loopx"
    loopx_dir.mkdir()
    (loopx_dir / unrecorded.WATCH).write_text("{}")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("kept\n")
    if kind == "fifo":
        os.mkfifo(loopx_dir / unrecorded.DONE)
    else:
        (loopx_dir / unrecorded.DONE).symlink_to(elsewhere)
    code = ("import sys; from pathlib import Path; from loopx.hooks import unrecorded; "
            "unrecorded.mark_done(Path(sys.argv[1]), 'a' * 40)")
    subprocess.run([sys.executable, "-c", code, str(loopx_dir)], check=True, timeout=30)
    assert elsewhere.read_text() == "kept\n"
    (loopx_dir / unrecorded.DONE).unlink()
    for sha in ("a" * 40, "b" * 40):
        unrecorded.mark_done(loopx_dir, sha)
    assert unrecorded.done(loopx_dir) == {"a" * 40, "b" * 40}
