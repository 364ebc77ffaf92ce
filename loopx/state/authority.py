"""Verified authority: who may answer a gate, and which events count only when signed.

Whether a commit is signed is not in the event file: the reading layer asks git once per
allowed_signers text and passes the verdicts in as data, ``fold.extra["signed"]``:
event id -> {signers_digest(allowed_signers text): principal}. They depend only on commits
reachable from the tip and on the config inside it, so a fold cached by tip stays true.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Optional, cast

from loopx.state.entities import Fold

if TYPE_CHECKING:  # annotations only: the state layer runs without pydantic on warm reads
    # Each rule narrows ``event.data`` to its payload with ``cast("Model", ...)``: a string,
    # so nothing here is imported at run time.
    from loopx.model.events import (
        ConfigSet, Event, GateAnswered, GateWithdrawn,
    )


def signature_required(config: dict[str, Any], gate_id: str) -> bool:
    """Whether the config in force says answers to ``gate_id`` must come in signed commits."""
    rule = config.get("signed_answers")
    return rule == "all" or (isinstance(rule, list) and gate_id in rule)


# Who may answer (roles) and how answers are verified: while signing is on, changing these
# needs a signed commit too, or an unsigned config event could simply switch signing off.
GUARDED_CONFIG = frozenset({"roles", "signed_answers", "allowed_signers"})


def needs_signature(fold: Fold, event: Event) -> bool:
    """Whether ``event`` counts only in a commit signed by its actor's key in allowed_signers."""
    if event.type in ("gate.answered", "gate.withdrawn"):  # both decide the gate
        gate = fold.gates.get(cast("GateAnswered | GateWithdrawn", event.data).id)
        return gate is not None and signature_required(fold.config, gate.id)
    if event.type == "config.set":
        rule = fold.config.get("signed_answers")
        config = cast("ConfigSet", event.data)
        touched = GUARDED_CONFIG & set(config.model_dump(exclude_none=True))
        on = rule not in (None, "off") and bool(fold.config.get("allowed_signers"))
        return on and bool(touched)
    return False


def signers_digest(allowed_signers: str) -> str:
    """A short name for one allowed_signers text (keys rotate: each answer is checked against
    the list in force where it falls in the order)."""
    return hashlib.sha256(allowed_signers.encode("utf-8")).hexdigest()[:16]


def signer_matches(principal: str, actor: str) -> bool:
    """``alice@example.com`` (or the full actor) in allowed_signers signs as human:alice@..."""
    return principal == actor or principal == actor.partition(":")[2]


def check_signature(fold: Fold, event: Event, what: str) -> Optional[str]:
    if not needs_signature(fold, event):
        return None
    allowed = fold.config.get("allowed_signers")
    if not allowed:
        return f"{what} needs a signed commit, but the config names no allowed signers"
    verdicts = fold.extra.get("signed", {}).get(event.id, {})
    principal = verdicts.get(signers_digest(allowed))
    if principal is None:
        return (f"{what} is not in a commit signed by a key in allowed_signers "
                "(unsigned, unknown key or bad signature)")
    if not signer_matches(principal, event.env.actor):
        return f"{what} is signed by {principal}, not by {event.env.actor}"
    return None




def resolve(config: dict[str, Any], authority: list[str]) -> set[str]:
    """The identities a gate's authority list names, roles expanded from ``config``."""
    roles: dict[str, list[str]] = config.get("roles") or {}
    people: set[str] = set()
    for who in authority:
        if who.startswith("role:"):
            people.update(roles.get(who[5:], []))
        else:
            people.add(who)
    return people
