"""A hook never stalls git (issue 12, item 8): it waits at most spool.WAIT_S for the state
branch, then leaves its work in the spool and starts a drain that outwaits the branch. Real `git
commit`, `--amend` and `push`; another process really holds the clone lock or the ref's lock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import git, invoke
from loopx.hooks import spool

# A hang guard, not a measurement: a hook gives up after spool.WAIT_S, long before the lock
# holders below let go (120 s); how long a busy commit or push takes is a figure of
# benchmarks/bench_bounds.py.
HANG_GUARD_S = 100


@pytest.fixture(autouse=True)
def bytecode(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path_factory.getbasetemp() / "pycache"))


@pytest.fixture
def work(repo: Path) -> Path:
    """A ledger with goal g1, todo t1 and the hooks installed."""
    for args in (("init",), ("goal", "add", "G", "--id", "g1"), ("todo", "add", "g1", "T", "--id", "t1"),
                 ("hooks", "install")):
        result = invoke(repo, *args)
        assert result.code == 0, result.err
    return repo


HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0); os.write(fd, str(os.getpid()).encode())
print("held", flush=True)
time.sleep(120)
"""

FRESH_REF_LOCK = """
import os, sys, time
path = sys.argv[1]
open(path, "w").close()
print("held", flush=True)
while True:
    os.utime(path)  # fresh: never taken for a stale lock a killed process left
    time.sleep(0.3)
"""


def _holding(script: str, target: Path) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-c", script, str(target)], stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    try:
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _commit(repo: Path, message: str, *extra: str) -> subprocess.CompletedProcess[str]:
    name = f"f-{time.monotonic_ns()}"
    (repo / name).write_text(message)
    git(repo, "add", name)
    return subprocess.run(["git", "commit", "-q", "-m", message, *extra], cwd=repo,
                          capture_output=True, text=True, timeout=HANG_GUARD_S)


def _evidence(repo: Path) -> list[dict[str, object]]:
    """Every piece of evidence, oldest first (the listing pages newest first)."""
    result = invoke(repo, "evidence", "list", "--limit", "100000", "--json")
    assert result.code == 0, result.err
    return result.json()["evidence"][::-1]  # type: ignore[index, no-any-return]


def _recorded_without_loopx(repo: Path, sha: str) -> bool:
    """Whether the state branch holds commit evidence naming ``sha`` (read with git alone)."""
    names = git(repo, "ls-tree", "-r", "--name-only", "refs/heads/loopx/state").splitlines()
    recorded = [n for n in names if n.endswith(".evidence.recorded.yaml")]
    return any(sha in git(repo, "show", f"refs/heads/loopx/state:{n}") for n in recorded)


def _poll(check: Callable[[], bool], *, guard: float = HANG_GUARD_S) -> bool:
    """Poll ``check`` until it holds (True) or the hang guard runs out (False)."""
    end = time.monotonic() + guard
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.2)
    return check()


@pytest.mark.slow
@pytest.mark.parametrize("holder", ["clone lock", "ref lock"])
def test_queued_evidence_is_recorded_once_the_branch_is_free_with_no_other_command(
        work: Path, holder: str) -> None:
    """Issue 22: an entry queued while the state branch is busy starts a drain that outwaits
    the branch; nothing waits for a later loopx command."""
    loopx_dir = work / ".git" / "loopx"
    loopx_dir.mkdir(exist_ok=True)
    script, target = ((HOLD_LOCK, loopx_dir / "write.lock") if holder == "clone lock" else
                      (FRESH_REF_LOCK, work / ".git" / "refs" / "heads" / "loopx" / "state.lock"))
    held = _holding(script, target)
    holder = next(held)
    git(work, "config", "loopx.hooks.background", "false")  # loopx, not the shim, queues
    proc = _commit(work, "y\n\nLoopx-Todo: t1")
    assert proc.returncode == 0, proc.stderr
    assert holder.poll() is None  # still holding: the hook gave up, it did not outwait it
    assert "queued" in proc.stderr and "recorded in the background" in proc.stderr
    head = git(work, "rev-parse", "HEAD")
    assert spool.has_pending(loopx_dir) and not _recorded_without_loopx(work, head)
    for _ in held:  # release
        pass
    if holder == "ref lock":
        target.unlink(missing_ok=True)
    # No loopx command from here on until it is there: the drain the hook started writes it.
    assert _poll(lambda: _recorded_without_loopx(work, head) and not spool.has_pending(loopx_dir))
    recorded = _commit_evidence(work)
    assert [e["commit"] for e in recorded] == [head]
    assert recorded[0]["todo"] == "t1"
    invoke(work, "status")
    assert len(_commit_evidence(work)) == 1  # applied once


