"""Clocks that disagree (docs/design.md, "Clocks"): a lease ends at most its ttl after this
clone first saw it, whatever the writer's clock said; replay takes a takeover's recorded
judgement instead of comparing two clocks; writers dated in the future are named."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone

from loopx.model import clock
from loopx.model.events import parse_event
from loopx.model.ids import new_event_id
from loopx.projection import checks, entities, folding, views

from test_folding import base, ev

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
YEAR = timedelta(days=365)
TTL = timedelta(minutes=45)


def _ts(moment: datetime) -> str:
    return clock.format_ts(moment)


def _leased(at: datetime, ttl: timedelta = TTL, actor: str = "agent:a") -> entities.Todo:
    lease = ev("todo.claimed", {"id": "t1", "until": _ts(at + ttl)}, clock=5, actor=actor, at=_ts(at))
    fold = folding.replay(base() + [lease])
    return fold.todos["t1"]


def test_a_lease_from_a_clock_a_year_fast_ends_its_ttl_after_it_was_first_seen() -> None:
    todo = _leased(NOW + YEAR)
    seen = {todo.lease_event: _ts(NOW)}
    assert views.lease_end(todo, seen) == NOW + TTL
    assert views.lease_live_now(todo, NOW + TTL - timedelta(seconds=1), seen)
    assert not views.lease_live_now(todo, NOW + TTL, seen)
    # Without the observation it would have blocked the todo for a year.
    assert views.lease_live_now(todo, NOW + YEAR, None)


def test_a_lease_from_a_clock_a_year_slow_stays_live_for_its_ttl_after_it_was_first_seen() -> None:
    todo = _leased(NOW - YEAR)
    seen = {todo.lease_event: _ts(NOW)}
    assert views.lease_end(todo, seen) == NOW + TTL
    assert views.lease_live_now(todo, NOW + timedelta(minutes=30), seen)
    assert not views.lease_live_now(todo, NOW, None)  # judged by its `at`: expired at once


def test_a_lease_seen_within_the_tolerance_counts_from_its_writer_clock() -> None:
    written = NOW - timedelta(minutes=3)
    todo = _leased(written)
    assert views.lease_end(todo, {todo.lease_event: _ts(NOW)}) == written + TTL
    assert views.lease_end(todo, {todo.lease_event: _ts(written)}) == written + TTL


def test_no_lease_ends_later_than_its_ttl_after_first_sight_whatever_the_skew() -> None:
    rng = random.Random(7)
    for _ in range(200):
        skew = timedelta(seconds=rng.randint(-366 * 86400, 366 * 86400))
        ttl = timedelta(seconds=rng.randint(1, 30 * 86400))
        todo = _leased(NOW + skew, ttl)
        end = views.lease_end(todo, {todo.lease_event: _ts(NOW)})
        assert end is not None and end <= NOW + ttl
        # ... and it is never over before its ttl less the tolerance.
        assert end >= NOW + ttl - views.CLOCK_TOLERANCE


def test_a_claim_over_a_lease_it_does_not_name_is_refused_whatever_its_clock_says() -> None:
    fold = folding.replay(base() + [
        ev("todo.claimed", {"id": "t1", "until": "2026-06-01T11:30:00Z"}, clock=5, actor="agent:a")])
    fast = ev("todo.claimed", {"id": "t1", "until": _ts(NOW + YEAR + TTL)}, clock=6,
              actor="agent:fast", at=_ts(NOW + YEAR))
    assert (checks.check(fold, fast) or "").startswith("todo t1 is claimed by agent:a")


def test_a_takeover_that_names_the_lease_is_applied_even_from_a_slow_clock() -> None:
    lease = ev("todo.claimed", {"id": "t1", "until": _ts(NOW + TTL)}, clock=5, actor="agent:a",
               at=_ts(NOW))
    slow = ev("todo.claimed", {"id": "t1", "until": _ts(NOW - YEAR + TTL), "takes": lease.id},
              clock=6, actor="agent:slow", at=_ts(NOW - YEAR))
    fold = folding.replay(base() + [lease, slow])
    assert fold.todos["t1"].holder == "agent:slow" and not fold.problems


def test_a_takeover_naming_an_older_lease_than_the_one_in_force_is_contested() -> None:
    lease = ev("todo.claimed", {"id": "t1", "until": _ts(NOW)}, clock=5, actor="agent:a")
    renewed = ev("todo.renewed", {"id": "t1", "until": _ts(NOW + TTL)}, clock=6, actor="agent:a")
    late = ev("todo.claimed", {"id": "t1", "until": _ts(NOW + TTL), "takes": lease.id}, clock=7,
              actor="agent:b", at=_ts(NOW + YEAR))
    fold = folding.replay(base() + [lease, renewed, late])
    assert fold.todos["t1"].holder == "agent:a"
    assert [p.event for p in fold.problems] == [late.id]
    assert "contested" in fold.problems[0].reason


def test_two_takeovers_of_one_ended_lease_that_did_not_see_each_other_leave_one_holder() -> None:
    lease = ev("todo.claimed", {"id": "t1", "until": _ts(NOW)}, clock=5, actor="agent:a")
    first, second = sorted([new_event_id(), new_event_id()])
    takes = [ev("todo.claimed", {"id": "t1", "until": _ts(NOW + TTL), "takes": lease.id}, clock=6,
                actor=actor, event_id=eid) for actor, eid in (("agent:c", second), ("agent:b", first))]
    for order in (takes, takes[::-1]):
        fold = folding.replay(base() + [lease, *order])
        assert fold.todos["t1"].holder == "agent:b"
        assert [p.event for p in fold.problems] == [second]


def test_a_done_over_someone_elses_lease_needs_the_lease_named() -> None:
    lease = ev("todo.claimed", {"id": "t1", "until": "2026-06-01T11:30:00Z"}, clock=5, actor="agent:a")
    fold = folding.replay(base() + [lease])
    blind = ev("todo.done", {"id": "t1", "reason": "did it"}, clock=6, actor="agent:b")
    named = ev("todo.done", {"id": "t1", "reason": "did it", "takes": lease.id}, clock=6,
               actor="agent:b")
    assert "claimed by agent:a" in (checks.check(fold, blind) or "")
    assert checks.check(fold, named) is None


def test_claims_of_version_2_are_still_judged_by_their_own_clock() -> None:
    lease = ev("todo.claimed", {"id": "t1", "until": "2026-06-01T11:30:00Z"}, clock=5, actor="agent:a")
    old = parse_event({"id": new_event_id(), "type": "todo.claimed", "v": 2,
                       "at": "2026-06-01T11:45:00Z", "clock": 6, "actor": "agent:b",
                       "data": {"id": "t1", "until": "2026-06-01T13:30:00Z"}}, "old claim")
    fold = folding.replay(base() + [lease, old])
    assert fold.todos["t1"].holder == "agent:b" and not fold.problems


def test_a_wake_from_a_fast_clock_is_due_its_delay_after_first_sight() -> None:
    wake = ev("wake.set", {"id": "w1", "at": _ts(NOW + YEAR + timedelta(hours=1))}, clock=5,
              actor="agent:fast", at=_ts(NOW + YEAR))
    fold = folding.replay(base() + [wake])
    found = fold.wakes["w1"]
    assert views.wake_due(found, {wake.id: _ts(NOW)}) == NOW + timedelta(hours=1)
    assert views.wake_view(found, {wake.id: _ts(NOW)})["at"] == _ts(NOW + timedelta(hours=1))
    assert "set_event" not in views.wake_view(found)


def test_an_idle_session_from_a_slow_clock_counts_idle_from_first_sight() -> None:
    opened = ev("session.opened", {"id": "s1", "task": "t", "keep_open": False,
                                   "workspace": {"host": "h", "path": "/p"}},
                clock=5, actor="agent:slow", at=_ts(NOW - YEAR))
    fold = folding.replay(base() + [opened])
    session = fold.sessions["s1"]
    assert views.idle_since(session, {opened.id: _ts(NOW)}) == NOW
    assert views.session_view(session, NOW + timedelta(minutes=2),
                              {opened.id: _ts(NOW)})["idle_seconds"] == 120


def test_writers_dated_in_the_future_are_named_with_their_latest_event() -> None:
    fast = ev("note.added", {"id": "n-1", "text": "from the future"}, clock=5, actor="agent:fast",
              at=_ts(NOW + YEAR))
    near = ev("note.added", {"id": "n-2", "text": "a minute ahead"}, clock=6, actor="agent:near",
              at=_ts(NOW + timedelta(minutes=1)))
    fold = folding.replay(base() + [fast, near])
    ahead = views.clocks_ahead(fold, NOW)
    assert [(a["actor"], a["event"]) for a in ahead] == [("agent:fast", fast.id)]
    assert ahead[0]["ahead_seconds"] == int(YEAR.total_seconds())
    assert views.snapshot(fold, NOW)["ledger"]["clocks_ahead"] == ahead


def test_the_latest_dated_writers_are_the_same_in_any_order_and_bounded() -> None:
    rng = random.Random(3)
    notes = [ev("note.added", {"id": f"n-{n}", "text": "x"}, clock=5 + n, actor=f"agent:w{n % 40}",
                at=_ts(NOW + timedelta(minutes=rng.randint(-5000, 5000)))) for n in range(300)]
    folds = []
    for _ in range(4):
        rng.shuffle(notes)
        fold = entities.Fold()
        for event in notes:  # in arrival order, as a cache that advances sees them
            folding.apply(fold, event)
        folds.append(json.dumps(fold.clocks, sort_keys=True))
    assert len(set(folds)) == 1
    clocks = json.loads(folds[0])
    assert len(clocks) == folding.CLOCK_LEADERS
    latest = sorted(notes, key=lambda e: (clock.parse_ts(e.env.at), e.id))[-1]
    assert clocks[latest.env.actor] == [latest.env.at, latest.id]


def test_the_latest_dated_event_of_a_writer_is_found_with_fractions_of_a_second_too() -> None:
    whole = ev("note.added", {"id": "n-1", "text": "x"}, clock=5, actor="agent:w",
               at="2026-06-01T12:00:00Z")
    later = ev("note.added", {"id": "n-2", "text": "x"}, clock=6, actor="agent:w",
               at="2026-06-01T12:00:00.25Z")
    earlier = ev("note.added", {"id": "n-3", "text": "x"}, clock=7, actor="agent:w",
                 at="2026-06-01T11:59:59.999Z")
    for order in ([whole, later, earlier], [earlier, later, whole]):
        fold = entities.Fold()
        for event in order:
            folding.apply(fold, event)
        assert fold.clocks["agent:w"] == ["2026-06-01T12:00:00.25Z", later.id]
