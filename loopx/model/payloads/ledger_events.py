"""The first event of a ledger and ledger-wide settings."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field

from loopx.model.globs import MAX_GLOBS
from loopx.model.limits import (
    LEASE_TTL_MAX_S, LEASE_TTL_MIN_S, SESSION_IDLE_MIN_S, SESSION_SLOTS_MAX,
)
from loopx.model.payloads.base import (
    CRITERION_REF_PATTERN, ID_PATTERN, MAX_SECONDS, ONE_LINE, CheckName, Glob, Identity,
    Model,
)


class LedgerInitialised(Model):
    """The first event of a ledger."""

    name: Optional[str] = Field(default=None, max_length=200, json_schema_extra=ONE_LINE)
    loopx_version: str = Field(max_length=40)


class ConfigSet(Model):
    """Ledger-wide settings; each field given replaces the previous value."""

    roles: Optional[dict[Annotated[str, Field(pattern=ID_PATTERN)], list[Identity]]] = Field(
        default=None, description="role name -> actor identities, e.g. maintainer: [human:a@x]"
    )
    lease_ttl_seconds: Optional[int] = Field(default=None, ge=LEASE_TTL_MIN_S, le=LEASE_TTL_MAX_S)
    session_slots: Optional[int] = Field(default=None, ge=1, le=SESSION_SLOTS_MAX)
    session_idle_seconds: Optional[int] = Field(default=None, ge=SESSION_IDLE_MIN_S, le=MAX_SECONDS)
    signed_answers: Optional[Literal["off", "all"] | list[str]] = Field(
        default=None, description="'all', 'off', or the gate ids whose answers must be signed"
    )
    allowed_signers: Optional[str] = Field(
        default=None, max_length=200_000, description="ssh allowed_signers text for signed answers"
    )
    evidence_ignore: Optional[list[Glob]] = Field(
        default=None, max_length=MAX_GLOBS,
        description="paths whose changes never make evidence stale, unless the evidence or its "
        "criterion names its own paths (e.g. docs/**)")
    evidence_scope: Optional[list[Glob]] = Field(
        default=None, max_length=MAX_GLOBS,
        description="the repository's default scope: the paths evidence is judged on when "
        "neither it nor its criterion names its own (e.g. src/**, tests/**); none: the "
        "whole tree")
    ci_criteria: Optional[dict[CheckName,
                               list[Annotated[str, Field(pattern=CRITERION_REF_PATTERN)]]]] = Field(
        default=None, max_length=200,
        description="CI check name -> the criteria (GOAL:CRITERION) its result meets or un-meets")
