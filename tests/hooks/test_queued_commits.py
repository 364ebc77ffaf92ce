"""A commit on a held lease is queued by the shell shim itself (issue 27: the foreground of
`git commit` starts no Python) and recorded by the detached drain it starts, with real
`git commit` in temporary repositories. What waits for the drain polls the state branch
with git (no loopx command, which would apply the queue itself) under a hang guard."""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import git, run_loopx
from loopx.hooks import spool
from loopx.model import clock, ids
from test_hooks import bytecode, commit, evidence, events, probe, work  # noqa: F401  (fixtures)


def _recorded_on_branch(repo: Path) -> int:
    """How many evidence.recorded events the state branch holds, read with git alone."""
    return len(events(repo, "evidence.recorded"))


def _poll(check: Callable[[], bool], guard: float = 60.0) -> bool:
    """Poll ``check`` until it holds or the hang guard runs out (not a measurement)."""
    end = time.monotonic() + guard
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return check()


@pytest.fixture
def drain_held(leased: Path) -> Iterator[Callable[[], None]]:
    """The queue's drain lock held by this process, as a running drain holds it: the shim
    starts no drain, so what it queued stays to be read; the callable lets go of it."""
    folder = leased / ".git" / "loopx" / "spool"
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / ".drain.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    closed: list[int] = []

    def release() -> None:
        if not closed:
            closed.append(fd)
            os.close(fd)

    yield release
    release()


def test_a_commit_on_a_held_lease_is_recorded_by_the_drain_with_no_further_command(
        leased: Path, probe: tuple[dict[str, str], Path]) -> None:  # noqa: F811
    env, started = probe
    proc = commit(leased, "work", env=env)
    (line,) = proc.stderr.splitlines()
    assert line.startswith("loopx: recording this commit's evidence in the background (")
    assert _poll(lambda: _recorded_on_branch(leased) == 1)  # the drain, nobody else
    assert _poll(lambda: not spool.has_pending(leased / ".git" / "loopx"))
    assert "hook post-commit" not in started.read_text()  # no loopx in the foreground
    (ev,) = evidence(leased)
    assert (ev["commit"], ev["todo"]) == (git(leased, "rev-parse", "HEAD"), "t1")


def test_the_entry_the_shim_writes_is_the_queues_own(
        leased: Path, drain_held: Callable[[], None]) -> None:
    """The fields spool.append writes, a ULID name that sorts after an earlier entry, and an
    amend's replaced commit; applied as any entry once the drain lock is free."""
    loopx_dir = leased / ".git" / "loopx"
    earlier = spool.append(loopx_dir, hook="post-commit", actor="human:test@example.com",
                           inputs={"commit": "0" * 40, "branch": "refs/heads/main",
                                   "amended": None}, state_ref="refs/heads/loopx/state")
    earlier.path.unlink()  # only its name was wanted: what sorts before the shim's
    commit(leased, "first")
    first = git(leased, "rev-parse", "HEAD")
    git(leased, "commit", "-q", "--amend", "-m", "first, amended")
    amended = git(leased, "rev-parse", "HEAD")
    entries = [e for e in spool.pending(loopx_dir) if e.hook == "post-commit"]
    assert [(e.inputs, e.actor, e.state_ref) for e in entries] == [
        ({"commit": first, "branch": "refs/heads/main", "amended": None},
         "human:test@example.com", "refs/heads/loopx/state"),
        ({"commit": amended, "branch": "refs/heads/main", "amended": first},
         "human:test@example.com", "refs/heads/loopx/state")]
    for entry in entries:
        assert ids.is_event_id(entry.id) and entry.path.name == f"{entry.id}.json"
        assert entry.id > earlier.id and entry.when >= clock.parse_ts(earlier.at)
    assert not list((loopx_dir / "spool").glob(".*.tmp"))  # renamed into place
    drain_held()
    assert [e["commit"] for e in evidence(leased)] == [first]  # once: post-rewrite remaps it


@pytest.mark.parametrize("setting", [("loopx.hooks.strict", "true"),
                                     ("loopx.hooks.background", "false")])
def test_strict_or_foreground_settings_record_inside_the_commit(
        leased: Path, probe: tuple[dict[str, str], Path],  # noqa: F811
        setting: tuple[str, str]) -> None:
    """Under loopx.hooks.strict (a failure must reach the commit) or background=false the
    shim queues nothing: loopx records before `git commit` returns."""
    env, started = probe
    git(leased, "config", *setting)
    proc = commit(leased, "now", env=env)
    assert started.read_text() == "hook post-commit\n"
    assert _recorded_on_branch(leased) == 1 and not spool.has_pending(leased / ".git" / "loopx")
    assert "recorded commit evidence" in proc.stderr and "background" not in proc.stderr


