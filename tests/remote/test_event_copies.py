"""One event, one file (session 36, hostile fleet): both layouts' paths are read (the fan-out
``events/Y/M/D/<id[:6]>/<id[6]>/<id[7]>/`` and the day folder before it), so a pusher could
put a copy of any event beside it: a spend at both paths was counted twice, a note count
grew, and a file of another type under the same id applied too. A clone that holds the
event refuses such a tip (one line, exit 1, nothing merged); a clone that adopts it counts
an id once, and none of its files when they differ. Real git, a bare hub, the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import git, invoke
from statekit import commit_files, run

from loopx import Ledger
from loopx.ledger import cache

ALICE = "human:alice@example.com"
STATE = "refs/heads/loopx/state"


@pytest.fixture
def hub(repo: Path, tmp_path: Path) -> dict[str, Any]:
    """Alice's ledger with a budget and a spend of 2 turns, on a bare hub."""
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    git(repo, "remote", "add", "origin", str(hub))
    for args in (["init"], ["quota", "set", "--turns", "5"], ["quota", "spend", "--turns", "2"],
                 ["note", "add", "hello"]):
        done = invoke(repo, *args, actor=ALICE)
        assert done.code == 0, done.err
    assert invoke(repo, "sync", actor=ALICE).code == 0
    tip = run(repo, "rev-parse", STATE)
    spend = next(p for p in run(repo, "ls-tree", "-r", "--name-only", tip).splitlines()
                 if p.endswith(".quota.spent.yaml"))
    return {"hub": hub, "tip": tip, "spend": spend, "text": run(repo, "show", f"{tip}:{spend}")}


def _legacy(path: str) -> str:
    parts = path.split("/")
    return "/".join(parts[:4] + parts[-1:])


def _other_type(spend: str, text: str) -> dict[str, bytes]:
    head = text.split("data:")[0].replace("type: quota.spent", "type: note.added")
    head = "\n".join(line for line in head.splitlines() if not line.startswith("v: ")) + "\n"
    head = head.replace("type: note.added\n", "type: note.added\nv: 1\n")
    body = head + 'data:\n  id: n-copy\n  text: "stands in"\n'
    return {spend.replace(".quota.spent.", ".note.added."): body.encode()}


COPIES = {
    "the same bytes at the older layout's path":
        lambda h: {_legacy(h["spend"]): (h["text"] + "\n").encode()},
    "another event under its id": lambda h: _other_type(h["spend"], h["text"]),
    "another event under its id at the older path":
        lambda h: {_legacy(p): b for p, b in _other_type(h["spend"], h["text"]).items()},
}


def _push_copy(tmp_path: Path, hub: dict[str, Any], copy: str) -> Path:
    other = tmp_path / "pusher"
    git(tmp_path, "clone", "-q", str(hub["hub"]), str(other))
    git(other, "fetch", "-q", "origin", f"{STATE}:{STATE}")
    commit_files(other, STATE, COPIES[copy](hub))
    git(other, "push", "-q", "origin", STATE)
    return other


def _spent(cwd: Path) -> int:
    status = invoke(cwd, "status", "--format", "json", "--no-ci", actor=ALICE).json()
    return status["quota"]["*"]["spent"]["turns"]


@pytest.mark.parametrize("copy", list(COPIES))
def test_a_tip_with_a_second_file_of_an_event_is_refused(
        repo: Path, tmp_path: Path, hub: dict[str, Any], copy: str) -> None:
    _push_copy(tmp_path, hub, copy)
    synced = invoke(repo, "sync", actor=ALICE)
    assert synced.code == 1
    lines = synced.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "an event is one file" in lines[0]
    assert run(repo, "rev-parse", STATE) == hub["tip"]
    assert _spent(repo) == 2


@pytest.mark.parametrize("copy", list(COPIES))
def test_a_fresh_clone_does_not_adopt_a_copy(tmp_path: Path, hub: dict[str, Any], copy: str) -> None:
    _push_copy(tmp_path, hub, copy)
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(hub["hub"]), str(fresh))
    shown = invoke(fresh, "status", actor=ALICE)
    assert shown.code == 1 and "was not adopted" in shown.err and "is also" in shown.err
    assert len(shown.err.strip().splitlines()) == 1 and "Traceback" not in shown.err
    assert not run(fresh, "for-each-ref", STATE)


@pytest.mark.parametrize("copy", list(COPIES))
def test_a_copy_committed_by_hand_counts_each_event_once(
        repo: Path, hub: dict[str, Any], copy: str) -> None:
    """The same copy committed on this clone's own branch with plain git (no fetch, so no
    incoming check): the replay counts an id once, and none of its files when they differ."""
    assert _spent(repo) == 2  # (the cache holds the fold before the copy)
    commit_files(repo, STATE, COPIES[copy](hub))
    same = copy.startswith("the same bytes")
    assert _spent(repo) == (2 if same else 0)  # the copy never counts; a stand-in, neither
    status = invoke(repo, "status", "--format", "json", "--no-ci", actor=ALICE).json()
    reasons = [p["reason"] for p in status["problems"]]
    assert reasons and all(("counted once" if same else "none is applied") in r for r in reasons)
    assert status["notes"] == 1
    with Ledger.open(repo) as led:  # the cached fold and a replay of the tip agree
        assert cache.content(led.fold()) == cache.content(led.fold_at(led.tip() or ""))
    verified = invoke(repo, "doctor", "--verify", actor=ALICE)
    assert "verified against a replay" in verified.out, verified.out + verified.err
