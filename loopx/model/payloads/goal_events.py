"""Goals and their acceptance criteria."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field

from loopx.model.globs import MAX_GLOBS
from loopx.model.limits import TEXT_MAX, TITLE_MAX
from loopx.model.payloads.base import (
    ID_PATTERN, ONE_LINE, EntityId, Glob, Globs, Link, Links, Model,
)


class Criterion(Model):
    """An acceptance criterion of a goal."""

    id: str = Field(pattern=ID_PATTERN)
    text: str = Field(min_length=1, max_length=TEXT_MAX, json_schema_extra=ONE_LINE)
    paths: Optional[list[Glob]] = Globs


class CriterionScope(Model):
    """The paths a criterion's evidence is judged on (an empty list: the whole tree)."""

    id: str = Field(pattern=ID_PATTERN)
    paths: list[Glob] = Field(max_length=MAX_GLOBS)


class GoalCreated(Model):
    id: str = EntityId
    title: str = Field(min_length=1, max_length=TITLE_MAX, json_schema_extra=ONE_LINE)
    description: Optional[str] = Field(default=None, max_length=TEXT_MAX)
    acceptance: list[Criterion] = Field(default_factory=list, max_length=200)
    links: list[Link] = Links


class GoalUpdated(Model):
    id: str = EntityId
    title: Optional[str] = Field(default=None, min_length=1, max_length=TITLE_MAX,
                                 json_schema_extra=ONE_LINE)
    description: Optional[str] = Field(default=None, max_length=TEXT_MAX)
    add_acceptance: list[Criterion] = Field(default_factory=list, max_length=200)
    state: Optional[Literal["active", "paused"]] = None
    revise: Optional[list[Criterion]] = Field(
        default=None, max_length=200,
        description="new text for existing criteria: evidence recorded before no longer counts")
    retire: Optional[list[Annotated[str, Field(pattern=ID_PATTERN)]]] = Field(
        default=None, max_length=200, description="criteria that no longer need evidence")
    scope: Optional[list[CriterionScope]] = Field(
        default=None, max_length=200, description="the paths existing criteria are judged on")
    add_links: list[Link] = Links


class GoalClosed(Model):
    id: str = EntityId
    outcome: Literal["achieved", "abandoned"]
    reason: Optional[str] = Field(default=None, max_length=TEXT_MAX)
    override: bool = Field(
        default=False, description="a human decision: achieved although criteria are unmet "
        "(v2: with a reason)"
    )
