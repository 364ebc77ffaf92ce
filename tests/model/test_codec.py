"""Safe YAML: the canonical emitter round-trips, and hostile input is refused quickly with a
message that names the file."""

from __future__ import annotations

import gc
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopx.model import codec
from loopx.errors import CodecError

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63 - 1), max_value=2**63 - 1),
    st.floats(allow_nan=False), st.text(alphabet=st.characters(blacklist_categories=("Cs",))),
)
keys = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(keys, values, max_size=6))
def test_dump_then_load_gives_the_same_value(doc: dict) -> None:
    assert codec.load(codec.dump(doc)) == doc


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(keys, values, max_size=6))
def test_dump_is_canonical(doc: dict) -> None:
    assert codec.dump(codec.load(codec.dump(doc))) == codec.dump(doc)


def test_strings_that_look_like_other_types_stay_strings() -> None:
    doc = {k: k for k in ["yes", "no", "null", "~", "1", "0x10", "1e3", ".inf", "true", "on", "2026-01-01", ""]}
    assert codec.load(codec.dump(doc)) == doc


def test_special_floats_round_trip() -> None:
    loaded = codec.load(codec.dump({"a": math.inf, "b": -math.inf}))
    assert loaded == {"a": math.inf, "b": -math.inf}


def test_plain_scalars_follow_the_yaml_1_2_core_schema() -> None:
    assert codec.load(b"a: 12\nb: true\nc: ~\nd: 1.5\ne: yes\nf: 2026-01-01\n") == {
        "a": 12, "b": True, "c": None, "d": 1.5, "e": "yes", "f": "2026-01-01"}


BILLION_LAUGHS = b"""a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: [*d,*d,*d,*d,*d,*d,*d,*d,*d]
"""

HOSTILE = {
    "oversize": (b"a: " + b"x" * (codec.MAX_BYTES + 1) + b"\n", "KiB limit"),
    "anchor": (b"a: &x 1\n", "anchor"),
    "alias": (b"a: &x 1\nb: *x\n", "anchor"),
    "alias bomb": (BILLION_LAUGHS, "anchor"),
    "python tag": (b"a: !!python/object/apply:os.system ['true']\n", "tag"),
    "custom tag": (b"a: !mine 1\n", "tag"),
    "duplicate key": (b"a: 1\nb: 2\na: 3\n", "twice"),
    "deep nesting": (b"a: " + b"[" * 200 + b"]" * 200 + b"\n", "nested"),
    "deep mappings": (b"".join(b"  " * i + b"k:\n" for i in range(100)), "nested"),
    "invalid utf-8": (b"a: \xc3\x28\n", "UTF-8"),
    "nul byte": (b"a: b\x00c\n", "NUL"),
    "two documents": (b"a: 1\n---\nb: 2\n", "more than one"),
    "complex key": (b"? [a, b]\n: 1\n", "not a scalar"),
    "broken syntax": (b"a: [1, 2\n", "not valid YAML"),
    "tab indentation": (b"a:\n\t- 1\n", "not valid YAML"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_yaml_is_refused_and_names_the_file(case: str) -> None:
    """(How long a refusal takes: benchmarks/bench_bounds.py.)"""
    data, why = HOSTILE[case]
    with pytest.raises(CodecError) as info:
        codec.load(data, "events/2026/01/01/evil.yaml")
    assert str(info.value).startswith("events/2026/01/01/evil.yaml: ")
    assert why in str(info.value)


def test_dump_refuses_lone_surrogates() -> None:
    with pytest.raises(CodecError):
        codec.dump({"a": "\ud800"})


@pytest.mark.parametrize("data", [
    b"# not canonical\nid: x\ntext: " + b"q" * 4096 + b"\n",  # read whole, the slow way
    b"z" * 4096,  # refused at its first event (not a mapping), the parse left mid-way
    b"a: [\n" + b"q" * 100,  # not YAML: ruamel's own error
])
def test_a_document_read_the_slow_way_leaves_nothing_for_the_cycle_collector(data: bytes) -> None:
    """A replay pauses the collector: a reference cycle per document (ruamel's loader, which
    holds the parser's copy of the text) was kept until the replay ended, 3.5 times each
    file's size (3,000 hostile 250 KiB files: 4.8 GB)."""
    for _ in range(2):  # (the first parse imports the parser: its garbage is not ours)
        try:
            codec.load(b"# not canonical\nid: x\n")
        except CodecError:
            pass
    was = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        for _ in range(3):
            try:
                codec.load(data)
            except CodecError:
                pass
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()
