"""Timestamps and durations as text: RFC 3339 UTC to the second, and durations like 2h30m,
read back as written and bounded at a century."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopx.model import clock


def test_a_timestamp_is_utc_to_the_second_whatever_its_offset() -> None:
    moment = datetime(2026, 11, 29, 8, 30, 0, 999_000, tzinfo=timezone(timedelta(hours=1)))
    assert clock.format_ts(moment) == "2026-11-29T07:30:00Z"
    assert clock.parse_ts("2026-11-29T07:30:00Z") == moment.replace(microsecond=0)
    assert clock.parse_ts("2026-11-29T07:30:00").tzinfo == timezone.utc  # naive: UTC


def test_durations_read_with_units_and_a_bare_number_as_seconds() -> None:
    assert clock.parse_duration("2h30m") == timedelta(hours=2, minutes=30)
    assert clock.parse_duration("1d 1s") == timedelta(days=1, seconds=1)
    assert clock.parse_duration("90") == timedelta(seconds=90)
    with pytest.raises(ValueError, match="not a duration: '45x'"):
        clock.parse_duration("45x")
    with pytest.raises(ValueError, match="longer than a century"):
        clock.parse_duration("36601d")
    with pytest.raises(ValueError, match="longer than a century"):
        clock.parse_duration("9" * 40 + "s")  # not a 40-digit int first


@pytest.mark.parametrize("text", ["²", "2²m", "٣", "١٠s", "１２h", "90s\nx"])
def test_a_duration_is_in_ascii_digits(text: str) -> None:
    """str.isdigit() and \\d take superscripts and other scripts' digits: int() refused the
    first with its own words (not "not a duration") and read the second as a number."""
    with pytest.raises(ValueError, match="not a duration"):
        clock.parse_duration(text)


def test_a_duration_may_end_in_a_line_break() -> None:
    assert clock.parse_duration(" 90s\n") == clock.parse_duration("90") == timedelta(seconds=90)


@given(st.integers(min_value=0, max_value=clock.MAX_DURATION_S))
def test_a_formatted_duration_under_a_day_reads_back_as_itself(seconds: int) -> None:
    delta = timedelta(seconds=seconds)
    text = clock.format_duration(delta)
    back = clock.parse_duration(text)
    # Past a day the seconds are left out of the text: what is shown is at most a minute short.
    assert back == delta if seconds < 86400 else timedelta(0) <= delta - back < timedelta(minutes=1)


def test_a_negative_duration_keeps_its_sign() -> None:
    assert clock.format_duration(timedelta(seconds=-3700)) == "-1h1m40s"
    assert clock.format_duration(timedelta(0)) == "0s"
