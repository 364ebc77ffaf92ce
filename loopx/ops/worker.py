"""The one thread every ledger call of a long-running server runs in, one call at a time (the
MCP server, the web page): the ledger's SQLite cache may only be used by the thread that
opened it, and the event loop stays free (pings during a long `evidence_run`, the page's
server-sent events)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

T = TypeVar("T")


class Worker:
    def __init__(self, name: str) -> None:
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` in the worker and wait for it (outside the event loop)."""
        return self.pool.submit(fn, *args).result()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` in the worker; the event loop goes on meanwhile."""
        return await asyncio.wrap_future(self.pool.submit(fn, *args))
