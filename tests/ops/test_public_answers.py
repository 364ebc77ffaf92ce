"""No public operation answers with an untyped value: every function of ``loopx.ops`` returns
types a caller (and mypy) can read, all the way down. The walk follows a return type through
unions, containers and generic arguments, into the fields of the dataclasses and pydantic
models it holds and the generic bases of the classes it names (``class Values(dict[str,
Any])``), and refuses ``Any`` (an unbound TypeVar is one), a bare ``dict`` and any other
container without its item types. There are no exceptions left; a new one needs a reason here
and a test that it is still needed."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import typing
from collections import abc
from typing import Any, Generic, Optional, TypeVar

import pytest
from pydantic import BaseModel

import loopx.model.events
import loopx.model.payloads
import loopx.ops
import loopx.ops.batch
from loopx.hooks import spool
from loopx.ledger.txn import Txn

# Names the operations import for type checking only (the payload models included).
NAMES = {**vars(loopx.model.events), "Txn": Txn, "Drained": spool.Drained}
for _info in pkgutil.iter_modules(loopx.model.payloads.__path__):
    NAMES.update(vars(importlib.import_module(f"loopx.model.payloads.{_info.name}")))

# operation -> why it still answers with an untyped value (each is follow-up work).
UNTYPED: dict[str, str] = {}

# The declarations describe operations (a parameter's default, the call an operation makes):
# they are not operations, and their answers are the declared functions' own.
DECLARATIONS = ("loopx.ops.declare.", "loopx.ops.catalog.", "loopx.ops.catalog_")


BARE = (dict, list, tuple, set, frozenset, type, typing.Dict, typing.List, typing.Tuple,
        typing.Set, typing.FrozenSet, typing.Mapping, typing.Sequence, typing.Iterable,
        abc.Mapping, abc.Sequence, abc.Iterable, abc.Iterator, abc.Callable)


def _hints(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls, localns=NAMES)
    if issubclass(cls, BaseModel):  # its fields, not its class variables (model_config)
        return {name: hints[name] for name in cls.model_fields}
    return hints


def _untyped(tp: Any, seen: set[Any]) -> list[str]:
    """Where ``tp`` holds an untyped value: ``Any``, an unbound TypeVar, a container without
    its item types; through unions and generic arguments, into dataclasses and models."""
    if tp is Any:
        return ["Any"]
    if isinstance(tp, TypeVar):
        bounds = [tp.__bound__] if tp.__bound__ is not None else list(tp.__constraints__)
        if not bounds:
            return [f"TypeVar {tp.__name__} (unbound: Any)"]
        return [why for bound in bounds for why in _untyped(bound, seen)]
    if isinstance(tp, typing.ForwardRef):
        return []  # what get_type_hints leaves of a recursive alias: a type walked already
    if tp in BARE:
        return [f"bare {getattr(tp, '__name__', tp)}"]
    if isinstance(tp, type):
        if tp in seen:
            return []
        seen.add(tp)
        found = []
        if dataclasses.is_dataclass(tp) or issubclass(tp, BaseModel):
            found += [f"{tp.__name__}.{name}: {why}" for name, hint in _hints(tp).items()
                      for why in _untyped(hint, seen)]
        for base in getattr(tp, "__orig_bases__", ()):  # class Values(dict[str, Any])
            if typing.get_origin(base) not in (Generic, None):
                found += [f"{tp.__name__}({base}): {why}" for why in _untyped(base, seen)]
        return found
    args = typing.get_args(tp)
    if typing.get_origin(tp) is typing.Annotated:
        args = args[:1]  # the type; the rest is metadata
    elif typing.get_origin(tp) is typing.Literal:
        args = ()
    return [why for arg in args for why in _untyped(arg, seen)]


def _returns(fn: Any) -> Any:
    return typing.get_type_hints(fn, localns=NAMES)["return"]


def _operations() -> dict[str, Any]:
    found = {}
    for info in pkgutil.iter_modules(loopx.ops.__path__):
        module = importlib.import_module(f"loopx.ops.{info.name}")
        for name, fn in vars(module).items():
            if not name.startswith("_") and inspect.isfunction(fn) and fn.__module__ == module.__name__:
                found[f"{module.__name__}.{name}"] = fn
    return found


def test_every_public_operation_answers_with_types() -> None:
    operations = _operations()
    assert len(operations) > 100  # the walk found the operations
    bad = {}
    for name, fn in operations.items():
        assert "return" in fn.__annotations__, f"{name} has no return annotation"
        why = _untyped(_returns(fn), set())
        if why and name not in UNTYPED and not name.startswith(DECLARATIONS):
            bad[name] = why
    assert not bad, bad


def test_the_list_of_untyped_operations_only_shrinks() -> None:
    operations = _operations()
    stale = [name for name in UNTYPED
             if name not in operations
             or not _untyped(_returns(operations[name]), set())]
    assert not stale, f"typed now (take them off UNTYPED): {stale}"


# --- the walk catches what it must ----------------------------------------------------------

T = TypeVar("T")


@dataclasses.dataclass
class Report:
    facts: dict[str, Any]
    count: int


@dataclasses.dataclass
class Outer:
    """Typed itself; the violation is two levels down, in a list of models."""

    reports: list[Optional[Inner]]


class Deep(BaseModel):
    labels: dict  # type: ignore[type-arg]


@dataclasses.dataclass
class Inner:
    deep: Deep


class Values(dict[str, Any]):
    pass


@dataclasses.dataclass
class Node:
    """A recursive answer: the walk ends where it has been."""

    children: list[Node]
    name: str


def test_the_walk_catches_a_dict_of_anything() -> None:
    def listing() -> list[dict[str, Any]]:
        return []

    def report() -> Report:
        return Report({}, 0)

    def typed() -> dict[str, list[int]]:
        return {}

    assert _untyped(_returns(listing), set()) == ["Any"]
    assert _untyped(_returns(report), set()) == ["Report.facts: Any"]
    assert _untyped(_returns(typed), set()) == []


def test_the_walk_is_strict_all_the_way_down() -> None:
    def outer() -> tuple[int, Outer]:
        return 0, Outer([])

    def values() -> Values:
        return Values()

    def bare() -> Optional[list]:  # type: ignore[type-arg]
        return None

    def generic(item: T) -> list[T]:
        return [item]

    def tree() -> Node:
        return Node([], "")

    def json() -> loopx.ops.batch.LineResult:
        raise NotImplementedError

    assert _untyped(_returns(outer), set()) == ["Outer.reports: Inner.deep: Deep.labels: bare dict"]
    assert _untyped(_returns(values), set()) == ["Values(dict[str, typing.Any]): Any"]
    assert _untyped(_returns(bare), set()) == ["bare list"]
    assert _untyped(_returns(generic), set()) == ["TypeVar T (unbound: Any)"]
    assert _untyped(_returns(tree), set()) == []
    assert _untyped(_returns(json), set()) == []  # a recursive alias (batch.Json) is typed


def test_a_planted_violation_fails_the_rule(monkeypatch: Any) -> None:
    """An operation answering a dataclass with a dict of anything deep inside is caught by the
    rule itself, not only by the walk."""
    import loopx.ops.notes

    def planted(ledger: Any) -> tuple[Outer, int]:
        return Outer([]), 0

    planted.__module__ = "loopx.ops.notes"
    monkeypatch.setattr(loopx.ops.notes, "planted", planted, raising=False)
    with pytest.raises(AssertionError, match="loopx.ops.notes.planted"):
        test_every_public_operation_answers_with_types()
