"""Times from elsewhere: the schema lets through exactly the real ones, and no real one, however
far from now, stops a command. One event dated 2099-13-45 or in full-width digits used to pass
the schema and then stop every status, next and list that read its time."""

from __future__ import annotations

import random
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import invoke
from statekit import commit_files

from loopx.model import clock, codec, ids
from loopx.model.events import parse_event
from loopx.model.paths import file_path

STATE = "refs/heads/loopx/state"


def _real(text: str) -> bool:
    """Whether ``text`` (YYYY-MM-DDTHH:MM:SS[.f]Z) names a moment, by the calendar's own rules."""
    found = re.fullmatch(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
                         r"(\.[0-9]{1,9})?Z", text, re.ASCII)
    if found is None:
        return False
    try:
        datetime(*(int(g) for g in found.groups()[:6]))
    except ValueError:
        return False
    return True


def _schema_takes(at: str) -> bool:
    doc = {"id": "01K742VAK08P62Z9T9S563ENQ6", "type": "todo.renewed", "v": 1, "at": at,
           "clock": 1, "actor": "agent:a@b", "data": {"id": "t-1", "until": at}}
    try:
        parse_event(doc)
    except Exception:  # noqa: BLE001 - any refusal
        return False
    return True


EDGES = ["2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z",
         "2000-02-29T00:00:00Z", "0400-02-29T12:00:00Z", "0000-01-01T00:00:00Z",
         "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "2026-04-31T00:00:00Z",
         "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z", "2026-01-00T00:00:00Z",
         "2026-01-01T24:00:00Z", "2026-01-01T23:60:00Z", "2026-12-31T23:59:60Z",
         "\uff12\uff10\uff12\uff16-01-01T00:00:00Z", "\u0662\u0660\u0662\u0666-01-01T00:00:00Z",
         "2026-01-01T00:00:00.1234567890Z", "2026-01-01T00:00:00Z\n", "2026-1-01T00:00:00Z"]


@pytest.mark.parametrize("text", EDGES)
def test_the_schema_takes_a_time_exactly_when_it_is_real(text: str) -> None:
    assert _schema_takes(text) == _real(text)
    if _real(text):
        assert clock.EARLIEST <= clock.parse_ts(text) <= clock.LATEST


def test_the_pattern_is_the_calendar_over_random_dates() -> None:
    rnd = random.Random(27)
    pattern = re.compile(clock.TS_PATTERN)
    for _ in range(20_000):
        year = rnd.choice([rnd.randrange(0, 10_000), 0, 1, 100, 400, 1900, 2000, 2023, 2024])
        text = (f"{year:04d}-{rnd.randrange(0, 14):02d}-{rnd.randrange(0, 33):02d}T"
                f"{rnd.randrange(0, 25):02d}:{rnd.randrange(0, 61):02d}:"
                f"{rnd.randrange(0, 61):02d}Z")
        assert (pattern.fullmatch(text) is not None) == _real(text), text


def test_parse_ts_reads_any_fraction_and_holds_times_within_bounds() -> None:
    assert clock.parse_ts("2026-01-01T00:00:00.5Z").microsecond == 500_000
    assert clock.parse_ts("2026-01-01T00:00:00.123456789Z").microsecond == 123_456
    assert clock.parse_ts("9999-12-31T23:59:59Z") == clock.LATEST
    assert clock.parse_ts("0001-01-01T00:00:00Z") == clock.EARLIEST
    assert clock.parse_ts("2026-01-01T00:00:00Z") == datetime(2026, 1, 1, tzinfo=timezone.utc)


def _forge(repo: Path, type_: str, data: dict[str, object], at: str, clock_: int) -> None:
    event_id = ids.new_event_id()
    doc = {"id": event_id, "type": type_, "v": 1, "at": at, "clock": clock_,
           "actor": "agent:mallory@elsewhere", "data": data}
    commit_files(repo, STATE, {file_path(event_id, type_): codec.dump(doc)})


FAR = ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "1970-01-01T00:00:00Z"]


