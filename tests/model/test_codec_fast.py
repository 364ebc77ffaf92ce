"""The canonical fast path of codec.load gives exactly what the full YAML loader gives."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from loopx.model import codec

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**63 - 1), 2**63 - 1), st.text(max_size=30),
                    st.floats(allow_nan=False), st.sampled_from(["yes", "null", "1.5", "a: b", "- x"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=20)


def _full(data: bytes) -> object:
    return codec._Builder("t").build(codec._parser().parse(io.StringIO(data.decode())))


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=10), values, min_size=1, max_size=5))
def test_fast_path_matches_the_full_loader(doc: dict[str, object]) -> None:
    data = codec.dump(doc)
    fast = codec._load_canonical(data.decode(), data)
    assert fast is not codec._NO_KEY
    assert fast == _full(data) == doc


def test_non_canonical_text_takes_the_full_path() -> None:
    for text in ("a:   1\n", "a: 1\na: 2\n", "{a: 1}\n", "a: &x 1\nb: *x\n", "a: !tag 1\n"):
        assert codec._load_canonical(text, text.encode()) is codec._NO_KEY
