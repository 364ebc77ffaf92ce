"""Every declared operation (:mod:`loopx.ops.declare`), looked up by its command's words or its
MCP tool's name. The declarations are in ``catalog_*`` modules by area, each imported when an
operation of it is first asked for: a warm `status` loads recovery's, not the evidence
operations' (and with them the capture of commands)."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Sequence
from typing import Optional

from loopx.errors import UsageError
from loopx.ops.declare import Operation

# The first word of each command, and the module that declares it.
AREAS = {
    **dict.fromkeys(("status", "next", "brief", "prime", "log", "diff", "validate", "sync",
                     "fetch", "push", "notify"), "loopx.ops.catalog_recovery"),
    **dict.fromkeys(("goal", "todo", "gate", "note", "notice"), "loopx.ops.catalog_plan"),
    **dict.fromkeys(("evidence", "run", "rerun", "wake", "quota", "effect", "session",
                     "config", "signer"), "loopx.ops.catalog_records"),
    "batch": "loopx.ops.batch",
}


def _area(module: str) -> list[Operation]:
    found: list[Operation] = importlib.import_module(module).OPERATIONS
    return found


@functools.lru_cache(maxsize=None)
def _by_name(module: str) -> dict[str, Operation]:
    return {op.name: op for op in _area(module)}


def find(name: str) -> Operation:
    """The operation of command ``name`` ("todo add")."""
    module = AREAS.get(name.split()[0]) if name.strip() else None
    found = _by_name(module).get(name) if module else None
    if found is None:
        raise UsageError(f"no operation {name!r}")
    return found


def lookup(words: Sequence[str]) -> tuple[Optional[Operation], int]:
    """The operation a command line names (its longest name among the line's first words) and
    how many words that name took; only the declarations of its area are loaded."""
    module = AREAS.get(words[0]) if words else None
    if module is None:
        return None, 0
    named = _by_name(module)
    for taken in range(min(len(words), 3), 0, -1):
        found = named.get(" ".join(words[:taken]))
        if found is not None:
            return found, taken
    return None, 0


@functools.lru_cache(maxsize=None)
def operations() -> list[Operation]:
    """Every declared operation (each area loaded)."""
    found = [op for module in dict.fromkeys(AREAS.values()) for op in _area(module)]
    names = [op.name for op in found]
    tools = [op.tool_name for op in found if op.tool_name]
    assert len(set(names)) == len(names) and len(set(tools)) == len(tools), "declared twice"
    return found


def tools() -> dict[str, Operation]:
    """The operations that are MCP tools, by tool name."""
    return {op.tool_name: op for op in operations() if op.tool_name}
