"""Keeping a ledger healthy: ``doctor`` (and its rollback) and the generated schema files."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from loopx.features import doctor, schema
from loopx.ledger.book import Ledger
from loopx.ops import ledgers


def examine(cwd: str, *, ref: Optional[str] = None, rollback: bool = False,
            repair: bool = False) -> dict[str, Any]:
    """A health report of the state branch; with ``repair`` also make it whole again keeping
    every event still at hand, with ``rollback`` move it back to its newest healthy reflog
    entry instead; then report again. Opened without adopting: doctor must work even when
    origin's state is refused."""
    with Ledger.open(cwd, ref=ledgers.state_ref(ref)) as ledger:
        result: dict[str, Any] = {"health": doctor.examine(ledger=ledger)}
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
    """Schema files under ``root`` that are missing, different or no longer generated."""
    return schema.stale(root)
