"""``python -m loopx.mcp [-C PATH] [--actor WHO] [--state-ref REF]``: what `git loopx mcp`
runs. Without the MCP SDK installed it says how to install it, in one line."""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
from typing import Optional

from loopx.errors import LoopxError
from loopx.mcp import HINT
from loopx.ops import ledgers


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="git loopx mcp", description=(
        "The loopx MCP server over stdio, for one repository (docs/agents.md)."))
    parser.add_argument("-C", dest="cwd", default=".", metavar="PATH",
                        help="the repository (default: the current directory)")
    parser.add_argument("--actor", default=os.environ.get("LOOPX_ACTOR"), help=(
        "who acts when a call does not say (default: $LOOPX_ACTOR, else human:<git "
        "user.email>)"))
    parser.add_argument("--state-ref", default=os.environ.get("LOOPX_STATE_REF"), metavar="REF",
                        help="serve this state branch instead of loopx/state")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("mcp") is None:
        print(f"error: {HINT}", file=sys.stderr)
        return 1
    # Imported once the SDK is known to be there: the server module (and anyio) need it.
    import anyio

    from loopx.mcp import server

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="loopx mcp: %(levelname)s %(message)s")
    worker = server.Worker()
    try:
        os.chdir(args.cwd)  # `evidence_run` runs commands where the repository is, as git -C
        ledger = worker.call(lambda: ledgers.open_ledger(".", ref=args.state_ref))
        actor = args.actor or _default_actor()
    except LoopxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        anyio.run(server.serve, server.Config(ledger, actor, worker))
    finally:
        worker.call(ledger.close)
    return 0


def _default_actor() -> Optional[str]:
    try:
        return ledgers.actor(".")
    except LoopxError:
        return None  # each call must then name its actor


if __name__ == "__main__":
    sys.exit(main())
