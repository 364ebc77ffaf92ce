"""Reading an event validates it once (envelope and payload in one model of its type), and
that one step accepts and refuses exactly the documents the two steps (the envelope, then the
payload) accept and refuse, with the same messages, and gives the same events."""

from __future__ import annotations

import copy
import typing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopx.errors import SchemaError
from loopx.model import events
from loopx.model.events import ADDED_IN, EVENT_TYPES, Envelope, parse_event
from strategies import envelopes, for_annotation, for_model

TYPES = sorted(EVENT_TYPES)
SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# Values of the wrong type for most fields, and of the right type for some: whatever each
# path makes of them, the other must make the same.
ODD_VALUES = st.sampled_from([None, True, 0, -1, 1.5, 2**53, "", "x", "7" * 30, [], ["x"], [1],
                              {}, {"a": 1}, [{"id": "x"}]])


def _outcome(parse: Any, doc: dict[str, Any]) -> tuple[Any, ...]:
    """What reading ``doc`` gives: the refusal's message, or everything the event holds."""
    given = copy.deepcopy(doc)
    try:
        event = parse(given)
    except SchemaError as exc:
        return ("refused", str(exc))
    env, data = event.env, event.data
    assert isinstance(env, Envelope) and env.data == given["data"]
    assert env.data is not given["data"]  # a copy, as validating dict[str, Any] makes
    fields = tuple(getattr(env, name) for name in Envelope.model_fields)
    return ("read", event.known, fields, env.model_fields_set & set(Envelope.model_fields),
            type(data), data, data.model_fields_set if data is not None else None,
            event.to_dict())


def _two_steps(doc: dict[str, Any]) -> Any:
    return events._in_two_steps(doc, "f.yaml")


def _same(doc: dict[str, Any]) -> tuple[Any, ...]:
    """Check that the read path (one step) and the two steps agree on ``doc``; and that the
    one step was taken exactly for the documents the two steps read as a known event (or
    refuse only for a field newer than its version) and whose type, version and payload are
    a string, an integer and a mapping."""
    one = _outcome(lambda d: parse_event(d, "f.yaml"), doc)
    two = _outcome(_two_steps, doc)
    assert one == two
    one_step = events._in_one_step(copy.deepcopy(doc)) is not None
    read_known = (two[0] == "read" and two[1]) or (
        two[0] == "refused" and " cannot carry data." in two[1])  # the version rule, after
    plain = (type(doc.get("type")) is str and type(doc.get("v")) is int
             and type(doc.get("data")) is dict)  # (others, the envelope converts or refuses)
    assert one_step == (plain and read_known), two
    return one


def _valid(type_name: str) -> st.SearchStrategy[dict[str, Any]]:
    model, version = EVENT_TYPES[type_name]
    return envelopes(type_name, model, version)


@pytest.mark.parametrize("type_name", TYPES)
def test_a_valid_event_is_read_in_one_step_as_the_two_steps_read_it(type_name: str) -> None:
    @SETTINGS
    @given(_valid(type_name))
    def check(doc: dict[str, Any]) -> None:
        assert _same(doc)[0] == "read"
        assert events._in_one_step(doc) is not None

    check()


@pytest.mark.parametrize("type_name", TYPES)
def test_every_version_of_a_type_is_judged_alike(type_name: str) -> None:
    """Earlier versions (refused when they carry a field added later), and later ones (kept
    as unknown: from a newer loopx)."""
    version = EVENT_TYPES[type_name][1]

    @SETTINGS
    @given(_valid(type_name), st.integers(min_value=0, max_value=version + 2))
    def check(doc: dict[str, Any], v: int) -> None:
        _same(dict(doc, v=v))

    check()


def _carrying(model: Any, name: str) -> st.SearchStrategy[Any]:
    """A value of field ``name`` of ``model`` that is not None ("field[].item": a list with
    one item whose ``item`` is not None)."""
    field, _, item = name.partition("[].")
    info = model.model_fields[field]
    if not item:
        return for_annotation(info.annotation, info.metadata).filter(lambda v: v is not None)
    inner = typing.get_args(info.annotation)[0]
    return st.tuples(for_model(inner), _carrying(inner, item)).map(
        lambda pair: [dict(pair[0], **{item: pair[1]})])


@pytest.mark.parametrize("type_name", sorted(ADDED_IN))
def test_a_field_of_a_later_version_is_refused_in_an_earlier_one(type_name: str) -> None:
    """Each field ADDED_IN names, given a value, in an event of each version before it."""
    model, version = EVENT_TYPES[type_name]

    @SETTINGS
    @given(_valid(type_name), st.sampled_from(sorted(ADDED_IN[type_name].items())), st.data())
    def check(doc: dict[str, Any], added: tuple[str, int], data: st.DataObject) -> None:
        name, since = added
        value = data.draw(_carrying(model, name))
        v = data.draw(st.integers(min_value=1, max_value=since - 1))
        said = _same(dict(doc, v=v, data=dict(doc["data"], **{name.partition("[].")[0]: value})))
        assert said[0] == "refused" and " cannot carry data." in said[1], said

    check()


