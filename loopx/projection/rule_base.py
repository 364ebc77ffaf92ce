"""What the rules of :mod:`loopx.projection.checks` and :mod:`loopx.projection.session_rules`
share: the goal or todo an event names must exist (and a goal be open)."""

from __future__ import annotations

from typing import Optional

from loopx.projection.entities import Fold, Todo


def need_goal(fold: Fold, goal_id: str, *, open_: bool = True) -> Optional[str]:
    goal = fold.goals.get(goal_id)
    if goal is None:
        return f"unknown goal {goal_id}"
    if open_ and goal.state in ("achieved", "abandoned"):
        return f"goal {goal_id} is {goal.state}"
    return None


def need_todo(fold: Fold, todo_id: str) -> tuple[Optional[Todo], Optional[str]]:
    todo = fold.todos.get(todo_id)
    return (todo, None) if todo else (None, f"unknown todo {todo_id}")
