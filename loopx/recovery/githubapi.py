"""GitHub's REST API: the state of an issue or pull request (a link's), and the three writes
loopx makes there — open an issue, open a pull request, post or update a comment.

Every write carries an idempotency key, written into what it creates as a hidden marker
(``<!-- loopx-effect: KEY -->``); before writing, the client looks for the marker and answers
with what it finds, so a retry never posts twice. Each write answers with a :class:`Receipt`
(the URL created) and has a readback (:func:`GitHub.find_comment`, :func:`GitHub.find_item`)
that finds it again by its key.

The API base is ``$LOOPX_GITHUB_API``, else ``git config loopx.github.api`` (or the CI
provider's ``loopx.ci.githubApi``), else https://api.github.com. The token comes from
``$GITHUB_TOKEN`` (else ``gh auth token``); it is sent in a header and kept nowhere: the
ledger never sees it (docs/security.md).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from loopx.errors import LoopxError
from loopx.recovery import rest

DEFAULT_API = "https://api.github.com"
API_ENV = "LOOPX_GITHUB_API"
LINK_PATTERN = r"^github:[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}#[1-9][0-9]{0,9}$"
_LINK = re.compile(r"github:([A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100})(?:#([1-9][0-9]{0,9}))?")
PAGE = 100
MAX_PAGES = 10  # a readback looks at the newest 1000 comments or issues, no further
LINK_STATES = ("open", "closed", "merged", "review requested", "unknown")


class GitHubError(LoopxError):
    """GitHub gave no usable answer; the message says what to check."""

    def __init__(self, message: str, code: Optional[int] = None) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Receipt:
    """What a write made (or found already made by an earlier try of the same key)."""

    url: str  # html_url: what a person opens
    id: int  # a comment's id, an issue's or pull request's number
    created: bool  # False: found by its key, nothing new was written


def parse(target: str) -> tuple[str, Optional[int]]:
    """``github:OWNER/REPO#N`` -> ("OWNER/REPO", N); ``github:OWNER/REPO`` -> (.., None)."""
    match = _LINK.fullmatch(target.strip())
    if not match:
        raise GitHubError(f"{target!r} is not github:OWNER/REPO#N")
    return match.group(1), int(match.group(2)) if match.group(2) else None


def marker(key: str) -> str:
    """The hidden line that carries an idempotency key in a body GitHub renders."""
    return f"<!-- loopx-effect: {key.replace('--', '-_-')} -->"


def carries(body: Any, key: str) -> bool:
    """Whether ``body`` holds ``key``'s marker on a line of its own, as loopx writes it: text
    quoted from elsewhere (a todo's title in a state diff, always inside a code span or a
    list item) cannot pass for it."""
    mark = marker(key)
    return isinstance(body, str) and any(ln.strip() == mark for ln in body.splitlines())


