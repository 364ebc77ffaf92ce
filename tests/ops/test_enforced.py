"""Rules enforced on write (issue 11), each refused in one line that says what would make it
pass, and each honest escape recorded where people look (log, brief, diff, status)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import git, invoke

AGENT = "agent:codex@devbox"
HUMAN = "human:test@example.com"


@pytest.fixture
def project(repo: Path) -> Path:
    for args in (["init"], ["goal", "add", "Ship", "--id", "g1", "--accept", "tests pass"],
                 ["todo", "add", "g1", "Code", "--id", "t1", "--criterion", "a1"],
                 ["todo", "add", "g1", "Docs", "--id", "t2"]):
        assert invoke(repo, *args).code == 0
    return repo


def ok(repo: Path, *args: str, actor: str = AGENT) -> Any:
    result = invoke(repo, *args, actor=actor)
    assert result.code == 0, result.err
    return result


def refused(repo: Path, *args: str, actor: str = AGENT) -> str:
    """The one-line refusal of a write that leaves the state branch as it was."""
    before = git(repo, "rev-parse", "loopx/state")
    result = invoke(repo, *args, actor=actor)
    assert result.code == 1, result.out
    assert result.err.count("\n") == 1, result.err
    assert git(repo, "rev-parse", "loopx/state") == before
    return result.err


def passing(repo: Path, *extra: str) -> str:
    doc = ok(repo, "evidence", "add", "--kind", "test", "--command", "pytest", "--exit-code", "0",
             "--json", *extra).out
    return str(json.loads(doc)["data"]["id"])


# --- goal close --achieved ----------------------------------------------------------------------


def test_close_is_refused_while_work_is_claimed_and_on_stale_evidence(project: Path) -> None:
    passing(project, "--goal", "g1", "--criterion", "a1")
    ok(project, "todo", "claim", "t1")
    assert "todos t1 (claimed), t2 (open)" in refused(
        project, "goal", "close", "g1", "--achieved", actor=HUMAN)
    ok(project, "todo", "release", "t1")
    for todo in ("t1", "t2"):
        ok(project, "todo", "cancel", todo, "--reason", "folded into g1")
    (project / "README").write_text("changed after the tests ran\n")
    assert "is stale: README changed since" in refused(
        project, "goal", "close", "g1", "--achieved", actor=HUMAN)
    git(project, "checkout", "--", "README")
    ok(project, "goal", "close", "g1", "--achieved", actor=HUMAN)


def test_the_override_is_a_humans_recorded_decision(project: Path) -> None:
    for todo in ("t1", "t2"):
        ok(project, "todo", "cancel", todo)
    assert "say why with --reason" in refused(
        project, "goal", "close", "g1", "--achieved", "--override", actor=HUMAN)
    assert "only a human" in refused(
        project, "goal", "close", "g1", "--achieved", "--override", "--reason", "x")
    ok(project, "goal", "close", "g1", "--achieved", "--override", "--reason",
       "verified by hand on staging", actor=HUMAN)
    log = ok(project, "log").out
    assert "closed goal g1 as achieved (override) — 'verified by hand on staging'" in log


# --- todo done ----------------------------------------------------------------------------------


def test_done_needs_a_fresh_pass_or_a_reason_and_the_reason_is_shown(project: Path) -> None:
    ok(project, "todo", "claim", "t2")
    assert "todo t2 has no passing evidence" in refused(project, "todo", "done", "t2")
    first = ok(project, "log", "--json").out
    ok(project, "todo", "done", "t2", "--reason", "docs only; nothing to run")
    log = ok(project, "log").out
    assert "finished todo t2 without passing evidence, because 'docs only; nothing to run'" in log
    brief = ok(project, "brief").out
    assert "t2: Docs — done without evidence: docs only; nothing to run" in brief
    tip = json.loads(first)[0]["commit"]
    diff = ok(project, "diff", f"{tip}..loopx/state").out
    assert "without passing evidence: 'docs only; nothing to run'" in diff
    shown = json.loads(ok(project, "todo", "show", "t2", "--json").out)
    assert shown["no_evidence_reason"] == "docs only; nothing to run"


def test_done_on_stale_evidence_is_refused_until_it_is_re_run(project: Path) -> None:
    ok(project, "todo", "claim", "t1")
    passing(project, "--todo", "t1")
    (project / "app.py").write_text("new code\n")
    err = refused(project, "todo", "done", "t1")
    assert "is stale: app.py changed since" in err and "git loopx rerun --todo t1" in err
    passing(project, "--todo", "t1")  # recorded on the work tree as it now is
    ok(project, "todo", "done", "t1")


# --- quota ---------------------------------------------------------------------------------------


def test_an_exhausted_quota_refuses_claims_and_next_waits(project: Path) -> None:
    ok(project, "quota", "set", "--goal", "g1", "--turns", "3", actor=HUMAN)
    ok(project, "quota", "spend", "--goal", "g1", "--turns", "3")
    err = refused(project, "todo", "claim", "t1")
    assert "goal g1's budget is spent (turns 3/3)" in err and "quota set --goal g1" in err
    waiting = invoke(project, "next", "--claim", "--json", actor=AGENT)
    assert waiting.code == 10 and json.loads(waiting.out)["action"]["kind"] == "stop_quota"
    assert "Waiting for:" in ok(project, "status").out
    ok(project, "quota", "set", "--goal", "g1", "--turns", "10", actor=HUMAN)
    ok(project, "todo", "claim", "t1")


def test_spending_past_the_budget_needs_force_and_a_reason(project: Path) -> None:
    ok(project, "quota", "set", "--tokens", "1000", actor=HUMAN)
    ok(project, "quota", "spend", "--tokens", "900")
    err = refused(project, "quota", "spend", "--tokens", "200")
    assert "past its limit (900 + 200 > 1000)" in err and "--force --reason" in err
    assert "needs a reason" in refused(project, "quota", "spend", "--tokens", "200", "--force")
    ok(project, "quota", "spend", "--tokens", "200", "--force", "--reason", "a long test run")
    shown = json.loads(ok(project, "quota", "show", "--json").out)
    assert shown["*"]["spent"]["tokens"] == 1100 and shown["*"]["exhausted"]
    assert "past the budget: 'a long test run'" in ok(project, "log").out


@pytest.mark.parametrize("ttl", ["0", "0m", "0s"])
def test_a_lease_must_last_a_positive_time(project: Path, ttl: str) -> None:
    ok(project, "todo", "claim", "t1", "--ttl", "30m")
    assert "positive time" in refused(project, "todo", "claim", "t1", "--ttl", ttl)
    assert "positive time" in refused(project, "todo", "renew", "t1", "--ttl", ttl)
    shown = json.loads(ok(project, "todo", "show", "t1", "--json").out)
    assert shown["state"] == "claimed"


# --- decisions -----------------------------------------------------------------------------------


def test_an_acknowledgement_needs_a_flag_to_clear(project: Path) -> None:
    ok(project, "todo", "claim", "t1")
    assert "has no decision to acknowledge" in refused(project, "todo", "ack", "t1")
