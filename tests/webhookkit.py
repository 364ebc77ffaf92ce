"""A Slack-compatible webhook stand-in on 127.0.0.1 for `git loopx notify` and `watch
--notify`: it records each JSON body POSTed and answers ``status``. Started and stopped by the
``hook`` fixture."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest


class Hook:
    """A Slack-compatible webhook stand-in: records each JSON body; answers ``status``."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.status = 200
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers["Content-Length"])
                hook.received.append(json.loads(self.rfile.read(length)))
                self.send_response(hook.status)
                self.end_headers()
                self.wfile.write(b"ok" if hook.status == 200 else b"no")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/services/T0/B0/secret"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook() -> Iterator[Hook]:
    found = Hook()
    yield found
    found.close()
