"""Evidence bound to commits, and commits rewritten under it."""

from __future__ import annotations

import re
from typing import Literal, Optional

from pydantic import Field, field_validator

from loopx.model.limits import TEXT_MAX
from loopx.model.payloads.base import (
    ID_PATTERN, MAX_EXIT, MAX_SECONDS, MIN_EXIT, OID_PATTERN, ONE_LINE, CheckName, EntityId,
    Glob, Globs, Model,
)


class EvidenceRecorded(Model):
    id: str = EntityId
    kind: Literal["test", "ci", "commit", "review", "receipt", "note"]
    commit: Optional[str] = Field(default=None, pattern=OID_PATTERN)
    tree: Optional[str] = Field(default=None, pattern=OID_PATTERN)
    dirty: bool = False
    command: Optional[str] = Field(default=None, max_length=10_000)
    exit_code: Optional[int] = Field(default=None, ge=MIN_EXIT, le=MAX_EXIT)
    duration_s: Optional[float] = Field(default=None, ge=0, le=MAX_SECONDS)
    summary: Optional[str] = Field(default=None, max_length=TEXT_MAX)
    digest: Optional[str] = Field(default=None, max_length=200)
    url: Optional[str] = Field(default=None, max_length=2_000, json_schema_extra=ONE_LINE)
    output_tail: Optional[str] = Field(default=None, max_length=TEXT_MAX)
    author: Optional[str] = Field(default=None, max_length=500, json_schema_extra=ONE_LINE)
    todo: Optional[str] = Field(default=None, pattern=ID_PATTERN)
    criteria: list[str] = Field(default_factory=list, max_length=200)
    paths: Optional[list[Glob]] = Globs
    check: Optional[CheckName] = Field(default=None,
                                       description="the CI check it reports (kind ci)")
    cwd: Optional[str] = Field(
        default=None, pattern=r"^[^/\x00\n\r][^\x00\n\r]*$", max_length=4096,
        description="where the command ran, relative to the top of the work tree")

    @field_validator("cwd")
    @classmethod
    def _inside(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and ".." in value.split("/"):
            raise ValueError("cwd stays inside the work tree (no '..')")
        return value


class EvidenceRemapped(Model):
    """Commits rewritten by amend or rebase: evidence for ``old`` now follows ``new``."""

    mappings: list[dict[str, str]] = Field(min_length=1, max_length=10_000)

    @field_validator("mappings")
    @classmethod
    def _pairs(cls, value: list[dict[str, str]]) -> list[dict[str, str]]:
        for pair in value:
            if set(pair) != {"old", "new"} or not all(
                re.fullmatch(OID_PATTERN, pair[k]) for k in ("old", "new")
            ):
                raise ValueError("each mapping is {old: <sha>, new: <sha>}")
        return value
