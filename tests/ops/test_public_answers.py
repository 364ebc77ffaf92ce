"""No public operation answers with an untyped dict: every function of ``loopx.ops`` returns
types a caller (and mypy) can read, down through the dataclasses it returns. The few that
still answer with a plain document are listed here with the reason; the list may only shrink
(an entry that no longer applies fails too)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import typing
from typing import Any

from pydantic import BaseModel

import loopx.model.events
import loopx.ops
from loopx.hooks import spool
from loopx.ledger.txn import Txn

import loopx.model.payloads

# Names the operations import for type checking only (the payload models included).
NAMES = {**vars(loopx.model.events), "Txn": Txn, "Drained": spool.Drained}
for _info in pkgutil.iter_modules(loopx.model.payloads.__path__):
    NAMES.update(vars(importlib.import_module(f"loopx.model.payloads.{_info.name}")))

# operation -> why it still answers with a plain document (each is follow-up work).
UNTYPED = {
    "loopx.ops.upkeep.examine": "doctor's report: damage, verify, repair and rollback parts",
    "loopx.ops.status.prime": "Primer.facts: the primer's facts, as recovery/primer.py makes them",
    "loopx.ops.evidence.record_ci": "CiRecord.ci and .planned: the CI status and the plan",
    "loopx.ops.review.check_range": "validate.Report's events and config findings",
    "loopx.ops.lookup.about": "a write helper: the event of whichever type it is given",
    "loopx.ops.batch.apply": "each line's answer is its own operation's, in line order",
    "loopx.ops.batch.parse": "a parsed line holds its declaration (see DECLARATIONS)",
}

# The declarations describe operations (a parameter's default, the call an operation makes):
# they are not operations, and their answers are the declared functions' own.
DECLARATIONS = ("loopx.ops.declare.", "loopx.ops.catalog.", "loopx.ops.catalog_")


def _untyped(tp: Any, seen: set[Any]) -> list[str]:
    """Where ``tp`` holds ``Any`` (a dict of anything, a bare Any), through dataclasses."""
    if tp is Any:
        return ["Any"]
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if tp in seen:
            return []
        seen.add(tp)
        return [f"{tp.__name__}.{name}: {why}"
                for name, hint in typing.get_type_hints(tp, localns=NAMES).items()
                for why in _untyped(hint, seen)]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return []  # pydantic models (events) are typed by their own schema
    return [why for arg in typing.get_args(tp) for why in _untyped(arg, seen)]


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


@dataclasses.dataclass
class Report:
    facts: dict[str, Any]
    count: int


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
