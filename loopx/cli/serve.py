"""`git loopx mcp`: start the MCP server (docs/agents.md).

The server is the other interface (``loopx.mcp``, a sibling of this package that neither
imports); this command only checks that the MCP SDK is installed and hands the process over
to ``python -m loopx.mcp`` with the same repository, actor and state branch.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Optional

import click

from loopx.cli.app import App, pass_app
from loopx.errors import LoopxError

# The same sentence as loopx.mcp.HINT (not imported: the two interfaces are independent).
HINT = "the MCP server needs the MCP SDK: pip install 'mcp>=2.3,<3' (the [mcp] extra of git-loopx)"


@click.command()
@click.option("--actor", "as_actor", metavar="WHO", help="The one identity the server acts as "
              "(same as the global --actor; default $LOOPX_ACTOR; required).")
@pass_app
def mcp(app: App, as_actor: Optional[str]) -> None:
    """Serve this repository's ledger to an agent over the Model Context Protocol (stdio).

    Tools for a turn of work (status, next, todo_*, evidence_* (rerun too), gate_*, note_add,
    session_*, wake_*, quota_spend, prime) and resources (loopx://brief, loopx://prime, loopx://goal/ID);
    the server acts as one identity, --actor or $LOOPX_ACTOR (it refuses to start without
    one), and a call's `actor` argument may only name a sub-identity under it (WHO/NAME).
    Needs the MCP SDK (the [mcp] extra of git-loopx): pip install 'mcp>=2.3,<3'.
    """
    if importlib.util.find_spec("mcp") is None:
        raise LoopxError(HINT)
    argv = [sys.executable, "-m", "loopx.mcp", "-C", app.cwd]
    actor = as_actor or app.named_actor
    argv += ["--actor", actor] if actor else []  # without one, the server says how to name it
    argv += ["--state-ref", app.state_ref] if app.state_ref else []
    sys.stdout.flush()
    os.execv(sys.executable, argv)
