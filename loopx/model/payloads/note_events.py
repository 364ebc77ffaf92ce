"""Notes, and notices dismissed."""

from __future__ import annotations

from typing import Annotated, Optional

from pydantic import Field

from loopx.model.ids import ULID_RE
from loopx.model.payloads.base import ID_PATTERN, EntityId, Model, Text


class NoteAdded(Model):
    id: str = EntityId
    text: str = Text
    todo: Optional[str] = Field(default=None, pattern=ID_PATTERN)


class NoticeDismissed(Model):
    """Its actor has read the notices about these events of theirs that were not applied
    (a claim that lost a race, say): they no longer show as things to do."""

    events: list[Annotated[str, Field(pattern=ULID_RE.pattern)]] = Field(
        min_length=1, max_length=1_000,
        description="ids of the actor's events that were not applied")
