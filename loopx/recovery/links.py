"""The state of the issues and pull requests goals and todos link to (``--link
github:OWNER/REPO#N``), read through the GitHub provider for status's environment.

Cached like CI, per link under the common git dir (``loopx/link-cache/``): a minute while it
is open, longer once closed or merged. Never fatal and never written into the ledger: no
network, a timeout or an HTTP error give state ``unknown`` with a detail; after the first
link GitHub does not answer, the rest are not asked (each would wait its timeout too).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from loopx.recovery import githubapi
from loopx.storage import files, gateway

OPEN_TTL_S = 60
FINAL_TTL_S = 600  # closed or merged: it seldom changes back
MAX_LINKS = 50  # links one status reads; the rest are shown unknown


def linked(snapshot: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each link in the snapshot -> the goals and todos that link to it, in snapshot order."""
    found: dict[str, list[str]] = {}
    for kind in ("goals", "todos"):
        for entity in snapshot.get(kind, []):
            for link in entity.get("links") or ():
                found.setdefault(link, []).append(entity["id"])
    return found


def states(snapshot: Mapping[str, Any], *, repo: gateway.Repo, config: Mapping[str, str],
           offline: bool = False, client: Optional[githubapi.GitHub] = None
           ) -> dict[str, dict[str, Any]]:
    """``{link: {state, kind, title, url, detail, by}}`` for every link in ``snapshot``."""
    wanted = linked(snapshot)
    if not wanted:
        return {}
    result: dict[str, dict[str, Any]] = {}
    silent: Optional[str] = None  # why GitHub is not asked again in this status
    for n, (link, by) in enumerate(wanted.items()):
        path = _cache_path(repo, link)
        found = _load(path, offline=offline or silent is not None)
        if found is None:
            if offline or silent or n >= MAX_LINKS:
                why = "offline" if offline else silent or f"more than {MAX_LINKS} links"
                found = _unknown(f"not read ({why})")
            else:
                client = client or githubapi.GitHub.configured(config, timeout=_timeout(config))
                found = _read(client, link)
                if found["state"] == "unknown" and "HTTP" not in str(found["detail"]):
                    silent = f"GitHub did not answer for {link}"
                else:
                    _save(path, found)
        result[link] = {**found, "by": by}
    return result


def _read(client: githubapi.GitHub, link: str) -> dict[str, Any]:
    try:
        slug, number = githubapi.parse(link)
        if number is None:
            raise githubapi.GitHubError(f"{link} names no issue or pull request")
        return {**client.link_state(slug, number), "detail": None}
    except githubapi.GitHubError as exc:
        return _unknown(str(exc))


def _unknown(detail: str) -> dict[str, Any]:
    return {"state": "unknown", "kind": None, "title": None, "url": None, "detail": detail}


def _timeout(config: Mapping[str, str]) -> float:
    try:
        return float(config.get("loopx.ci.timeout", 5.0))
    except ValueError:
        return 5.0


def _cache_path(repo: gateway.Repo, link: str) -> Path:
    return repo.loopx_dir / "link-cache" / f"{hashlib.sha1(link.encode()).hexdigest()[:20]}.json"


_KEYS = {"state", "kind", "title", "url", "detail"}


def _load(path: Path, *, offline: bool) -> Optional[dict[str, Any]]:
    """A cached state still within its time to live (any age when offline); derived data,
    so anything not of the documented shape is ignored."""
    try:
        doc = json.loads(files.read(path, 1 << 20))  # one pull request's state
        found, at = doc["state"], float(doc["at"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if (not isinstance(found, dict) or set(found) != _KEYS
            or found["state"] not in githubapi.LINK_STATES
            or not all(v is None or isinstance(v, str) for v in found.values())):
        return None
    ttl = FINAL_TTL_S if found["state"] in ("closed", "merged") else OPEN_TTL_S
    return found if offline or time.time() - at < ttl else None


def _save(path: Path, found: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        files.replace(path, json.dumps({"at": time.time(), "state": found}).encode())
    except OSError:
        pass  # a cache we cannot write only costs another request
