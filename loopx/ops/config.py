"""Ledger-wide settings (roles, lease length, session slots and idle time, signed answers, the
paths evidence ignores, CI checks that meet criteria), stored as ``config.set`` events like
everything else."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Union

from loopx.errors import UsageError
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import typed
from loopx.model.limits import ACTOR_PATTERN, PATTERN_MEANS
from loopx.projection import entities

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
         evidence_scope: Optional[Sequence[str]] = None,
         ci_criteria: Optional[Mapping[str, Sequence[str]]] = None,
         event_id: Optional[str] = None) -> Event[ConfigSet]:
    """Change ledger settings. ``roles`` maps a role to who holds it (replacing that role's
    members, other roles kept); durations are seconds; ``signed_answers`` is ``all``, ``off``
    or gate ids; ``allowed_signers`` is the text of an ssh allowed_signers file;
    ``evidence_ignore`` replaces the globs whose changes leave unscoped evidence fresh ([]
    clears it); ``evidence_scope`` replaces the repository's default scope, the globs
    evidence is judged on when neither it nor its criterion names paths ([]: the whole tree
    again); ``ci_criteria`` maps a CI check to the criteria (``GOAL:CRITERION``) its result
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
    if evidence_scope is not None:
        data["evidence_scope"] = list(evidence_scope)
    if ci_criteria:
        data["ci_criteria"] = _ci_criteria(txn.fold, ci_criteria)
    if not data:
        raise UsageError("nothing to set: give roles, a lease length, session limits, "
                         "signing rules, evidence_ignore, evidence_scope or CI criteria")
    return txn.add(Draft("config.set", data, None, event_id))


# The key types ssh-keygen -Y sign can make, hardware-backed (sk-) ones included.
KEY_TYPES = frozenset({
    "ssh-ed25519", "sk-ssh-ed25519@openssh.com", "ssh-rsa", "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "sk-ecdsa-sha2-nistp256@openssh.com"})


@dataclass(frozen=True)
class Signer:
    """One line of the ledger's allowed_signers: whose key it is, and the key."""

    identity: str
    key: str  # "TYPE BASE64"

    @property
    def fingerprint(self) -> str:
        """``SHA256:...`` as ``ssh-keygen -l`` prints it."""
        blob = base64.b64decode(self.key.split()[1])
        return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")

    @property
    def line(self) -> str:
        return f"{self.identity} {self.key}"


def public_key(text: str) -> str:
    """``TYPE BASE64`` of an ssh public key (a ``.pub`` file's text); refuses anything else,
    e.g. a private key given by mistake."""
    fields = text.split()
    if len(fields) < 2 or fields[0] not in KEY_TYPES or "PRIVATE" in text:
        raise UsageError("not an ssh public key: give the .pub file (e.g. ~/.ssh/id_ed25519.pub)")
    try:
        blob = base64.b64decode(fields[1], validate=True)
    except (binascii.Error, ValueError):
        blob = b""
    size = int.from_bytes(blob[:4], "big") if len(blob) >= 4 else 0
    if blob[4:4 + size] != fields[0].encode():
        raise UsageError(f"not an ssh public key: its {fields[0]} key data does not decode")
    return f"{fields[0]} {fields[1]}"


def signers(text: Optional[str]) -> list[Signer]:
    """The lines of an allowed_signers text (principals, then the key; options not kept)."""
    found = []
    for line in (text or "").splitlines():
        fields = line.split()
        typed = [i for i, f in enumerate(fields) if f in KEY_TYPES and i + 1 < len(fields)]
        if fields and not line.lstrip().startswith("#") and typed:
            i = typed[0]
            found.append(Signer(fields[0], f"{fields[i]} {fields[i + 1]}"))
    return found


def add_signer(txn: Txn, identity: str, key_text: str, *,
               event_id: Optional[str] = None) -> tuple[Event[ConfigSet], bool]:
    """List ``identity``'s ssh public key in the ledger's allowed_signers; returns the event
    and whether it is the first key (trusted on first use: nothing vouches for it). The
    first key also turns signing on for every authority act (``signed_answers: all``) unless
    a policy was set; later changes are themselves signed by a listed key."""
    if not re.fullmatch(ACTOR_PATTERN, identity):
        raise UsageError(f"{identity!r} is not {PATTERN_MEANS[ACTOR_PATTERN]}")
    key = public_key(key_text)
    listed = signers(txn.fold.config.get("allowed_signers"))
    if any(s.identity == identity and s.key == key for s in listed):
        raise UsageError(f"that key is already listed for {identity}")
    text = "".join(f"{line}\n" for line in [
        *(txt for txt in (txn.fold.config.get("allowed_signers") or "").splitlines() if txt),
        Signer(identity, key).line])
    data: dict[str, Any] = {"allowed_signers": text}
    if txn.fold.config.get("signed_answers") is None:
        data["signed_answers"] = "all"
    return txn.add(Draft("config.set", data, None, event_id)), not listed


def remove_signer(txn: Txn, identity: str, *, event_id: Optional[str] = None) -> Event[ConfigSet]:
    """Take every key of ``identity`` off the ledger's allowed_signers (a signed change)."""
    lines = (txn.fold.config.get("allowed_signers") or "").splitlines()
    kept = [line for line in lines if not line.split() or line.split()[0] != identity]
    if len(kept) == len(lines):
        raise UsageError(f"no key is listed for {identity} (git loopx signer list)")
    text = "".join(f"{line}\n" for line in kept if line)
    return txn.add(Draft("config.set", {"allowed_signers": text}, None, event_id))


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


def check_roles(roles: Mapping[str, Sequence[str]]) -> None:
    """A UsageError (one line) naming a role's member that is no identity: the event refused
    it as ``data.roles.maintainer.0: 'alice' is not ...``, naming no option."""
    for role, who in roles.items():
        for one in who:
            if not re.fullmatch(ACTOR_PATTERN, one):
                raise UsageError(f"--role {role}={','.join(who)}: {one!r} is not "
                                 f"{PATTERN_MEANS[ACTOR_PATTERN]}")


def parse_signed_answers(text: str) -> Union[str, list[str]]:
    """``all``, ``off`` or a comma-separated list of gate ids."""
    return text if text in ("all", "off") else [g.strip() for g in text.split(",") if g.strip()]


@dataclass(frozen=True)
class Settings:
    """The ledger's settings in force (`config show`): each ``config.set`` field, defaults
    included; the ones without a default only once set."""

    roles: dict[str, list[str]]
    lease_ttl_seconds: int
    session_slots: int
    signed_answers: Union[str, list[str]]  # "off", "all", or the gates whose answers are signed
    evidence_ignore: list[str]
    ci_criteria: dict[str, list[str]]
    session_idle_seconds: Optional[int] = typed.optional()
    allowed_signers: Optional[str] = typed.optional()
    evidence_scope: Optional[list[str]] = typed.optional()


def effective(ledger: Ledger) -> Settings:
    """Every setting in force, defaults included."""
    return typed.build(Settings, {
        "roles": {}, "lease_ttl_seconds": entities.DEFAULT_LEASE_TTL_S,
        "session_slots": entities.DEFAULT_SESSION_SLOTS, "signed_answers": "off",
        "evidence_ignore": [], "evidence_scope": [], "ci_criteria": {}, **ledger.fold().config})