def test_strict_reports_a_failure_on_the_commit_itself(leased: Path) -> None:
    lock = leased / ".git" / "loopx" / "write.lock"
    lock.unlink(missing_ok=True)
    lock.mkdir()  # the clone lock cannot be opened: every loopx write fails
    git(leased, "config", "loopx.hooks.strict", "true")
    proc = commit(leased, "fails")
    assert "loopx: post-commit hook failed" in proc.stderr and "git goes on" not in proc.stderr
    assert not spool.has_pending(leased / ".git" / "loopx")


def test_a_folder_the_shim_cannot_vouch_for_is_left_to_loopx(
        leased: Path, probe: tuple[dict[str, str], Path]) -> None:  # noqa: F811
    """An owner file naming another repository (a shared or copied loopx folder): the shim
    writes nothing there; loopx decides (here: takes the folder over, and records)."""
    env, started = probe
    owner = leased / ".git" / "loopx" / "owner"
    magic, _, identity = owner.read_text().splitlines()
    owner.write_text(f"{magic}\n/nowhere/.git\n{identity}\n")
    commit(leased, "elsewhere?", env=env)
    assert started.read_text().splitlines()[0] == "hook post-commit"
    assert _poll(lambda: _recorded_on_branch(leased) == 1)


def test_core_fsync_asking_for_refs_is_honoured_and_still_recorded(leased: Path) -> None:
    git(leased, "config", "core.fsync", "committed")
    proc = commit(leased, "hardened")
    assert "in the background" in proc.stderr
    assert _poll(lambda: _recorded_on_branch(leased) == 1)


def test_a_commit_with_nothing_to_record_starts_the_drain_for_what_is_queued(
        leased: Path, probe: tuple[dict[str, str], Path]) -> None:  # noqa: F811
    """An entry left by a hook whose drain died: the next commit, even with nothing of its
    own to record, starts a drain for it (no loopx in the foreground)."""
    env, started = probe
    loopx_dir = leased / ".git" / "loopx"
    commit(leased, "on the lease")
    sha = git(leased, "rev-parse", "HEAD")
    assert _poll(lambda: _recorded_on_branch(leased) == 1)
    assert run_loopx(leased, "todo", "release", "t1").code == 0
    before = _recorded_on_branch(leased)
    spool.append(loopx_dir, hook="post-commit", actor="human:test@example.com",
                 inputs={"commit": sha, "branch": "refs/heads/main", "amended": None},
                 state_ref="refs/heads/loopx/state")  # as a killed drain would leave it
    commit(leased, "nothing to record", env=env)
    assert _poll(lambda: not spool.has_pending(loopx_dir))
    assert _poll(lambda: started.exists() and "hooks drain --quiet" in started.read_text())
    assert "hook post-commit" not in started.read_text()
    assert _recorded_on_branch(leased) == before  # applied: already recorded, once


@pytest.mark.parametrize("trailers", ["Loopx-Todo: t1", "Loopx-Goal: g1",
                                      "Loopx-Todo: t1\nLoopx-Goal: g1", "loopx-todo : t1, t1"])
def test_a_trailer_naming_open_work_is_queued_by_the_shim(
        work: Path, probe: tuple[dict[str, str], Path], trailers: str) -> None:  # noqa: F811
    """Each id a trailer names is a todo of an open goal or an open goal, as hooks.ids lists
    them for this tip: the record cannot fail nor say anything the commit must show, so the
    shim queues it (no lease needed) and no loopx runs in the foreground."""
    env, started = probe
    ids = (work / ".git" / "loopx" / "hooks.ids").read_text()
    assert ids == "todo t1\ngoal g1\n"
    proc = commit(work, f"named\n\n{trailers}", env=env)
    assert proc.stderr.startswith("loopx: recording this commit's evidence in the background (")
    assert _poll(lambda: _recorded_on_branch(work) == 1)  # the drain, nobody else
    assert "hook post-commit" not in started.read_text()
    (ev,) = evidence(work)
    assert ev["commit"] == git(work, "rev-parse", "HEAD")
    assert (ev["todo"], ev["goal"]) == (None if trailers == "Loopx-Goal: g1" else "t1", "g1")


def _close_goal(repo: Path) -> None:
    assert run_loopx(repo, "goal", "close", "g1", "--abandoned").code == 0


def _damage_ids(repo: Path) -> None:
    with open(repo / ".git" / "loopx" / "hooks.ids", "a") as listing:
        listing.write("todo t9\n")  # not the content hooks.state names


