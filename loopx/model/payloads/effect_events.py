"""Intents and receipts of external writes."""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from loopx.model.payloads.base import ID_PATTERN, ONE_LINE, EntityId, Model, Text


class EffectIntended(Model):
    id: str = EntityId
    target: str = Field(min_length=1, max_length=2_000, description="e.g. github:owner/repo#12",
                        json_schema_extra=ONE_LINE)
    action: str = Field(min_length=1, max_length=200, description="e.g. open-pr, comment",
                        json_schema_extra=ONE_LINE)
    idempotency_key: str = Field(min_length=1, max_length=200, json_schema_extra=ONE_LINE)
    todo: Optional[str] = Field(default=None, pattern=ID_PATTERN)


class EffectConfirmed(Model):
    id: str = EntityId
    receipt: str = Field(min_length=1, max_length=2_000, description="e.g. the URL created",
                         json_schema_extra=ONE_LINE)


class EffectFailed(Model):
    id: str = EntityId
    error: str = Text
    retryable: bool = True
