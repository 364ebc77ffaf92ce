"""The MCP server, an interface beside the CLI: `git loopx mcp` (docs/agents.md).

:mod:`loopx.mcp.tools` holds the tools (argument models and bodies that call the operations);
:mod:`loopx.mcp.server` wires them to the official MCP SDK, an optional dependency.
"""

HINT = "the MCP server needs the MCP SDK: pip install 'mcp>=2.3,<3' (the [mcp] extra of git-loopx)"