def token(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The token: ``$GITHUB_TOKEN``, else what ``gh auth token`` prints, else None."""
    environ = os.environ if environ is None else environ
    if environ.get("GITHUB_TOKEN"):
        return environ["GITHUB_TOKEN"]
    try:
        proc = subprocess.run(["gh", "auth", "token"], capture_output=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (proc.stdout.decode().strip() or None) if proc.returncode == 0 else None


def api_base(config: Mapping[str, str], environ: Optional[Mapping[str, str]] = None) -> str:
    environ = os.environ if environ is None else environ
    base = (environ.get(API_ENV) or config.get("loopx.github.api")
            or config.get("loopx.ci.githubapi") or DEFAULT_API)
    return base.rstrip("/")


def detail(exc: rest.Trouble) -> str:
    """What a failed request means, in words a person can act on."""
    if exc.code == 401:
        return "unauthorised (401): set GITHUB_TOKEN or run `gh auth login`"
    if exc.code == 429 or (exc.code == 403 and exc.headers.get("x-ratelimit-remaining") == "0"):
        return "rate limited by GitHub; try again later"
    if exc.code == 404:
        return "not found (404): check the repository and the token's access"
    if exc.code is not None:
        return f"HTTP {exc.code} from GitHub"
    return str(exc)


class GitHub:
    """A client for one API base, with one token, every request bounded by ``timeout``."""

    def __init__(self, *, api: str = DEFAULT_API, token: Optional[str] = None,
                 timeout: float = 5.0) -> None:
        self.api = api.rstrip("/")
        self._token = token
        self.timeout = timeout

    @classmethod
    def configured(cls, config: Mapping[str, str], *, timeout: float = 5.0) -> GitHub:
        """The client the environment and git config describe."""
        return cls(api=api_base(config), token=token(), timeout=timeout)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """One REST call; the decoded JSON answer. Raises :class:`GitHubError`."""
        headers = {"Accept": "application/vnd.github+json", "User-Agent": "loopx",
                   "X-GitHub-Api-Version": "2022-11-28"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        try:
            return rest.request(method, self.api + path, headers=headers, body=body,
                                timeout=self.timeout).json()
        except rest.Trouble as exc:
            raise GitHubError(detail(exc), exc.code) from None

    def _pages(self, path: str) -> Iterator[dict[str, Any]]:
        joiner = "&" if "?" in path else "?"
        for page in range(1, MAX_PAGES + 1):
            found = self.call("GET", f"{path}{joiner}per_page={PAGE}&page={page}")
            if not isinstance(found, list):
                raise GitHubError(f"GitHub answered {path} with something that is not a list")
            yield from (item for item in found if isinstance(item, dict))
            if len(found) < PAGE:
                return

    # --- reads ---------------------------------------------------------------------------------

    def link_state(self, slug: str, number: int) -> dict[str, Any]:
        """An issue's or pull request's state: open, closed, merged or review requested."""
        issue = self.call("GET", f"/repos/{slug}/issues/{number}") or {}
        state = "closed" if issue.get("state") == "closed" else "open"
        kind = "issue"
        if issue.get("pull_request"):
            kind = "pull"
            pull = self.call("GET", f"/repos/{slug}/pulls/{number}") or {}
            if pull.get("merged") or pull.get("merged_at"):
                state = "merged"
            elif state == "open" and (pull.get("requested_reviewers") or pull.get("requested_teams")):
                state = "review requested"
        return {"state": state, "kind": kind, "title": _text(issue.get("title")),
                "url": _text(issue.get("html_url"))}

    def find_comment(self, slug: str, number: int, key: str) -> Optional[dict[str, Any]]:
        """The comment on issue or pull request ``number`` that carries ``key``'s marker."""
        return next((c for c in self._pages(f"/repos/{slug}/issues/{number}/comments")
                     if carries(c.get("body"), key)), None)

    def find_item(self, slug: str, key: str) -> Optional[dict[str, Any]]:
        """The issue or pull request (newest first) whose body carries ``key``'s marker."""
        return next((i for i in self._pages(
            f"/repos/{slug}/issues?state=all&sort=created&direction=desc")
            if carries(i.get("body"), key)), None)

    # --- writes (each idempotent by its key) ---------------------------------------------------

    def comment(self, slug: str, number: int, body: str, *, key: str,
                update: bool = False) -> Receipt:
        """Post ``body`` as a comment; when one with ``key`` exists already, leave it (or with
        ``update``, replace its body) instead of posting a second."""
        text = f"{body}\n\n{marker(key)}"
        found = self.find_comment(slug, number, key)
        if found is not None:
            if update and found.get("body") != text:
                found = self.call("PATCH", f"/repos/{slug}/issues/comments/{found['id']}",
                                  {"body": text}) or found
            return _receipt(found, "id", created=False)
        return _receipt(self.call("POST", f"/repos/{slug}/issues/{number}/comments",
                                  {"body": text}), "id", created=True)

    def open_issue(self, slug: str, title: str, body: str, *, key: str) -> Receipt:
        """Open an issue, unless one with ``key`` exists already."""
        found = self.find_item(slug, key)
        if found is not None:
            return _receipt(found, "number", created=False)
        return _receipt(self.call("POST", f"/repos/{slug}/issues",
                                  {"title": title, "body": f"{body}\n\n{marker(key)}"}),
                        "number", created=True)

    def open_pull(self, slug: str, title: str, body: str, *, head: str, base: str,
                  key: str) -> Receipt:
        """Open a pull request from ``head`` into ``base``, unless one with ``key`` exists."""
        found = self.find_item(slug, key)
        if found is not None:
            return _receipt(found, "number", created=False)
        return _receipt(self.call("POST", f"/repos/{slug}/pulls", {
            "title": title, "head": head, "base": base, "body": f"{body}\n\n{marker(key)}"}),
            "number", created=True)


def _receipt(found: Any, id_field: str, *, created: bool) -> Receipt:
    if not isinstance(found, dict) or not isinstance(found.get("html_url"), str):
        raise GitHubError("GitHub's answer has no html_url")
    return Receipt(found["html_url"], int(found.get(id_field) or 0), created)


def _text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None
