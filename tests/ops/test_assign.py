"""Work handed on explicitly: `todo assign` (who is meant to do it), `todo handoff --to` (the
lease moves, recorded) and labels with their filters in `todo list` and `next`."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopx.errors import TransitionError, UsageError
from loopx.ledger.book import Ledger
from loopx.ops import goals, status, todos
from syncutil import do_sync, open_ledger, seeded

ALICE = "human:alice@example.com"
A = "agent:a@host"
B = "agent:b@host"
C = "agent:c@host"


@pytest.fixture
def planned(ledger: Ledger) -> Ledger:
    def plan(txn: object) -> None:
        goals.add(txn, "G", id="g")  # type: ignore[arg-type]
        todos.add(txn, "g", "first", id="t1", labels=["area:cli", "docs"])  # type: ignore[arg-type]
        todos.add(txn, "g", "second", id="t2")  # type: ignore[arg-type]

    ledger.write(plan, actor=ALICE)
    return ledger


def _work(ledger: Ledger, actor: str, labels: tuple[str, ...] = ()) -> list[str]:
    found = status.next_action(ledger, actor=actor, ci=False, labels=labels)
    return [found.action.todo] if found.action and found.action.kind == "work" else []


def test_next_passes_over_a_todo_assigned_to_someone_else_and_says_why(planned: Ledger) -> None:
    planned.run(todos.assign, "t1", B, actor=ALICE)
    planned.run(todos.assign, "t2", B, actor=ALICE)
    found = status.next_action(planned, actor=A, ci=False, claim=True)
    assert found.claimed is None
    assert found.passed_over == ["t1 is assigned to agent:b@host", "t2 is assigned to agent:b@host"]
    assert "t1 is assigned to agent:b@host" in (found.not_claimed or "")


def test_the_assignee_is_offered_its_todo_first(planned: Ledger) -> None:
    planned.run(todos.assign, "t2", B, actor=ALICE)
    assert _work(planned, B) == ["t2"]
    assert _work(planned, A) == ["t1"]
    doc = status.status(planned, actor=None, ci=False)
    assert {t.id: t.assignee for t in doc.todos} == {"t1": None, "t2": B}
    planned.run(todos.assign, "t2", None, actor=ALICE)  # cleared
    assert _work(planned, B) == ["t1"]


def test_a_todo_is_assigned_to_an_identity_not_a_role(planned: Ledger) -> None:
    with pytest.raises(TransitionError, match="not a role"):
        planned.run(todos.assign, "t1", "role:maintainer", actor=ALICE)


def test_handoff_moves_the_lease_and_records_it(planned: Ledger) -> None:
    planned.run(todos.claim, "t1", actor=A)
    event = planned.run(todos.handoff, "t1", B, note="tests pass; docs left", actor=A)
    assert event.type == "todo.handed_off" and event.env.actor == A
    shown = todos.show(planned, "t1")
    assert (shown.claimed_by, shown.assignee, shown.state) == (B, B, "claimed")
    assert [t.id for t in todos.listing(planned, claimant=B)] == ["t1"]
    assert todos.listing(planned, claimant=A) == []
    mine = status.next_action(planned, actor=B, ci=False)
    assert mine.action is not None and (mine.action.kind, mine.action.todo) == ("continue", "t1")
    with pytest.raises(TransitionError, match="claimed by agent:b@host, not agent:a@host"):
        planned.run(todos.renew, "t1", actor=A)  # the old holder no longer holds it


def test_only_the_holder_or_a_human_hands_a_lease_on(planned: Ledger) -> None:
    with pytest.raises(TransitionError, match="not claimed"):
        planned.run(todos.handoff, "t1", B, actor=A)
    planned.run(todos.claim, "t1", actor=A)
    with pytest.raises(TransitionError, match="claimed by agent:a@host, not agent:c@host"):
        planned.run(todos.handoff, "t1", B, actor=C)
    with pytest.raises(UsageError, match="to yourself"):
        planned.run(todos.handoff, "t1", A, actor=A)
    planned.run(todos.handoff, "t1", C, actor=ALICE)  # as a human may release anyone's
    assert todos.show(planned, "t1").claimed_by == C


def test_labels_filter_todo_list_and_next(planned: Ledger) -> None:
    assert [t.id for t in todos.listing(planned, labels=["docs"])] == ["t1"]
    planned.run(todos.label, "t2", add=["docs", "easy"], actor=A)
    planned.run(todos.label, "t1", remove=["docs"], actor=A)
    assert [t.id for t in todos.listing(planned, labels=["docs"])] == ["t2"]
    assert [t.id for t in todos.listing(planned, labels=["docs", "easy"])] == ["t2"]
    assert todos.show(planned, "t1").labels == ["area:cli"]
    assert _work(planned, A, ("easy",)) == ["t2"]
    found = status.next_action(planned, actor=A, ci=False, labels=("nope",))
    assert found.action is None and found.passed_over == [
        "t1 has no label nope", "t2 has no label nope"]
    with pytest.raises(UsageError, match="is not a label"):
        planned.run(todos.label, "t1", add=["no spaces"], actor=A)


def test_a_handoff_and_a_claim_that_crossed_in_a_sync_settle_the_same_everywhere(
        tmp_path: Path) -> None:
    """A hands t1 to B on one clone while, on another, a human frees it and C claims it: replay
    order (clock, id) settles it the same on every clone, whichever tip merged into which."""
    _, (one, two) = seeded(tmp_path, 2)
    with open_ledger(one) as led:
        def plan(txn: object) -> None:
            goals.add(txn, "G", id="g")  # type: ignore[arg-type]
            todos.add(txn, "g", "first", id="t1")  # type: ignore[arg-type]

        led.write(plan, actor=ALICE)
        led.run(todos.claim, "t1", actor=A)
    do_sync(one)
    do_sync(two)
    with open_ledger(one) as led:
        led.run(todos.handoff, "t1", B, note="yours", actor=A)
    with open_ledger(two) as led:
        led.run(todos.release, "t1", actor=ALICE)  # a human frees it, then C claims
        led.run(todos.claim, "t1", actor=C)
    do_sync(one)
    do_sync(two)
    do_sync(one)
    holders = []
    for path in (one, two):
        with open_ledger(path) as led:
            holders.append(todos.show(led, "t1").claimed_by)
    assert holders == [C, C]  # the claim came last in replay order on both clones


def test_the_commands_refuse_bad_input_in_one_line_and_write_nothing(repo: Path) -> None:
    from conftest import git, invoke

    for args in (["init"], ["goal", "add", "G", "--id", "g"],
                 ["todo", "add", "g", "first", "--id", "t1", "--label", "area:cli"]):
        assert invoke(repo, *args, actor=ALICE).code == 0
    before = git(repo, "rev-parse", "loopx/state")
    for args, says in ((["todo", "add", "g", "x", "--label", "no spaces"], "is not a label"),
                       (["todo", "assign", "t1", "maintainer"], "is not an identity"),
                       (["todo", "assign", "t1", "role:maintainer"], "role"),
                       (["todo", "assign", "t1", A, "--clear"], "not both"),
                       (["todo", "handoff", "t1", "--to", B], "t1"),
                       (["todo", "label", "t1"], "nothing to change")):
        done = invoke(repo, *args, actor=A)
        assert done.code != 0 and says in done.err, (args, done.err)
        # one line: the error (a usage error ends click's usage text with it, exit 2)
        assert done.code == 2 or len(done.err.strip().splitlines()) == 1, done.err
        assert says in done.err.strip().splitlines()[-1]
    assert git(repo, "rev-parse", "loopx/state") == before
    assert invoke(repo, "todo", "assign", "t1", B, actor=ALICE).code == 0
    shown = invoke(repo, "todo", "list", "--label", "area:cli", "--assigned-to", B, actor=A)
    assert "t1" in shown.out
