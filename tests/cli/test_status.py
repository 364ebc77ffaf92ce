"""`git loopx status|next|brief` end to end: real repositories, the JSON contract checked
against the schema in .loopx-schema/, and the exit codes agents loop on."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT, git, invoke, run_loopx

AGENT = "agent:codex@devbox"


def _validate(doc: object) -> None:
    schema = json.loads((ROOT / ".loopx-schema" / "status.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)


def _project(repo: Path) -> None:
    for argv in (["init"], ["goal", "add", "Ship", "--id", "g-1", "--accept", "tests pass"],
                 ["todo", "add", "g-1", "Write code", "--id", "t-1"],
                 ["todo", "add", "g-1", "Release", "--id", "t-2", "--after", "t-1"],
                 ["gate", "open", "g-1", "Ship on Friday?", "--id", "q-1",
                  "--authority", "human:boss@example.com", "--blocks", "t-2"]):
        result = invoke(repo, *argv)
        assert result.code == 0, result.err


def test_status_json_has_environment_and_actions_and_validates(repo: Path) -> None:
    _project(repo)
    (repo / "README").write_text("changed\n")
    result = run_loopx(repo, "status", "--format", "json", actor=AGENT)
    assert result.code == 0, result.err
    doc = result.json()
    _validate(doc)
    env = doc["environment"]
    assert env["branch"] == "main" and env["dirty"] == ["README"]
    assert env["head"] == git(repo, "rev-parse", "HEAD")
    # compact: what to wait for is counted while there is something to do
    assert [a["kind"] for a in doc["actions"]] == ["work"] and doc["omitted"]["actions"] == 1
    assert doc["frontier"] == ["t-1"]  # every earlier key is still there
    whole = run_loopx(repo, "status", "--format", "json", "--detail", actor=AGENT).json()
    _validate(whole)
    assert [a["kind"] for a in whole["actions"]] == ["work", "wait_gate"]  # type: ignore[index]


def test_status_marks_criteria_met_only_by_stale_evidence(repo: Path) -> None:
    _project(repo)
    assert invoke(repo, "evidence", "add", "--kind", "test", "--goal", "g-1", "--criterion", "a1",
                  "--command", "pytest -q", "--exit-code", "0").code == 0
    (repo / "src.py").write_text("x = 1\n")
    git(repo, "add", "src.py")
    git(repo, "commit", "-q", "-m", "code")
    doc = invoke(repo, "status", "--json").json()
    _validate(doc)
    criterion = doc["goals"][0]["acceptance"][0]
    assert criterion["met"] and criterion["needs_rerun"] and criterion["freshness"] == "stale"
    assert criterion["changed"] == ["src.py"]
    assert doc["actions"][0]["kind"] == "rerun_evidence"
    # The suggestion records what it runs (issue 11): not the bare test command.
    assert doc["actions"][0]["command"] == "git loopx rerun --criterion g-1:a1"
    text = invoke(repo, "status").out
    assert "evidence is stale: src.py changed" in text and "rerun_evidence" in text


def test_next_exit_codes_do_wait_nothing(repo: Path) -> None:
    _project(repo)
    assert invoke(repo, "next", actor=AGENT).code == 0
    assert invoke(repo, "todo", "claim", "t-1", actor="agent:other").code == 0
    waiting = invoke(repo, "next", "--json", actor=AGENT)
    assert waiting.code == 10
    assert waiting.json()["action"]["kind"] in ("wait_gate", "wait_lease")
    assert invoke(repo, "goal", "close", "g-1", "--abandoned").code == 0
    done = invoke(repo, "next", actor=AGENT)
    assert done.code == 20 and "nothing left" in done.out


def test_next_is_not_done_while_a_goal_is_unmet_and_nothing_is_open(repo: Path) -> None:
    """A goal with a criterion nothing has met and no todo left (none added yet, or the one
    for it finished without evidence) is work still to plan: `next` said "nothing left to
    do" (exit 20), and the agent loop of docs/agents.md stopped with the goal open."""
    for args in (("init",), ("goal", "add", "G", "--id", "g", "--accept", "tests pass")):
        assert invoke(repo, *args).code == 0
    found = invoke(repo, "next", "--json", actor=AGENT)
    assert found.code == 0, found.out
    action = found.json()["action"]
    assert action["kind"] == "plan_criterion" and action["goal"] == "g"
    assert "git loopx todo add g TITLE --criterion a1" in action["reason"]
    assert invoke(repo, "todo", "add", "g", "Make tests pass", "--id", "t").code == 0
    assert invoke(repo, "next", "--json", actor=AGENT).json()["action"]["kind"] == "work"
    assert invoke(repo, "todo", "claim", "t", actor=AGENT).code == 0
    assert invoke(repo, "todo", "done", "t", "--reason", "no evidence", actor=AGENT).code == 0
    again = invoke(repo, "next", "--json", actor=AGENT)
    assert again.code == 0 and again.json()["action"]["kind"] == "plan_criterion"
    assert invoke(repo, "run", "--goal", "g", "--criterion", "a1", "--", "true").code == 0
    assert invoke(repo, "next", "--json", actor=AGENT).json()["action"]["kind"] == "close_goal"


