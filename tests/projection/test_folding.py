"""The fold: deterministic in any merge order, never crashes, and illegal events land in
``problems`` with a reason instead of being applied."""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopx.projection import checks, entities, folding, views
from loopx.model.ids import new_event_id
from loopx.model.events import Event, make_event

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
AT = "2026-06-01T11:00:00Z"
MAINTAINER = "human:maint@example.com"


def ev(type_: str, data: dict, *, clock: int, actor: str = MAINTAINER, goal: str | None = None,
       at: str = AT, event_id: str | None = None) -> Event:
    return make_event(type=type_, data=data, event_id=event_id or new_event_id(), at=at,
                      clock=clock, actor=actor, goal=goal)


def snap(events: list[Event]) -> str:
    return json.dumps(views.snapshot(folding.replay(events), NOW), sort_keys=True)


def base() -> list[Event]:
    return [
        ev("goal.created", {"id": "g", "title": "G", "acceptance": [{"id": "a1", "text": "works"}]}, clock=1),
        ev("todo.added", {"id": "t1", "goal": "g", "title": "one"}, clock=2, goal="g"),
        ev("todo.added", {"id": "t2", "goal": "g", "title": "two", "depends_on": ["t1"]}, clock=3, goal="g"),
        ev("gate.opened", {"id": "q", "goal": "g", "question": "ok?", "authority": [MAINTAINER],
                           "blocks": ["t2"]}, clock=4, goal="g"),
    ]


def test_frontier_and_why_not_ready() -> None:
    state = views.snapshot(folding.replay(base()), NOW)
    assert state["frontier"] == ["t1"]
    t2 = next(t for t in state["todos"] if t["id"] == "t2")
    # every blocker, not only the first: the todo it waits for and the gate it needs
    assert t2["blockers"] == ["waits for todo t1", "waits for gate q (asks human:maint@example.com)"]
    assert t2["why_not_ready"] == "; ".join(t2["blockers"])


def test_a_todo_lists_every_dependency_not_done_and_drops_each_as_it_is_done() -> None:
    extra = [ev("todo.added", {"id": "t3", "goal": "g", "title": "Three"}, clock=20, goal="g"),
             ev("todo.added", {"id": "t4", "goal": "g", "title": "Four",
                               "depends_on": ["t1", "t3"]}, clock=21, goal="g")]
    state = views.snapshot(folding.replay(base() + extra), NOW)
    t4 = next(t for t in state["todos"] if t["id"] == "t4")
    assert t4["blockers"] == ["waits for todo t1", "waits for todo t3"] and not t4["ready"]
    done = [ev("todo.done", {"id": "t3", "reason": "trivial"}, clock=22, goal="g")]
    state = views.snapshot(folding.replay(base() + extra + done), NOW)
    t4 = next(t for t in state["todos"] if t["id"] == "t4")
    assert t4["blockers"] == ["waits for todo t1"] and t4["why_not_ready"] == "waits for todo t1"


def test_two_claims_after_a_merge_resolve_to_the_smaller_id_and_report_the_other() -> None:
    first, second = sorted([new_event_id(), new_event_id()])
    claims = [
        ev("todo.claimed", {"id": "t1", "until": "2026-06-01T13:00:00Z"}, clock=5, actor="agent:b", event_id=second),
        ev("todo.claimed", {"id": "t1", "until": "2026-06-01T13:00:00Z"}, clock=5, actor="agent:a", event_id=first),
    ]
    state = views.snapshot(folding.replay(base() + claims), NOW)
    t1 = next(t for t in state["todos"] if t["id"] == "t1")
    assert t1["claimed_by"] == "agent:a" and t1["contested_by"] == ["agent:b"]
    assert [p["event"] for p in state["problems"]] == [second]
    assert "contested" in state["problems"][0]["reason"]


