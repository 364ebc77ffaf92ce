"""CI status from a user command (``git config loopx.ci.command``).

The command runs through ``sh -c`` with the commit as ``$1`` (and ``LOOPX_CI_SHA``) and prints
one JSON object: ``{"state": "success|failure|pending|unknown", "checks": [...], "detail": ...}``.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from loopx.recovery.ci import CiStatus, Context, STATES


def check(sha: str, *, ctx: Context) -> CiStatus:
    """Run the configured command for ``sha``; never raises."""
    command = ctx.config.get("loopx.ci.command")
    if not command:
        return CiStatus("command", "unknown", detail="set git config loopx.ci.command")
    try:
        proc = subprocess.run(["sh", "-c", command, "loopx-ci", sha], cwd=ctx.repo.cwd,
                              capture_output=True, timeout=ctx.timeout,
                              env=dict(os.environ, LOOPX_CI_SHA=sha))
    except subprocess.TimeoutExpired:
        return CiStatus("command", "unknown", detail=f"CI command timed out after {ctx.timeout:g}s")
    except OSError as exc:
        return CiStatus("command", "unknown", detail=f"CI command failed to start: {exc}")
    return _parse(proc.stdout, proc.returncode)


def _parse(out: bytes, code: int) -> CiStatus:
    try:
        doc = json.loads(out)
        state = doc["state"]
        checks = [_check(c) for c in doc.get("checks", []) if isinstance(c, dict)]
    except (ValueError, KeyError, TypeError, AttributeError):
        return CiStatus("command", "unknown",
                        detail=f"CI command printed no JSON status (exit {code})")
    if state not in STATES:
        return CiStatus("command", "unknown", detail=f"CI command said state {state!r}")
    detail = doc.get("detail")
    return CiStatus("command", state, checks, detail if isinstance(detail, str) else None)


def _check(found: dict[str, Any]) -> dict[str, Any]:
    """One check the command printed, as status documents a check: ``{name, state, url?}``
    (strings; anything else it said is left out, so the status document keeps its shape)."""
    name, state, url = found.get("name"), found.get("state"), found.get("url")
    check = {"name": name if isinstance(name, str) else "?",
             "state": state if isinstance(state, str) else "unknown"}
    return {**check, "url": url} if isinstance(url, str) else check
