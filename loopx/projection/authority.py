"""Verified authority: who may decide a gate, and which events count only when signed.

Authority acts are the events that decide or bypass a gate or a rule: answering, withdrawing
or superseding a gate, finishing or cancelling a todo a gate still holds, closing a goal over
unmet criteria (``override``), spending past a budget (``force``), and changing roles, signers
or the signing policy. Where the ledger's policy turns signing on (``signed_answers`` with
``allowed_signers``; ``signer add`` turns it on with the first key), each counts only in a
commit signed by its actor's key in allowed_signers (docs/security.md).

Whether a commit is signed is not in the event file: the reading layer asks git once per
allowed_signers text and passes the verdicts in as data, ``fold.extra["signed"]``:
event id -> {signers_digest(allowed_signers text): principal}. They depend only on commits
reachable from the tip and on the config inside it, so a fold cached by tip stays true.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Optional, cast

from loopx.projection.entities import Fold, Gate, Todo

if TYPE_CHECKING:  # annotations only: the state layer runs without pydantic on warm reads
    # Each rule narrows ``event.data`` to its payload with ``cast("Model", ...)``: a string,
    # so nothing here is imported at run time.
    from loopx.model.events import (
        ConfigSet, Event, GateAnswered, GateWithdrawn, GoalClosed, QuotaSpent, TodoCancelled,
        TodoDone,
    )


def signature_required(config: dict[str, Any], gate_id: str) -> bool:
    """Whether the config in force says answers to ``gate_id`` must come in signed commits."""
    rule = config.get("signed_answers")
    return rule == "all" or (isinstance(rule, list) and gate_id in rule)


# Who may answer (roles) and how answers are verified: while signing is on, changing these
# needs a signed commit too, or an unsigned config event could simply switch signing off.
GUARDED_CONFIG = frozenset({"roles", "signed_answers", "allowed_signers"})
# Who signs and what must be signed: review holds a range's own changes to these back, so its
# acts are judged by the signers and policy at its base.
SIGNING_CONFIG = frozenset({"signed_answers", "allowed_signers"})


def signing_on(config: dict[str, Any]) -> bool:
    """Whether the policy in force signs anything: a rule (all, or gate ids) and keys."""
    return config.get("signed_answers") not in (None, "off") and bool(
        config.get("allowed_signers"))


def holding(fold: Fold, todo: Todo) -> list[Gate]:
    """The gates that still hold ``todo`` back: open, conflicted, or answered with a reject.
    Finishing or cancelling it past them is a decision for their authority."""
    held = []
    for gate_id in todo.gates:
        gate = fold.gates.get(gate_id)
        if gate is not None and (gate.state in ("open", "conflicted") or (
                gate.state == "answered" and gate.decision == "reject")):
            held.append(gate)
    return held


def needs_signature(fold: Fold, event: Event) -> bool:
    """Whether ``event`` is an authority act that counts only in a commit signed by its
    actor's key in allowed_signers."""
    if event.type in ("gate.answered", "gate.withdrawn"):  # both decide the gate
        gate = fold.gates.get(cast("GateAnswered | GateWithdrawn", event.data).id)
        return gate is not None and signature_required(fold.config, gate.id)
    if event.type == "config.set":
        config = cast("ConfigSet", event.data)
        touched = GUARDED_CONFIG & set(config.model_dump(exclude_none=True))
        return signing_on(fold.config) and bool(touched)
    if event.type in ("todo.done", "todo.cancelled"):  # past a gate that holds it
        todo = fold.todos.get(cast("TodoDone | TodoCancelled", event.data).id)
        return todo is not None and signing_on(fold.config) and any(
            signature_required(fold.config, g.id) for g in holding(fold, todo))
    if event.type == "goal.closed":  # over unmet acceptance criteria
        return signing_on(fold.config) and bool(cast("GoalClosed", event.data).override)
    if event.type == "quota.spent":  # past the budget
        return signing_on(fold.config) and bool(cast("QuotaSpent", event.data).force)
    return False


def could_decide(fold: Optional[Fold], event: Event) -> bool:
    """Whether ``event`` would be an authority act under a policy that signs everything, as
    far as ``fold`` (the receiver's, perhaps only the part in play) tells: a gate's decision,
    a change to roles or signing, an override, a forced spend, and finishing or cancelling a
    todo that has a gate (or that ``fold`` does not hold)."""
    data: Any = event.data
    if event.type in ("gate.answered", "gate.withdrawn"):
        return True
    if event.type == "config.set":
        return bool(GUARDED_CONFIG & set(data.model_dump(exclude_none=True)))
    if event.type in ("goal.closed", "quota.spent"):
        return bool(data.override if event.type == "goal.closed" else data.force)
    if event.type in ("todo.done", "todo.cancelled"):
        todo = fold.todos.get(data.id) if fold is not None else None
        return todo is None or bool(todo.gates)
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


def named(config: dict[str, Any], authority: list[str]) -> str:
    """A gate's authority as a refusal names it: each role with who holds it, so that an
    actor called ``role:maintainer`` reads why it is not the maintainer."""
    roles: dict[str, list[str]] = config.get("roles") or {}
    return ", ".join(
        f"{who} ({', '.join(roles.get(who[5:]) or ['held by nobody'])})"
        if who.startswith("role:") else who for who in authority)