def test_an_unauthorised_answer_is_a_problem_and_two_unseen_answers_conflict() -> None:
    answers = [
        ev("gate.answered", {"id": "q", "decision": "approve"}, clock=5, actor="agent:sneaky"),
        ev("gate.answered", {"id": "q", "decision": "approve"}, clock=6),
        ev("gate.answered", {"id": "q", "decision": "reject"}, clock=7),
    ]
    state = views.snapshot(folding.replay(base() + answers), NOW)
    gate = state["gates"][0]
    assert gate["state"] == "conflicted" and gate["decision"] is None
    assert [(d["decision"], d["event"]) for d in gate["conflict"]] == [
        ("approve", answers[1].id), ("reject", answers[2].id)]
    reasons = [p["reason"] for p in state["problems"]]
    assert len(reasons) == 1
    assert "answered by human:maint@example.com only; you are agent:sneaky" in reasons[0]


def test_roles_from_config_grant_authority() -> None:
    events = base()[:1] + [
        ev("config.set", {"roles": {"maintainer": ["human:bob@x"]}}, clock=2),
        ev("gate.opened", {"id": "q", "goal": "g", "question": "?", "authority": ["role:maintainer"]}, clock=3),
        ev("gate.answered", {"id": "q", "decision": "approve"}, clock=4, actor="human:bob@x"),
    ]
    state = views.snapshot(folding.replay(events), NOW)
    assert state["gates"][0]["decision"] == "approve" and not state["problems"]


def test_a_lease_expires_with_time_and_frees_the_todo() -> None:
    claim = ev("todo.claimed", {"id": "t1", "until": "2026-06-01T12:30:00Z"}, clock=5, actor="agent:a")
    fold = folding.replay(base() + [claim])
    before = views.snapshot(fold, NOW)
    after = views.snapshot(fold, datetime(2026, 6, 1, 13, 0, tzinfo=timezone.utc))
    assert before["frontier"] == [] and after["frontier"] == ["t1"]
    assert after["todos"][0]["expired_claim_by"] == "agent:a"


def test_an_expired_lease_may_be_claimed_by_someone_else() -> None:
    """The takeover names the lease its writer judged ended (v3): replay takes that judgement."""
    first = ev("todo.claimed", {"id": "t1", "until": "2026-06-01T11:30:00Z"}, clock=5,
               actor="agent:a")
    events = base() + [
        first,
        ev("todo.claimed", {"id": "t1", "until": "2026-06-01T13:30:00Z", "takes": first.id},
           clock=6, actor="agent:b", at="2026-06-01T11:45:00Z"),
    ]
    state = views.snapshot(folding.replay(events), NOW)
    assert state["todos"][0]["claimed_by"] == "agent:b" and not state["problems"]


def test_a_decision_after_a_claim_is_surfaced_to_the_claimer() -> None:
    events = base() + [
        ev("todo.claimed", {"id": "t1", "until": "2026-06-01T13:00:00Z"}, clock=5, actor="agent:a"),
        ev("gate.opened", {"id": "q2", "goal": "g", "question": "Postgres?",
                           "authority": [MAINTAINER], "blocks": ["t1"]}, clock=6, goal="g"),
        ev("gate.answered", {"id": "q2", "decision": "reject", "comment": "no"}, clock=7),
    ]
    state = views.snapshot(folding.replay(events), NOW)
    assert state["todos"][0]["decisions_since_claim"] == ["q2"]


def test_achieved_needs_evidence_for_every_criterion_unless_a_human_overrides() -> None:
    cancelled = [ev("todo.cancelled", {"id": t}, clock=5) for t in ("t1", "t2")]
    close = ev("goal.closed", {"id": "g", "outcome": "achieved"}, clock=6)
    assert "criteria without passing evidence (a1)" in folding.replay(
        base() + cancelled + [close]).problems[0].reason
    override = ev("goal.closed", {"id": "g", "outcome": "achieved", "override": True,
                                  "reason": "shipped; tested by hand"}, clock=6)
    assert folding.replay(base() + cancelled + [override]).goals["g"].state == "achieved"
    evidence = ev("evidence.recorded", {"id": "e", "kind": "test", "exit_code": 0, "criteria": ["a1"]},
                  clock=6, goal="g")
    close7 = ev("goal.closed", {"id": "g", "outcome": "achieved"}, clock=7)
    assert folding.replay(base() + cancelled + [evidence, close7]).goals["g"].state == "achieved"


