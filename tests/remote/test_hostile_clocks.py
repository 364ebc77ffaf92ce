"""Clocks from a hostile remote or a hand-made commit (issue 12, item 3): a clock far ahead
of the ledger is refused by the incoming check and is a problem event in replay; it never
becomes the floor the next write counts from, so no remote can stop a clone from writing.

Wall clocks that disagree (issue 20): clones a year fast and a year slow beside one with the
right clock, through a real bare hub, neither hold a todo past its ttl nor take a live lease,
and the fast one is named in status and doctor."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from conftest import git, invoke
from syncutil import STATE, do_sync, note, open_ledger, seeded, tip
from loopx.model import clock, codec, ids
from loopx.model.paths import file_path


def _note_bytes(clock_text: str) -> tuple[str, bytes]:
    """An otherwise valid note whose clock line is ``clock_text`` (written by hand: the
    canonical writer would refuse it)."""
    event_id = ids.new_event_id()
    doc = codec.dump({"id": event_id, "type": "note.added", "v": 1, "at": "2030-01-01T00:00:00Z",
                      "clock": 7, "actor": "agent:mallory",
                      "data": {"id": "n-evil", "text": "from the future"}})
    return file_path(event_id, "note.added"), doc.replace(b"clock: 7\n",
                                                          f"clock: {clock_text}\n".encode())


def _push_to_remote(remote: Path, path: str, data: bytes) -> str:
    """A commit on the bare remote's loopx/state adding one file, built with plumbing."""
    from statekit import commit_files

    return commit_files(remote, STATE, {path: data}, message="hostile clock")


@pytest.mark.parametrize("clock_text", ["9" * 4300, str(2**53 - 1), str(10**12)])
def test_a_remote_clock_far_ahead_is_quarantined_and_the_clone_keeps_writing(
        tmp_path: Path, clock_text: str) -> None:
    from loopx.errors import Quarantined

    remote, (ours,) = seeded(tmp_path, 1)
    path, data = _note_bytes(clock_text)
    _push_to_remote(remote, path, data)
    before = tip(ours)
    with pytest.raises(Quarantined) as refused:
        do_sync(ours)
    assert "out of range" in str(refused.value) or "far ahead" in str(refused.value)
    assert tip(ours) == before
    result = invoke(ours, "note", "add", "still writing")
    assert result.code == 0, result.err


def test_a_local_clock_far_ahead_is_a_problem_and_not_the_next_floor(tmp_path: Path) -> None:
    from statekit import commit_files

    _, (ours,) = seeded(tmp_path, 1)
    path, data = _note_bytes(str(10**12))
    commit_files(ours, STATE, {path: data}, message="hand-made")
    status = invoke(ours, "status", "--json")
    assert status.code == 0, status.err
    snap = status.json()
    assert any("far ahead" in p["reason"] for p in snap["problems"])  # type: ignore[index]
    assert snap["ledger"]["clock"] < 100  # type: ignore[index]
    written = note(ours, "agent:ours", "after the hostile commit")
    with open_ledger(ours) as led:
        event = led.find_event(led.tip(), written)
        assert event.env.clock < 100
        # The cached fold and a fresh replay agree.
        assert led.fold_at(led.tip()).max_clock == led.fold().max_clock


def test_an_event_within_the_clock_lead_is_applied(tmp_path: Path) -> None:
    _, (ours,) = seeded(tmp_path, 1)
    from statekit import commit_files
    from loopx.projection.folding import MAX_CLOCK_LEAD

    path, data = _note_bytes(str(MAX_CLOCK_LEAD))  # a ledger that lost that many events
    commit_files(ours, STATE, {path: data}, message="after a loss")
    snap = invoke(ours, "status", "--json").json()
    assert not snap["problems"]  # type: ignore[index]
    assert snap["ledger"]["clock"] == MAX_CLOCK_LEAD  # type: ignore[index]
    assert git(ours, "cat-file", "-t", STATE) == "commit"


def test_a_remote_commit_with_a_huge_message_is_quarantined(tmp_path: Path) -> None:
    from loopx.errors import Quarantined
    from statekit import commit_files

    remote, (ours,) = seeded(tmp_path, 1)
    path, data = _note_bytes("9")
    small = commit_files(remote, STATE, {path: data})
    tree = git(remote, "rev-parse", f"{small}^{{tree}}")
    huge = git(remote, "commit-tree", tree, "-p", f"{small}^", input="x" * 200_000)
    git(remote, "update-ref", STATE, huge)
    before = tip(ours)
    with pytest.raises(Quarantined, match="bytes, over the 64 KiB a state commit may be"):
        do_sync(ours)
    assert tip(ours) == before


# --- clocks that disagree: leases, wakes and the flag (issue 20) --------------------------------
# Three clones of one bare hub: one with the right clock, one a year fast, one a year slow
# (each clone's clock is `--now`). A lease ends at most its ttl after a clone first saw it.

YEAR = timedelta(days=365)


