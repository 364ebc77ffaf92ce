"""The rules that hold on write and on replay (issue 11): the latest verdict wins, criteria
are revised and retired, a goal closes as achieved and a todo as done only on evidence or a
recorded reason, quota stops claims and spending, a decision flags only the plans it touches
until acknowledged. Pure: events in, state out."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from loopx.model.events import Event, make_event
from loopx.model.ids import new_event_id
from loopx.projection import checks, folding, views
from loopx.projection.entities import Fold

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
AT = "2026-06-01T11:00:00Z"
HUMAN = "human:maint@example.com"
AGENT = "agent:a"


def ev(type_: str, data: dict[str, Any], *, clock: int, actor: str = HUMAN,
       goal: str | None = None, at: str = AT, v: int | None = None) -> Event:
    event = make_event(type=type_, data=data, event_id=new_event_id(), at=at, clock=clock,
                       actor=actor, goal=goal)
    if v is not None:  # as an older loopx wrote it
        event.env = event.env.model_copy(update={"v": v})
    return event


def goal(*criteria: str) -> list[Event]:
    return [ev("goal.created", {"id": "g", "title": "G", "acceptance": [
        {"id": c, "text": f"{c} holds"} for c in criteria]}, clock=1)]


def result(ev_id: str, clock: int, *, code: int = 0, criteria: tuple[str, ...] = ("a1",),
           kind: str = "test", todo: str | None = None) -> Event:
    data: dict[str, Any] = {"id": ev_id, "kind": kind, "exit_code": code,
                            "criteria": list(criteria)}
    if todo:
        data["todo"] = todo
    return ev("evidence.recorded", data, clock=clock, goal=None if todo else "g")


def criterion(fold: Fold, crit: str = "a1") -> dict[str, Any]:
    (found,) = [c for c in views.snapshot(fold, NOW)["goals"][0]["acceptance"] if c["id"] == crit]
    return found


def refused(events: list[Event]) -> str:
    fold = folding.replay(events)
    assert fold.problems, "expected the last event to be refused"
    return fold.problems[-1].reason


# --- the latest verdict wins ------------------------------------------------------------------


def test_a_newer_failure_unmeets_a_criterion_until_a_newer_pass() -> None:
    events = goal("a1") + [result("e-1", 2)]
    assert criterion(folding.replay(events))["met"]
    events.append(result("e-2", 3, code=1))
    unmet = criterion(folding.replay(events))
    assert (unmet["met"], unmet["latest"], unmet["verdict"]) == (False, "e-2", "fail")
    assert unmet["evidence"] == ["e-1"]  # the passing evidence is still listed
    events.append(result("e-3", 4))
    assert criterion(folding.replay(events))["met"]


def test_newer_is_ledger_order_not_the_order_events_arrive_in() -> None:
    events = goal("a1") + [result("e-pass", 3), result("e-fail", 2, code=1)]
    assert criterion(folding.replay(list(reversed(events))))["latest"] == "e-pass"
    assert criterion(folding.replay(events))["met"]


def test_notes_and_commits_are_no_verdict() -> None:
    events = goal("a1") + [result("e-1", 2, code=1), result("e-2", 3, kind="note"),
                           result("e-3", 4, kind="commit")]
    assert criterion(folding.replay(events))["latest"] == "e-1"


# --- criteria revised, retired, scoped --------------------------------------------------------


def test_a_revision_makes_earlier_evidence_not_count() -> None:
    events = goal("a1", "a2") + [result("e-1", 2)]
    events.append(ev("goal.updated", {"id": "g", "revise": [{"id": "a1", "text": "stricter"}]},
                     clock=3, goal="g"))
    revised = criterion(folding.replay(events))
    assert (revised["text"], revised["met"], revised["evidence"], revised["revision"]) == (
        "stricter", False, [], 1)
    events.append(result("e-2", 4))
    assert criterion(folding.replay(events))["evidence"] == ["e-2"]


def test_a_retired_criterion_needs_no_evidence_and_stays_known() -> None:
    events = goal("a1", "a2") + [result("e-1", 2)]
    events.append(ev("goal.updated", {"id": "g", "retire": ["a2"]}, clock=3, goal="g"))
    fold = folding.replay(events)
    assert views.unmet_criteria(fold, "g") == []
    assert views.snapshot(fold, NOW)["goals"][0]["retired"] == [{"id": "a2", "text": "a2 holds"}]
    late = result("e-2", 4, criteria=("a2",))  # crossed the retirement in a merge: kept
    assert not folding.replay(events + [late]).problems
    assert "criterion a2 of goal g is retired" in refused(events + [ev(
        "goal.updated", {"id": "g", "revise": [{"id": "a2", "text": "back"}]}, clock=4)])
    assert "already has a criterion with that id" in refused(events + [ev(
        "goal.updated", {"id": "g", "add_acceptance": [{"id": "a2", "text": "new"}]}, clock=4)])


def test_criteria_carry_paths() -> None:
    events = goal("a1") + [ev("goal.updated", {"id": "g", "scope": [
        {"id": "a1", "paths": ["src/**"]}]}, clock=2, goal="g")]
    assert criterion(folding.replay(events))["paths"] == ["src/**"]
    assert "not one of its criteria" in refused(events + [ev(
        "goal.updated", {"id": "g", "scope": [{"id": "zz", "paths": []}]}, clock=3)])


# --- closing a goal ---------------------------------------------------------------------------


def test_achieved_needs_the_latest_verdict_to_pass_and_no_work_left() -> None:
    events = goal("a1") + [
        ev("todo.added", {"id": "t1", "goal": "g", "title": "x"}, clock=2, goal="g"),
        result("e-1", 3), result("e-2", 4, code=1)]
    close = ev("goal.closed", {"id": "g", "outcome": "achieved"}, clock=9)
    assert "criteria without passing evidence (a1)" in refused(events + [close])
    events.append(result("e-3", 5))
    claimed = events + [ev("todo.claimed", {"id": "t1", "until": "2026-06-01T13:00:00Z"},
                           clock=6, actor=AGENT)]
    assert "todos t1 (claimed)" in refused(claimed + [close])
    assert "todos t1 (open)" in refused(events + [close])
    done = ev("todo.done", {"id": "t1", "reason": "tracked elsewhere"}, clock=7)
    assert folding.replay(events + [done, close]).goals["g"].state == "achieved"


def test_an_override_is_a_humans_decision_with_a_reason() -> None:
    events = goal("a1")
    bare = ev("goal.closed", {"id": "g", "outcome": "achieved", "override": True}, clock=2)
    assert "say why with --reason" in refused(events + [bare])
    agent = ev("goal.closed", {"id": "g", "outcome": "achieved", "override": True,
                               "reason": "x"}, clock=2, actor=AGENT)
    assert "only a human" in refused(events + [agent])


def test_a_version_1_close_keeps_the_rules_it_was_written_under() -> None:
    events = goal("a1") + [
        ev("todo.added", {"id": "t1", "goal": "g", "title": "x"}, clock=2, goal="g"),
        result("e-1", 3), result("e-2", 4, code=1)]
    old = ev("goal.closed", {"id": "g", "outcome": "achieved"}, clock=5, v=1)
    assert folding.replay(events + [old]).goals["g"].state == "achieved"


# --- finishing a todo -------------------------------------------------------------------------


def todo_events() -> list[Event]:
    return goal("a1") + [ev("todo.added", {"id": "t1", "goal": "g", "title": "x"}, clock=2,
                            goal="g")]


def test_done_needs_a_passing_result_or_a_reason() -> None:
    done = ev("todo.done", {"id": "t1"}, clock=9)
    assert "todo t1 has no passing evidence" in refused(todo_events() + [done])
    commit = result("e-c", 3, kind="commit", todo="t1", criteria=())
    assert "todo t1 has no passing evidence" in refused(todo_events() + [commit, done])
    failed = [result("e-1", 3, todo="t1"), result("e-2", 4, code=1, todo="t1")]
    assert "the latest evidence for todo t1 (e-2) failed" in refused(
        todo_events() + failed + [done])
    assert folding.replay(todo_events() + failed[:1] + [done]).todos["t1"].state == "done"
    why = ev("todo.done", {"id": "t1", "reason": "a docs change; nothing to run"}, clock=9)
    fold = folding.replay(todo_events() + [why])
    assert fold.todos["t1"].state == "done"
    assert views.snapshot(fold, NOW)["todos"][0]["no_evidence_reason"] == (
        "a docs change; nothing to run")


def test_done_citing_only_a_note_is_refused() -> None:
    note = result("e-n", 3, kind="note", todo="t1", criteria=())
    done = ev("todo.done", {"id": "t1", "evidence": ["e-n"]}, clock=9)
    assert "does not pass" in refused(todo_events() + [note, done])


def _on_tree(event: Event, tree: str) -> Event:
    event.data = event.data.model_copy(update={"tree": tree, "commit": "c" * 40})
    return event


def test_a_cited_older_pass_never_beats_a_newer_failure_on_the_same_code() -> None:
    old_pass = _on_tree(result("e-p", 3, todo="t1", criteria=()), "a" * 40)
    failed = _on_tree(result("e-f", 4, code=1, todo="t1", criteria=()), "a" * 40)
    done = ev("todo.done", {"id": "t1", "evidence": ["e-p"]}, clock=9)
    reason = refused(todo_events() + [old_pass, failed, done])
    assert "evidence e-p passed, but e-f failed later on the same code for todo t1" in reason
    with_reason = ev("todo.done", {"id": "t1", "evidence": ["e-p"], "reason": "flaky"}, clock=9)
    assert "e-f failed later" in refused(todo_events() + [old_pass, failed, with_reason])
    # a newer pass on that code settles it; a failure on other code does not count against it
    again = _on_tree(result("e-q", 5, todo="t1", criteria=()), "a" * 40)
    assert folding.replay(todo_events() + [old_pass, failed, again, done]).todos[
        "t1"].state == "done"
    elsewhere = _on_tree(result("e-g", 4, code=1, todo="t1", criteria=()), "b" * 40)
    assert folding.replay(todo_events() + [old_pass, elsewhere, done]).todos[
        "t1"].state == "done"


def test_a_version_3_done_citing_an_older_pass_keeps_its_meaning() -> None:
    old_pass = _on_tree(result("e-p", 3, todo="t1", criteria=()), "a" * 40)
    failed = _on_tree(result("e-f", 4, code=1, todo="t1", criteria=()), "a" * 40)
    old = ev("todo.done", {"id": "t1", "evidence": ["e-p"]}, clock=9, v=3)
    assert folding.replay(todo_events() + [old_pass, failed, old]).todos["t1"].state == "done"


def test_a_version_1_done_needs_no_evidence() -> None:
    old = ev("todo.done", {"id": "t1"}, clock=9, v=1)
    assert folding.replay(todo_events() + [old]).todos["t1"].state == "done"


# --- quota ------------------------------------------------------------------------------------


def test_an_exhausted_quota_refuses_claims() -> None:
    events = todo_events() + [ev("quota.set", {"turns": 2}, clock=3, goal="g"),
                              ev("quota.spent", {"turns": 2}, clock=4, goal="g")]
    claim = ev("todo.claimed", {"id": "t1", "until": "2026-06-01T13:00:00Z"}, clock=5,
               actor=AGENT)
    reason = refused(events + [claim])
    assert "goal g's budget is spent (turns 2/2)" in reason and "quota set --goal g" in reason
    raised = ev("quota.set", {"turns": 5}, clock=5, goal="g")
    claim6 = ev("todo.claimed", {"id": "t1", "until": "2026-06-01T13:00:00Z"}, clock=6,
                actor=AGENT)
    assert folding.replay(events + [raised, claim6]).todos["t1"].holder == AGENT


def test_spending_past_the_limit_needs_force_and_a_reason() -> None:
    events = todo_events() + [ev("quota.set", {"tokens": 100}, clock=3)]
    over = ev("quota.spent", {"tokens": 101}, clock=4)
    assert "would take the ledger-wide budget past its limit (0 + 101 > 100)" in refused(
        events + [over])
    bare = ev("quota.spent", {"tokens": 101, "force": True}, clock=4)
    assert "needs --reason" in refused(events + [bare])
    forced = ev("quota.spent", {"tokens": 101, "force": True, "reason": "the run was cut"},
                clock=4)
    assert folding.replay(events + [forced]).quotas[""].spent_tokens == 101
    exact = ev("quota.spent", {"tokens": 100}, clock=4)
    assert not folding.replay(events + [exact]).problems


def test_a_lease_must_end_after_it_starts() -> None:
    claim = ev("todo.claimed", {"id": "t1", "until": AT}, clock=3, actor=AGENT)
    assert "must end after it starts" in refused(todo_events() + [claim])


# --- decisions --------------------------------------------------------------------------------


def decisions() -> list[Event]:
    """t1 -> t2 -> t3 (each waits for the one before); t9 unrelated. t1 is done, t2 and t9
    are claimed; then a gate is opened on t1's line of work and answered."""
    return goal("a1") + [
        ev("todo.added", {"id": "t1", "goal": "g", "title": "1"}, clock=2, goal="g"),
        ev("todo.added", {"id": "t2", "goal": "g", "title": "2", "depends_on": ["t1"]},
           clock=3, goal="g"),
        ev("todo.added", {"id": "t3", "goal": "g", "title": "3", "depends_on": ["t2"]},
           clock=4, goal="g"),
        ev("todo.added", {"id": "t9", "goal": "g", "title": "9"}, clock=5, goal="g"),
        ev("todo.done", {"id": "t1", "reason": "setup"}, clock=6),
        ev("todo.claimed", {"id": "t2", "until": "2026-06-01T13:00:00Z"}, clock=7, actor=AGENT),
        ev("todo.claimed", {"id": "t9", "until": "2026-06-01T13:00:00Z"}, clock=8, actor=AGENT),
        ev("gate.opened", {"id": "q", "goal": "g", "question": "?", "authority": [HUMAN],
                           "blocks": ["t1"]}, clock=9, goal="g"),
        ev("gate.answered", {"id": "q", "decision": "answer", "answer": "use v2"}, clock=10),
    ]


