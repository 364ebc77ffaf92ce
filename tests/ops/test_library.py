"""The library is a first-class interface: the README story runs in Python without click,
and the operations behave as the CLI's commands do."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from loopx.errors import NotFound, TransitionError, UsageError
from loopx.ledger.book import Ledger
from loopx.ops import evidence, gates, goals, notes, status, todos

ALICE = "human:alice@example.com"
AGENT = "agent:codex@devbox"


def _library_example() -> str:
    text = (ROOT / "docs" / "library.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1, "docs/library.md holds one runnable example"
    return blocks[0]


def test_the_readme_story_runs_as_a_library_without_click() -> None:
    script = _library_example() + "\nassert 'click' not in sys.modules, sorted(sys.modules)\n"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "work git loopx todo claim tests"


def test_a_write_refused_by_the_rules_records_nothing(ledger: Ledger) -> None:
    ledger.run(goals.add, "G", id="g", actor=ALICE)
    ledger.run(todos.add, "g", "first", id="a", actor=ALICE)
    ledger.run(todos.add, "g", "second", id="b", after=["a"], actor=ALICE)
    tip = ledger.tip()

    with pytest.raises(TransitionError, match="not ready: waits for todo a"):
        ledger.run(todos.claim, "b", actor=AGENT)
    assert ledger.tip() == tip


def test_several_operations_are_one_commit_or_none(ledger: Ledger) -> None:
    ledger.run(goals.add, "G", id="g", actor=ALICE)
    tip = ledger.tip()

    def half_valid(txn: object) -> None:
        notes.add(txn, "kept only if all of it is")  # type: ignore[arg-type]
        todos.claim(txn, "no-such-todo")  # type: ignore[arg-type]

    with pytest.raises(NotFound, match="no todo matches 'no-such-todo'"):
        ledger.write(half_valid, actor=AGENT)
    assert ledger.tip() == tip and ledger.fold().notes == 0


def test_ids_resolve_from_unique_prefixes(ledger: Ledger) -> None:
    ledger.run(goals.add, "G", id="goal-json", actor=ALICE)
    event = ledger.run(todos.add, "goal-j", "T", id="todo-output", actor=ALICE)
    assert event.data.goal == "goal-json"
    assert ledger.run(todos.claim, "todo-o", actor=AGENT).data.id == "todo-output"


def test_a_lease_must_last_a_positive_time(ledger: Ledger) -> None:
    ledger.run(goals.add, "G", id="g", actor=ALICE)
    ledger.run(todos.add, "g", "T", id="t", actor=ALICE)
    with pytest.raises(UsageError, match="positive time"):
        ledger.run(todos.claim, "t", ttl=0, actor=AGENT)


def test_next_action_claims_the_top_of_the_frontier(ledger: Ledger) -> None:
    ledger.run(goals.add, "G", id="g", actor=ALICE)
    ledger.run(todos.add, "g", "T", id="t", actor=ALICE)
    best = status.next_action(ledger, actor=AGENT, claim=True, ci=False)
    assert best.claimed is not None and best.claimed.data.id == "t"
    assert best.action is not None and best.action.kind == "continue"
    assert todos.show(ledger, "t").claimed_by == AGENT


def test_a_gate_answer_is_the_authoritys_alone(ledger: Ledger) -> None:
    ledger.run(goals.add, "G", id="g", actor=ALICE)
    ledger.run(gates.open_, "g", "Ship it?", id="q", authority=[ALICE], actor=ALICE)
    with pytest.raises(TransitionError, match="answered by human:alice@example.com only"):
        ledger.run(gates.answer, "q", decision="approve", actor=AGENT)
    with pytest.raises(UsageError, match="a decision is one of"):
        ledger.run(gates.answer, "q", decision="maybe", actor=ALICE)
    ledger.run(gates.answer, "q", decision="approve", actor=ALICE)
    assert gates.show(ledger, "q").decision == "approve"


def test_run_records_a_failing_command_and_returns_its_code(ledger: Ledger, repo: Path) -> None:
    ledger.run(goals.add, "G", id="g", actor=ALICE)
    result = evidence.run(ledger, [sys.executable, "-c", "import sys; sys.exit(3)"],
                          actor=AGENT, goal="g", stdout=open("/dev/null", "wb"),
                          stderr=open("/dev/null", "wb"))
    assert result.outcome.exit_code == 3
    assert result.event is not None and result.event.data.exit_code == 3
    assert [e.id for e in evidence.listing(ledger, goal="g")] == [result.event.data.id]