def _commit_evidence(repo: Path, *, apply: bool = True) -> list[dict[str, object]]:
    """Commit evidence on the state branch (``apply``: through a loopx command, which
    applies the queue first; else read with git alone)."""
    if apply:
        return [e for e in _evidence(repo) if e["kind"] == "commit"]
    names = git(repo, "ls-tree", "-r", "--name-only", "refs/heads/loopx/state").splitlines()
    return [{"path": n} for n in names if n.endswith(".evidence.recorded.yaml")]


@pytest.mark.slow
def test_an_amend_while_busy_queues_the_remap(work: Path) -> None:
    proc = _commit(work, "z\n\nLoopx-Todo: t1")
    assert proc.returncode == 0 and _commit_evidence(work)
    loopx_dir = work / ".git" / "loopx"
    held = _holding(HOLD_LOCK, loopx_dir / "write.lock")
    holder = next(held)
    amend = subprocess.run(["git", "commit", "-q", "--amend", "-m", "z2\n\nLoopx-Todo: t1"],
                           cwd=work, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert amend.returncode == 0 and holder.poll() is None, amend.stderr
    assert "queued" in amend.stderr
    for _ in held:
        pass
    assert invoke(work, "status").code == 0
    remaps = git(work, "ls-tree", "-r", "--name-only", "refs/heads/loopx/state")
    assert ".evidence.remapped.yaml" in remaps


@pytest.mark.slow
def test_a_commit_while_the_state_branch_is_checked_out_elsewhere_is_queued(
        work: Path, tmp_path: Path) -> None:
    where = tmp_path / "state-checkout"
    git(work, "worktree", "add", "-q", str(where), "loopx/state")
    git(work, "config", "loopx.hooks.background", "false")  # loopx, not the shim, queues
    proc = _commit(work, "w\n\nLoopx-Todo: t1")
    assert proc.returncode == 0 and "queued" in proc.stderr and "switch --detach" in proc.stderr
    git(where, "switch", "-q", "--detach")
    assert invoke(work, "status").code == 0
    assert [e["commit"] for e in _commit_evidence(work)] == [git(work, "rev-parse", "HEAD")]


@pytest.mark.slow
def test_pre_push_while_busy_lets_the_push_go_on(work: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(work, "remote", "add", "origin", str(remote))
    assert invoke(work, "sync").code == 0
    assert invoke(work, "note", "add", "unpushed").code == 0
    # The remote's state moved on meanwhile (a commit we lack): sending ours along needs a
    # merge, which needs the clone lock another process holds.
    theirs = git(remote, "commit-tree", f"{git(remote, 'rev-parse', 'loopx/state')}^{{tree}}",
                 "-p", "loopx/state", "-m", "elsewhere")
    git(remote, "update-ref", "refs/heads/loopx/state", theirs)
    held = _holding(HOLD_LOCK, work / ".git" / "loopx" / "write.lock")
    holder = next(held)
    proc = subprocess.run(["git", "push", "-q", "origin", "HEAD:refs/heads/main"], cwd=work,
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    still_held = holder.poll() is None
    for _ in held:
        pass
    assert proc.returncode == 0, proc.stderr
    assert still_held  # the hook gave up on the lock, it did not outwait its holder
    assert "state not pushed" in proc.stderr and "git loopx sync" in proc.stderr
    assert git(remote, "rev-parse", "refs/heads/main") == git(work, "rev-parse", "HEAD")


# --- the spool itself ------------------------------------------------------------------------


def test_an_entry_is_one_json_file_with_the_hook_its_inputs_the_actor_and_the_time(
        tmp_path: Path) -> None:
    entry = spool.append(tmp_path, hook="post-commit", inputs={"commit": "a" * 40},
                         actor="agent:x", state_ref="refs/heads/loopx/state")
    doc = json.loads(entry.path.read_text())
    assert doc == {"v": 1, "id": entry.id, "hook": "post-commit", "inputs": {"commit": "a" * 40},
                   "actor": "agent:x", "at": doc["at"], "state_ref": "refs/heads/loopx/state"}
    assert [p.name for p in (tmp_path / "spool").iterdir()] == [f"{entry.id}.json"]  # no temp


def test_drain_applies_oldest_first_once_and_keeps_what_must_wait(tmp_path: Path) -> None:
    entries = [spool.append(tmp_path, hook="h", inputs={"n": n}, actor="a") for n in range(4)]
    seen: list[int] = []

    def handler(entry: spool.Entry) -> None:
        if entry.inputs["n"] == 2:
            raise spool.Later("busy")
        seen.append(entry.inputs["n"])

    done = spool.drain(tmp_path, {"h": handler})
    assert seen == [0, 1] and done.kept == [entries[2].id]
    assert [e.id for e in spool.pending(tmp_path)] == [entries[2].id, entries[3].id]
    done = spool.drain(tmp_path, {"h": lambda e: seen.append(e.inputs["n"])})
    assert seen == [0, 1, 2, 3] and not spool.pending(tmp_path) and not spool.has_pending(tmp_path)


def test_a_refused_entry_is_set_aside_with_its_reason_and_the_rest_goes_on(tmp_path: Path) -> None:
    bad = spool.append(tmp_path, hook="h", inputs={}, actor="a")
    good = spool.append(tmp_path, hook="h", inputs={"ok": True}, actor="a")
    applied: list[str] = []

    def handler(entry: spool.Entry) -> None:
        if not entry.inputs:
            raise ValueError("no inputs")
        applied.append(entry.id)

    done = spool.drain(tmp_path, {"h": handler})
    assert applied == [good.id] and done.failed == {bad.id: "no inputs"}
    (aside,) = spool.failed(tmp_path)
    assert aside.name == f"{bad.id}.json" and spool.reason(aside) == "no inputs"


@pytest.mark.parametrize("there", ["a link", "a fifo"])
def test_a_reason_is_never_written_through_what_stands_in_its_place(tmp_path: Path,
                                                                    there: str) -> None:
    """A link (or a fifo) where the reason file goes: replaced, not written through (the
    link's target is left as it was) and not waited on."""
    bad = spool.append(tmp_path, hook="h", inputs={}, actor="a")
    outside = tmp_path / "outside.txt"
    outside.write_text("mine\n")
    aside = spool.folder(tmp_path) / "failed"
    aside.mkdir()
    reason_file = aside / f"{bad.id}.reason.txt"
    if there == "a link":
        reason_file.symlink_to(outside)
    else:
        os.mkfifo(reason_file)

    def refuse(entry: spool.Entry) -> None:
        raise ValueError("no inputs")

    done = spool.drain(tmp_path, {"h": refuse})
    assert done.failed == {bad.id: "no inputs"}
    (kept,) = spool.failed(tmp_path)
    assert spool.reason(kept) == "no inputs" and outside.read_text() == "mine\n"
    assert not reason_file.is_symlink() and reason_file.is_file()


def test_a_claim_left_by_a_killed_drain_is_taken_back(tmp_path: Path) -> None:
    entry = spool.append(tmp_path, hook="h", inputs={}, actor="a")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    entry.path.rename(entry.path.with_name(f"{entry.path.name}.claimed-{dead}"))
    assert spool.has_pending(tmp_path)
    assert [e.id for e in spool.pending(tmp_path)] == [entry.id]


def test_a_drain_takes_back_a_claim_whose_pid_now_names_another_process(tmp_path: Path) -> None:
    """Claims are made under the drain lock: one found by a drain holding it is left by a
    drain that died, even when its pid was reused (here: this very test's own process)."""
    entry = spool.append(tmp_path, hook="h", inputs={}, actor="a")
    entry.path.rename(entry.path.with_name(f"{entry.path.name}.claimed-{os.getppid()}"))
    assert spool.pending(tmp_path) == []  # a live pid: outside a drain, the claim stands
    applied: list[str] = []
    done = spool.drain(tmp_path, {"h": lambda e: applied.append(e.id)})
    assert applied == [entry.id] == done.applied and not spool.has_pending(tmp_path)


def test_a_drain_waits_for_one_under_way_then_says_busy(tmp_path: Path) -> None:
    import fcntl

    spool.append(tmp_path, hook="h", inputs={}, actor="a")
    fd = os.open(tmp_path / "spool" / ".drain.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert spool.drain_running(tmp_path)
        done = spool.drain(tmp_path, {"h": lambda e: None}, wait=0.2)
        assert done.busy and not done.applied and spool.has_pending(tmp_path)
    finally:
        os.close(fd)
    assert not spool.drain_running(tmp_path)
    assert len(spool.drain(tmp_path, {"h": lambda e: None}).applied) == 1


def test_a_commit_beside_a_dangling_state_ref_says_so_and_goes_on(work: Path) -> None:
    commit = git(work, "rev-parse", "refs/heads/loopx/state")
    (work / ".git" / "objects" / commit[:2] / commit[2:]).unlink()
    proc = _commit(work, "v\n\nLoopx-Todo: t1")
    assert proc.returncode == 0
    assert "post-commit hook failed" in proc.stderr and "git loopx doctor" in proc.stderr
