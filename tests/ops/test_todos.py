"""Work order: todo priority (0-4, default 2) orders the frontier and `next`; a todo found while
doing another names it (`discovered_from`); `todo list` filters by priority, goal, state and
claimant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import invoke
from loopx.errors import NotFound, SchemaError, TransitionError, UsageError
from loopx.ledger.book import Ledger
from loopx.model import codec
from loopx.ops import goals, status, todos

ALICE = "human:alice@example.com"
AGENT = "agent:codex@devbox"
OTHER = "agent:claude@laptop"


@pytest.fixture
def planned(ledger: Ledger) -> Ledger:
    def plan(txn: object) -> None:
        goals.add(txn, "G", id="g")  # type: ignore[arg-type]
        goals.add(txn, "H", id="h")  # type: ignore[arg-type]
        todos.add(txn, "g", "old, default priority", id="t-old")  # type: ignore[arg-type]
        todos.add(txn, "g", "urgent", id="t-urgent", priority=0)  # type: ignore[arg-type]
        todos.add(txn, "h", "someday", id="t-later", priority=4)  # type: ignore[arg-type]
        todos.add(txn, "g", "also default", id="t-new")  # type: ignore[arg-type]

    ledger.write(plan, actor=ALICE)
    return ledger


def test_the_frontier_is_ordered_by_priority_then_ledger_order(planned: Ledger) -> None:
    doc = status.status(planned, actor=AGENT, ci=False)
    assert doc.frontier == ["t-urgent", "t-old", "t-new", "t-later"]
    assert [t.id for t in doc.todos] == ["t-old", "t-urgent", "t-later", "t-new"]  # ledger
    assert {t.id: t.priority for t in doc.todos} == {
        "t-old": 2, "t-urgent": 0, "t-later": 4, "t-new": 2}
    work = [a.todo for a in doc.actions if a.kind == "work"]
    assert work == doc.frontier


def test_next_claims_the_most_urgent_todo_and_a_new_priority_reorders(planned: Ledger) -> None:
    planned.run(todos.update, "t-later", priority=1, actor=ALICE)
    assert status.status(planned, actor=AGENT, ci=False).frontier[:2] == ["t-urgent", "t-later"]

    best = status.next_action(planned, actor=AGENT, claim=True, ci=False)
    assert best.claimed is not None and best.claimed.data.id == "t-urgent"
    best = status.next_action(planned, actor=OTHER, claim=True, ci=False)
    assert best.claimed is not None and best.claimed.data.id == "t-later"


def test_default_priority_is_not_written_so_old_and_new_events_read_alike(planned: Ledger) -> None:
    event = planned.run(todos.add, "g", "plain", id="t-plain", actor=ALICE)
    text = codec.dump(event.to_dict()).decode()
    assert "priority" not in text and "discovered_from" not in text
    urgent = planned.run(todos.add, "g", "hot", id="t-hot", priority=0, actor=ALICE)
    assert "priority: 0" in codec.dump(urgent.to_dict()).decode()


@pytest.mark.parametrize("bad", [-1, 5, 99])
def test_a_priority_outside_0_to_4_is_refused_with_the_range(planned: Ledger, bad: int) -> None:
    tip = planned.tip()
    with pytest.raises(UsageError, match=f"0 \\(most urgent\\) to 4 \\(least\\), not {bad}"):
        planned.run(todos.add, "g", "x", priority=bad, actor=ALICE)
    with pytest.raises(UsageError, match="0 \\(most urgent\\)"):
        planned.run(todos.update, "t-old", priority=bad, actor=ALICE)
    with pytest.raises(SchemaError, match="priority"):  # the model holds the bound too
        planned.append("todo.added", {"id": "t-raw", "goal": "g", "title": "raw",
                                      "priority": bad}, actor=ALICE)
    assert planned.tip() == tip


def test_discovered_from_names_an_existing_todo(planned: Ledger) -> None:
    planned.run(todos.add, "h", "found a bug", id="t-bug", discovered_from="t-urg",
                actor=AGENT)
    shown = todos.show(planned, "t-bug")
    assert shown.discovered_from == "t-urgent" and shown.priority == 2
    with pytest.raises(NotFound, match="no todo matches 'nope'"):
        planned.run(todos.add, "g", "x", discovered_from="nope", actor=AGENT)
    # A raw event naming an unknown todo is refused by the check (and would be a problem
    # on replay), not silently kept.
    with pytest.raises(TransitionError, match="unknown todo t-ghost"):
        planned.append("todo.added", {"id": "t-raw", "goal": "g", "title": "raw",
                                      "discovered_from": "t-ghost"}, actor=ALICE)


def test_listing_filters_by_priority_goal_state_and_claimant(planned: Ledger) -> None:
    planned.run(todos.claim, "t-old", actor=AGENT)
    planned.run(todos.claim, "t-new", actor=OTHER)
    planned.run(todos.add, "g", "done soon", id="t-done", actor=ALICE)
    planned.run(todos.done, "t-done", reason="trivial", actor=ALICE)

    def ids(**kw: object) -> list[str]:
        return [t.id for t in todos.listing(planned, **kw)]  # type: ignore[arg-type]

    assert ids() == ["t-old", "t-urgent", "t-later", "t-new"]
    assert ids(priority=[0, 4]) == ["t-urgent", "t-later"]
    assert ids(goal="h") == ["t-later"]
    assert ids(state="claimed") == ["t-old", "t-new"]
    assert ids(state="done") == ["t-done"]  # a closed state needs no --all
    assert ids(claimant=AGENT) == ["t-old"]
    assert ids(claimant=OTHER, priority=[2]) == ["t-new"]
    assert ids(ready=True) == ["t-urgent", "t-later"]  # frontier order
    with pytest.raises(UsageError, match="one of open, claimed, done, blocked, cancelled"):
        ids(state="finished")


def test_cli_todo_priority_discovered_from_and_list_filters(repo: Path) -> None:
    for args in (["init"], ["goal", "add", "G", "--id", "g"],
                 ["todo", "add", "g", "First", "--id", "t-1"],
                 ["todo", "add", "g", "Hot", "--id", "t-2", "--priority", "0",
                  "--discovered-from", "t-1"]):
        assert invoke(repo, *args).code == 0
    nxt = json.loads(invoke(repo, "next", "--no-ci", "--format", "json").out)
    assert nxt["action"]["todo"] == "t-2"

    assert invoke(repo, "todo", "claim", "t-1", actor=AGENT).code == 0
    mine = json.loads(invoke(repo, "todo", "list", "--mine", "--json", actor=AGENT).out)["todos"]
    assert [t["id"] for t in mine] == ["t-1"]
    hot = invoke(repo, "todo", "list", "--priority", "0")
    assert hot.out.split() == ["t-2", "open", "P0", "Hot"]
    shown = invoke(repo, "todo", "show", "t-2")
    assert "found while doing: t-1" in shown.out and "priority: 0" in shown.out

    bad = invoke(repo, "todo", "add", "g", "x", "--priority", "7")
    assert bad.code == 2 and "7 is not in the range 0<=x<=4" in bad.err
    assert invoke(repo, "todo", "update", "t-1", "--priority", "3").code == 0
    log = invoke(repo, "log", "--oneline").out
    assert "priority 3" in log and "found while doing t-1" in log
