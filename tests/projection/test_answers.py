"""The status document's types against a real status: the JSON a busy repository prints builds
into a StatusDoc with no key left over or missing, serialises back byte for byte, and
validates against the schema generated from the same classes (.loopx-schema/)."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import jsonschema
import pytest
from pydantic import TypeAdapter

from conftest import ROOT, git, invoke, run_loopx
from loopx.upkeep import schema
from loopx.model import typed
from loopx.projection import answers, decide

AGENT = "agent:codex@devbox"
BOSS = "human:boss@example.com"


@pytest.fixture(autouse=True)
def bytecode(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The hooks start `git-loopx` processes: let them reuse compiled bytecode."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path_factory.getbasetemp() / "pycache"))


def ok(repo: Path, *args: str, actor: str = AGENT) -> None:
    result = invoke(repo, *args, actor=actor)
    assert result.code == 0, (args, result.err)


@pytest.fixture
def busy(repo: Path) -> Path:
    """A repository with something of every kind: criteria met and not, claims, a gate with
    two decisions that did not see each other, evidence recorded then amended over, a
    session with a message waiting, a wake, a budget, an effect, a note."""
    ok(repo, "init", actor=BOSS)
    ok(repo, "config", "set", "--role", f"maintainer={BOSS}", actor=BOSS)
    ok(repo, "goal", "add", "Ship", "--id", "g1", "--accept", "tests pass", "--accept", "docs",
       actor=BOSS)
    ok(repo, "todo", "add", "g1", "Code", "--id", "t1", "--criterion", "a1", actor=BOSS)
    ok(repo, "todo", "add", "g1", "Release", "--id", "t2", "--after", "t1", "--priority", "0",
       actor=BOSS)
    ok(repo, "gate", "open", "g1", "Ship Friday?", "--id", "q1", "--authority",
       "role:maintainer", "--blocks", "t2", actor=BOSS)
    ok(repo, "hooks", "install")
    ok(repo, "todo", "claim", "t1")
    ok(repo, "run", "--todo", "t1", "--criterion", "a1", "--", "true")
    git(repo, "commit", "-q", "--allow-empty", "--amend", "-m", "amended")
    ok(repo, "session", "open", "a task", "--id", "s1", "--goal", "g1", "--host", "devbox",
       "--path", "/work")
    ok(repo, "session", "send", "s1", "hello", actor=BOSS)
    ok(repo, "wake", "set", "--in", "2h", "--reason", "look", "--goal", "g1")
    ok(repo, "quota", "set", "--goal", "g1", "--turns", "10", actor=BOSS)
    ok(repo, "effect", "intend", "github:pr", "--action", "open-pr", "--key", "k1")
    ok(repo, "note", "add", "a note")
    (repo / "README").write_text("changed\n")
    return repo


def status_json(repo: Path) -> str:
    result = run_loopx(repo, "status", "--format", "json", "--no-ci", actor=AGENT)
    assert result.code == 0, result.err
    return result.out


def test_a_busy_status_builds_into_the_types_prints_back_the_same_and_validates(
        busy: Path) -> None:
    text = status_json(busy)  # one busy repository for every check: it takes seconds to make
    doc = typed.build(answers.StatusDoc, json.loads(text))  # strict: no key unknown or missing
    again = json.dumps(doc, ensure_ascii=False, separators=(",", ":"), default=typed.json_default)
    assert again == text.strip()
    assert {s.inbox[0].from_ for s in doc.sessions} == {BOSS}
    assert doc.todos[0].claimed_by == AGENT and doc.quota["g1"].left.turns == 10
    assert [(e.action, e.state) for e in doc.effects] == [("open-pr", "indeterminate")]
    assert TypeAdapter(answers.StatusDoc).validate_python(doc) == doc

    # The schema checked in is the one generated from the types, and it holds for real output.
    checked_in = json.loads((ROOT / ".loopx-schema" / "status.schema.json").read_text())
    assert checked_in == schema.status_schema()
    plain = json.loads(text)
    jsonschema.Draft202012Validator(checked_in).validate(plain)
    bad = dict(plain, todos=[dict(plain["todos"][0], state="sleeping")])
    with pytest.raises(jsonschema.ValidationError):  # a state no todo can be in
        jsonschema.Draft202012Validator(checked_in).validate(bad)

    # Evidence gives the commit it was recorded on and the one it points to now (issue 24).
    (ev,) = doc.evidence
    head = git(busy, "rev-parse", "HEAD")
    assert ev.current_commit == head != ev.commit  # the amend moved its pointer
    assert doc.environment.evidence[ev.id].commit == head


def test_every_list_and_show_validates_against_its_generated_schema(busy: Path) -> None:
    ev = json.loads(invoke(busy, "evidence", "list", "--json").out)["evidence"][0]["id"]
    for command, args in (("todo list", ["--all"]), ("todo show", ["t1"]),
                          ("goal list", ["--all"]), ("goal show", ["g1"]),
                          ("gate list", ["--all"]), ("gate show", ["q1"]),
                          ("evidence list", []), ("evidence show", [ev]), ("wake list", []),
                          ("effect list", []), ("note list", []), ("notice list", ["--all"])):
        result = invoke(busy, *command.split(), *args, "--json", actor=AGENT)
        assert result.code == 0, (command, result.err)
        doc = json.loads(result.out)
        assert doc or command == "notice list", command  # something of (nearly) every kind
        name = command.replace(" ", "-")
        checked_in = json.loads((ROOT / ".loopx-schema" / "answers" / f"{name}.schema.json")
                                .read_text())
        assert checked_in == schema.command_schema(command)
        jsonschema.Draft202012Validator(checked_in).validate(doc)


def test_the_action_kinds_are_the_kinds_decide_ranks() -> None:
    assert list(typing.get_args(answers.ActionKind)) == sorted(decide.PRIORITY,
                                                              key=decide.PRIORITY.__getitem__)
