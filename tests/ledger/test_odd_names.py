"""A state commit made by hand with a file whose name is odd (bytes that are not UTF-8, a tab,
a space, a line break): every command answers, and the file is a listed problem. A name that
is not UTF-8 is held as surrogates (git's bytes, read back the same), which sqlite, JSON output
and a strict output stream cannot encode: status, doctor and todo list stopped with
"unexpected UnicodeEncodeError"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import git, invoke
from statekit import commit_files

from loopx.model import codec, ids
from loopx.model.paths import file_path

STATE = "refs/heads/loopx/state"
COMMANDS = [["status"], ["status", "--json"], ["doctor"], ["doctor", "--json"], ["todo", "list"],
            ["log"], ["validate"], ["brief"], ["prime"], ["next"]]


@pytest.mark.parametrize("odd", [b"-\xff".decode("utf-8", "surrogateescape"), "\t", " x", "\n"])
def test_a_file_with_an_odd_name_is_a_problem_not_a_crash(repo: Path, odd: str) -> None:
    assert invoke(repo, "init").code == 0
    event_id = ids.new_event_id()
    doc = {"id": event_id, "type": "note.added", "v": 1, "at": "2026-01-01T00:00:00Z",
           "clock": 2, "actor": "agent:mallory@elsewhere", "data": {"id": "n-1", "text": "hi"}}
    name = file_path(event_id, "note.added").replace(".yaml", f"{odd}.yaml")
    commit_files(repo, STATE, {name: codec.dump(doc)})
    for args in COMMANDS:
        result = invoke(repo, *args)
        assert "unexpected" not in result.err and result.code in (0, 1, 10, 20), (args, result.err)
    problems = json.loads(invoke(repo, "status", "--json").out)["problems"]
    assert [p["event"] for p in problems] == [name]
    assert "not an event path" in problems[0]["reason"]


@pytest.mark.parametrize("mode, what", [("100755", "executable"), ("120000", "a symlink")])
def test_a_file_committed_by_hand_that_is_not_plain_is_a_problem(repo: Path, mode: str,
                                                                 what: str) -> None:
    """Sync refuses such a file from a remote, validate names it; one a clone's own commit
    holds is no event either (its bytes, a link's target, would have been read as one)."""
    assert invoke(repo, "init").code == 0
    event_id = ids.new_event_id()
    doc = {"id": event_id, "type": "note.added", "v": 1, "at": "2026-01-01T00:00:00Z",
           "clock": 2, "actor": "agent:mallory@elsewhere", "data": {"id": "n-1", "text": "hi"}}
    name = file_path(event_id, "note.added")
    commit_files(repo, STATE, {name: codec.dump(doc)}, mode=mode)
    for args in (["status", "--json"], ["log", "--json"]):
        result = invoke(repo, *args)
        assert result.code == 0 and "mallory" not in result.out.replace(name, ""), args
    problems = json.loads(invoke(repo, "status", "--json").out)["problems"]
    assert [p["event"] for p in problems] == [name] and what in problems[0]["reason"]
    validate = invoke(repo, "validate")
    assert validate.code == 1 and what in validate.out + validate.err


def test_a_lookalike_authority_cannot_pass_for_the_name_it_imitates(repo: Path) -> None:
    """A gate asking human:аlice (a Cyrillic а) is shown so everywhere text is rendered: a
    reader of status or the gate cannot take it for human:alice's; JSON keeps it exact."""
    lookalike = "human:\u0430lice@example.com"
    for args in (("init",), ("goal", "add", "G", "--id", "g1"),
                 ("gate", "open", "g1", "Ship it?", "--id", "q1", "--authority", lookalike)):
        assert invoke(repo, *args).code == 0
    for args in (["status"], ["gate", "show", "q1"], ["gate", "list"], ["brief"]):
        out = invoke(repo, *args).out
        assert "human:\\u0430lice@example.com" in out and lookalike not in out, (args, out)
    assert json.loads(invoke(repo, "gate", "show", "q1", "--json").out)["authority"] == [lookalike]


def test_a_question_from_elsewhere_with_a_line_break_is_one_line_in_gate_show(repo: Path) -> None:
    """Writes refuse a line break in a question; a hand-made event can hold one. `gate show`
    prints `key: value` lines, so the question must not be able to print one of its own."""
    for args in (("init",), ("goal", "add", "G", "--id", "g1"),
                 ("gate", "open", "g1", "Ship it?", "--id", "q1", "--authority", "human:bob@x")):
        assert invoke(repo, *args).code == 0
    (path,) = [p for p in git(repo, "ls-tree", "-r", "--name-only", STATE).splitlines()
               if p.endswith(".gate.opened.yaml")]
    doc = codec.load(git(repo, "show", f"{STATE}:{path}").encode() + b"\n", path)
    event_id = ids.new_event_id()
    forged = {**doc, "id": event_id, "clock": doc["clock"] + 10,
              "data": {**doc["data"], "id": "q2",
                       "question": "Ship it?\nauthority: human:alice@example.com"}}
    forged = {k: forged[k] for k in ("id", "type", "v", "at", "clock", "actor", "goal", "data")
              if k in forged}
    commit_files(repo, STATE, {file_path(event_id, "gate.opened"): codec.dump(forged)})
    shown = invoke(repo, "gate", "show", "q2")
    assert shown.code == 0, shown.err
    assert not any(row.startswith("authority: human:alice") for row in shown.out.splitlines())
    assert "Ship it? ↵ authority: human:alice@example.com" in shown.out
