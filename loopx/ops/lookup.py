"""Resolving what a user typed (id prefixes, a goal implied by a todo) against the state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, Optional, overload

from loopx.ledger.draft import Draft
from loopx.projection import entities
from loopx.projection.views import resolve_id

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        EffectConfirmed, EffectFailed, Event, Model, TodoBlocked, TodoCancelled, TodoDone,
        TodoReleased, TodoReopened, WakeCleared,
    )


def goal(fold: entities.Fold, prefix: str) -> str:
    """The goal id a unique prefix names."""
    return resolve_id(fold.goals, prefix, "goal")


def todo(fold: entities.Fold, prefix: str) -> str:
    """The todo id a unique prefix names."""
    return resolve_id(fold.todos, prefix, "todo")


def gate(fold: entities.Fold, prefix: str) -> str:
    """The gate id a unique prefix names."""
    return resolve_id(fold.gates, prefix, "gate")


def evidence(fold: entities.Fold, prefix: str) -> str:
    """The evidence id a unique prefix names."""
    return resolve_id(fold.evidence, prefix, "evidence")


def optional(table: Mapping[str, Any], prefix: Optional[str], kind: str) -> Optional[str]:
    """The id ``prefix`` names in ``table``, or None when no prefix was given."""
    return resolve_id(table, prefix, kind) if prefix else None


def goal_of(fold: entities.Fold, goal_prefix: Optional[str],
            todo_id: Optional[str]) -> Optional[str]:
    """The goal an event belongs to: the todo's goal, else the goal named, else none."""
    if todo_id:
        return fold.todos[todo_id].goal
    return goal(fold, goal_prefix) if goal_prefix else None


# `about` answers the event of the type it is given: one signature per type it writes.
@overload
def about(txn: Txn, table: str, prefix: str, kind: str, event_type: Literal["todo.released"],
          data: dict[str, Any], event_id: Optional[str] = None) -> Event[TodoReleased]: ...
@overload
def about(txn: Txn, table: str, prefix: str, kind: str, event_type: Literal["todo.done"],
          data: dict[str, Any], event_id: Optional[str] = None) -> Event[TodoDone]: ...
@overload
def about(txn: Txn, table: str, prefix: str, kind: str, event_type: Literal["todo.blocked"],
          data: dict[str, Any], event_id: Optional[str] = None) -> Event[TodoBlocked]: ...
@overload
def about(txn: Txn, table: str, prefix: str, kind: str, event_type: Literal["todo.reopened"],
          data: dict[str, Any], event_id: Optional[str] = None) -> Event[TodoReopened]: ...
@overload
def about(txn: Txn, table: str, prefix: str, kind: str, event_type: Literal["todo.cancelled"],
          data: dict[str, Any], event_id: Optional[str] = None) -> Event[TodoCancelled]: ...
@overload
def about(txn: Txn, table: str, prefix: str, kind: str, event_type: Literal["effect.confirmed"],
          data: dict[str, Any], event_id: Optional[str] = None) -> Event[EffectConfirmed]: ...
@overload
def about(txn: Txn, table: str, prefix: str, kind: str, event_type: Literal["effect.failed"],
          data: dict[str, Any], event_id: Optional[str] = None) -> Event[EffectFailed]: ...
@overload
def about(txn: Txn, table: str, prefix: str, kind: str, event_type: Literal["wake.cleared"],
          data: dict[str, Any], event_id: Optional[str] = None) -> Event[WakeCleared]: ...
def about(txn: Txn, table: str, prefix: str, kind: str, event_type: str,
          data: dict[str, Any], event_id: Optional[str] = None) -> Event[Model]:
    """Stage one ``event_type`` about an existing entity (its id resolved from ``prefix`` in
    the fold's ``table``), under that entity's goal; the event staged, of that type."""
    entities_ = getattr(txn.fold, table)
    found = resolve_id(entities_, prefix, kind)
    return txn.add(Draft(event_type, {"id": found, **data}, entities_[found].goal, event_id))
