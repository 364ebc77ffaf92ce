"""`batch` is a library operation: lines parsed against the declarations, applied in one
commit, all or nothing; the CLI and the MCP tool call it."""

from __future__ import annotations

import typing
from typing import Any

import pytest

from loopx.errors import TransitionError, UsageError
from loopx.ledger.book import Ledger
from loopx.ops import batch, catalog, declare, goals

ALICE = "human:alice@example.com"


def _tip(ledger: Ledger) -> str | None:
    return ledger.tip()


def test_lines_are_one_commit_and_later_lines_see_earlier_ones(ledger: Ledger) -> None:
    ledger.run(goals.add, "G", id="g", actor=ALICE)
    before = _tip(ledger)
    lines = batch.parse([["todo", "add", "g", "First", "--id", "a", "--priority", "1"],
                         ["todo", "add", "g", "Second", "--id", "b", "--after", "a"],
                         ["todo", "claim", "a", "--ttl", "30m"],
                         ["goal", "close", "g", "--abandoned", "--reason", "r"]])
    results = batch.apply(ledger, lines, actor=lambda: ALICE)
    assert [(r.number, r.command) for r in results] == [
        (1, "todo add"), (2, "todo add"), (3, "todo claim"), (4, "goal close")]
    docs: list[Any] = [r.answer for r in results]  # each line's document, as MCP answers it
    assert [d["type"] for d in docs] == ["todo.added", "todo.added", "todo.claimed",
                                         "goal.closed"]
    assert docs[0]["data"]["priority"] == 1 and docs[1]["data"]["depends_on"] == ["a"]
    assert ledger.store.resolve(f"{ledger.ref}~1") == before  # one commit for all four


def test_a_failing_line_writes_nothing_and_is_named(ledger: Ledger) -> None:
    ledger.run(goals.add, "G", id="g", actor=ALICE)
    before = _tip(ledger)
    lines = batch.parse([["note", "add", "fine"], ["todo", "claim", "ghost"]])
    with pytest.raises(UsageError, match="line 2: no todo matches 'ghost'"):
        batch.apply(ledger, lines, actor=lambda: ALICE)
    lines = batch.parse([["todo", "add", "g", "T", "--id", "t"], ["todo", "done", "t"]])
    with pytest.raises(TransitionError, match="^line 2: "):
        batch.apply(ledger, lines, actor=lambda: ALICE)
    assert _tip(ledger) == before


@pytest.mark.parametrize("line,message", [
    (["todo", "add", "g", "T", "--priority", "9"], "line 1: invalid arguments for todo add: "
                                                   "priority: Input should be less than"),
    (["todo", "add", "g"], "line 1: missing argument TITLE"),
    (["todo", "nope"], "line 1: no such command: todo nope"),
    (["status"], "line 1: `status` writes nothing"),
    (["sync"], "line 1: `sync` cannot run inside a batch"),
    (["run", "--", "true"], "line 1: `run` cannot run inside a batch"),
    (["--actor", "x", "note", "add", "hi"], "apply to the whole batch"),
    (["wait"], "line 1: `wait` cannot run inside a batch"),
])
def test_lines_it_cannot_honour_are_refused_before_anything_runs(line: list[str],
                                                                 message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        batch.parse([line])


def test_a_claim_that_must_reach_the_remote_cannot_join_a_batch(ledger: Ledger) -> None:
    ledger.run(goals.add, "G", id="g", actor=ALICE)
    lines = batch.parse([["todo", "add", "g", "T", "--id", "t"], ["todo", "claim", "t",
                                                                  "--sync"]])
    with pytest.raises(UsageError, match="line 2: todo claim --sync cannot run inside a batch"):
        batch.apply(ledger, lines, actor=lambda: ALICE)


def test_json_lines_are_read_as_command_lines() -> None:
    assert batch.read('["note", "add", "hi"]\n\n{"argv": ["note", "add", "x"]}\n') == [
        ["note", "add", "hi"], ["note", "add", "x"]]
    with pytest.raises(UsageError, match="line 1: not JSON"):
        batch.read("nope\n")


# What a checked argument of each kind of parameter is (loopx.ops.declare.validate).
KIND_TYPES: dict[str, Any] = {
    "text": str, "int": int, "float": float, "bool": bool, "duration": int, "choice": str,
    "switch": str, "pair": tuple[str, str], "file": str, "argv": list[str], "event_id": str,
    "lines": list[list[str]], "env": dict[str, str]}


def test_every_declared_parameter_fits_a_lines_argument_type() -> None:
    fits = set(typing.get_args(batch.Argument))
    for op in catalog.operations():
        for p in op.params:
            kind = list[KIND_TYPES[p.kind]] if p.many else KIND_TYPES[p.kind]
            assert kind in fits, f"{op.name} --{p.name}: {kind} is not a batch.Argument"
    assert set(KIND_TYPES) == set(declare.KINDS)  # a new kind needs its type here