@pytest.mark.parametrize(("trailers", "before", "said"), [
    ("Loopx-Todo: t9", None, "no todo matches 't9'"),  # no such todo
    ("Loopx-Todo: t", None, "recorded commit evidence"),  # a prefix: loopx resolves it
    ("Loopx-Todo: none\nLoopx-Goal: g1", None, "recorded commit evidence"),  # opted out
    ("Loopx-Todo: t1,\n  g1", None, "no todo matches 'g1'"),  # a value over two lines
    # over three lines, the last "end": the shim's own end marker, forged
    ("Loopx-Todo: t1\n g1\n end", None, "no todo matches 'end'"),
    ("Loopx-Todo: t1\n\tend", None, "no todo matches 'end'"),
    ("Loopx-Todo: t1", _close_goal, "is abandoned"),  # its goal closed: not listed
    ("Loopx-Todo: t1", _damage_ids, "recorded commit evidence"),  # hooks.ids of other content
    ("Loopx-Todo: t1/../x", None, "no todo matches"),  # not an id at all
])
def test_a_trailer_the_shim_cannot_vouch_for_is_decided_by_loopx_in_the_foreground(
        work: Path, probe: tuple[dict[str, str], Path], trailers: str,  # noqa: F811
        before: Callable[[Path], None] | None, said: str) -> None:
    env, started = probe
    if before is not None:
        before(work)
    proc = commit(work, f"named\n\n{trailers}", env=env)
    assert started.read_text().splitlines()[0] == "hook post-commit"
    assert said in proc.stderr and "background" not in proc.stderr


def _no_email(repo: Path, env: dict[str, str]) -> None:
    git(repo, "config", "user.email", "")
    env.pop("LOOPX_ACTOR")


@pytest.mark.parametrize(("actor", "said"), [
    ("nobody", "'nobody' is not an identity"), ("Human:a@b", "is not an identity"),
    ("human:a b", "is not an identity"), (f"human:{'a' * 201}", "is not an identity"),
    (f"{'k' * 33}:a", "is not an identity"), (None, "who is acting?"),
])
def test_trailers_of_an_actor_the_ledger_refuses_fail_in_the_foreground(
        work: Path, probe: tuple[dict[str, str], Path], actor: str | None,  # noqa: F811
        said: str) -> None:
    """The shim queues only for an identity loopx.model.limits.ACTOR_PATTERN takes: any
    other fails loopx's record, which the commit must show (queued, it was only set aside
    by the drain, out of sight)."""
    env, started = probe
    if actor is None:
        _no_email(work, env)
    else:
        env["LOOPX_ACTOR"] = actor
    proc = commit(work, "named\n\nLoopx-Todo: t1", env=env)
    assert started.read_text().splitlines()[0] == "hook post-commit"
    assert said in proc.stderr and "background" not in proc.stderr
    assert not list((work / ".git" / "loopx" / "spool").glob("*.json"))


def test_the_shim_is_posix_sh(leased: Path) -> None:
    """dash (Debian's /bin/sh) and bash in POSIX mode both parse it."""
    hook = leased / ".git" / "hooks" / "post-commit"
    for shell in (["dash", "-n"], ["bash", "--posix", "-n"]):
        if subprocess.run(["sh", "-c", f"command -v {shell[0]}"],
                          capture_output=True).returncode == 0:
            subprocess.run([*shell, str(hook)], check=True)


@pytest.mark.parametrize("background", ["true", "false"])
def test_an_amend_after_the_reflog_expired_is_not_recorded_twice(
        work: Path, probe: tuple[dict[str, str], Path], background: str) -> None:  # noqa: F811
    """`git gc` (or a clock ahead of gc.reflogExpire) can leave HEAD's reflog with only the
    amend's line: the commit it replaced is still known (HEAD@{1}, the shim's reading of the
    line), queued by the shim or recorded in the foreground alike: one record, remapped."""
    env, _ = probe
    git(work, "config", "loopx.hooks.background", background)
    commit(work, "v1\n\nLoopx-Todo: t1", env=env)
    assert _poll(lambda: _recorded_on_branch(work) == 1)
    old = git(work, "rev-parse", "HEAD")
    git(work, "reflog", "expire", "--expire=now", "--all")
    subprocess.run(["git", "commit", "-q", "--amend", "-m", "v2\n\nLoopx-Todo: t1"], cwd=work,
                   env=env, check=True, capture_output=True)
    assert _poll(lambda: not list((work / ".git" / "loopx" / "spool").glob("*.json")))
    assert run_loopx(work, "hooks", "drain").code == 0
    assert [e["commit"] for e in evidence(work)] == [old]  # remapped by post-rewrite, once