def test_next_claim_claims_the_top_frontier_todo(repo: Path) -> None:
    _project(repo)
    result = run_loopx(repo, "next", "--claim", "--format", "json", actor=AGENT)
    assert result.code == 0, result.err
    doc = result.json()
    assert doc["claimed"]["data"]["id"] == "t-1"
    assert doc["action"]["kind"] == "continue"
    status = invoke(repo, "status", "--json", actor=AGENT).json()
    assert status["todos"][0]["claimed_by"] == AGENT


def test_next_surfaces_a_decision_made_after_the_claim_until_acknowledged(repo: Path) -> None:
    _project(repo)
    invoke(repo, "todo", "claim", "t-1", actor=AGENT)
    for gate, blocks in (("q-2", ["--blocks", "t-1"]), ("q-3", [])):
        assert invoke(repo, "gate", "open", "g-1", f"Question {gate}?", "--id", gate,
                      "--authority", "human:boss@example.com", *blocks).code == 0
        assert invoke(repo, "gate", "answer", gate, "--reject",
                      actor="human:boss@example.com").code == 0
    best = invoke(repo, "next", "--json", actor=AGENT).json()["action"]
    assert best["kind"] == "replan" and "predates decision q-2" in best["reason"]
    replans = [a for a in invoke(repo, "status", "--json", actor=AGENT).json()["actions"]
               if a["kind"] == "replan" and a.get("todo") == "t-1"]
    assert [a["gate"] for a in replans] == ["q-2"]  # q-3 holds nothing back: no flag
    command = best["command"].split()[2:]
    assert command == ["todo", "ack", "t-1", "--gate", "q-2"]
    assert invoke(repo, *command, actor=AGENT).code == 0
    after = invoke(repo, "next", "--json", actor=AGENT).json()["action"]
    assert after["kind"] != "replan"


def test_brief_is_a_markdown_handoff(repo: Path) -> None:
    _project(repo)
    result = invoke(repo, "brief", actor=AGENT)
    assert result.code == 0, result.err
    for heading in ("# loopx brief", "## Next actions", "## Goal g-1: Ship", "### Acceptance",
                    "### Frontier (ready)", "## Open gates", "## Environment (inspected now)"):
        assert heading in result.out
    assert "git loopx todo claim t-1" in result.out
    plan = result.out.split("### Plan\n\n```mermaid\n", 1)[1].split("\n```\n", 1)[0]
    assert plan.startswith("flowchart LR\n") and "classDef ready" in plan


@pytest.mark.parametrize("flag", ["--no-ci", "--offline"])
def test_ci_flags(repo: Path, flag: str) -> None:
    _project(repo)
    git(repo, "config", "loopx.ci.provider", "github")
    git(repo, "config", "loopx.ci.githubRepo", "acme/widget")
    git(repo, "config", "loopx.ci.githubApi", "http://127.0.0.1:9")
    doc = invoke(repo, "status", "--json", flag).json()
    assert doc["environment"]["ci"]["state"] == "unknown"


