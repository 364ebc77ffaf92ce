"""GitHub (or GitHub Enterprise) check runs and combined commit status for a commit.

REST endpoints (https://docs.github.com/en/rest/checks/runs and .../commits/statuses):
``GET /repos/{owner}/{repo}/commits/{sha}/check-runs`` and ``.../commits/{sha}/status``.
Token from ``GITHUB_TOKEN`` or ``gh auth token``; API base from ``loopx.ci.githubApi``;
owner/repo from ``loopx.ci.githubRepo`` or the remote's URL. urllib only: no new dependency.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import urllib.error
import urllib.request
from typing import Any, Optional

from loopx.storage import gateway
from loopx.recovery.ci import CiStatus, Context, overall

DEFAULT_API = "https://api.github.com"
_REMOTE_RE = re.compile(r"[:/]([^/:]+)/([^/]+?)(?:\.git)?/?$")

# check-run conclusion -> our state (https://docs.github.com/en/rest/checks/runs)
_CONCLUSION = {"success": "success", "neutral": "success", "skipped": "success"}
_STATUS = {"success": "success", "pending": "pending", "failure": "failure", "error": "failure"}


class _Trouble(Exception):
    """Why we could not get an answer; its message is the status detail."""


def check(sha: str, *, ctx: Context) -> CiStatus:
    """Check runs and commit statuses for ``sha``, combined; never raises."""
    slug = repository(ctx)
    if slug is None:
        return CiStatus("github", "unknown", detail="cannot tell the GitHub repository: "
                        "set git config loopx.ci.githubRepo OWNER/REPO")
    base = ctx.config.get("loopx.ci.githubapi", DEFAULT_API).rstrip("/")
    url = f"{base}/repos/{slug}/commits/{sha}"
    token = _token()
    try:
        runs = _get(f"{url}/check-runs?per_page=100", token, ctx.timeout)
        combined = _get(f"{url}/status", token, ctx.timeout)
    except _Trouble as exc:
        return CiStatus("github", "unknown", detail=str(exc))
    checks = _runs(runs) + _statuses(combined)
    state = overall([c["state"] for c in checks])
    detail = None if checks else f"no checks reported for {sha[:12]} yet"
    return CiStatus("github", state, checks, detail)


def repository(ctx: Context) -> Optional[str]:
    """``owner/repo`` from config, else from the remote's URL."""
    configured = ctx.config.get("loopx.ci.githubrepo")
    if configured:
        return configured.strip("/")
    remote = ctx.config.get("loopx.remote", "origin")
    url = gateway.out(ctx.repo.cwd, "config", "--get", f"remote.{remote}.url", check=False)
    match = _REMOTE_RE.search(url.strip()) if url else None
    return f"{match.group(1)}/{match.group(2)}" if match else None


def _token() -> Optional[str]:
    if os.environ.get("GITHUB_TOKEN"):
        return os.environ["GITHUB_TOKEN"]
    try:
        proc = subprocess.run(["gh", "auth", "token"], capture_output=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def _get(url: str, token: Optional[str], timeout: float) -> Any:
    headers = {"Accept": "application/vnd.github+json", "User-Agent": "loopx",
               "X-GitHub-Api-Version": "2022-11-28"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                    timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise _Trouble(_http_detail(exc)) from None
    except (socket.timeout, TimeoutError):
        raise _Trouble(f"CI unknown (timed out after {timeout:g}s)") from None
    except (urllib.error.URLError, OSError):
        raise _Trouble("CI unknown (offline)") from None
    except ValueError:
        raise _Trouble("CI unknown (GitHub answered with something that is not JSON)") from None


def _http_detail(exc: urllib.error.HTTPError) -> str:
    if exc.code == 401:
        return "unauthorised (401): set GITHUB_TOKEN or run `gh auth login`"
    if exc.code == 429 or (exc.code == 403 and exc.headers.get("x-ratelimit-remaining") == "0"):
        return "rate limited by GitHub; try again later"
    if exc.code == 404:
        return "not found (404): check loopx.ci.githubRepo and the token's access"
    return f"HTTP {exc.code} from GitHub"


def _runs(doc: Any) -> list[dict[str, Any]]:
    checks = []
    for run in (doc or {}).get("check_runs", []):
        if run.get("status") != "completed":
            state = "pending"
        else:
            state = _CONCLUSION.get(run.get("conclusion") or "", "failure")
        checks.append({"name": run.get("name", "?"), "state": state, "url": run.get("html_url")})
    return checks


def _statuses(doc: Any) -> list[dict[str, Any]]:
    return [
        {"name": s.get("context", "?"), "state": _STATUS.get(s.get("state", ""), "unknown"),
         "url": s.get("target_url")}
        for s in (doc or {}).get("statuses", [])
    ]
