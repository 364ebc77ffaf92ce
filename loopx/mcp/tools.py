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
from loopx.model import ids, limits
from loopx.ops import catalog, declare, ledgers

# Said on every tool, so in few words (the rule: docs/agents.md); its pattern is checked by
# ledgers.within rather than advertised.
ACTOR_HELP = "Default: the server's identity; or IDENTITY/NAME under it."
# What many arguments of many tools share is said once, in the server's instructions (SAID),
# rather than on each argument: the id and event-id patterns (each with the length it already
# bounds) and event_id's help. The models still check every call against the patterns.
SAID_ONCE = {limits.ID_PATTERN: "maxLength", ids.ULID_RE.pattern: None}
SAID_HELP = {declare.EVENT_ID.help}
SAID = (f"An id (of a goal, todo, gate, ...) matches {limits.ID_PATTERN} or is a unique prefix "
        f"of one. Every write takes `event_id`, matching {ids.ULID_RE.pattern}: "
        f"{declare.EVENT_ID.help} Leave `actor` out to act as the server's identity.")
NULL = {"type": "null"}
# What tools/list may weigh, in bytes (tests/mcp/test_server.py; benchmarks/bench_tools.py):
# a client puts all of it into the agent's context at the start of every session.
BUDGET = 64_000


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

    @property
    def input_schema(self) -> dict[str, Any]:
        """What tools/list says of the arguments: see :func:`input_schema`."""
        return input_schema(self.args)


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A tool's input schema: the JSON Schema of its arguments' model with references inlined
    (clients up to protocol 2025-11-25 read only type/properties/required reliably) and
    without what tells an agent nothing (:func:`_terse`). The list of tools goes into every
    agent's context at the start of every session, so each byte of it is paid for there. The
    model still validates each call: what the schema leaves out is accepted or refused as
    before."""
    doc = model.model_json_schema(by_alias=True)
    defs = doc.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, list):
            return [inline(v) for v in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return inline(defs[node["$ref"].rsplit("/", 1)[1]])
        return _terse({k: ({name: inline(p) for name, p in v.items()} if k == "properties"
                           else inline(v)) for k, v in node.items()})

    return {"properties": {}, **inline(doc)}


def _terse(node: dict[str, Any]) -> dict[str, Any]:
    """One schema node less what says nothing to an agent: the title pydantic makes of each
    name ("todo" titled "Todo": a tenth of the list); an optional argument's null alternative
    with its null default (``anyOf: [X, {type: null}], default: null``: leaving it out says the
    same; another tenth); a flag's default false; a pattern or a help said once (:data:`SAID`)."""
    node = {k: v for k, v in node.items() if k != "title"
            and not (k == "description" and v in SAID_HELP)}
    if node.get("pattern") in SAID_ONCE:
        said = ("pattern", SAID_ONCE[node["pattern"]])
        node = {k: v for k, v in node.items() if k not in said}
    if node.get("type") == "boolean" and node.get("default") is False:
        del node["default"]
    choices = node.get("anyOf")
    if ("default" in node and node["default"] is None and isinstance(choices, list)
            and len(choices) == 2 and NULL in choices):
        rest = {k: v for k, v in node.items() if k not in ("anyOf", "default")}
        node = {**next(c for c in choices if c != NULL), **rest}
    return node


@functools.lru_cache(maxsize=None)
def _args(op: declare.Operation) -> type[BaseModel]:
    model: type[BaseModel] = create_model(
        f"{declare.model(op).__name__}Tool", __base__=declare.model(op),
        actor=(Optional[str], Field(default=None, description=ACTOR_HELP)))
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

