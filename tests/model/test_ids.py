"""Event ids are ULIDs, ordered as they were made even within one millisecond; short entity ids
are random, or the same for the same seed (a retried write names the same entity)."""

from __future__ import annotations

from loopx.model import ids


def test_event_ids_made_in_one_millisecond_still_sort_in_the_order_made() -> None:
    made = [ids.new_event_id(ms=1_700_000_000_000) for _ in range(50)]
    assert made == sorted(made) and len(set(made)) == 50
    assert all(ids.is_event_id(e) and ids.ulid_ms(e) == 1_700_000_000_000 for e in made)


def test_a_later_millisecond_sorts_after_and_its_time_reads_back() -> None:
    first, later = ids.new_event_id(ms=2_000_000_000_000), ids.new_event_id(ms=2_000_000_000_001)
    assert first < later and ids.ulid_ms(later) == 2_000_000_000_001


def test_what_is_not_an_event_id() -> None:
    good = ids.new_event_id(ms=1)
    assert ids.is_event_id(good)
    assert not ids.is_event_id(good.lower())  # Crockford base32 in capitals only
    assert not ids.is_event_id(good[:-1] + "U")  # no I, L, O or U
    assert not ids.is_event_id("8" + good[1:])  # past 2^48 ms
    assert not ids.is_event_id("7ZZZZZZZZZ" + good[10:])  # past the year 9999: no file path


def test_a_short_id_is_the_same_for_the_same_seed() -> None:
    seeded = ids.new_short_id("t", seed="01J0000000000000000000000A")
    assert seeded == ids.new_short_id("t", seed="01J0000000000000000000000A")
    assert seeded != ids.new_short_id("t", seed="01J0000000000000000000000B")
    assert ids.ENTITY_ID_RE.match(seeded) and seeded.startswith("t-") and len(seeded) == 8
    assert len({ids.new_short_id("g") for _ in range(20)}) == 20
