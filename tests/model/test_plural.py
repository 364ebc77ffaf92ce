"""Counted nouns in messages."""

from __future__ import annotations

from loopx.model import plural


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert plural.counted(1, "event") == "1 event"
    assert [plural.counted(n, "event") for n in (0, 2)] == ["0 events", "2 events"]
    assert plural.counted(3, "entry", "entries") == "3 entries"
    assert plural.counted(1, "entry", "entries") == "1 entry"
