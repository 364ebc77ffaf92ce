"""Intents and receipts of external writes."""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from loopx.model.limits import GRACE_MAX_S, READBACK_PATTERN
from loopx.model.payloads.base import ID_PATTERN, ONE_LINE, EntityId, Identity, Model, Text


class EffectIntended(Model):
    id: str = EntityId
    target: str = Field(min_length=1, max_length=2_000, description="e.g. github:owner/repo#12",
                        json_schema_extra=ONE_LINE)
    action: str = Field(min_length=1, max_length=200, description="e.g. open-pr, comment",
                        json_schema_extra=ONE_LINE)
    idempotency_key: str = Field(min_length=1, max_length=200, json_schema_extra=ONE_LINE)
    todo: Optional[str] = Field(default=None, pattern=ID_PATTERN)
    readback: Optional[str] = Field(
        default=None, max_length=2_000, pattern=READBACK_PATTERN, json_schema_extra=ONE_LINE,
        description="v2: how to check it happened: http:URL, github:OWNER/REPO[#N], cmd:COMMAND")
    owner: Optional[Identity] = Field(
        default=None, description="v2: who reads it back first (none given: the writer)")
    grace: Optional[int] = Field(
        default=None, ge=0, le=GRACE_MAX_S,
        description="v2: seconds after the intent before the owner reads it back")
    hold: Optional[int] = Field(
        default=None, ge=0, le=GRACE_MAX_S,
        description="v2: seconds after the intent during which only the owner reads it back")


class EffectConfirmed(Model):
    id: str = EntityId
    receipt: str = Field(min_length=1, max_length=2_000, description="e.g. the URL created",
                         json_schema_extra=ONE_LINE)


class EffectFailed(Model):
    id: str = EntityId
    error: str = Text
    retryable: bool = True
