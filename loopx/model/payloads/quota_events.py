"""The quota and what was spent of it."""

from __future__ import annotations

from typing import Annotated, Optional

from pydantic import Field

from loopx.model.payloads.base import ID_PATTERN, MAX_COST, MAX_COUNT, Model


class QuotaSet(Model):
    turns: Optional[int] = Field(default=None, ge=0, le=MAX_COUNT)
    tokens: Optional[int] = Field(default=None, ge=0, le=MAX_COUNT)
    cost: Optional[float] = Field(default=None, ge=0, le=MAX_COST)


class QuotaSpent(Model):
    turns: int = Field(default=0, ge=0, le=MAX_COUNT)
    tokens: int = Field(default=0, ge=0, le=MAX_COUNT)
    cost: float = Field(default=0.0, ge=0, le=MAX_COST)
    todo: Optional[str] = Field(default=None, pattern=ID_PATTERN)
    force: Optional[bool] = Field(default=None, description="recorded past the budget (v2)")
    reason: Optional[str] = Field(default=None, min_length=1, max_length=2_000,
                                  description="why spending past the budget was recorded")
    # A turn that `git loopx watch --host` drove (v3): the agent CLI, its exit, its wakes.
    host: Optional[str] = Field(default=None, pattern=r"^[a-z][a-z0-9-]{0,31}$",
                                description="the agent CLI that took the turn (watch --host)")
    exit: Optional[int] = Field(default=None, ge=-255, le=255,
                                description="that turn's exit code (negative: killed by a signal)")
    wakes: Optional[list[Annotated[str, Field(pattern=ID_PATTERN)]]] = Field(
        default=None, min_length=1, max_length=200, description="the wakes the turn was for")
