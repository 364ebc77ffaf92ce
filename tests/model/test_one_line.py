"""One-line fields (titles, criteria, questions, effect targets, ...) hold one line of text:
`git loopx` refuses to write a line break or a control or format character in them, with one
line saying which field; an event from elsewhere that has one is still read (an old ledger
keeps its meaning), and shown inert. Multi-line fields (notes, run output) take anything."""

from __future__ import annotations

from typing import Any

import pytest

from loopx.errors import SchemaError
from loopx.model import events
from loopx.model.events import make_event, parse_event

# type -> a valid payload, and where a one-line text goes in it.
ONE_LINE_FIELDS: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("ledger.initialised", {"loopx_version": "0.1", "name": "x"}, ("name",)),
    ("goal.created", {"id": "g", "title": "x"}, ("title",)),
    ("goal.created", {"id": "g", "title": "x", "acceptance": [{"id": "a1", "text": "x"}]},
     ("acceptance", 0, "text")),
    ("goal.updated", {"id": "g", "title": "x"}, ("title",)),
    ("goal.updated", {"id": "g", "revise": [{"id": "a1", "text": "x"}]}, ("revise", 0, "text")),
    ("todo.added", {"id": "t", "goal": "g", "title": "x"}, ("title",)),
    ("todo.updated", {"id": "t", "title": "x"}, ("title",)),
    ("gate.opened", {"id": "q", "goal": "g", "question": "x", "authority": ["human:a@b"]},
     ("question",)),
    ("effect.intended", {"id": "x", "target": "x", "action": "a", "idempotency_key": "k"},
     ("target",)),
    ("effect.intended", {"id": "x", "target": "x", "action": "a", "idempotency_key": "k"},
     ("action",)),
    ("effect.confirmed", {"id": "x", "receipt": "x"}, ("receipt",)),
    ("session.opened", {"id": "s", "task": "x", "keep_open": False,
                        "workspace": {"host": "x", "path": "/w"}}, ("workspace", "host")),
    ("wake.set", {"id": "w", "on_ci": "HEAD", "reason": "x"}, ("reason",)),
]
HIDDEN = ["a\nb", "a\r\nb", "a\rb", "a\tb", "a\u2028b", "a\x85b", "\u202eexe", "zero\u200bwidth",
          "\ufeffbom", "\x1b[31mred", "nul\x00", "del\x7f", "\u2066iso\u2069"]


def _with(data: dict[str, Any], where: tuple[Any, ...], text: str) -> dict[str, Any]:
    import copy

    out = copy.deepcopy(data)
    node: Any = out
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = text
    return out


def _make(type: str, data: dict[str, Any]) -> events.Event:
    return make_event(type=type, data=data, event_id="01JD5Z3Q1T8E0000000000ABCD",
                      at="2026-01-01T00:00:00Z", clock=1, actor="human:a@b")


@pytest.mark.parametrize("type, data, where", ONE_LINE_FIELDS)
@pytest.mark.parametrize("text", HIDDEN)
def test_a_one_line_field_refuses_what_it_cannot_show(type: str, data: dict[str, Any],
                                                      where: tuple[Any, ...], text: str) -> None:
    _make(type, data)  # the payload itself is fine
    with pytest.raises(SchemaError) as caught:
        _make(type, _with(data, where, text))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"new event: {type}: data.")
    path = "data" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in where)
    assert message.startswith(f"new event: {type}: {path} is one line of text and holds "), message


@pytest.mark.parametrize("type, data, where", ONE_LINE_FIELDS)
def test_an_event_from_elsewhere_with_a_line_break_is_still_read(
        type: str, data: dict[str, Any], where: tuple[Any, ...]) -> None:
    doc = {"id": "01JD5Z3Q1T8E0000000000ABCD", "type": type, "v": events.EVENT_TYPES.version(type),
           "at": "2026-01-01T00:00:00Z", "clock": 1, "actor": "human:a@b",
           "data": _with(data, where, "## one\n## two")}
    assert parse_event(doc).known


def test_every_one_line_field_is_marked_in_the_schema() -> None:
    marked = {t: events.one_line(t) for t in events.EVENT_TYPES}
    assert marked["todo.added"] == (("title",),)
    assert marked["goal.created"] == (("title",), ("acceptance", "*", "text"))
    assert marked["note.added"] == () and marked["session.progress"] == ()
    for type, paths in marked.items():  # a one-line field is free text (redacted too)
        assert set(paths) <= set(events.free_text(type)), type


@pytest.mark.parametrize("text", ["## heading\n- [ ] box", "tab\there", "\x1b[31mred\x1b[0m"])
def test_multi_line_fields_take_any_text(text: str) -> None:
    assert _make("note.added", {"id": "n", "text": text}).to_dict()["data"]["text"] == text
    assert _make("todo.done", {"id": "t", "reason": text}).to_dict()["data"]["reason"] == text