def test_a_decision_flags_only_the_todos_it_holds_back_and_their_dependants() -> None:
    fold = folding.replay(decisions())
    flagged = {t: fold.todos[t].decisions_since_claim for t in ("t1", "t2", "t3", "t9")}
    assert flagged == {"t1": [], "t2": ["q"], "t3": [], "t9": []}  # t3 is held by nobody


def test_an_acknowledgement_clears_the_flag_and_a_reclaim_by_the_holder_does_not() -> None:
    events = decisions()
    again = ev("todo.claimed", {"id": "t2", "until": "2026-06-01T14:00:00Z"}, clock=11,
               actor=AGENT)
    assert folding.replay(events + [again]).todos["t2"].decisions_since_claim == ["q"]
    ack = ev("todo.acked", {"id": "t2", "gates": ["q"]}, clock=11, actor=AGENT)
    assert folding.replay(events + [ack]).todos["t2"].decisions_since_claim == []
    stranger = ev("todo.acked", {"id": "t2", "gates": ["q"]}, clock=11, actor="agent:b")
    assert "held by agent:a, not agent:b" in refused(events + [stranger])
    twice = ev("todo.acked", {"id": "t2", "gates": ["q"]}, clock=12, actor=AGENT)
    assert "no unacknowledged decision q" in refused(events + [ack, twice])


def test_a_gate_named_by_a_todo_holds_it_back_like_blocks_does() -> None:
    events = goal("a1") + [
        ev("gate.opened", {"id": "q", "goal": "g", "question": "?", "authority": [HUMAN]},
           clock=2, goal="g"),
        ev("todo.added", {"id": "t1", "goal": "g", "title": "1", "gates": ["q"]}, clock=3,
           goal="g")]
    fold = folding.replay(events)
    assert fold.gates["q"].blocks == ["t1"]
    assert checks.check(fold, ev("todo.claimed", {"id": "t1", "until": "2026-06-01T13:00:00Z"},
                                 clock=4, actor=AGENT)) == (
        "todo t1 is not ready: waits for gate q (asks human:maint@example.com)")