@pytest.mark.parametrize("type_name", TYPES)
def test_unknown_fields_are_refused_alike(type_name: str) -> None:
    @SETTINGS
    @given(_valid(type_name), st.sampled_from(["data", "top"]),
           st.sampled_from(["color", "payload", "data", "id", "v", "x-extra"]))
    def check(doc: dict[str, Any], where: str, name: str) -> None:
        if where == "data" and name not in doc["data"]:
            doc = dict(doc, data=dict(doc["data"], **{name: "red"}))
        elif where == "top" and name not in doc:
            doc = dict(doc, **{name: "red"})
        else:
            return
        assert _same(doc)[0] == "refused"

    check()


@pytest.mark.parametrize("type_name", TYPES)
def test_values_of_the_wrong_type_are_judged_alike(type_name: str) -> None:
    """Any field of the payload or the envelope given an odd value, a payload field dropped,
    or a key that is no string: refused, or read, the same way by both."""
    names = sorted(EVENT_TYPES[type_name][0].model_fields)
    envelope = sorted(Envelope.model_fields)

    @SETTINGS
    @given(_valid(type_name), st.sampled_from(["data", "top", "drop", "key"]),
           st.sampled_from(names or ["none"]), st.sampled_from(envelope), ODD_VALUES)
    def check(doc: dict[str, Any], where: str, field: str, top: str, value: Any) -> None:
        if where == "data":
            doc = dict(doc, data=dict(doc["data"], **{field: value}))
        elif where == "top":
            doc = dict(doc, **{top: value})
        elif where == "drop":
            doc = dict(doc, data={k: v for k, v in doc["data"].items() if k != field})
        else:  # a key that is no string (YAML allows them): refused by both
            doc = dict(doc, data={**doc["data"], value if isinstance(value, (int, float)) else 7: 1})
            assert _same(doc)[0] == "refused"
            return
        _same(doc)

    check()


@pytest.mark.parametrize("change", [
    {"id": "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"},  # a ULID past the year 9999 (Envelope's own check)
    {"id": "01jd0000000000000000000000"}, {"clock": 0}, {"clock": "1"}, {"v": "1"},
    {"v": True}, {"v": 1.0}, {"type": 3}, {"type": "note.Added"}, {"data": []},
    {"data": None}, {"data": {1: "x", "id": "n-1", "text": "hi"}}, {"goal": None},
    {"goal": "g/1"}, {"actor": "nobody"}, {"at": "2026-01-01"},
])
def test_envelope_trouble_is_judged_alike(change: dict[str, Any]) -> None:
    doc = {"id": "01JD0000000000000000000000", "type": "note.added", "v": 1,
           "at": "2026-01-01T00:00:00Z", "clock": 1, "actor": "human:a@x",
           "data": {"id": "n-1", "text": "hi"}}
    doc.update(change)
    _same(doc)


def test_wake_set_v1_with_every_is_refused_after_its_one_validation() -> None:
    doc = {"id": "01JD0000000000000000000000", "type": "wake.set", "v": 1,
           "at": "2026-01-01T00:00:00Z", "clock": 1, "actor": "human:a@x",
           "data": {"id": "w-1", "at": "2030-01-01T00:00:00Z", "every": 600}}
    assert events._in_one_step(doc) is not None  # the one model accepts it ...
    with pytest.raises(SchemaError, match=r"wake.set v1 cannot carry data.every \(added in v2\)"):
        parse_event(doc)  # ... and the version rule still refuses it
    assert parse_event(dict(doc, v=2)).data.every == 600


def test_an_event_made_from_a_callers_dict_keeps_its_own_copy() -> None:
    """make_event copies the caller's ``data``; only a document just read from a file (its
    reader gives it away: ``owned``) becomes the event's as it is."""
    from loopx.model import ids
    from loopx.model.events import make_event, parse_event

    data = {"id": "n-1", "text": "hi"}
    event = make_event(type="note.added", data=data, event_id=ids.new_event_id(),
                       at="2026-01-01T00:00:00Z", clock=1, actor="agent:a@b")
    data["text"] = "changed"
    assert event.env.data["text"] == "hi"
    doc = {**event.to_dict(), "data": {"id": "n-2", "text": "mine"}}
    assert parse_event(doc, owned=True).env.data is doc["data"]
    assert parse_event(dict(doc)).env.data is not doc["data"]