def _right() -> datetime:
    """The right clock, read when a test starts (the other clones' own writes use it too)."""
    return datetime.now(timezone.utc).replace(microsecond=0)


def _at(clone: Path, moment: datetime, actor: str, *args: str) -> object:
    """``git loopx ARGS`` in ``clone`` whose clock reads ``moment``."""
    return invoke(clone, "--now", clock.format_ts(moment), *args, actor=actor)


def _fleet(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(right, fast, slow) clones of one hub with a goal and a todo t1, all synced."""
    _, (right, fast, slow) = seeded(tmp_path, 3)
    for args in (("goal", "add", "G", "--id", "g1", "--accept", "works"),
                 ("todo", "add", "g1", "T", "--id", "t1")):
        assert invoke(right, *args).code == 0
    do_sync(right)
    for clone in (fast, slow):
        do_sync(clone)
    return right, fast, slow


def _claim(clone: Path, moment: datetime, actor: str) -> object:
    return _at(clone, moment, actor, "todo", "claim", "t1", "--ttl", "30m")


SKEWS = pytest.mark.parametrize("skew", [YEAR, -YEAR], ids=["a year fast", "a year slow"])


def _skewed_fleet(tmp_path: Path, skew: timedelta) -> tuple[Path, Path, tuple[Path, Path], datetime]:
    """(the right clone, the one ``skew`` off, both skewed ones, the right time now)."""
    right, fast, slow = _fleet(tmp_path)
    return right, fast if skew > timedelta(0) else slow, (fast, slow), _right()


def _sync_at(clone: Path, moment: datetime, actor: str) -> None:
    result = _at(clone, moment, actor, "sync")
    assert result.code == 0, result.err  # type: ignore[attr-defined]
    _at(clone, moment, actor, "status", "--json")  # this clone has now folded what it fetched


def _holder(clone: Path) -> str | None:
    with open_ledger(clone) as led:
        return led.fold().todos["t1"].holder  # type: ignore[no-any-return]


@SKEWS
def test_a_skewed_clone_holds_a_todo_for_its_ttl_after_the_others_first_see_it(
        tmp_path: Path, skew: timedelta) -> None:
    right, skewed, both, right_now = _skewed_fleet(tmp_path, skew)
    assert _claim(skewed, right_now + skew, "agent:skewed").code == 0  # type: ignore[attr-defined]
    do_sync(skewed)
    _sync_at(right, right_now, "agent:right")
    todo = _at(right, right_now, "agent:right", "todo", "show", "t1", "--json").json()  # type: ignore[attr-defined]
    assert todo["claimed_by"] == "agent:skewed"
    assert todo["lease_expires"] == clock.format_ts(right_now + timedelta(minutes=30))
    early = _claim(right, right_now + timedelta(minutes=29), "agent:right")
    assert early.code == 1 and "claimed by agent:skewed" in early.err  # type: ignore[attr-defined]
    late = _claim(right, right_now + timedelta(minutes=31), "agent:right")
    assert late.code == 0, late.err  # type: ignore[attr-defined]
    do_sync(right)
    for clone in both:  # every clone's replay accepts the recorded takeover
        do_sync(clone)
        assert _holder(clone) == "agent:right"


@SKEWS
def test_a_skewed_clone_cannot_take_a_live_lease_and_takes_an_ended_one(
        tmp_path: Path, skew: timedelta) -> None:
    right, skewed, _, right_now = _skewed_fleet(tmp_path, skew)
    assert _claim(right, right_now, "agent:right").code == 0  # type: ignore[attr-defined]
    do_sync(right)
    _sync_at(skewed, right_now + skew, "agent:skewed")
    early = _claim(skewed, right_now + skew + timedelta(minutes=1), "agent:skewed")
    assert early.code == 1 and "claimed by agent:right" in early.err  # type: ignore[attr-defined]
    later = _claim(skewed, right_now + skew + timedelta(minutes=31), "agent:skewed")
    assert later.code == 0, later.err  # type: ignore[attr-defined]
    do_sync(skewed)
    do_sync(right)
    with open_ledger(right) as led:
        fold = led.fold()
        assert fold.todos["t1"].holder == "agent:skewed" and not fold.problems


def test_a_clone_a_year_fast_is_named_in_status_and_doctor(tmp_path: Path) -> None:
    right, fast, _ = _fleet(tmp_path)
    right_now = _right()
    assert _at(fast, right_now + YEAR, "agent:fast", "note", "add", "hello").code == 0  # type: ignore[attr-defined]
    do_sync(fast)
    _sync_at(right, right_now, "agent:right")
    snap = _at(right, right_now, "agent:right", "status", "--json").json()  # type: ignore[attr-defined]
    (ahead,) = snap["ledger"]["clocks_ahead"]
    assert ahead["actor"] == "agent:fast" and ahead["ahead_seconds"] >= 364 * 86400
    assert any(a["kind"] == "notice" and "agent:fast" in a["reason"] for a in snap["actions"])
    text = _at(right, right_now, "agent:right", "status").out  # type: ignore[attr-defined]
    assert "agent:fast" in text
    doctor = _at(right, right_now, "agent:right", "doctor", "--json").json()  # type: ignore[attr-defined]
    assert doctor["health"]["clocks_ahead"][0]["actor"] == "agent:fast"
    assert any("agent:fast" in w for w in doctor["health"]["warnings"])
    # A year on, by the right clock, the events are no longer in the future: nothing to flag.
    later = _at(right, right_now + YEAR + timedelta(days=1), "agent:right", "status", "--json").json()  # type: ignore[attr-defined]
    assert later["ledger"]["clocks_ahead"] == []


def test_a_wake_set_by_a_clock_a_year_fast_is_due_its_delay_after_it_was_first_seen(
        tmp_path: Path) -> None:
    right, fast, _ = _fleet(tmp_path)
    right_now = _right()
    set_ = _at(fast, right_now + YEAR, "agent:fast", "wake", "set", "--in", "1h", "--id", "w1")
    assert set_.code == 0, set_.err  # type: ignore[attr-defined]
    do_sync(fast)
    _sync_at(right, right_now, "agent:right")
    snap = _at(right, right_now + timedelta(minutes=61), "agent:right", "status", "--json").json()  # type: ignore[attr-defined]
    assert snap["wakes"][0]["at"] == clock.format_ts(right_now + timedelta(hours=1))
    assert any(a["kind"] == "wake_due" for a in snap["actions"])


@pytest.mark.parametrize("wrong", [datetime(1970, 1, 1, tzinfo=timezone.utc), -YEAR,
                                   -timedelta(hours=1)],
                         ids=["1970 (a clock not set yet)", "a year slow", "an hour slow"])
def test_one_command_on_a_clock_set_back_ends_no_lease_for_good(
        tmp_path: Path, wrong: datetime | timedelta) -> None:
    """First sights were recorded again at the wrong clock's now: once the clock was right,
    every lease in play had ended for this clone (its own live lease 'expired', another's
    open to a takeover) and every wake came due, for good."""
    repo, right_now = tmp_path, _right()
    git(repo, "init", "-q", "r")
    repo = repo / "r"
    git(repo, "commit", "-q", "--allow-empty", "-m", "initial")
    for args in (("init",), ("goal", "add", "G", "--id", "g", "--accept", "ok"),
                 ("todo", "add", "g", "T", "--id", "t1"), ("todo", "claim", "t1", "--ttl", "45m"),
                 ("wake", "set", "--in", "2h", "--id", "w1"), ("status",)):
        assert _at(repo, right_now, "agent:one", *args).code == 0  # type: ignore[attr-defined]
    back = wrong if isinstance(wrong, datetime) else right_now + wrong
    assert _at(repo, back, "agent:one", "status").code == 0  # type: ignore[attr-defined]
    later = right_now + timedelta(minutes=10)
    todo = _at(repo, later, "agent:one", "todo", "show", "t1", "--json").json()  # type: ignore[attr-defined]
    assert todo["claimed_by"] == "agent:one"
    assert todo["lease_expires"] == clock.format_ts(right_now + timedelta(minutes=45))
    taken = _at(repo, later, "agent:two", "todo", "claim", "t1")
    assert taken.code == 1 and "claimed by agent:one" in taken.err  # type: ignore[attr-defined]
    snap = _at(repo, later, "agent:one", "status", "--json").json()  # type: ignore[attr-defined]
    assert snap["wakes"][0]["at"] == clock.format_ts(right_now + timedelta(hours=2))
    assert not any(a["kind"] == "wake_due" for a in snap["actions"])


def test_a_lease_first_seen_on_a_clock_set_back_is_not_recorded_as_seen_then(
        tmp_path: Path) -> None:
    """A neighbour of the case above: a claim another clone made, fetched by a command whose
    clock was set back (behind a first sight this clone recorded), was recorded as first seen
    at that wrong time; once the clock was right the lease had ended long ago here, and this
    clone could take the todo over."""
    right, _, slow = _fleet(tmp_path)
    right_now = _right()
    # slow has seen a timed event at the right time (its clock was right then)
    assert _at(right, right_now, "agent:right", "wake", "set", "--in", "2h").code == 0  # type: ignore[attr-defined]
    do_sync(right)
    assert _at(slow, right_now, "agent:slow", "sync").code == 0  # type: ignore[attr-defined]
    assert _at(slow, right_now, "agent:slow", "status").code == 0  # type: ignore[attr-defined]
    assert _claim(right, right_now, "agent:right").code == 0  # type: ignore[attr-defined]
    do_sync(right)
    back = datetime(1970, 1, 1, tzinfo=timezone.utc)
    assert _at(slow, back, "agent:slow", "sync").code == 0  # type: ignore[attr-defined]
    assert _at(slow, back, "agent:slow", "status").code == 0  # type: ignore[attr-defined]
    later = right_now + timedelta(minutes=10)
    taken = _claim(slow, later, "agent:slow")
    assert taken.code == 1 and "claimed by agent:right" in taken.err  # type: ignore[attr-defined]
