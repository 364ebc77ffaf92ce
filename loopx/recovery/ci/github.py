"""GitHub (or GitHub Enterprise) check runs and combined commit status for a commit.

REST endpoints (https://docs.github.com/en/rest/checks/runs and .../commits/statuses):
``GET /repos/{owner}/{repo}/commits/{sha}/check-runs`` and ``.../commits/{sha}/status``.
Token and API base as :mod:`loopx.recovery.githubapi` finds them (``GITHUB_TOKEN``, ``loopx.ci.githubApi``);
owner/repo from ``loopx.ci.githubRepo`` or the remote's URL.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from loopx.recovery import githubapi
from loopx.recovery.ci import CiStatus, Context, overall
from loopx.storage import gateway

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
    url = f"{githubapi.api_base(ctx.config)}/repos/{slug}/commits/{sha}"
    token = githubapi.token()
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


def _get(url: str, token: Optional[str], timeout: float) -> Any:
    client = githubapi.GitHub(api=url, token=token, timeout=timeout)
    try:
        return client.call("GET", "")
    except githubapi.GitHubError as exc:
        raise _Trouble(_unknown(str(exc), exc.code is not None)) from None


def _unknown(detail: str, http: bool) -> str:
    """A transport failure reads as "CI unknown (...)"; an HTTP one as GitHub's words."""
    return detail if http else f"CI unknown ({detail})"


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
