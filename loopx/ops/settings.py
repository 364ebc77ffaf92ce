"""Ledger-wide settings (roles, lease length, session slots and idle time, signed answers),
stored as ``config.set`` events like everything else."""

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
         allowed_signers: Optional[str] = None, event_id: Optional[str] = None) -> Event[ConfigSet]:
    """Change ledger settings. ``roles`` maps a role to who holds it (replacing that role's
    members, other roles kept); durations are seconds; ``signed_answers`` is ``all``, ``off``
    or gate ids; ``allowed_signers`` is the text of an ssh allowed_signers file."""
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
    if not data:
        raise UsageError("nothing to set: give roles, a lease length, session limits or "
                         "signing rules")
    return txn.add(Draft("config.set", data, None, event_id))


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
            **ledger.fold().config}
