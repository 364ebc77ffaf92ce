"""`git loopx doctor`: objects, files, reflog, locks, quarantines, rollback."""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import git, invoke
from syncutil import event_ids, note, tip


def _forge_on_state(repo: Path, path: str, data: bytes) -> str:
    """Commit a file straight onto the state branch with plumbing (as a broken tool might)."""
    blob = git(repo, "hash-object", "-w", "--stdin", input=data.decode())
    git(repo, "read-tree", "--index-output=.git/tmp-index", "refs/heads/loopx/state")
    env_index = {"GIT_INDEX_FILE": str(repo / ".git" / "tmp-index")}
    import subprocess

    subprocess.run(["git", "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}"],
                   cwd=repo, env={**os.environ, **env_index}, check=True)
    tree = subprocess.run(["git", "write-tree"], cwd=repo, env={**os.environ, **env_index},
                          check=True, capture_output=True, text=True).stdout.strip()
    commit = git(repo, "commit-tree", tree, "-p", "refs/heads/loopx/state", "-m", "broken")
    git(repo, "update-ref", "-m", "broken tool", "refs/heads/loopx/state", commit)
    return commit


def test_doctor_reports_a_healthy_ledger(repo: Path) -> None:
    invoke(repo, "init")
    result = invoke(repo, "doctor", "--format", "json")
    assert result.code == 0, result.out
    health = result.json()["health"]
    assert health["ok"] and health["reflog_entries"] == 1 and health["problems"] == []


def test_doctor_reports_a_stale_git_lock_that_the_next_write_clears(repo: Path) -> None:
    invoke(repo, "init")
    lock = repo / ".git" / "refs" / "heads" / "loopx" / "state.lock"
    lock.write_text("")
    os.utime(lock, (time.time() - 60, time.time() - 60))
    result = invoke(repo, "doctor")
    assert result.code == 1 and "stale git lock" in result.out
    note(repo, "agent:x", "still works")
    assert not lock.exists()


def test_doctor_rolls_back_past_an_invalid_file_and_lists_what_it_drops(repo: Path) -> None:
    invoke(repo, "init")
    good = tip(repo)
    _forge_on_state(repo, "README.md", b"not an event\n")
    dropped = note(repo, "agent:x", "written on top of the broken commit")
    result = invoke(repo, "doctor")
    assert result.code == 1 and "README.md: is outside the state layout" in result.out

    rolled = invoke(repo, "doctor", "--rollback", "--format", "json")

    assert rolled.code == 0, rolled.out
    data = rolled.json()["rollback"]
    assert data["to"] == good and [p for p in data["dropped"] if dropped in p]
    assert tip(repo) == good and dropped not in event_ids(repo)


def test_doctor_finds_missing_objects_and_rolls_back_to_a_whole_commit(repo: Path) -> None:
    invoke(repo, "init")
    good = tip(repo)
    lost = note(repo, "agent:x", "its blob will vanish")
    blob = git(repo, "rev-parse", f"refs/heads/loopx/state:{next(p for p in git(repo, 'ls-tree', '-r', '--name-only', 'refs/heads/loopx/state').splitlines() if lost in p)}")
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    result = invoke(repo, "doctor")
    assert result.code == 1 and f"event {lost} (note.added) is lost" in result.out
    rolled = invoke(repo, "doctor", "--rollback")
    assert rolled.code == 0, rolled.out
    assert tip(repo) == good and "dropping 1 event file" in rolled.out


def test_doctor_rollback_does_nothing_on_a_healthy_branch(repo: Path) -> None:
    invoke(repo, "init")
    before = tip(repo)
    result = invoke(repo, "doctor", "--rollback")
    assert result.code == 0 and "nothing to roll back" in result.out
    assert tip(repo) == before


def test_doctor_text_stays_a_screen_however_many_quarantines_and_problems(repo: Path) -> None:
    """A hostile remote can be quarantined once per tip it pushes, and a broken tool can
    commit many bad files: the text shows the newest few of each and counts the rest (the
    JSON keeps every one)."""
    invoke(repo, "init")
    state = tip(repo)
    for n in range(12):
        git(repo, "update-ref", f"refs/loopx/quarantine/origin/20261206T1200{n:02d}Z-{n:012x}",
            state)
    for n in range(40):
        _forge_on_state(repo, f"events/2026/01/01/bad-{n:02d}.yaml", b"x: 1\n")

    text = invoke(repo, "doctor")
    whole = invoke(repo, "doctor", "--json").json()["health"]

    assert text.code == 1 and len(whole["quarantines"]) == 12 and len(whole["problems"]) >= 40
    shown = [line for line in text.out.splitlines() if "quarantined:" in line]
    assert len(shown) == 5 and "20261206T120011Z" in shown[0]  # the newest first
    assert "... and 7 more (git loopx doctor --json lists them all)" in text.out
    assert len([line for line in text.out.splitlines() if "problem:" in line]) == 30
    assert f"... and {len(whole['problems']) - 30} more" in text.out