def test_a_todo_cannot_be_done_on_failing_evidence() -> None:
    failing = ev("evidence.recorded", {"id": "e", "kind": "test", "exit_code": 1}, clock=5, goal="g")
    done = ev("todo.done", {"id": "t1", "evidence": ["e"]}, clock=6)
    fold = folding.replay(base() + [failing, done])
    assert fold.todos["t1"].state == "open"
    assert "evidence e does not pass" in fold.problems[0].reason


def test_failing_evidence_does_not_meet_a_criterion() -> None:
    failing = ev("evidence.recorded", {"id": "e", "kind": "test", "exit_code": 1, "criteria": ["a1"]},
                 clock=5, goal="g")
    assert views.unmet_criteria(folding.replay(base() + [failing]), "g") == ["a1"]


def test_dependency_cycles_are_refused() -> None:
    cyc = ev("todo.updated", {"id": "t1", "add_depends_on": ["t2"]}, clock=5)
    assert "cycle" in folding.replay(base() + [cyc]).problems[0].reason


def test_unknown_event_types_are_kept_and_reported() -> None:
    from loopx.model.events import parse_event

    future = parse_event({"id": new_event_id(), "type": "robot.danced", "v": 1, "at": AT, "clock": 9,
                          "actor": "agent:x", "data": {"moves": 3}})
    fold = folding.replay(base() + [future])
    assert fold.unknown == [{"event": future.id, "type": "robot.danced", "v": 1}]
    assert not fold.problems


# --- properties: random concurrent histories -------------------------------------------------

OPS = st.lists(st.tuples(st.integers(0, 2), st.sampled_from(
    ["todo", "claim", "done", "answer", "evidence", "release", "block", "reopen", "sync"]),
    st.integers(0, 20)), min_size=1, max_size=40)


def simulate(ops: list[tuple[int, str, int]]) -> list[Event]:
    """Three writers append on their own views and sync now and then, like clones do."""
    everything = base()
    seen = [list(everything) for _ in range(3)]
    for writer, kind, n in ops:
        view = seen[writer]
        if kind == "sync":
            seen[writer] = list(everything)
            continue
        fold = folding.replay(view)
        todos = sorted(fold.todos)
        target = todos[n % len(todos)]
        clock = fold.max_clock + 1
        actor = ["agent:a", "agent:b", MAINTAINER][writer]
        data = {
            "todo": ("todo.added", {"id": f"t{len(everything)}", "goal": "g", "title": "x",
                                    "depends_on": [target]}),
            "claim": ("todo.claimed", {"id": target, "until": "2026-06-01T13:00:00Z"}),
            "done": ("todo.done", {"id": target, **({"reason": "sim"} if n % 2 else {})}),
            "answer": ("gate.answered", {"id": "q", "decision": ["approve", "reject"][n % 2]}),
            "evidence": ("evidence.recorded", {"id": f"e{len(everything)}", "kind": "test",
                                               "todo": target, "criteria": ["a1"]}),
            "release": ("todo.released", {"id": target}),
            "block": ("todo.blocked", {"id": target, "reason": "stuck"}),
            "reopen": ("todo.reopened", {"id": target}),
        }[kind]
        event = ev(data[0], data[1], clock=clock, actor=actor)
        view.append(event)
        everything.append(event)
    return everything


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS, st.randoms(use_true_random=False))
def test_any_merge_order_gives_the_same_state(ops: list, rnd: random.Random) -> None:
    events = simulate(ops)
    expected = snap(events)
    shuffled = list(events)
    rnd.shuffle(shuffled)
    assert snap(shuffled) == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_every_event_is_either_applied_or_reported(ops: list) -> None:
    events = simulate(ops)
    fold = folding.replay(events)
    assert fold.events == len(events)
    reported = {p.event for p in fold.problems}
    replayed = entities.Fold()
    for event in sorted(events, key=Event.sort_key):
        reason = checks.check(replayed, event)
        folding.apply(replayed, event)
        assert (reason is not None) == (event.id in reported)


