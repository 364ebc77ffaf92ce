"""Gates: a question waiting on a named human authority, and its decisions."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field

from loopx.model.ids import ULID_RE
from loopx.model.limits import TEXT_MAX
from loopx.model.payloads.base import ONE_LINE, EntityId, Identity, Model


class GateOpened(Model):
    id: str = EntityId
    goal: str = EntityId
    question: str = Field(min_length=1, max_length=TEXT_MAX, json_schema_extra=ONE_LINE)
    authority: list[Identity] = Field(
        min_length=1, max_length=50,
        description="identities (human:alice@example.com) or roles (role:maintainer)",
    )
    blocks: list[str] = Field(default_factory=list, max_length=200)


# A decision on a gate (an answer or a withdrawal) that saw earlier decisions on it names
# them: it replaces them. Two decisions that did not see each other conflict (docs/gates).
Supersedes = Field(
    default=None, min_length=1, max_length=50,
    description="event ids of the decisions on this gate that this one replaces")


class GateAnswered(Model):
    id: str = EntityId
    decision: Literal["approve", "reject", "answer"]
    answer: Optional[str] = Field(default=None, max_length=TEXT_MAX)
    comment: Optional[str] = Field(default=None, max_length=TEXT_MAX)
    supersedes: Optional[list[Annotated[str, Field(pattern=ULID_RE.pattern)]]] = Supersedes


class GateWithdrawn(Model):
    id: str = EntityId
    reason: Optional[str] = Field(default=None, max_length=TEXT_MAX)
    supersedes: Optional[list[Annotated[str, Field(pattern=ULID_RE.pattern)]]] = Supersedes
