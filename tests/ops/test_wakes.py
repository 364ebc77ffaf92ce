"""Wakes that recur (`--every`), are acknowledged (`ack`: a one-shot wake cleared, a
recurring one re-armed from the time it was acted on), and name the commit CI judges."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from conftest import git, invoke
from loopx.errors import NotFound, TransitionError, UsageError
from loopx.ledger.book import Ledger
from loopx.model import clock
from loopx.ops import config, gates, goals, status, wakes

ALICE = "human:alice@example.com"
AGENT = "agent:codex@devbox"
T0 = datetime(2030, 1, 1, 9, 0, tzinfo=timezone.utc)


def _due(ledger: Ledger, at: datetime) -> list[dict[str, object]]:
    doc = status.status(ledger, actor=AGENT, ci=False, now=at)
    return [a for a in doc.actions if a.kind == "wake_due"]


def test_a_recurring_wake_is_due_again_every_period_after_it_was_acted_on(ledger: Ledger) -> None:
    event = ledger.run(wakes.set_, every=1800, reason="check the queue", id="w-mon",
                       actor=AGENT, now=T0)
    assert event.data.at == "2030-01-01T09:30:00Z" and event.data.every == 1800
    assert _due(ledger, T0 + timedelta(minutes=29)) == []
    late = T0 + timedelta(minutes=47)  # the runner was late: the next period counts from now
    (due,) = _due(ledger, late)
    assert due.command == "git loopx wake ack w-mon"

    fired = ledger.run(wakes.ack, "w-mon", actor=AGENT, now=late)
    assert (fired.type, fired.data.at, fired.data.next) == (
        "wake.fired", "2030-01-01T09:47:00Z", "2030-01-01T10:17:00Z")
    assert _due(ledger, late + timedelta(minutes=29)) == []
    assert len(_due(ledger, late + timedelta(minutes=30))) == 1
    doc = status.status(ledger, actor=AGENT, ci=False, now=late)
    (shown,) = doc.wakes
    assert (shown.at, shown.every, shown.fired_at) == (
        "2030-01-01T10:17:00Z", 1800, "2030-01-01T09:47:00Z")
    assert doc.next_wake == "2030-01-01T10:17:00Z"


def test_acking_a_one_shot_wake_clears_it(ledger: Ledger) -> None:
    ledger.run(wakes.set_, after=60, id="w-once", actor=AGENT, now=T0)
    event = ledger.run(wakes.ack, "w-o", actor=AGENT, now=T0 + timedelta(minutes=2))
    assert event.type == "wake.cleared" and ledger.fold().wakes == {}


def test_recurring_wakes_are_time_wakes_of_a_minute_or_more(ledger: Ledger) -> None:
    ledger.run(goals.add, "G", id="g", actor=ALICE)
    ledger.run(config.set_, roles={"m": [ALICE]}, actor=ALICE)
    ledger.run(gates.open_, "g", "ok?", id="q", authority=["role:m"], actor=ALICE)
    with pytest.raises(UsageError, match="at most once a minute, not every 30s"):
        ledger.run(wakes.set_, every=30, actor=AGENT)
    # The CLI's durations go up to a century, the event's period to a year: over it was the
    # model's words ("data.every: Input should be less than or equal to 31622400").
    with pytest.raises(UsageError, match=r"at least once a year \(366d\), not every 400d"):
        ledger.run(wakes.set_, every=400 * 86400, actor=AGENT)
    assert ledger.run(wakes.set_, every=366 * 86400, actor=AGENT).data.every == 366 * 86400
    with pytest.raises(TransitionError, match="a recurring wake is a time wake"):
        ledger.run(wakes.set_, every=600, on_gate="q", actor=AGENT)
    one_shot = ledger.run(wakes.set_, on_gate="q", id="w-q", actor=AGENT)
    with pytest.raises(TransitionError, match="wake w-q is not recurring; clear it instead"):
        ledger.append("wake.fired", {"id": one_shot.data.id, "at": "2030-01-01T09:00:00Z",
                                     "next": "2030-01-01T10:00:00Z"}, actor=AGENT)


def test_a_wake_acted_on_after_someone_cleared_it_stays_cleared(ledger: Ledger) -> None:
    ledger.run(wakes.set_, every=600, id="w-m", actor=AGENT, now=T0)
    ledger.run(wakes.clear, "w-m", actor=ALICE)
    with pytest.raises(NotFound, match="no wake matches 'w-m'"):
        ledger.run(wakes.ack, "w-m", actor=AGENT)


def test_on_ci_is_resolved_to_the_full_commit_when_set(ledger: Ledger, repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    for given in ("HEAD", head[:7], "main"):
        event = ledger.run(wakes.set_, on_ci=given, actor=AGENT)
        assert event.data.on_ci == head
    absent = "ab" * 20  # a full sha CI may know though this clone does not
    assert ledger.run(wakes.set_, on_ci=absent, actor=AGENT).data.on_ci == absent
    with pytest.raises(NotFound, match="no commit 'nope' in this repository"):
        ledger.run(wakes.set_, on_ci="nope", actor=AGENT)

    git(repo, "commit", "-q", "--allow-empty", "-m", "moved on")
    assert ledger.fold().wakes[event.env.data["id"]].on_ci == head  # still the commit judged


def test_cli_wake_every_and_ack(repo: Path) -> None:
    now = clock.format_ts(T0)
    assert invoke(repo, "init").code == 0
    made = invoke(repo, "--now", now, "wake", "set", "--every", "30m", "--id", "w-1")
    assert made.code == 0 and "set wake w-1 at 2030-01-01T09:30:00Z" in made.out
    acked = invoke(repo, "--now", clock.format_ts(T0 + timedelta(hours=1)), "wake", "ack", "w-1")
    assert "wake w-1 due again at 2030-01-01T10:30:00Z" in acked.out
    # On the clock it was acked by: this clone first saw the wake then (docs/design.md#clocks).
    listed = invoke(repo, "--now", clock.format_ts(T0 + timedelta(hours=1)), "wake", "list")
    assert "at=2030-01-01T10:30:00Z" in listed.out and "every=1800" in listed.out
    assert "acted on wake w-1; due again at 2030-01-01 10:30Z" in invoke(repo, "log").out
    bad = invoke(repo, "wake", "set", "--every", "10s")
    # the option's bounds, the event field's, said in the units it was given (a usage error)
    assert bad.code == 2 and "Invalid value for '--every': at least 1m, not 10s" in bad.err


def test_a_wake_with_no_condition_names_the_options(repo: Path) -> None:
    """`wake set` alone said "a wake needs a time, a gate, CI or a todo to wait for", naming
    none of the options that give one."""
    assert invoke(repo, "init").code == 0
    before = git(repo, "rev-parse", "refs/heads/loopx/state")
    for extra in ([], ["--reason", "look again"]):
        result = invoke(repo, "wake", "set", *extra)
        assert result.code == 1 and result.err == (
            "error: say when to look again: --in DURATION, --at TIME, --every DURATION, "
            "--on-gate GATE, --on-ci REV or --on-todo TODO\n"), result.err
    assert git(repo, "rev-parse", "refs/heads/loopx/state") == before
