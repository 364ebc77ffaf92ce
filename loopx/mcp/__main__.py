"""``python -m loopx.mcp [-C PATH] [--actor WHO] [--state-ref REF]``: what `git loopx mcp`
runs. Without the MCP SDK installed it says how to install it, in one line."""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import re
import sys
from typing import Optional

from loopx.errors import LoopxError
from loopx.mcp import HINT
from loopx.model.payloads.base import ACTOR_PATTERN
from loopx.ops import ledgers

# One principal per process: a server acts as the identity it was started with, never as
# whoever git's user.email names (that would make every agent the human).
NO_ACTOR = ("the MCP server acts as one identity and none was named: start it as "
            "`git loopx --actor agent:NAME@HOST mcp` (or set LOOPX_ACTOR)")
BAD_ACTOR = "--actor {!r} is not an identity: give KIND:NAME, e.g. agent:claude@laptop"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="git loopx mcp", description=(
        "The loopx MCP server over stdio, for one repository (docs/agents.md)."))
    parser.add_argument("-C", dest="cwd", default=".", metavar="PATH",
                        help="the repository (default: the current directory)")
    parser.add_argument("--actor", default=os.environ.get("LOOPX_ACTOR"), help=(
        "the one identity the server acts as (default: $LOOPX_ACTOR; required); a call may "
        "name a sub-identity under it, WHO/NAME"))
    parser.add_argument("--state-ref", default=os.environ.get("LOOPX_STATE_REF"), metavar="REF",
                        help="serve this state branch instead of loopx/state")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("mcp") is None:
        print(f"error: {HINT}", file=sys.stderr)
        return 1
    if not args.actor or not re.fullmatch(ACTOR_PATTERN, args.actor):
        print(f"error: {NO_ACTOR if not args.actor else BAD_ACTOR.format(args.actor)}",
              file=sys.stderr)
        return 1
    # Imported once the SDK is known to be there: the server module (and anyio) need it.
    import anyio

    from loopx.mcp import server
    from loopx.ops.worker import Worker

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="loopx mcp: %(levelname)s %(message)s")
    worker = Worker("loopx-mcp")
    try:
        os.chdir(args.cwd)  # `evidence_run` runs commands where the repository is, as git -C
        ledger = worker.call(lambda: ledgers.open_ledger(".", ref=args.state_ref))
    except LoopxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        anyio.run(server.serve, server.Config(ledger, args.actor, worker))
    finally:
        worker.call(ledger.close)
    return 0


if __name__ == "__main__":
    sys.exit(main())
