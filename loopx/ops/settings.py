"""Ledger-wide settings (roles, lease length, session slots and idle time, signed answers, the
paths evidence ignores, CI checks that meet criteria), stored as ``config.set`` events like
everything else."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from loopx.errors import UsageError
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.state import entities

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        Event, ConfigSet,
    )


def set_(txn: Txn, *, roles: Optional[Mapping[str, Sequence[str]]] = None,
         lease_ttl: Optional[int] = None, session_slots: Optional[int] = None,
         session_idle: Optional[int] = None,
         signed_answers: Union[str, Sequence[str], None] = None,
         allowed_signers: Optional[str] = None,
         evidence_ignore: Optional[Sequence[str]] = None,
         ci_criteria: Optional[Mapping[str, Sequence[str]]] = None,
         event_id: Optional[str] = None) -> Event[ConfigSet]:
    """Change ledger settings. ``roles`` maps a role to who holds it (replacing that role's
    members, other roles kept); durations are seconds; ``signed_answers`` is ``all``, ``off``
    or gate ids; ``allowed_signers`` is the text of an ssh allowed_signers file;
    ``evidence_ignore`` replaces the globs whose changes leave unscoped evidence fresh ([]
    clears it); ``ci_criteria`` maps a CI check to the criteria (``GOAL:CRITERION``) its result
    meets, replacing that check's (an empty list removes it, other checks kept)."""
    data: dict[str, Any] = {}
    if roles:
        data["roles"] = {**(txn.fold.config.get("roles") or {}),
                         **{name: list(who) for name, who in roles.items()}}
    if lease_ttl is not None:
        data["lease_ttl_seconds"] = lease_ttl
    if session_slots is not None:
        data["session_slots"] = session_slots
    if session_idle is not None:
        data["session_idle_seconds"] = session_idle
    if signed_answers is not None:
        data["signed_answers"] = (signed_answers if isinstance(signed_answers, str)
                                  else list(signed_answers))
    if allowed_signers is not None:
        data["allowed_signers"] = allowed_signers
    if evidence_ignore is not None:
        data["evidence_ignore"] = list(evidence_ignore)
    if ci_criteria:
        data["ci_criteria"] = _ci_criteria(txn.fold, ci_criteria)
    if not data:
        raise UsageError("nothing to set: give roles, a lease length, session limits, "
                         "signing rules, evidence_ignore or CI criteria")
    return txn.add(Draft("config.set", data, None, event_id))


def _ci_criteria(fold: entities.Fold, mapping: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    merged = dict(fold.config.get("ci_criteria") or {})
    for check, targets in mapping.items():
        for target in targets:
            gid, _, cid = target.partition(":")
            goal = fold.goals.get(gid)
            if goal is None or cid not in {c["id"] for c in goal.acceptance}:
                raise UsageError(f"CI check {check!r} cannot meet {target}: "
                                 + (f"goal {gid} has no criterion {cid} in force" if goal
                                    else f"there is no goal {gid}"))
        if targets:
            merged[check] = list(dict.fromkeys(targets))
        else:
            merged.pop(check, None)
    return merged


def parse_ci_criteria(specs: Sequence[str]) -> dict[str, list[str]]:
    """``CHECK=GOAL:CRITERION[,GOAL:CRITERION]`` specs (the CLI's ``--ci-criterion``); an empty
    right-hand side (``CHECK=``) removes the check's mapping."""
    mapping: dict[str, list[str]] = {}
    for spec in specs:
        check, sep, targets = spec.rpartition("=")
        if not sep or not check:
            raise UsageError(f"{spec!r}: map a CI check as CHECK=GOAL:CRITERION[,GOAL:CRITERION]")
        found = [t.strip() for t in targets.split(",") if t.strip()]
        if any(t.count(":") != 1 for t in found):
            raise UsageError(f"{spec!r}: each criterion is GOAL:CRITERION, e.g. g-1:a2")
        mapping.setdefault(check, []).extend(found)
    return mapping


def parse_roles(specs: Sequence[str]) -> dict[str, list[str]]:
    """``NAME=ACTOR[,ACTOR]`` specs (the CLI's ``--role``) as a role mapping."""
    roles: dict[str, list[str]] = {}
    for spec in specs:
        role, sep, who = spec.partition("=")
        if not sep or not role:
            raise UsageError(f"{spec!r}: a role is NAME=ACTOR[,ACTOR]")
        roles[role] = [w.strip() for w in who.split(",") if w.strip()]
    return roles


def parse_signed_answers(text: str) -> Union[str, list[str]]:
    """``all``, ``off`` or a comma-separated list of gate ids."""
    return text if text in ("all", "off") else [g.strip() for g in text.split(",") if g.strip()]


def effective(ledger: Ledger) -> dict[str, Any]:
    """Every setting in force, defaults included."""
    return {"roles": {}, "lease_ttl_seconds": entities.DEFAULT_LEASE_TTL_S,
            "session_slots": entities.DEFAULT_SESSION_SLOTS, "signed_answers": "off",
            "evidence_ignore": [], "ci_criteria": {}, **ledger.fold().config}
