"""``python -m loopx.web [-C PATH] --actor WHO [--state-ref REF] [--port N]``: what
`git loopx web` runs. Serves on 127.0.0.1 only and prints the URL, token included, once it
listens. Without Starlette and uvicorn installed it says how to install them, in one line."""

from __future__ import annotations

import argparse
import asyncio
import errno
import importlib.util
import os
import socket
import sys
from typing import TYPE_CHECKING, Optional

from loopx.errors import LoopxError
from loopx.ops import ledgers
from loopx.web import HINT

if TYPE_CHECKING:
    import uvicorn

HOST = "127.0.0.1"  # never another interface: the page answers gates as you


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="git loopx web", description=(
        "The loopx web page on 127.0.0.1 for one repository (docs/web.md)."))
    parser.add_argument("-C", dest="cwd", default=".", metavar="PATH")
    parser.add_argument("--actor", required=True, help="the one identity the page acts as")
    parser.add_argument("--state-ref", default=None, metavar="REF")
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    args = parser.parse_args(argv)
    if any(importlib.util.find_spec(m) is None for m in ("starlette", "uvicorn")):
        print(f"error: {HINT}", file=sys.stderr)
        return 1
    # Imported once they are known to be there.
    import uvicorn

    from loopx.ops.worker import Worker
    from loopx.web import server

    worker = Worker("loopx-web")
    try:
        os.chdir(args.cwd)
        ledger = worker.call(lambda: ledgers.open_ledger(".", ref=args.state_ref))
        worker.call(ledger.require)
    except LoopxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        sock = _listen(args.port)
    except OSError as exc:
        worker.call(ledger.close)
        print(f"error: {_refused(args.port, exc)}", file=sys.stderr)
        return 1
    config = server.Config(ledger, args.actor, worker, server.new_token(), os.getcwd())
    web = uvicorn.Server(uvicorn.Config(
        server.build(config), host=HOST, port=args.port, log_level="warning",
        access_log=False, timeout_graceful_shutdown=1, lifespan="off"))
    try:
        asyncio.run(_serve(web, config.token, sock))
    except KeyboardInterrupt:
        pass
    finally:
        worker.call(ledger.close)
    return 0


def _listen(port: int) -> socket.socket:
    """The page's socket, bound here (as uvicorn would bind it) so that a port already in use
    is one line, not uvicorn's traceback of its own start-up failure (exit 3)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
    except OSError:
        sock.close()
        raise
    return sock


def _refused(port: int, exc: OSError) -> str:
    why = exc.strerror or str(exc)
    if exc.errno == errno.EADDRINUSE:
        return (f"port {port} on {HOST} is in use ({why}): give another --port, or none for "
                "a free one")
    return f"cannot listen on {HOST}:{port} ({why})"


async def _serve(web: uvicorn.Server, token: str, sock: socket.socket) -> None:
    task = asyncio.create_task(web.serve(sockets=[sock]))
    while not web.started and not task.done():
        await asyncio.sleep(0.05)
    if web.started:
        port = web.servers[0].sockets[0].getsockname()[1]
        print(f"loopx web: serving http://{HOST}:{port}/?token={token}", flush=True)
        print("loopx web: press Ctrl-C to stop", file=sys.stderr, flush=True)
    await task


if __name__ == "__main__":
    sys.exit(main())
