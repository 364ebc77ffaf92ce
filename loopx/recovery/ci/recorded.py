"""CI status from the ledger itself: CI jobs record ``ci`` evidence for the commits they test
(``git loopx evidence add --kind ci --check NAME --exit-code N``; older records name the
check in ``--summary``)."""

from __future__ import annotations

from typing import Any

from loopx.recovery.ci import CiStatus, Context, overall


def check(sha: str, *, ctx: Context) -> CiStatus:
    """The latest ``ci`` evidence per check name for ``sha``, in ledger order (the order of
    the snapshot's evidence), never by wall-clock time."""
    latest: dict[str, dict[str, Any]] = {}
    for ev in ctx.snapshot.get("evidence", []):
        if ev.get("kind") == "ci" and ev.get("commit") == sha:
            latest[ev.get("check") or ev.get("summary") or ev["id"]] = ev
    checks = [{"name": name, "state": "success" if ev.get("exit_code") in (None, 0) else "failure",
               "evidence": ev["id"], **({"url": ev["url"]} if ev.get("url") else {})}
              for name, ev in sorted(latest.items())]
    if not checks:
        return CiStatus("ledger", "pending", detail=f"no ci evidence recorded for {sha[:12]} yet")
    return CiStatus("ledger", overall([c["state"] for c in checks]), checks)
