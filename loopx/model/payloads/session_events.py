"""Persistent sessions: a task that outlives its first result: running -> responded
(awaiting input) -> interjected (running again) -> ... -> closed. Only `session.closed` ends
one; see docs/sessions.md."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field

from loopx.model.ids import ULID_RE
from loopx.model.paths import SESSION_FILE_RE, TRANSCRIPT_CHUNK_BYTES, TRANSCRIPT_MAX_BYTES
from loopx.model.limits import TEXT_MAX
from loopx.model.payloads.base import ID_PATTERN, OID_PATTERN, ONE_LINE, EntityId, Model, Text


class Workspace(Model):
    """Where a session's live process and files are: only that host can re-attach to them."""

    host: str = Field(min_length=1, max_length=255, json_schema_extra=ONE_LINE)
    path: str = Field(min_length=1, max_length=4_096)


class SessionOpened(Model):
    """A task that outlives its first result; its owner (the actor) runs it."""

    id: str = EntityId
    task: str = Text
    todo: Optional[str] = Field(default=None, pattern=ID_PATTERN)
    keep_open: bool = Field(description="kept open for follow-ups after it responds")
    keep_open_reason: Optional[str] = Field(default=None, max_length=2_000)
    workspace: Workspace


class SessionProgress(Model):
    """The session is still running: a progress update from its owner."""

    id: str = EntityId
    message: str = Text


class SessionResponded(Model):
    """The session finished its turn and is awaiting input (not progress)."""

    id: str = EntityId
    response: str = Text


class SessionInterjected(Model):
    """A message from the caller (the actor); the session runs again."""

    id: str = EntityId
    message: str = Text
    kind: Literal["correction", "follow_up"] = Field(
        description="what the sender saw: correction if running, follow_up if awaiting input; "
        "replay re-derives it from the order of events"
    )


class TranscriptChunk(Model):
    path: str = Field(pattern=SESSION_FILE_RE.pattern)
    oid: str = Field(pattern=OID_PATTERN)
    bytes: int = Field(ge=0, le=TRANSCRIPT_CHUNK_BYTES)


class Transcript(Model):
    chunks: list[TranscriptChunk] = Field(
        max_length=TRANSCRIPT_MAX_BYTES // TRANSCRIPT_CHUNK_BYTES + 1)
    bytes: int = Field(ge=0, le=TRANSCRIPT_MAX_BYTES)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class SessionCheckpointed(Model):
    """The transcript so far, stored on the state branch, and the summary that replaces it."""

    id: str = EntityId
    number: int = Field(ge=1, le=999_999, description="1 for a session's first checkpoint")
    transcript: Transcript
    summary: str = Text
    omitted: Optional[str] = Field(default=None, max_length=TEXT_MAX,
                                   description="what the summary leaves out")


class SessionAcked(Model):
    """The owner consumed these interjections (event ids); the rest stay in the inbox."""

    id: str = EntityId
    interjections: list[Annotated[str, Field(pattern=ULID_RE.pattern)]] = Field(
        min_length=1, max_length=1_000, description="event ids of session.interjected events")


class SessionClosed(Model):
    id: str = EntityId
    reason: Literal["done", "stopped", "expired", "abandoned"]
    note: Optional[str] = Field(default=None, max_length=TEXT_MAX)