def _lost_claim() -> tuple[list[Event], str]:
    first, second = sorted([new_event_id(), new_event_id()])
    claims = [
        ev("todo.claimed", {"id": "t1", "until": "2026-06-01T13:00:00Z"}, clock=5, actor="agent:a", event_id=first),
        ev("todo.claimed", {"id": "t1", "until": "2026-06-01T13:00:00Z"}, clock=5, actor="agent:b", event_id=second),
    ]
    return base() + claims, second


def test_a_dismissed_notice_is_kept_as_a_problem_and_marked_dismissed() -> None:
    events, lost = _lost_claim()
    dismissal = ev("notice.dismissed", {"events": [lost]}, clock=6, actor="agent:b")
    state = views.snapshot(folding.replay(events + [dismissal]), NOW)
    assert [(p["event"], p["dismissed"]) for p in state["problems"]] == [(lost, True)]


def test_only_the_actor_whose_event_was_not_applied_may_dismiss_its_notice_and_only_once() -> None:
    events, lost = _lost_claim()
    fold = folding.replay(events)
    by_other = ev("notice.dismissed", {"events": [lost]}, clock=6, actor="agent:a")
    assert "no notice about event" in (checks.check(fold, by_other) or "")
    applied = events[-1]  # agent:a's claim, which was applied: nothing to dismiss
    mine = ev("notice.dismissed", {"events": [applied.id]}, clock=6, actor="agent:a")
    assert "no notice about event" in (checks.check(fold, mine) or "")
    dismissal = ev("notice.dismissed", {"events": [lost]}, clock=6, actor="agent:b")
    assert checks.check(fold, dismissal) is None
    folding.apply(fold, dismissal)
    again = ev("notice.dismissed", {"events": [lost]}, clock=7, actor="agent:b")
    assert "already dismissed" in (checks.check(fold, again) or "")


def test_a_claim_refused_on_write_does_not_call_itself_contested() -> None:
    fold = folding.replay(base() + [
        ev("todo.claimed", {"id": "t1", "until": "2026-06-01T13:00:00Z"}, clock=5, actor="agent:a")])
    late = ev("todo.claimed", {"id": "t1", "until": "2026-06-01T13:00:00Z"}, clock=6, actor="agent:z",
              at="2026-06-01T11:30:00Z")
    reason = checks.check(fold, late) or ""
    assert reason.startswith("todo t1 is claimed by agent:a") and "contested" not in reason


def test_the_index_by_commit_stays_short_however_many_results_a_commit_has() -> None:
    """Post-commit asks the index for a commit's commit records, a rewrite whether any
    evidence names it: a thousand test results on one commit are one entry, not a thousand
    (each would copy the list: a write that grows with history)."""
    sha = "a" * 40
    events = base() + [
        ev("evidence.recorded", {"id": f"e{n}", "kind": "test", "commit": sha, "tree": sha,
                                 "exit_code": 0}, clock=5 + n, goal="g") for n in range(1000)]
    events.append(ev("evidence.recorded", {"id": "c1", "kind": "commit", "commit": sha,
                                           "tree": sha, "todo": "t1"}, clock=2000, goal="g"))
    fold = folding.replay(events)
    assert fold.by_commit == {sha: ["*", "c1"]}


def test_a_refusal_names_who_holds_the_role_an_actor_is_named_after() -> None:
    """An actor called ``role:maintainer`` is not the maintainer: the refusal said "answered
    by role:maintainer only; you are role:maintainer", a line that reads as a contradiction.
    It names who holds the role."""
    events = base()[:1] + [
        ev("config.set", {"roles": {"maintainer": ["human:bob@x"]}}, clock=2),
        ev("gate.opened", {"id": "q", "goal": "g", "question": "Ok?",
                           "authority": ["role:maintainer", "human:carol@x"]}, clock=4),
        ev("gate.answered", {"id": "q", "decision": "approve"}, actor="role:maintainer", clock=5),
    ]
    reasons = [p["reason"] for p in views.snapshot(folding.replay(events), NOW)["problems"]]
    assert reasons == ["gate q is answered by role:maintainer (human:bob@x), human:carol@x "
                       "only; you are role:maintainer"]
