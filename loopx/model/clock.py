"""Wall-clock helpers: UTC timestamps as text, durations like ``45m``. Pure."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

MAX_DURATION_S = 100 * 366 * 86400  # a century: longer is a typo, and overflows dates
_DURATION = re.compile(r"^\s*(?:(\d+)d)?\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s)?\s*$")


def now() -> datetime:
    return datetime.now(timezone.utc)


def format_ts(moment: datetime) -> str:
    """RFC 3339 UTC with second precision, e.g. ``2026-11-29T07:30:00Z``."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_ts(text: str) -> datetime:
    """Parse an RFC 3339 timestamp (``Z`` or offset); naive input is taken as UTC."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def parse_duration(text: str) -> timedelta:
    """``90s``, ``45m``, ``2h30m``, ``1d``; a bare number means seconds; at most a century."""
    match = _DURATION.match(text)
    if text.strip().isdigit():
        fields: tuple[str, ...] = ("0", "0", "0", text.strip())
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
