"""The MCP server's tools, derived from the declarations of the operations
(:mod:`loopx.ops.declare`, :mod:`loopx.ops.catalog`): one tool per agent operation, named for
its command (``todo add`` is ``todo_add``), with the command's parameters as its input schema
(plus ``actor``), validated by the same model batch lines are, and run by the same operation
the CLI runs. No rule lives here; results are the documents ``--format json`` prints (a list
under the key its declaration names).

Nothing here imports the MCP SDK: :mod:`loopx.mcp.server` wires these to the protocol.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Optional

from pydantic import BaseModel, Field, create_model

from loopx.ledger.book import Ledger
from loopx.model.limits import ACTOR_PATTERN
from loopx.ops import catalog, declare, ledgers

ACTOR_HELP = ("who is acting: the server's identity (its --actor, the default) or a "
              "sub-identity under it, e.g. agent:claude@laptop/worker-2; any other name is "
              "refused")


@dataclass(frozen=True)
class Tool:
    """One tool: its name, what it says of itself, and the operation it runs."""

    name: str
    description: str
    op: declare.Operation

    @property
    def read_only(self) -> bool:
        return not self.op.writes

    @property
    def args(self) -> type[BaseModel]:
        """The input schema's model: the operation's arguments and ``actor``."""
        return _args(self.op)


@functools.lru_cache(maxsize=None)
def _args(op: declare.Operation) -> type[BaseModel]:
    model: type[BaseModel] = create_model(
        f"{declare.model(op).__name__}Tool", __base__=declare.model(op),
        actor=(Optional[str], Field(default=None, pattern=ACTOR_PATTERN, description=ACTOR_HELP)))
    return model


def _tools() -> dict[str, Tool]:
    return {name: Tool(name, op.description(), op) for name, op in catalog.tools().items()}


TOOLS: dict[str, Tool] = _tools()


def call(ledger: Ledger, principal: str, name: str, arguments: Optional[dict[str, Any]]) -> Any:
    """Run tool ``name`` as ``principal`` (or the sub-identity under it a call names: the one
    rule every tool keeps, checked before anything else); its answer as JSON values
    (:func:`loopx.model.typed.plain`, as `--format json` prints it)."""
    tool = TOOLS[name]
    raw = dict(arguments or {})
    who = ledgers.within(principal, raw.pop("actor", None))
    values = declare.validate(tool.op, raw, what=name)
    where = str(ledger.repo.work_tree or ledger.repo.cwd)
    # quiet: a command run's output goes nowhere (stdout is the protocol), its tail is kept.
    found = tool.op.run(declare.Call(values, ledger, lambda: who, cwd=where, quiet=True))
    doc = tool.op.document(found)
    return {tool.op.wrap or "items": doc} if isinstance(doc, list) else doc

