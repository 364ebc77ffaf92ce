"""The quota and what was spent of it."""

from __future__ import annotations

from typing import Optional

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
