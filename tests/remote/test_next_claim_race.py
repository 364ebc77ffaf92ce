"""`next --claim --sync` that loses the race for the todo it picked decides again from the state
the lost claim fetched, and claims what is ready there: a todo it had not seen, the next one
in the frontier; when nothing is ready it says whose claim won and why it took nothing. Two
real clones of a bare hub; the race made certain by the winner claiming (and pushing) first
while the loser has not fetched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import invoke
from syncutil import do_sync, open_ledger, seeded, tip

A, B = "agent:a@one", "agent:b@two"


def _ok(cwd: Path, *args: str, actor: str = A) -> str:
    found = invoke(cwd, *args, actor=actor)
    assert found.code == 0, (args, found.out, found.err)
    return found.out


@pytest.fixture
def hub(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The hub and two clones in step, goal g with one ready todo t1 (t0, done later on the
    hub, holds t2 back)."""
    remote, (one, two) = seeded(tmp_path, 2)
    for args in (["goal", "add", "G", "--id", "g", "--accept", "works"],
                 ["todo", "add", "g", "One", "--id", "t1"],
                 ["todo", "add", "g", "Zero", "--id", "t0"],
                 ["todo", "add", "g", "Two", "--id", "t2", "--after", "t0"]):
        _ok(one, *args, actor="human:lead@example.com")
    _ok(one, "todo", "claim", "t0", actor="agent:c@three")
    do_sync(one)
    do_sync(two)
    return remote, one, two


def _next_claim(two: Path, *extra: str) -> tuple[int, dict[str, object]]:
    found = invoke(two, "next", "--claim", "--sync", "--no-ci", "--json", *extra, actor=B)
    return found.code, json.loads(found.out)


def test_a_lost_race_decides_again_and_claims_a_todo_only_the_fetch_showed(
        hub: tuple[Path, Path, Path]) -> None:
    remote, one, two = hub
    _ok(one, "todo", "add", "g", "Three", "--id", "t3", actor="human:lead@example.com")
    _ok(one, "todo", "claim", "t1", "--sync")  # pushes t3 and A's claim on t1
    code, doc = _next_claim(two)  # two saw only t1 ready
    assert code == 0 and doc["not_claimed"] is None, doc
    assert doc["claimed"]["data"]["id"] == "t3"  # type: ignore[index]
    assert doc["action"]["kind"] == "continue"  # type: ignore[index]
    assert tip(two) == tip(remote)


def test_a_lost_race_claims_a_todo_the_winners_work_made_ready(
        hub: tuple[Path, Path, Path]) -> None:
    remote, one, two = hub
    _ok(one, "todo", "done", "t0", "--reason", "nothing to test", actor="agent:c@three")
    _ok(one, "todo", "claim", "t1", "--sync")
    code, doc = _next_claim(two)
    assert code == 0 and doc["claimed"]["data"]["id"] == "t2", doc  # type: ignore[index]


def test_a_lost_race_with_nothing_else_ready_says_whose_claim_won(
        hub: tuple[Path, Path, Path]) -> None:
    _, one, two = hub
    _ok(one, "todo", "claim", "t1", "--sync")
    code, doc = _next_claim(two)
    assert doc["claimed"] is None and code != 0, doc
    why = str(doc["not_claimed"])
    assert why.startswith("t1 went to agent:a@one first") and "no todo is ready" in why
    text = invoke(two, "next", "--claim", "--sync", "--no-ci", actor=B)
    assert text.code == code and "(not claimed: " in text.out  # nothing lost now: t1 is A's
    with open_ledger(two) as led:
        assert led.fold().todos["t1"].holder == A


def test_the_tries_are_bounded(hub: tuple[Path, Path, Path],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    from loopx.ops import status

    _, one, two = hub
    _ok(one, "todo", "add", "g", "Three", "--id", "t3", actor="human:lead@example.com")
    _ok(one, "todo", "claim", "t1", "--sync")
    monkeypatch.setattr(status, "CLAIM_TRIES", 1)
    with open_ledger(two) as led:
        found = status.next_action(led, actor=B, claim=True, synced=True, ci=False)
    assert found.claimed is None and found.action is not None
    assert (found.action.kind, found.action.todo) == ("work", "t3")  # decided again: t3 is next
    assert "t1 went to agent:a@one first" in str(found.not_claimed)
    assert "git loopx next --claim" in str(found.not_claimed)
