"""Every number an event carries is bounded at both ends, and floats are finite: a value from
another clone is data, and no data may stop a clone from writing (issue 12, item 3)."""

from __future__ import annotations

import math
import typing
from typing import Any

import annotated_types
import pytest

from loopx.errors import CodecError, SchemaError
from loopx.model import codec
from loopx.model.events import EVENT_TYPES, Envelope, Model, make_event

NUMERIC = (int, float)


def _numeric(annotation: Any) -> bool:
    if annotation in NUMERIC:
        return True
    return any(_numeric(arg) for arg in typing.get_args(annotation) if arg is not type(None))


def _models() -> list[type[Model]]:
    """Every payload model and the models nested in them, and the envelope."""
    found: list[type[Model]] = [Envelope]
    todo = [model for model, _ in EVENT_TYPES.values()]
    while todo:
        model = todo.pop()
        if model in found:
            continue
        found.append(model)
        for field in model.model_fields.values():
            for arg in (field.annotation, *typing.get_args(field.annotation)):
                inner = [a for a in (arg, *typing.get_args(arg)) if isinstance(a, type)]
                todo += [a for a in inner if issubclass(a, Model)]
    return found


def test_every_numeric_field_of_every_model_has_a_lower_and_an_upper_bound() -> None:
    unbounded = []
    for model in _models():
        for name, field in model.model_fields.items():
            if field.annotation is bool or not _numeric(field.annotation):
                continue
            kinds = {type(m) for m in field.metadata}
            if not ({annotated_types.Ge, annotated_types.Gt} & kinds
                    and {annotated_types.Le, annotated_types.Lt} & kinds):
                unbounded.append(f"{model.__name__}.{name}")
    assert not unbounded, f"numeric fields without both bounds: {unbounded}"
    assert len(_models()) > len(EVENT_TYPES)  # the nested models were walked too


def _event(type_: str, data: dict[str, Any], clock: int = 2) -> Any:
    return make_event(type=type_, data=data, event_id="01JD5Z3Q1T8E0000000000ABCD",
                      at="2026-11-29T12:00:00Z", clock=clock, actor="agent:x", goal=None)


@pytest.mark.parametrize("type_,data", [
    ("quota.set", {"turns": 10**16}),
    ("quota.set", {"tokens": -1}),
    ("quota.set", {"cost": math.inf}),
    ("quota.spent", {"cost": math.nan}),
    ("quota.spent", {"tokens": 10**18}),
    ("evidence.recorded", {"id": "e-1", "kind": "test", "exit_code": 2**40}),
    ("evidence.recorded", {"id": "e-1", "kind": "test", "exit_code": -(2**40)}),
    ("evidence.recorded", {"id": "e-1", "kind": "test", "duration_s": math.inf}),
    ("evidence.recorded", {"id": "e-1", "kind": "test", "duration_s": 1e300}),
    ("config.set", {"session_idle_seconds": 10**12}),
])
def test_out_of_range_numbers_are_schema_errors(type_: str, data: dict[str, Any]) -> None:
    with pytest.raises(SchemaError):
        _event(type_, data)


def test_ordinary_numbers_still_pass() -> None:
    _event("evidence.recorded", {"id": "e-1", "kind": "test", "exit_code": 3221225477,
                                 "duration_s": 86400.5})  # a Windows status, a day-long job
    _event("quota.set", {"turns": 10**9, "tokens": 10**12, "cost": 1e6})


@pytest.mark.parametrize("clock", [0, 2**53, 10**30])
def test_the_envelope_clock_is_bounded(clock: int) -> None:
    with pytest.raises(SchemaError):
        _event("note.added", {"id": "n-1", "text": "x"}, clock=clock)


@pytest.mark.parametrize("text", ["9" * 4300, "9" * 25, str(2**63), "-" + str(2**63),
                                  "0x" + "f" * 17])
def test_the_codec_refuses_integers_beyond_64_bits_with_a_named_error(text: str) -> None:
    with pytest.raises(CodecError, match="out of range") as caught:
        codec.load(f"clock: {text}\n".encode(), "events/x.yaml")
    assert str(caught.value).startswith("events/x.yaml: ")


def test_the_codec_still_reads_the_largest_64_bit_integer() -> None:
    assert codec.load(f"n: {2**63 - 1}\n".encode()) == {"n": 2**63 - 1}
