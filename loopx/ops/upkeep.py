"""Keeping a ledger healthy: ``doctor`` (and its rollback) and the generated schema files."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Optional, Union

from loopx.upkeep import doctor, schema
from loopx.ledger.book import Ledger
from loopx.model import typed
from loopx.model.typed import optional
from loopx.ops import ledgers
from loopx.projection import answers

# --- doctor's report (loopx.upkeep.doctor and salvage make it; `doctor --format json` prints it)


@dataclass(frozen=True)
class EventFile:
    """An event file named by its path (and the id and type its name gives, when it does)."""

    path: str
    oid: str
    id: Optional[str]
    type: Optional[str]


@dataclass(frozen=True)
class Damage:
    """What the tip of the state branch lacks, and what commits after the first deleted."""

    tip_missing: bool
    missing_trees: list[str]
    lost_events: list[EventFile]
    deleted_events: list[EventFile]
    modified: list[str]


@dataclass(frozen=True)
class Lock:
    """A lock left in the repository: loopx's own (with the writer's pid) or a git ref lock
    (with its age, and a problem when it is stale)."""

    lock: str
    pid: Optional[int] = optional()
    note: Optional[str] = optional()
    age_seconds: Optional[float] = optional()
    problem: Optional[str] = optional()


@dataclass(frozen=True)
class Quarantine:
    """A remote tip sync refused, and the report that says why."""

    ref: str
    tip: Optional[str]
    report: str


@dataclass(frozen=True)
class Health:
    """The health of the state branch (``ok`` False when something is wrong)."""

    clocks_ahead: list[answers.ClockAhead]
    ref: str
    tip: Optional[str]
    ok: bool
    problems: list[str]
    ref_damage: Optional[str]  # the kind of damage of the ref itself
    damage: Optional[Damage]  # None: the ref does not exist or cannot be read
    warnings: list[str]
    reflog_entries: int
    locks: list[Lock]
    quarantines: list[Quarantine]
    proposals: list[str]


@dataclass(frozen=True)
class Verified:
    """``--verify``: the derived data recomputed from the events, and what differed."""

    ok: bool
    checked: list[str]
    problems: list[str]


@dataclass(frozen=True)
class RefRestored:
    """A damaged ref put back at its last good tip (the damaged copy kept aside)."""

    damage: str
    to: str
    kept: list[str]


@dataclass(frozen=True)
class NotRepaired:
    """``--repair`` on a whole branch: nothing to do."""

    repaired: bool
    tip: str
    reason: str
    ref_restored: Optional[RefRestored] = optional()


@dataclass(frozen=True)
class Refetched:
    """``--repair`` found every missing object on the remotes: nothing is lost."""

    repaired: bool
    how: str  # restored
    tip: str
    from_: list[str] = field(metadata={typed.KEY: "from"})  # the remotes that had them
    lost: list[EventFile]
    ref_restored: Optional[RefRestored] = optional()


@dataclass(frozen=True)
class Rebuilt:
    """``--repair`` wrote a new commit of every event file still at hand."""

    repaired: bool
    how: str  # rebuilt
    from_: str = field(metadata={typed.KEY: "from"})
    to: str
    base: Optional[str]
    fetched_from: list[str]
    put_back: list[str]
    removed: list[str]
    lost: list[EventFile]
    unknown: list[str]  # what was lost without a name to give
    ref_restored: Optional[RefRestored] = optional()


@dataclass(frozen=True)
class RolledBack:
    """``--rollback`` moved the branch back (``from`` None: the ref itself was damaged)."""

    rolled_back: bool
    from_: Optional[str] = field(metadata={typed.KEY: "from"})
    to: str
    dropped: list[str]  # the event files it no longer holds
    ref_restored: Optional[RefRestored] = optional()


@dataclass(frozen=True)
class NotRolledBack:
    """``--rollback`` on a healthy branch: nothing to do."""

    rolled_back: bool
    tip: Optional[str]
    dropped: list[str]
    reason: str


Repair = Union[NotRepaired, Refetched, Rebuilt]
Rollback = Union[RolledBack, NotRolledBack]


@dataclass(frozen=True)
class Examined:
    """`git loopx doctor`: the health report, and what --verify, --repair or --rollback did
    (then ``after``: the report again)."""

    health: Health
    verify: Optional[Verified] = optional()
    repair: Optional[Repair] = optional()
    rollback: Optional[Rollback] = optional()
    after: Optional[Health] = optional()

    @property
    def final(self) -> Health:
        """The branch's health as the command leaves it."""
        return self.after or self.health


def examine(cwd: str, *, ref: Optional[str] = None, rollback: bool = False,
            repair: bool = False, verify: bool = False,
            now: Optional[datetime] = None) -> Examined:
    """A health report of the state branch; with ``verify`` also recompute the cache and the
    checkpoints from the events and compare; with ``repair`` also make it whole again keeping
    every event still at hand, with ``rollback`` move it back to its newest healthy reflog
    entry instead; then report again. Opened without adopting: doctor must work even when
    origin's state is refused."""
    checked = mended = rolled = after = None
    if ref is not None:
        ledgers.check_state_ref(cwd, ref, damaged=True)
    with Ledger.open(cwd, ref=ledgers.state_ref(ref)) as ledger:
        health = doctor.examine(ledger=ledger, now=now)
        if verify and health["damage"] and not health["damage"]["tip_missing"]:
            checked = typed.build(Verified, doctor.verify(ledger=ledger))
            health["ok"] = health["ok"] and checked.ok
            health["problems"] += checked.problems
        if repair:
            mended = _repair(doctor.repair(ledger=ledger))
            after = typed.build(Health, doctor.examine(ledger=ledger))
        elif rollback:
            rolled = _rollback(doctor.rollback(ledger=ledger))
            after = typed.build(Health, doctor.examine(ledger=ledger))
    return Examined(typed.build(Health, health), checked, mended, rolled, after)


def _repair(done: dict[str, Any]) -> Repair:
    if done.get("how") == "rebuilt":
        return typed.build(Rebuilt, done)
    return typed.build(Refetched, done) if done["repaired"] else typed.build(NotRepaired, done)


def _rollback(done: dict[str, Any]) -> Rollback:
    if done["rolled_back"]:
        return typed.build(RolledBack, done)
    return typed.build(NotRolledBack, done)


def export_schemas(root: Path) -> list[str]:
    """Write .loopx-schema/ under ``root``; returns the files that changed."""
    return schema.export(root)


def stale_schemas(root: Path) -> list[str]:
    """Schema files under ``root`` that are missing, different or no longer generated; one
    line when ``root`` has none at all (a project using loopx, not loopx's sources)."""
    if not (root / schema.SCHEMA_DIR).is_dir():
        return [f"no {schema.SCHEMA_DIR}/ in {root}: `schema check` compares the schemas checked "
                "in with loopx's sources against the event model (`git loopx schema export` "
                "writes them here)"]
    return schema.stale(root)


def checkpoint(ledger: Ledger, *, actor: str) -> Optional[str]:
    """Commit a checkpoint of the projection at the tip (see docs/design.md, "Checkpoints");
    returns the commit it is of, or None when the tip has one already."""
    ledger.require()
    return ledger.checkpoint(actor=actor)
