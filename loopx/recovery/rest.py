"""HTTP requests to services outside the repository (GitHub's REST API, an effect's ``http:``
readback): urllib only, JSON in and out, every request bounded in time.

Nothing here retries or decides: a failure is a :class:`Trouble` whose message a person can
act on, and the caller says what it means (CI unknown, an effect not confirmed yet).
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Optional


class Trouble(Exception):
    """Why a request got no usable answer; ``code`` is the HTTP status when there was one."""

    def __init__(self, message: str, code: Optional[int] = None,
                 headers: Optional[dict[str, str]] = None) -> None:
        super().__init__(message)
        self.code = code
        self.headers = headers or {}


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            raise Trouble("the answer is not JSON") from None


def split(url: str) -> urllib.parse.SplitResult:
    """``url``'s parts (scheme, host, path ...), for callers that must not import urllib."""
    return urllib.parse.urlsplit(url)


def request(method: str, url: str, *, headers: dict[str, str], timeout: float,
            body: Any = None) -> Response:
    """One request; ``body`` (when given) is sent as JSON. Raises :class:`Trouble`."""
    data = None if body is None else json.dumps(body).encode()
    if data is not None:
        headers = {**headers, "Content-Type": "application/json"}
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as answer:
            return Response(answer.status, {k.lower(): v for k, v in answer.headers.items()},
                            answer.read())
    except urllib.error.HTTPError as exc:
        raise Trouble(f"HTTP {exc.code}", exc.code,
                      {k.lower(): v for k, v in exc.headers.items()}) from None
    except (socket.timeout, TimeoutError):
        raise Trouble(f"timed out after {timeout:g}s") from None
    except (urllib.error.URLError, OSError, ValueError):
        raise Trouble("offline") from None
