"""Every declared operation (:mod:`loopx.ops.declare`), looked up by its command's words or its
MCP tool's name. The declarations are in ``catalog_*`` modules by area, each imported when an
operation of it is first asked for: a warm `status` loads recovery's, not the evidence
operations' (and with them the capture of commands)."""

from __future__ import annotations

import functools
import importlib

from loopx.errors import UsageError
from loopx.ops.declare import Operation

# The first word of each command, and the module that declares it.
AREAS = {
    **dict.fromkeys(("status", "next", "brief", "prime", "log", "diff", "validate", "sync",
                     "fetch", "push"), "loopx.ops.catalog_recovery"),
    **dict.fromkeys(("goal", "todo", "gate", "note", "notice"), "loopx.ops.catalog_plan"),
    **dict.fromkeys(("evidence", "run", "rerun", "wake", "quota", "effect", "session",
                     "config", "signer"), "loopx.ops.catalog_records"),
}


def _area(module: str) -> list[Operation]:
    found: list[Operation] = importlib.import_module(module).OPERATIONS
    return found


def find(name: str) -> Operation:
    """The operation of command ``name`` ("todo add")."""
    module = AREAS.get(name.split()[0]) if name.strip() else None
    for op in _area(module) if module else ():
        if op.name == name:
            return op
    raise UsageError(f"no operation {name!r}")


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
