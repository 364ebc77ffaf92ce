"""Typed answers: frozen dataclasses built from the plain values the rules compute, and the one
function that turns any answer into JSON (:func:`plain`).

The read operations (status, every list and show) answer with stdlib dataclasses, not dicts,
so a caller reads ``doc.todos[0].why_not_ready`` and mypy checks it. They are stdlib, not
pydantic, because a warm `status` must start without pydantic (tests/cli/test_startup.py);
pydantic reads the same classes only at ``schema export`` time, to write their JSON Schema.

A field's JSON key is its name, or its ``KEY`` metadata when the name is a Python keyword
(``from_: str = field(metadata={KEY: "from"})``); a
field made with :func:`optional` is left out of the JSON while it is None (a key the document
only carries when it applies, like an action's ``todo``).
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, Union

T = TypeVar("T")
KEY = "loopx.key"  # field metadata: the JSON key, when it is not the field's name
OMIT = "loopx.omit"  # field metadata: left out of the JSON while None


def optional(default: Any = None) -> Any:
    """A field the JSON carries only while it is not None."""
    return dataclasses.field(default=default, metadata={OMIT: True})


Convert = Callable[[Any], Any]


@dataclasses.dataclass(frozen=True)
class _Plan:
    """How to build one class from a mapping, and how to write it back: computed once."""

    fields: tuple[tuple[str, str, Convert | None, bool], ...]  # name, key, convert, required
    keys: frozenset[str]
    out: tuple[tuple[str, str, bool], ...]  # name, key, omitted while None


_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        hints = typing.get_type_hints(cls)
        fields, out = [], []
        for f in dataclasses.fields(cls):
            key = f.metadata.get(KEY, f.name)
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            fields.append((f.name, key, _converter(hints[f.name]), required))
            out.append((f.name, key, bool(f.metadata.get(OMIT))))
        plan = _PLANS[cls] = _Plan(tuple(fields), frozenset(k for _, k, _, _ in fields),
                                   tuple(out))
    return plan


def _converter(tp: Any) -> Convert | None:
    """What turns a plain value into one of type ``tp`` (None: it is one already)."""
    if dataclasses.is_dataclass(tp):
        return lambda value: build(tp, value)  # type: ignore[arg-type]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Union:
        inner = [a for a in args if a is not type(None)]
        return _converter(inner[0]) if len(inner) == 1 else None
    if origin is list and args:
        item = _converter(args[0])
        return None if item is None else (lambda value: [item(v) for v in value])
    if origin is dict and len(args) == 2:
        each = _converter(args[1])
        return None if each is None else (lambda value: {k: each(v) for k, v in value.items()})
    return None


def build(cls: type[T], data: Mapping[str, Any]) -> T:
    """An instance of the dataclass ``cls`` from ``data`` (a mapping with its JSON keys),
    nested dataclasses included. A key ``cls`` does not declare, or a required one missing,
    is a TypeError: the rules and the type must say the same thing."""
    plan = _plan(cls)
    values = {}
    for name, key, convert, required in plan.fields:
        if key in data:
            value = data[key]
            values[name] = value if convert is None or value is None else convert(value)
        elif required:
            raise TypeError(f"{cls.__name__}: no {key!r} in {sorted(data)}")
    if len(data) > len(values) and not plan.keys.issuperset(data):
        raise TypeError(f"{cls.__name__} has no field for {sorted(set(data) - plan.keys)}")
    return cls(**values)


def fields_of(obj: Any) -> dict[str, Any]:
    """A dataclass instance's fields under their JSON keys, one level deep (the nested values
    stay as they are: ``json`` calls :func:`json_default` for each)."""
    found = {}
    for name, key, omit in _plan(type(obj)).out:
        value = getattr(obj, name)
        if value is not None or not omit:
            found[key] = value
    return found


def json_default(obj: Any) -> Any:
    """For ``json.dumps(default=...)``: a typed answer as its JSON object (one level: ``json``
    calls this again for what it holds), anything else as :func:`plain` makes it."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type) and not hasattr(obj, "to_dict"):
        return fields_of(obj)
    return plain(obj)


def plain(obj: Any) -> Any:
    """``obj`` as JSON values (dicts with text keys, lists, strings, numbers, booleans, None),
    whatever form an operation answers in: what ``--format json`` prints, an MCP tool answers
    and a batch line gives. The one serialiser of the package:

    - an event or a report: its ``to_dict`` (its JSON document already);
    - a pydantic model: its ``model_dump(mode="json")``;
    - a typed answer (a dataclass): its fields under their JSON keys (:func:`fields_of`);
    - an enum: its value; a tuple: a list; a subclass of str, int, float: the plain value;
    - anything else (a path, a datetime): its string.

    No pydantic import: a model is told by its ``model_dump``."""
    kind = type(obj)
    if kind is str or kind is int or kind is float or kind is bool or obj is None:
        return obj
    if isinstance(obj, dict):
        return {k if type(k) is str else str(plain(k)): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, enum.Enum):
        return plain(obj.value)
    for base in (bool, int, float, str):  # json writes a subclass as its base would
        if isinstance(obj, base):
            return base(obj) if base is not str else str.__str__(obj)
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        return plain(to_dict())
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return plain(dump(mode="json"))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {k: plain(v) for k, v in fields_of(obj).items()}
    return str(obj)


def prepare(cls: type) -> None:
    """Compute now how ``cls`` is built and written (a server does it once before it forks
    a child per command: loopx/cli/server.py)."""
    _plan(cls)