def test_warm_status_imports_neither_pydantic_nor_ruamel(repo: Path) -> None:
    import os
    import subprocess
    import sys

    _project(repo)
    env = dict(os.environ, LOOPX_ACTOR=AGENT)
    argv = [sys.executable, "-X", "importtime", "-m", "loopx", "status", "--format", "json", "--no-ci"]
    subprocess.run(argv, cwd=repo, env=env, capture_output=True, check=True)  # warms the cache
    warm = subprocess.run(argv, cwd=repo, env=env, capture_output=True, check=True)
    imported = {line.split("|")[-1].strip() for line in warm.stderr.decode().splitlines()}
    assert "loopx.recovery.readback" in imported
    assert not {name for name in imported if name.split(".")[0] in ("pydantic", "ruamel")}


def test_a_session_awaiting_input_is_an_action(repo: Path) -> None:
    _project(repo)
    opened = invoke(repo, "session", "open", "Monthly report", "--goal", "g-1", "--json", actor=AGENT)
    assert opened.code == 0, opened.err
    sid = opened.json()["data"]["id"]
    assert invoke(repo, "session", "respond", sid, "February done", actor=AGENT).code == 0
    mine = invoke(repo, "status", "--json", actor=AGENT).json()
    assert not [a for a in mine["actions"] if a["kind"] == "session_waiting"]  # I am waiting
    doc = invoke(repo, "status", "--json", actor="human:boss@example.com").json()
    _validate(doc)
    waiting = [a for a in doc["actions"] if a["kind"] == "session_waiting"]
    assert waiting and waiting[0]["session"] == sid
    assert "waiting for your instruction" in waiting[0]["reason"]
    assert waiting[0]["command"] == f"git loopx session send {sid} MESSAGE"


def test_in_a_bare_hub_status_and_brief_say_there_is_no_work_tree(repo: Path, tmp_path: Path) -> None:
    """Not 'HEAD detached': a bare repository's HEAD names a branch and checks nothing out."""
    _project(repo)
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    git(repo, "push", "-q", str(hub), "loopx/state")
    text = invoke(hub, "status", "--no-ci", actor=AGENT).out
    assert "Work tree: none (a bare repository)\n" in text and "detached" not in text
    brief = invoke(hub, "brief", "--no-ci", actor=AGENT).out
    assert "- HEAD: (none)\n" in brief and "(detached)" not in brief
    git(repo, "checkout", "-q", "--detach")
    assert "Work tree: HEAD detached at " in invoke(repo, "status", "--no-ci", actor=AGENT).out
    assert " (detached)\n" in invoke(repo, "brief", "--no-ci", actor=AGENT).out


def _heads(text: str) -> list[str]:
    """The status text's section headings before the ledger's first goal."""
    before = text.split("\nGoal ", 1)[0]
    return [line for line in before.splitlines() if line in ("Do now:", "Waiting for:")]


def test_status_text_leads_with_what_to_do_and_with_the_waits_only_when_nothing_is_ready(
        repo: Path) -> None:
    _project(repo)
    assert invoke(repo, "gate", "open", "g-1", "Another?", "--id", "q-2",
                  "--authority", "human:boss@example.com").code == 0
    assert invoke(repo, "todo", "add", "g-1", "Gated", "--id", "t-3", "--gate", "q-2").code == 0
    ready = invoke(repo, "status", "--no-ci", actor=AGENT).out  # t-1 ready, t-3 on a gate
    assert _heads(ready) == ["Do now:", "Waiting for:"], ready
    first = ready.split("Do now:\n", 1)[1].splitlines()
    assert first[:2] == ["  work: t-1 is ready: Write code", "    git loopx todo claim t-1"]
    assert invoke(repo, "todo", "claim", "t-1", actor=AGENT).code == 0
    held = invoke(repo, "status", "--no-ci", actor=AGENT).out
    assert _heads(held) == ["Do now:", "Waiting for:"]
    assert held.split("Do now:\n", 1)[1].startswith("  continue: ")
    others = invoke(repo, "status", "--no-ci", actor="agent:other@box").out  # t-1 is AGENT's
    assert _heads(others) == ["Waiting for:"], others
    assert "wait_gate: t-3 waits for gate q-2" in others.split("\nGoal ", 1)[0]