@pytest.mark.parametrize("far", FAR)
def test_no_real_time_however_far_stops_a_command(repo: Path, far: str) -> None:
    """Leases, renewals, hand-offs and wakes dated at the calendar's ends (and envelopes
    dated there), each where a command computes with it: every command still answers."""
    assert invoke(repo, "init").code == 0
    assert invoke(repo, "goal", "add", "Ship", "--id", "g-1").code == 0
    for n in range(1, 4):
        assert invoke(repo, "todo", "add", "g-1", f"Step {n}", "--id", f"t-{n}").code == 0
    _forge(repo, "todo.claimed", {"id": "t-1", "until": far}, far, 6)
    _forge(repo, "todo.claimed", {"id": "t-2", "until": "2030-01-01T00:00:00Z"}, far, 7)
    _forge(repo, "todo.renewed", {"id": "t-2", "until": far}, "2026-01-01T00:00:00Z", 8)
    _forge(repo, "wake.set", {"id": "w-1", "at": far}, "0001-01-01T00:00:00Z", 9)
    _forge(repo, "wake.set", {"id": "w-2", "at": "9999-12-31T23:59:59Z"}, far, 10)
    for args in (["status"], ["status", "--json"], ["next"], ["todo", "list"], ["wake", "list"],
                 ["validate"]):
        result = invoke(repo, *args)
        assert "unexpected" not in result.err, (args, result.err)
        assert result.code in (0, 1), (args, result.out, result.err)


@pytest.mark.parametrize("bad", ["2099-13-45T99:99:99Z", "\uff12\uff10\uff19\uff19-10-09T08:54:20Z",
                                 "2023-02-29T00:00:00Z"])
def test_a_time_that_is_not_real_is_a_problem_not_a_crash(repo: Path, bad: str) -> None:
    assert invoke(repo, "init").code == 0
    assert invoke(repo, "goal", "add", "Ship", "--id", "g-1").code == 0
    assert invoke(repo, "todo", "add", "g-1", "Step", "--id", "t-1").code == 0
    _forge(repo, "todo.claimed", {"id": "t-1", "until": bad}, "2026-01-01T00:00:00Z", 4)
    result = invoke(repo, "status", "--json")
    assert result.code == 0 and "unexpected" not in result.err, result.err
    assert "until" in result.out  # the file is listed under problems, naming the field
    assert invoke(repo, "todo", "claim", "t-1").code == 0  # and the todo is still free


# The patterns these fields had while their lengths were repetitions in them (before the
# bounds moved to max_length): the same strings must pass and fail.
_BEFORE = {"cwd": r"^[^/\x00\n\r][^\x00\n\r]{0,4095}$", "check": r"^[^\x00-\x1f]{1,200}$",
           "paths": r"^[^\x00\n\r]{1,500}$", "branch": r"^refs/[^\x00-\x20\x7f~^:?*\[\\]{1,1000}$"}


def _candidates(first: str, unit: str, limit: int) -> list[str]:
    return [first + unit * n for n in (0, 1, limit - len(first) - 1, limit - len(first),
                                       limit - len(first) + 1)] + [
        "", first, "/x", "a\nb", "a\x00b", "\u00e9" * limit, "\u00e9" * (limit + 1), "x\x1f"]


@pytest.mark.parametrize("field", sorted(_BEFORE))
def test_a_bound_moved_out_of_a_pattern_takes_the_same_strings(field: str) -> None:
    from loopx.model.payloads.evidence_events import EvidenceRecorded
    from loopx.model.payloads.todo_events import TodoClaimed

    limit = {"cwd": 4096, "check": 200, "paths": 500, "branch": 1005}[field]
    first = "refs/" if field == "branch" else "a"
    for text in _candidates(first, "\u00e9", limit) + _candidates(first, "b", limit):
        before = re.fullmatch(_BEFORE[field], text) is not None
        try:
            if field == "branch":
                TodoClaimed(id="t-1", until="2026-01-01T00:00:00Z", branch=text)
            else:
                EvidenceRecorded(id="e-1", kind="ci",
                                 **{field: [text] if field == "paths" else text})
            now = True
        except ValueError:
            now = False
        assert now == before, (field, len(text), text[:12])
