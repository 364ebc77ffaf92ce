"""Keeping a ledger healthy: ``doctor`` (and its rollback) and the generated schema files."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Optional

from loopx.upkeep import doctor, schema
from loopx.ledger.book import Ledger
from loopx.ops import ledgers


def examine(cwd: str, *, ref: Optional[str] = None, rollback: bool = False,
            repair: bool = False, verify: bool = False,
            now: Optional[datetime] = None) -> dict[str, Any]:
    """A health report of the state branch; with ``verify`` also recompute the cache and the
    checkpoints from the events and compare; with ``repair`` also make it whole again keeping
    every event still at hand, with ``rollback`` move it back to its newest healthy reflog
    entry instead; then report again. Opened without adopting: doctor must work even when
    origin's state is refused."""
    with Ledger.open(cwd, ref=ledgers.state_ref(ref)) as ledger:
        result: dict[str, Any] = {"health": doctor.examine(ledger=ledger, now=now)}
        if verify and result["health"]["damage"] and not result["health"]["damage"]["tip_missing"]:
            result["verify"] = doctor.verify(ledger=ledger)
            result["health"]["ok"] = result["health"]["ok"] and result["verify"]["ok"]
            result["health"]["problems"] += result["verify"]["problems"]
        if repair:
            result["repair"] = doctor.repair(ledger=ledger)
            result["after"] = doctor.examine(ledger=ledger)
        elif rollback:
            result["rollback"] = doctor.rollback(ledger=ledger)
            result["after"] = doctor.examine(ledger=ledger)
    return result


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
