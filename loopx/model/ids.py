"""Event ids (ULIDs) and short entity ids. Pure apart from the random source."""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from typing import NewType

EventId = NewType("EventId", str)

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ULID_RE = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
# The last millisecond of year 9999: ULIDs go on to year 10889, but an event's file lives in
# a directory named after its date (events/YYYY/MM/DD), and dates stop at 9999.
MAX_ULID_MS = 253_402_300_799_999
EVENT_ID_RULE = ("a ULID: 26 characters of 0-9 and A-Z without I, L, O and U, dated no later "
                 "than year 9999, e.g. 01JD5Z3Q1T8E0000000000ABCD")
# Entity ids: chosen by the user (`--id T-3`) or generated (`t-4k2j9x`). No slashes or dots,
# so they can never escape a path or confuse a file name.
ENTITY_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")

_lock = threading.Lock()
_last: tuple[int, int] = (0, 0)


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        value, rem = divmod(value, 32)
        chars.append(_CROCKFORD[rem])
    return "".join(reversed(chars))


def new_event_id(ms: int | None = None) -> EventId:
    """A ULID; monotonic within this process even when two are made in one millisecond."""
    global _last
    with _lock:
        stamp = ms if ms is not None else time.time_ns() // 1_000_000
        last_ms, last_rand = _last
        if stamp <= last_ms:
            stamp, rand = last_ms, last_rand + 1
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _last = (stamp, rand)
    return EventId(_encode(stamp, 10) + _encode(rand & ((1 << 80) - 1), 16))


_LAST_DATE = _encode(MAX_ULID_MS, 10)
_DECODE = str.maketrans(_CROCKFORD, "0123456789abcdefghijklmnopqrstuv")


def ulid_ms(event_id: str) -> int:
    """The millisecond timestamp encoded in a ULID (its first ten Crockford base32 digits)."""
    return int(event_id[:10].translate(_DECODE), 32)


def is_event_id(text: str) -> bool:
    """Whether ``text`` can be an event id: a ULID whose date fits a file path."""
    # Crockford's digits are in ASCII order, so ten of them compare as the number they spell
    # (ulid_ms(text) <= MAX_ULID_MS) without decoding it: replay checks one id per event.
    return ULID_RE.fullmatch(text) is not None and is_dated(text)


def is_dated(ulid: str) -> bool:
    """Whether a ULID's date fits a file path (for text already known to be a ULID)."""
    return ulid[:10] <= _LAST_DATE


def new_short_id(prefix: str, seed: str | None = None) -> str:
    """A short id such as ``t-4k2j9x`` (30 bits). Random, or derived from ``seed`` (the event id
    of a write that may be retried) so that a retry names the same entity."""
    raw = hashlib.sha256(seed.encode()).digest()[:4] if seed else os.urandom(4)
    return f"{prefix}-{_encode(int.from_bytes(raw, 'big') >> 2, 6).lower()}"
