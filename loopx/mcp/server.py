"""`git loopx mcp`: the Model Context Protocol server over stdio, on the official SDK's
low-level ``Server`` (each tool's input schema is derived from the model of its arguments,
itself derived from the declaration of its operation: see :mod:`loopx.mcp.tools`).

One long-lived process per repository. Every call re-reads the state ref, so a write by any
other process is seen by the next call (``Ledger.fold`` reloads when the tip moved; nothing
else is kept between calls). Errors come back as tool errors (``isError``) carrying the same
one-line message and ``kind`` as ``--format json``; only an unknown tool or resource is a
protocol error. stdout is the protocol: nothing else may reach it.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from dataclasses import dataclass
from typing import Any, Optional, TypeVar

from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import UriTemplate
from mcp.types import (
    INVALID_PARAMS, CallToolRequestParams, CallToolResult, ListResourcesResult,
    ListResourceTemplatesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceTemplate, TextContent,
    TextResourceContents, Tool, ToolAnnotations,
)
from loopx.errors import LoopxError, describe
from loopx.ledger.book import Ledger
from loopx.model import inert
from loopx.mcp import tools
from loopx.ops import goals, ledgers, status
from loopx.ops.worker import Worker
from loopx.version import __version__

log = logging.getLogger("loopx.mcp")
T = TypeVar("T")

INSTRUCTIONS = (
    "loopx keeps this repository's goals, todos, gates (questions for a named human) and "
    "evidence on the git branch loopx/state; it outlives your session. Start with `prime` (or "
    "read loopx://prime), then `next` with claim=true. Record results with `evidence_run`, "
    f"finish with `todo_done`; ask a human with `gate_open` instead of guessing. {tools.SAID}")
BRIEF = "loopx://brief"
PRIME = "loopx://prime"
GOAL = UriTemplate.parse("loopx://goal/{id}")


@dataclass
class Config:
    """What the server serves: one repository's ledger (opened in ``worker``), and the one
    identity it acts as (a call may name a sub-identity under it, nothing else)."""

    ledger: Ledger
    actor: str
    worker: Worker


def tool_list() -> list[Tool]:
    """Every tool as tools/list advertises it. No tool declares an output schema (the
    protocol makes it optional; each result is its JSON text and the same structured content):
    `status` had one, the whole of .loopx-schema/status.schema.json (28 KB, a quarter of the
    list in every session's context); that file stays its contract. A write says nothing of
    annotations: readOnlyHint is false unless said."""
    return [Tool(name=spec.name, description=spec.description, input_schema=spec.input_schema,
                 annotations=ToolAnnotations(read_only_hint=True) if spec.read_only else None)
            for spec in tools.TOOLS.values()]


def call(config: Config, name: str, arguments: Optional[dict[str, Any]]) -> CallToolResult:
    """Run tool ``name``; every failure is a tool error, never an exception."""
    try:
        ledgers.apply_spool(config.ledger, wait=ledgers.READ_WAIT_S)  # as every command does
        data = tools.call(config.ledger, config.actor, name, arguments)
    except Exception as exc:  # noqa: BLE001 - an exception here would be a protocol error
        if not isinstance(exc, LoopxError):
            log.exception("tool %s failed", name)
        return _error(*describe(exc))
    text = inert.json_text(data, separators=(",", ":"))  # compact: it goes into a context
    if "\\ud" in text:  # a lone surrogate, maybe (a forged file name not in UTF-8): unsendable
        data = inert.unicode_only(data)  # (it stopped the server)
        text = inert.json_text(data, separators=(",", ":"))
    return CallToolResult(content=[TextContent(text=text)],
                          structured_content=data)


def _error(kind: str, message: str, code: int) -> CallToolResult:
    # The text is one line (a message may quote a title or a question); the JSON is exact.
    doc = {"error": {"message": inert.bounded(message), "kind": kind, "exit_code": code}}
    return CallToolResult(content=[TextContent(text=inert.bounded(inert.line(message)))],
                          structured_content=doc, is_error=True)


def read(config: Config, uri: str) -> ReadResourceResult:
    """The brief, this actor's primer, or one goal."""
    ledgers.apply_spool(config.ledger, wait=ledgers.READ_WAIT_S)  # as every command does
    if uri == BRIEF:
        text, _ = status.brief(config.ledger, actor=config.actor)
        return _text(uri, text, "text/markdown")
    if uri == PRIME:
        return _text(uri, status.prime(config.ledger, actor=config.actor).markdown,
                     "text/markdown")
    found = GOAL.match(uri)
    if found is not None:
        try:
            goal = goals.show(config.ledger, str(found["id"]))
        except LoopxError as exc:
            raise MCPError(code=INVALID_PARAMS, message=inert.bounded(inert.line(str(exc))),
                           data={"uri": uri}) from None
        return _text(uri, inert.json_text(goal), "application/json")
    raise MCPError(code=INVALID_PARAMS, message=inert.bounded(inert.line(
        f"unknown resource {uri} (loopx serves {BRIEF}, {PRIME} and loopx://goal/ID)")),
        data={"uri": inert.bounded(uri)})


def _text(uri: str, text: str, mime: str) -> ReadResourceResult:
    return ReadResourceResult(contents=[TextResourceContents(uri=uri, text=inert.encodable(text),
                                                             mime_type=mime)])


def resources(config: Config) -> list[Resource]:
    """The brief, the primer, and each goal in play."""
    listed = [Resource(uri=BRIEF, name="brief", mime_type="text/markdown",
                       description="A Markdown handoff packet: next actions, goals, evidence"),
              Resource(uri=PRIME, name="prime", mime_type="text/markdown",
                       description="Your primer: the commands and what matters to you now")]
    if config.ledger.exists():
        listed += [Resource(uri=f"loopx://goal/{g.id}", name=f"goal {g.id}",
                            description=inert.md(g.title), mime_type="application/json")
                   for g in goals.listing(config.ledger)]
    return listed


def build(config: Config) -> Server[Any]:
    """The server: every call runs in the config's worker thread, one at a time."""
    serial = config.worker.run

    async def on_list_tools(ctx: ServerRequestContext[Any],
                            params: Optional[PaginatedRequestParams]) -> ListToolsResult:
        return ListToolsResult(tools=tool_list())

    async def on_call_tool(ctx: ServerRequestContext[Any],
                           params: CallToolRequestParams) -> CallToolResult:
        if params.name not in tools.TOOLS:
            raise MCPError(code=INVALID_PARAMS, message=inert.bounded(
                inert.line(f"unknown tool {params.name!r}")))
        result: CallToolResult = await serial(call, config, params.name, params.arguments)
        return result

    async def on_list_resources(ctx: ServerRequestContext[Any],
                                params: Optional[PaginatedRequestParams]) -> ListResourcesResult:
        return ListResourcesResult(resources=await serial(resources, config))

    async def on_list_resource_templates(
            ctx: ServerRequestContext[Any],
            params: Optional[PaginatedRequestParams]) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=[ResourceTemplate(
            uri_template=str(GOAL), name="goal", mime_type="application/json",
            description="One goal: its criteria with their evidence, its todos and gates")])

    async def on_read_resource(ctx: ServerRequestContext[Any],
                               params: ReadResourceRequestParams) -> ReadResourceResult:
        result: ReadResourceResult = await serial(read, config, params.uri)
        return result

    return Server("loopx", version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=on_list_tools, on_call_tool=on_call_tool,
                  on_list_resources=on_list_resources,
                  on_list_resource_templates=on_list_resource_templates,
                  on_read_resource=on_read_resource)


async def serve(config: Config) -> None:
    """Speak MCP on stdin/stdout until the client closes stdin."""
    server = build(config)
    async with stdio_server() as (read_stream, write_stream):
        # stdio_server points fd 1 at stderr while serving, but a stray print() sits in
        # Python's buffer and would reach the wire after it is restored (at exit).
        with contextlib.redirect_stdout(sys.stderr):
            await server.run(read_stream, write_stream, server.create_initialization_options())
