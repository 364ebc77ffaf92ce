"""Edits of JSON text in place (loopx.agents.jsonedit), as properties over documents in any
layout: the result parses as the edit means, and taking out what was put in gives back the
same bytes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings, strategies as st

from loopx.agents import jsonedit

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.text(max_size=8))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12)
layouts = st.sampled_from([{"indent": None}, {"indent": 2}, {"indent": 4}, {"indent": "\t"},
                           {"indent": None, "separators": (",", ":")}, {"indent": 1}])
objects = st.dictionaries(st.text(max_size=6), values, max_size=5)


@settings(max_examples=100, deadline=None)
@given(objects, layouts, st.text(max_size=6), values, st.booleans())
def test_a_member_set_then_deleted_gives_back_the_same_bytes(
        doc: dict[str, Any], layout: dict[str, Any], key: str, value: Any, crlf: bool) -> None:
    text = json.dumps(doc, ensure_ascii=False, **layout) + "\n"
    if crlf:
        text = text.replace("\n", "\r\n")
    after = jsonedit.set_member(text, jsonedit.parse(text), key, value)
    assert json.loads(after) == {**doc, key: value}
    if key not in doc:
        assert jsonedit.delete_member(after, jsonedit.parse(after), key) == text
        assert (after.count("\n") == after.count("\r\n")) if crlf else "\r" not in after


@settings(max_examples=100, deadline=None)
@given(st.lists(values, max_size=5), layouts, values, st.data())
def test_an_item_inserted_then_deleted_gives_back_the_same_bytes(
        items: list[Any], layout: dict[str, Any], value: Any, data: st.DataObject) -> None:
    text = json.dumps({"hooks": items}, **layout)
    index = data.draw(st.integers(0, len(items)))
    array = jsonedit.parse(text).get("hooks")
    assert array is not None
    after = jsonedit.insert_item(text, array, index, value)
    assert json.loads(after) == {"hooks": [*items[:index], value, *items[index:]]}
    again = jsonedit.parse(after).get("hooks")
    assert again is not None
    assert jsonedit.delete_item(after, again, index) == text


def test_an_insertion_follows_the_siblings_layout() -> None:
    text = '{\n    "a": 1,\n    "b": {"c": 2}\n}\n'
    after = jsonedit.set_member(text, jsonedit.parse(text), "loopx", {"args": ["x"]})
    assert after == '{\n    "a": 1,\n    "b": {"c": 2},\n    "loopx": {\n        "args": [\n' \
        '            "x"\n        ]\n    }\n}\n'
    inline = '{"a": 1}'
    assert jsonedit.set_member(inline, jsonedit.parse(inline), "b", [1, 2]) == '{"a": 1, "b": [1, 2]}'
    empty = '{\n  "servers": {}\n}\n'
    servers = jsonedit.parse(empty).get("servers")
    assert servers is not None
    assert jsonedit.set_member(empty, servers, "loopx", 1) == '{\n  "servers": {\n    "loopx": 1\n  }\n}\n'
