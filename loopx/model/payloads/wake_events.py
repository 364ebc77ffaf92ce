"""Wake conditions."""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from loopx.model.payloads.base import ID_PATTERN, ONE_LINE, TS_PATTERN, EntityId, Model

MIN_EVERY_S = 60  # a recurring wake repeats at most once a minute
MAX_EVERY_S = 366 * 86400  # and at least once a year


class WakeSet(Model):
    id: str = EntityId
    at: Optional[str] = Field(default=None, pattern=TS_PATTERN)
    on_gate: Optional[str] = Field(default=None, pattern=ID_PATTERN)
    on_ci: Optional[str] = Field(default=None, max_length=200, description="a commit sha or 'HEAD'",
                                 json_schema_extra=ONE_LINE)
    on_todo: Optional[str] = Field(default=None, pattern=ID_PATTERN)
    reason: Optional[str] = Field(default=None, max_length=2_000, json_schema_extra=ONE_LINE)
    every: Optional[int] = Field(
        default=None, ge=MIN_EVERY_S, le=MAX_EVERY_S,
        description="seconds: a recurring time wake, next due this long after it last fired")


class WakeCleared(Model):
    id: str = EntityId


class WakeFired(Model):
    """A recurring wake was acted on; it is due again at ``next``."""

    id: str = EntityId
    at: str = Field(pattern=TS_PATTERN, description="when it was acted on (UTC)")
    next: str = Field(pattern=TS_PATTERN, description="when it is due again: at + every")
