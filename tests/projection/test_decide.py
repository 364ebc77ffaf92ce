"""decide() is pure: each case is a snapshot and an environment, and the kinds it expects, in
order. Built from small dicts, the shapes `git loopx status --format json` documents."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from loopx.projection import decide

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
ME = "agent:me"


def goal(gid: str = "g-1", state: str = "active", evidence: list[str] | None = None,
         criteria: int = 1, freshness: str | None = None, **crit: Any) -> dict[str, Any]:
    """A goal whose criteria are annotated as `status` annotates them (decide.annotate)."""
    return {"id": gid, "title": gid, "state": state, "acceptance": [
        {"id": f"c-{n}", "text": "t", "met": bool(evidence), "evidence": evidence or [],
         "latest": (evidence or [None])[-1], "verdict": "pass" if evidence else None,
         "freshness": freshness or ("fresh" if evidence else "unmet"), **crit}
        for n in range(criteria)]}


def todo(tid: str, *, state: str = "open", ready: bool = True, holder: str | None = None,
         until: str | None = None, expired: str | None = None, gates: list[str] | None = None,
         decisions: list[str] | None = None) -> dict[str, Any]:
    return {"id": tid, "goal": "g-1", "title": tid, "state": state, "ready": ready,
            "claimed_by": holder, "lease_expires": until, "expired_claim_by": expired,
            "gates": gates or [], "decisions_since_claim": decisions or [], "why_not_ready": None}


def _half_met() -> dict[str, Any]:
    half = goal(evidence=["e-1"], criteria=2)
    half["acceptance"][1].update(met=False, evidence=[], latest=None, freshness="unmet")
    return half


def snap(**parts: Any) -> dict[str, Any]:
    # (the goal in the background has no criteria: one unmet with nothing open is an action)
    base: dict[str, Any] = {"goals": [goal(criteria=0)], "todos": [], "frontier": [], "gates": [],
                            "evidence": [], "wakes": [], "quota": {}, "effects": [],
                            "problems": [], "unknown_events": []}
    base.update(parts)
    if "frontier" not in parts:
        base["frontier"] = [t["id"] for t in base["todos"] if t["ready"]]
    return base


GATE = {"id": "q-1", "goal": "g-1", "state": "open", "question": "Ship?",
        "authority": ["human:alice"], "blocks": ["t-2"]}
EVIDENCE = [{"id": "e-1", "kind": "test", "command": "pytest -q"}]

CASES: list[tuple[str, dict[str, Any], dict[str, Any], str, list[str]]] = [
    ("nothing at all", snap(goals=[]), {}, ME, []),
    # Its work done and no criterion to judge it by: `next` said "nothing left to do" (exit 20)
    # while the goal stayed open (the README's `goal add "Ship 1.0"` has no --accept).
    ("a goal with no criteria whose work is done is to close",
     snap(todos=[todo("t-1", state="done", ready=False)]), {}, ME, ["close_goal"]),
    ("one whose work is open is not", snap(todos=[todo("t-1", state="done", ready=False),
                                                  todo("t-2", ready=False, holder="agent:x",
                                                       until="2026-01-01T13:00:00Z")]),
     {}, ME, ["wait_lease"]),
    ("a frontier todo is work", snap(todos=[todo("t-1")]), {}, ME, ["work"]),
    ("frontier in ledger order", snap(todos=[todo("t-2"), todo("t-1")]), {}, ME, ["work", "work"]),
    ("a damaged file comes first", snap(todos=[todo("t-1")], problems=[
        {"event": "events/x.yaml", "type": "file", "actor": "", "reason": "bad"}]), {}, ME,
     ["repair", "work"]),
    ("a claim that lost a merge race is a notice for its actor, not a blocker",
     snap(todos=[todo("t-1")], problems=[
         {"event": "E", "type": "todo.claimed", "actor": ME, "reason": "contested"}]), {}, ME,
     ["work", "notice"]),
    ("someone else's refused event is not my business",
     snap(todos=[todo("t-1")], problems=[
         {"event": "E", "type": "todo.claimed", "actor": "agent:other", "reason": "x"}]), {}, ME,
     ["work"]),
    ("an indeterminate effect before work",
     snap(todos=[todo("t-1")], effects=[{"id": "x-1", "state": "indeterminate", "action": "open-pr",
                                         "target": "gh#1"}]), {}, ME, ["read_back_effect", "work"]),
    ("my lease about to expire", snap(todos=[todo("t-1", ready=False, state="claimed", holder=ME,
                                                  until="2026-01-01T12:05:00Z")]), {}, ME,
     ["renew_lease", "continue"]),
    ("my lease has time left", snap(todos=[todo("t-1", ready=False, state="claimed", holder=ME,
                                                until="2026-01-01T13:00:00Z")]), {}, ME, ["continue"]),
    ("my lease expired", snap(todos=[todo("t-1", expired=ME)]), {}, ME, ["release_lease", "work"]),
    ("someone else's lease", snap(todos=[todo("t-1", ready=False, state="claimed",
                                              holder="agent:other", until="2026-01-01T13:00:00Z")]),
     {}, ME, ["wait_lease"]),
    ("a gate I must answer", snap(gates=[GATE]), {}, "human:alice", ["answer_gate"]),
    ("a gate others must answer", snap(gates=[GATE], todos=[todo("t-2", ready=False, gates=["q-1"])]),
     {}, ME, ["wait_gate"]),
    ("a gate of a closed goal is ignored", snap(goals=[goal(state="achieved")], gates=[GATE]), {},
     ME, []),
    ("decision after my claim", snap(gates=[dict(GATE, state="answered", decision="reject",
                                                 answered_by="human:alice")],
                                     todos=[todo("t-1", ready=False, state="claimed", holder=ME,
                                                 until="2026-01-01T13:00:00Z", decisions=["q-1"])]),
     {}, ME, ["replan", "continue"]),
    ("a rejected gate asks to re-plan the todos it blocks",
     snap(gates=[dict(GATE, state="answered", decision="reject", answered_by="human:alice")],
          todos=[todo("t-1"), todo("t-2", ready=False, gates=["q-1"])]), {}, ME, ["replan", "work"]),
    ("quota spent stops work (and is waited on)", snap(todos=[todo("t-1")], quota={"*": {
        "exhausted": True, "turns": 5, "tokens": None, "cost": None,
        "spent": {"turns": 5, "tokens": 0, "cost": 0}}}), {}, ME, ["stop_quota"]),
    ("fresh evidence closes the goal", snap(goals=[goal(evidence=["e-1"])], evidence=EVIDENCE),
     {}, ME, ["close_goal"]),
    ("not while a todo of the goal is still open",
     snap(goals=[goal(evidence=["e-1"])], evidence=EVIDENCE, todos=[todo("t-1")]),
     {}, ME, ["work"]),
    ("stale evidence must be re-run",
     snap(goals=[goal(evidence=["e-1"], freshness="stale", changed=["a.py"])], evidence=EVIDENCE),
     {}, ME, ["rerun_evidence"]),
    ("a newer failure is to fix and re-run",
     snap(goals=[goal(evidence=["e-1"], met=False, verdict="fail", freshness="unmet")],
          evidence=EVIDENCE), {}, ME, ["rerun_evidence"]),
    ("an unrecorded CI result is recorded before the goal closes",
     snap(goals=[goal(evidence=["e-1"], ci={"verdict": "pass", "checks": [{"name": "tests"}]})],
          evidence=EVIDENCE), {}, ME, ["record_ci"]),
    ("one fresh criterion is not enough: the other, with nothing open for it, is to plan",
     snap(goals=[_half_met()], evidence=EVIDENCE), {}, ME, ["plan_criterion"]),
    ("an unmet criterion with work open for its goal is that work's",
     snap(goals=[_half_met()], evidence=EVIDENCE, todos=[todo("t-1")]), {}, ME, ["work"]),
    ("an unmet criterion of a goal whose todos are all done is to plan",
     snap(goals=[goal()], todos=[todo("t-1", state="done", ready=False)]), {}, ME,
     ["plan_criterion"]),
    ("a failed verdict is to fix, not to plan",
     snap(goals=[goal(evidence=["e-1"], verdict="fail", met=False, freshness="unmet")]), {}, ME,
     ["rerun_evidence"]),
    ("state branch behind and ahead", snap(), {"state": {"ref": "r", "unmerged": 2, "unpushed": 1}},
     ME, ["sync", "sync"]),
    ("CI pending is waited for", snap(todos=[todo("t-1")]), {"ci": {"state": "pending"}}, ME,
     ["work", "wait_ci"]),
    ("CI failure is to fix", snap(), {"ci": {"state": "failure", "checks": [
        {"name": "tests", "state": "failure"}]}}, ME, ["fix_ci"]),
    ("a rebase in progress", snap(todos=[todo("t-1")]), {"in_progress": "rebase"}, ME,
     ["finish_operation", "work"]),
    ("a wake that is due", snap(wakes=[{"id": "w-1", "at": "2026-01-01T11:00:00Z"}]), {}, ME,
     ["wake_due"]),
    ("a wake in the future is not an action", snap(wakes=[{"id": "w-1", "at": "2026-01-02T00:00:00Z"}]),
     {}, ME, []),
    ("a wake on an answered gate", snap(gates=[dict(GATE, state="answered")],
                                        wakes=[{"id": "w-1", "on_gate": "q-1"}]), {}, ME, ["wake_due"]),
    ("a session waiting for me", snap(sessions=[{"id": "s-1", "state": "awaiting_input",
                                                 "owner": "agent:other",
                                                 "workspace": {"host": "here"}}]),
     {"host": "here"}, ME, ["session_waiting"]),
    ("my own session awaiting input: I am the one waiting, never told to message myself",
     snap(sessions=[{"id": "s-1", "state": "awaiting_input", "owner": ME, "inbox": [],
                     "workspace": {"host": "here"}}]), {"host": "here"}, ME, []),
    ("a running session is not an action", snap(sessions=[{"id": "s-1", "state": "running"}]), {},
     ME, []),
    ("my running session with unread messages: read the inbox",
     snap(sessions=[{"id": "s-1", "state": "running", "owner": ME, "inbox": [
         {"event": "01X", "from": "human:a", "kind": "correction"}]}]), {}, ME, ["read_inbox"]),
    ("someone else's running session with unread messages is theirs to read",
     snap(sessions=[{"id": "s-1", "state": "running", "owner": "agent:other", "inbox": [
         {"event": "01X", "from": "human:a", "kind": "correction"}]}]), {}, ME, []),
    ("a closed session's inbox is no action", snap(sessions=[{"id": "s-1", "state": "closed",
                                                             "owner": ME, "inbox": [
         {"event": "01X", "from": "human:a", "kind": "follow_up"}]}]), {}, ME, []),
]


@pytest.mark.parametrize("name, snapshot, env, actor, kinds", CASES, ids=[c[0] for c in CASES])
def test_decide_orders_actions(name: str, snapshot: dict[str, Any], env: dict[str, Any],
                               actor: str, kinds: list[str]) -> None:
    actions = decide.decide(snapshot, env, NOW, actor)
    assert [a["kind"] for a in actions] == kinds
    assert all(a["reason"] for a in actions)


def test_frontier_order_is_kept() -> None:
    actions = decide.decide(snap(todos=[todo("t-2"), todo("t-1")]), {}, NOW, ME)
    assert [a["todo"] for a in actions] == ["t-2", "t-1"]
    assert actions[0]["command"] == "git loopx todo claim t-2"


def test_replan_names_the_decision() -> None:
    snapshot = snap(gates=[dict(GATE, state="answered", decision="reject", answered_by="human:alice")],
                    todos=[todo("t-1", ready=False, holder=ME, until="2026-01-01T13:00:00Z",
                                decisions=["q-1"])])
    replan = decide.decide(snapshot, {}, NOW, ME)[0]
    assert "predates decision q-1" in replan["reason"]


def test_session_on_another_host_cannot_be_reattached_here() -> None:
    snapshot = snap(sessions=[{"id": "s-1", "state": "awaiting_input", "owner": "agent:other",
                               "workspace": {"host": "devbox", "path": "/w"}}])
    action = decide.decide(snapshot, {"host": "laptop"}, NOW, ME)[0]
    assert "waiting for your instruction" in action["reason"]
    assert "runs on devbox" in action["reason"] and "cannot be re-attached" in action["reason"]
    assert action["command"] == "git loopx session send s-1 MESSAGE"


def test_the_inbox_action_names_what_waits_and_how_to_read_it() -> None:
    inbox = [{"event": "01A", "from": "human:a", "kind": "correction"},
             {"event": "01B", "from": "human:b", "kind": "correction"}]
    snapshot = snap(sessions=[{"id": "s-1", "state": "running", "owner": ME, "task": "report",
                               "inbox": inbox}])
    (action,) = decide.decide(snapshot, {}, NOW, ME)
    assert action["reason"] == ("your session s-1 (report) has 2 corrections unread (the latest "
                                "from human:b): read them before you go on")
    assert action["command"] == "git loopx session inbox s-1 --ack"
    assert action["session"] == "s-1"


def test_role_authority_answers_gates() -> None:
    snapshot = snap(gates=[dict(GATE, authority=["role:maintainer"])])
    actions = decide.decide(snapshot, {}, NOW, "human:bob", roles={"maintainer": ["human:bob"]})
    assert [a["kind"] for a in actions] == ["answer_gate"]


def test_a_stale_criterion_is_rerun_through_loopx_so_the_result_is_recorded() -> None:
    snapshot = snap(goals=[goal(evidence=["e-1"], freshness="stale", changed=["a.py", "b.py"])],
                    evidence=EVIDENCE)
    action = decide.decide(snapshot, {}, NOW, ME)[0]
    assert action["command"] == "git loopx rerun --criterion g-1:c-0"
    assert "2 files in its scope changed since (a.py, b.py)" in action["reason"]
    assert action["evidence"] == "e-1"


def test_replan_suggests_the_acknowledgement_that_clears_it() -> None:
    snapshot = snap(gates=[dict(GATE, state="answered", decision="approve", answered_by="human:alice")],
                    todos=[todo("t-1", ready=False, holder=ME, until="2026-01-01T13:00:00Z",
                                decisions=["q-1"])])
    replan = decide.decide(snapshot, {}, NOW, ME)[0]
    assert replan["command"] == "git loopx todo ack t-1 --gate q-1"


def test_a_spent_quota_is_something_to_wait_for() -> None:
    assert decide.is_waiting({"kind": "stop_quota"})


def test_annotate_takes_readback_verdicts_and_ci_meets_a_criterion() -> None:
    snapshot = snap(goals=[goal(criteria=2)])
    env = {"criteria": {
        "g-1:c-0": {"state": "fresh", "verdict": "pass", "source": "ci", "changed": [],
                    "checks": [{"name": "tests", "state": "success", "url": "https://ci/1"}]},
        "g-1:c-1": {"state": "stale", "verdict": "pass", "source": "ledger",
                    "changed": ["src/a.py"]}}}
    decide.annotate(snapshot, env)
    first, second = snapshot["goals"][0]["acceptance"]
    assert first["met"] and first["ci"]["checks"][0]["name"] == "tests"
    assert (second["freshness"], second["needs_rerun"], second["changed"]) == (
        "stale", True, ["src/a.py"])


def test_next_wake_is_the_earliest_future_time() -> None:
    snapshot = snap(wakes=[{"id": "w-1", "at": "2026-01-01T15:00:00Z"},
                           {"id": "w-2", "at": "2026-01-01T11:00:00Z"}],
                    todos=[todo("t-1", ready=False, holder="agent:x", until="2026-01-01T14:00:00Z")])
    assert decide.next_wake(snapshot, NOW) == "2026-01-01T14:00:00Z"


def test_decide_is_pure() -> None:
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(decide))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
    assert not imported & {"subprocess", "click", "os", "socket"}
    assert "git" not in {n.module.rsplit(".", 1)[-1] for n in ast.walk(tree)
                         if isinstance(n, ast.ImportFrom) and n.module} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}


def test_a_notice_names_the_command_that_dismisses_it_and_goes_once_dismissed() -> None:
    problem = {"event": "01JDZ0000000000000000000AA", "type": "todo.claimed", "actor": ME,
               "reason": "todo t1 is claimed by agent:a until 2026-06-01T13:00:00Z (contested)"}
    [action] = decide.decide(snap(problems=[problem]), {}, NOW, ME)
    assert action["kind"] == "notice" and action["reason"].startswith("your claim was not applied")
    assert action["command"] == "git loopx notice dismiss 01JDZ0000000000000000000AA"
    assert decide.decide(snap(problems=[dict(problem, dismissed=True)]), {}, NOW, ME) == []
