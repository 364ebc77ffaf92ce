"""Wall-clock helpers: UTC timestamps as text, durations like ``45m``. Pure."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

MAX_DURATION_S = 100 * 366 * 86400  # a century: longer is a typo, and overflows dates
# ASCII digits only: str.isdigit() and \d take other scripts' digits and superscripts, which
# int() then reads as numbers or refuses with an error no caller expects.
_DURATION = re.compile(r"\s*(?:([0-9]+)d)?\s*(?:([0-9]+)h)?\s*(?:([0-9]+)m)?\s*(?:([0-9]+)s)?\s*")
SECONDS = re.compile(r"\s*([0-9]+)\s*")  # a bare number of seconds


def now() -> datetime:
    return datetime.now(timezone.utc)


def format_ts(moment: datetime) -> str:
    """RFC 3339 UTC with second precision, e.g. ``2026-11-29T07:30:00Z``."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


_YEAR = "(?:[0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)"  # 0001-9999
_LEAP = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_DAY = ("(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
        "|02-(?:0[1-9]|1[0-9]|2[0-8]))")
# The times an event may carry (the schema's pattern, loopx.model.payloads.base says why).
TS_PATTERN = (f"^(?:{_YEAR}-{_DAY}|{_LEAP}-02-29)"
              "T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:[.][0-9]{1,9})?Z$")
# Times are held within these when read: a date from elsewhere (year 1 or 9999, a clock that
# is wrong) still compares in order, and adding a lease, a wake's delay or a century to it
# cannot run past the calendar's end (datetime's OverflowError stopped a status).
EARLIEST = datetime(1900, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(5000, 1, 1, tzinfo=timezone.utc)
_FRACTION = re.compile(r"[.,]([0-9]+)")


def parse_ts(text: str) -> datetime:
    """Parse an RFC 3339 timestamp (``Z`` or offset; naive input is taken as UTC), held
    within EARLIEST and LATEST. A fraction of any length is read to the microsecond (Python
    3.10's parser takes only three or six digits)."""
    text = text.replace("Z", "+00:00").replace("z", "+00:00")
    text = _FRACTION.sub(lambda m: "." + (m[1] + "00000")[:6], text, count=1)
    value = datetime.fromisoformat(text)
    value = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return min(max(value, EARLIEST), LATEST)


def parse_duration(text: str) -> timedelta:
    """``90s``, ``45m``, ``2h30m``, ``1d``; a bare number means seconds; at most a century."""
    match, bare = _DURATION.fullmatch(text), SECONDS.fullmatch(text)
    if bare:
        fields: tuple[str, ...] = ("0", "0", "0", bare[1])
    elif match and any(match.groups()):
        fields = tuple(g or "0" for g in match.groups())
    else:
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 45m, 2h30m, 1d)")
    # Longer digit strings are over the limit anyway; int() cost grows with their length.
    days, hours, minutes, seconds = (int(f) if len(f) <= 16 else MAX_DURATION_S + 1
                                     for f in fields)
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if total > MAX_DURATION_S:
        raise ValueError(f"{text.strip()} is longer than a century ({MAX_DURATION_S // 86400}d)")
    return timedelta(seconds=total)


def format_duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days}d" if days else "", f"{hours}h" if hours else "",
             f"{minutes}m" if minutes else "", f"{secs}s" if secs and not days else ""]
    return sign + ("".join(parts) or "0s")
