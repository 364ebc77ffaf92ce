"""Event ids are ULIDs, ordered as they were made even within one millisecond; short entity ids
are random, or the same for the same seed (a retried write names the same entity)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from loopx.model import ids


def _ahead() -> int:
    """A millisecond after every id this process has made (ids never go back in one)."""
    return ids.ulid_ms(ids.new_event_id()) + 1000


def test_event_ids_made_in_one_millisecond_still_sort_in_the_order_made() -> None:
    ms = _ahead()
    made = [ids.new_event_id(ms=ms) for _ in range(50)]
    assert made == sorted(made) and len(set(made)) == 50
    assert all(ids.is_event_id(e) and ids.ulid_ms(e) == ms for e in made)


def test_a_later_millisecond_sorts_after_and_its_time_reads_back() -> None:
    ms = _ahead()
    first, later = ids.new_event_id(ms=ms), ids.new_event_id(ms=ms + 1)
    assert first < later and ids.ulid_ms(later) == ms + 1
    assert ids.ulid_ms(ids.new_event_id(ms=ms - 5)) == ms + 1  # an earlier clock: not back


def test_what_is_not_an_event_id() -> None:
    good = ids.new_event_id()
    assert ids.is_event_id(good)
    assert not ids.is_event_id(good.lower())  # Crockford base32 in capitals only
    assert not ids.is_event_id(good[:-1] + "U")  # no I, L, O or U
    assert not ids.is_event_id("8" + good[1:])  # past 2^48 ms
    assert not ids.is_event_id("7ZZZZZZZZZ" + good[10:])  # past the year 9999: no file path
    assert not ids.is_event_id(good + "\n")  # ("$" would take a line break after it)


def test_a_short_id_is_the_same_for_the_same_seed() -> None:
    seeded = ids.new_short_id("t", seed="01J0000000000000000000000A")
    assert seeded == ids.new_short_id("t", seed="01J0000000000000000000000A")
    assert seeded != ids.new_short_id("t", seed="01J0000000000000000000000B")
    assert ids.ENTITY_ID_RE.match(seeded) and seeded.startswith("t-") and len(seeded) == 8
    assert len({ids.new_short_id("g") for _ in range(20)}) == 20


@given(st.integers(min_value=0, max_value=2**50 - 1), st.integers(min_value=0, max_value=2**80 - 1))
def test_an_id_is_dated_in_range_exactly_when_its_time_is(ms: int, rand: int) -> None:
    """is_event_id compares the ten time digits as text: the same answer as decoding them."""
    text = ids._encode(ms, 10) + ids._encode(rand, 16)
    assert ids.is_event_id(text) == (ids.ulid_ms(text) <= ids.MAX_ULID_MS)
    last = ids._encode(ids.MAX_ULID_MS, 10) + ids._encode(rand, 16)
    assert ids.is_event_id(last) and not ids.is_event_id(ids._encode(ids.MAX_ULID_MS + 1, 10)
                                                         + ids._encode(rand, 16))
