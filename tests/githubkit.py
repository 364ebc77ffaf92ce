"""A stand-in for the parts of GitHub's REST API loopx uses, on 127.0.0.1: issues, pull
requests and issue comments (reads and writes), with the shapes GitHub answers in.

Started and stopped by the ``github`` fixture; ``LOOPX_GITHUB_API`` points loopx at it.
``lose_answers`` makes the next N writes happen but answer 502, as a connection dropped after
GitHub acted would: what idempotency keys are for.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

WEB = "https://github.example"


class GitHubStandIn:
    def __init__(self) -> None:
        self.issues: dict[tuple[str, int], dict[str, Any]] = {}
        self.pulls: dict[tuple[str, int], dict[str, Any]] = {}
        self.comments: dict[int, dict[str, Any]] = {}  # id -> comment (+ "_issue": (slug, n))
        self.requests: list[dict[str, Any]] = []
        self.lose_answers = 0
        self.fail_with: int | None = None  # answer every request with this status
        self._next_id = 1000
        self._lock = threading.Lock()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                self.close_connection = True
                with stand_in._lock:
                    stand_in.requests.append({"method": method, "path": self.path,
                                              "headers": dict(self.headers), "body": body})
                    code, answer = stand_in.route(method, self.path, body)
                    if method != "GET" and stand_in.lose_answers and code < 300:
                        stand_in.lose_answers -= 1
                        code, answer = 502, {"message": "Bad Gateway"}
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                data = json.dumps(answer).encode()
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                self._serve("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

            def do_PATCH(self) -> None:  # noqa: N802
                self._serve("PATCH")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self._thread = threading.Thread(target=self.server.serve_forever,
                                        kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join()

    # --- the world ------------------------------------------------------------------------

    def add_issue(self, slug: str, number: int, *, state: str = "open", title: str = "An issue",
                  pull: bool = False, merged: bool = False, reviewers: int = 0) -> None:
        url = f"{WEB}/{slug}/{'pull' if pull else 'issues'}/{number}"
        issue = {"number": number, "state": state, "title": title, "html_url": url, "body": ""}
        if pull:
            issue["pull_request"] = {"url": url}
            self.pulls[(slug, number)] = {
                "number": number, "state": state, "merged": merged, "html_url": url,
                "requested_reviewers": [{"login": f"r{i}"} for i in range(reviewers)],
                "requested_teams": []}
        self.issues[(slug, number)] = issue

    def comments_on(self, slug: str, number: int) -> list[dict[str, Any]]:
        return [c for c in self.comments.values() if c["_issue"] == (slug, number)]

    def writes(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] != "GET"]

    # --- the API ------------------------------------------------------------------------------

    def route(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        if self.fail_with:
            return self.fail_with, {"message": "no"}
        parts = urlsplit(path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        for pattern, handler in self._routes():
            match = re.fullmatch(pattern, f"{method} {parts.path}")
            if match:
                return handler(*match.groups(), query=query, body=body)
        return 404, {"message": "Not Found"}

    def _routes(self) -> list[tuple[str, Any]]:
        slug = r"([^/]+/[^/]+)"
        return [
            (rf"GET /repos/{slug}/issues/(\d+)/comments", self._list_comments),
            (rf"POST /repos/{slug}/issues/(\d+)/comments", self._post_comment),
            (rf"PATCH /repos/{slug}/issues/comments/(\d+)", self._patch_comment),
            (rf"GET /repos/{slug}/issues/(\d+)", self._get_issue),
            (rf"GET /repos/{slug}/pulls/(\d+)", self._get_pull),
            (rf"GET /repos/{slug}/issues", self._list_issues),
            (rf"POST /repos/{slug}/issues", self._post_issue),
            (rf"POST /repos/{slug}/pulls", self._post_pull),
        ]

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _page(self, items: list[Any], query: dict[str, str]) -> tuple[int, Any]:
        size, page = int(query.get("per_page", 30)), int(query.get("page", 1))
        return 200, items[(page - 1) * size: page * size]

    def _get_issue(self, slug: str, n: str, **_: Any) -> tuple[int, Any]:
        found = self.issues.get((slug, int(n)))
        return (200, found) if found else (404, {"message": "Not Found"})

    def _get_pull(self, slug: str, n: str, **_: Any) -> tuple[int, Any]:
        found = self.pulls.get((slug, int(n)))
        return (200, found) if found else (404, {"message": "Not Found"})

    def _list_comments(self, slug: str, n: str, *, query: dict[str, str], **_: Any) -> tuple[int, Any]:
        if (slug, int(n)) not in self.issues:
            return 404, {"message": "Not Found"}
        shown = [{k: v for k, v in c.items() if k != "_issue"} for c in self.comments_on(slug, int(n))]
        return self._page(shown, query)

    def _post_comment(self, slug: str, n: str, *, body: Any, **_: Any) -> tuple[int, Any]:
        if (slug, int(n)) not in self.issues:
            return 404, {"message": "Not Found"}
        cid = self._new_id()
        comment = {"id": cid, "body": body["body"], "_issue": (slug, int(n)),
                   "html_url": f"{WEB}/{slug}/issues/{n}#issuecomment-{cid}"}
        self.comments[cid] = comment
        return 201, {k: v for k, v in comment.items() if k != "_issue"}

    def _patch_comment(self, slug: str, cid: str, *, body: Any, **_: Any) -> tuple[int, Any]:
        comment = self.comments.get(int(cid))
        if comment is None:
            return 404, {"message": "Not Found"}
        comment["body"] = body["body"]
        return 200, {k: v for k, v in comment.items() if k != "_issue"}

    def _list_issues(self, slug: str, *, query: dict[str, str], **_: Any) -> tuple[int, Any]:
        mine = sorted((i for (s, _), i in self.issues.items() if s == slug),
                      key=lambda i: -i["number"])
        return self._page(mine, query)

    def _post_issue(self, slug: str, *, body: Any, **_: Any) -> tuple[int, Any]:
        number = 1 + max([n for (s, n) in self.issues if s == slug], default=0)
        self.add_issue(slug, number, title=body["title"])
        self.issues[(slug, number)]["body"] = body.get("body", "")
        return 201, self.issues[(slug, number)]

    def _post_pull(self, slug: str, *, body: Any, **_: Any) -> tuple[int, Any]:
        number = 1 + max([n for (s, n) in self.issues if s == slug], default=0)
        self.add_issue(slug, number, title=body["title"], pull=True)
        self.issues[(slug, number)]["body"] = body.get("body", "")
        return 201, {**self.pulls[(slug, number)], "title": body["title"]}


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubStandIn]:
    server = GitHubStandIn()
    monkeypatch.setenv("LOOPX_GITHUB_API", server.url)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_sEcReT-token-0123456789")
    yield server
    server.close()
