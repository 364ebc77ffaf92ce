"""Todos: added, claimed and renewed, done, blocked, reopened, cancelled."""

from __future__ import annotations

from typing import Annotated, Optional

from pydantic import Field

from loopx.model.ids import ULID_RE
from loopx.model.limits import (
    LABEL_PATTERN, LABELS_MAX, PRIORITY_MAX, PRIORITY_MIN, TEXT_MAX, TITLE_MAX,
)
from loopx.model.needs import NEED_PATTERN
from loopx.model.payloads.base import (
    ACTOR_PATTERN, ID_PATTERN, ONE_LINE, REF_MAX, REF_PATTERN, TS_PATTERN, EntityId, Link, Links,
    Model, Text,
)

# A claim or a done over someone else's lease names the event that set that lease: the writer
# judged it ended, by when its own clone first saw it (docs/design.md, "Clocks"). Replay takes
# that judgement instead of comparing the two writers' clocks.
Takes = Field(default=None, pattern=ULID_RE.pattern,
              description="the event (claim or renewal) of someone else's lease that the writer "
              "judged ended; a v3 event over a lease it does not name is not applied")
Label = Annotated[str, Field(pattern=LABEL_PATTERN)]


class TodoAdded(Model):
    id: str = EntityId
    goal: str = EntityId
    title: str = Field(min_length=1, max_length=TITLE_MAX, json_schema_extra=ONE_LINE)
    description: Optional[str] = Field(default=None, max_length=TEXT_MAX)
    depends_on: list[str] = Field(default_factory=list, max_length=200)
    gates: list[str] = Field(default_factory=list, max_length=200)
    criteria: list[str] = Field(default_factory=list, max_length=200)
    priority: Optional[int] = Field(
        default=None, ge=PRIORITY_MIN, le=PRIORITY_MAX, description="0 most urgent .. 4 least; none given is 2")
    discovered_from: Optional[str] = Field(
        default=None, pattern=ID_PATTERN, description="the todo whose work turned this one up")
    labels: Optional[list[Label]] = Field(default=None, max_length=LABELS_MAX,
                                          description="labels to filter by (area:cli, docs)")
    links: list[Link] = Links
    needs: Optional[list[Annotated[str, Field(pattern=NEED_PATTERN)]]] = Field(
        default=None, min_length=1, max_length=20,
        description="tools the host that works on it must have on PATH (TOOL or TOOL>=VERSION)")


class TodoUpdated(Model):
    id: str = EntityId
    title: Optional[str] = Field(default=None, min_length=1, max_length=TITLE_MAX,
                                 json_schema_extra=ONE_LINE)
    description: Optional[str] = Field(default=None, max_length=TEXT_MAX)
    add_depends_on: list[str] = Field(default_factory=list, max_length=200)
    add_gates: list[str] = Field(default_factory=list, max_length=200)
    priority: Optional[int] = Field(default=None, ge=PRIORITY_MIN, le=PRIORITY_MAX, description="a new priority")
    add_labels: Optional[list[Label]] = Field(default=None, max_length=LABELS_MAX)
    remove_labels: Optional[list[Label]] = Field(default=None, max_length=LABELS_MAX,
                                                 description="applied after add_labels")


class TodoClaimed(Model):
    id: str = EntityId
    until: str = Field(pattern=TS_PATTERN, description="lease expiry (UTC)")
    branch: Optional[str] = Field(
        default=None, pattern=REF_PATTERN, max_length=REF_MAX,
        description="the branch checked out where the claim was made: commits without a "
        "Loopx-Todo trailer count for the lease only on it")
    takes: Optional[str] = Takes


class TodoAssigned(Model):
    """Who is meant to do a todo (no lease: `next` offers it to them first, to nobody else)."""

    id: str = EntityId
    to: Optional[str] = Field(default=None, pattern=ACTOR_PATTERN,
                              description="an identity, not a role; none: the assignee is cleared")


class TodoHandedOff(Model):
    """The lease holder (or a human) hands the lease on: ``to`` holds it from now, until
    ``until``, and is its assignee."""

    id: str = EntityId
    to: str = Field(pattern=ACTOR_PATTERN, description="an identity, not a role")
    until: str = Field(pattern=TS_PATTERN, description="the new holder's lease expiry (UTC)")
    note: Optional[str] = Field(default=None, max_length=TEXT_MAX,
                                description="what the new holder should know")


class TodoRenewed(Model):
    id: str = EntityId
    until: str = Field(pattern=TS_PATTERN)


class TodoReleased(Model):
    id: str = EntityId
    reason: Optional[str] = Field(default=None, max_length=TEXT_MAX)


class TodoDone(Model):
    id: str = EntityId
    evidence: list[str] = Field(default_factory=list, max_length=200)
    summary: Optional[str] = Field(default=None, max_length=TEXT_MAX)
    reason: Optional[str] = Field(
        default=None, min_length=1, max_length=TEXT_MAX,
        description="why it is done without passing, fresh evidence (v2 needs one or the other)")
    takes: Optional[str] = Takes


class TodoAcked(Model):
    """The holder has taken in decisions made since the claim (gate answers): the flag clears."""

    id: str = EntityId
    gates: list[Annotated[str, Field(pattern=ID_PATTERN)]] = Field(min_length=1, max_length=200)


class TodoBlocked(Model):
    id: str = EntityId
    reason: str = Text


class TodoReopened(Model):
    id: str = EntityId
    reason: Optional[str] = Field(default=None, max_length=TEXT_MAX)


class TodoCancelled(Model):
    id: str = EntityId
    reason: Optional[str] = Field(default=None, max_length=TEXT_MAX)
