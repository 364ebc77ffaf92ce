"""CI status for a commit, through the provider named by ``git config loopx.ci.provider``.

One module per provider (``github``, ``command``, ``ledger``), each with
``check(sha, *, ctx) -> CiStatus``. Nothing here is ever fatal: no network, a timeout, an HTTP
error or a broken command all give state ``unknown`` with a detail a person can read. Results
are cached per commit under the common git dir (``loopx/ci-cache/``): briefly while CI is
pending or unknown, longer once it has finished.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from loopx.storage import files, gateway

STATES = ("success", "failure", "pending", "unknown")
PROVIDERS = {"github": "loopx.recovery.ci.github", "command": "loopx.recovery.ci.command", "ledger": "loopx.recovery.ci.recorded"}
DEFAULT_TIMEOUT_S = 5.0
PENDING_TTL_S = 60  # pending or unknown: ask again soon
FINAL_TTL_S = 24 * 3600  # success or failure of one commit does not change (re-runs aside)


@dataclass
class CiStatus:
    """The CI verdict for one commit."""

    provider: str
    state: str  # success | failure | pending | unknown
    checks: list[dict[str, Any]] = field(default_factory=list)  # {name, state, url?}
    detail: Optional[str] = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Context:
    """What a provider may use: the repository, loopx git config, the ledger snapshot."""

    repo: gateway.Repo
    config: dict[str, str]
    snapshot: dict[str, Any]
    timeout: float


def overall(states: list[str]) -> str:
    """One state for many checks: any failure fails, then any pending waits."""
    if not states:
        return "unknown"
    for verdict in ("failure", "pending", "unknown"):
        if verdict in states:
            return verdict
    return "success"


def check(sha: str, *, provider: str, repo: gateway.Repo, config: dict[str, str],
          snapshot: dict[str, Any], offline: bool = False, fresh: bool = False) -> CiStatus:
    """CI status of ``sha``; cached, and ``unknown`` rather than an error when anything fails.

    ``fresh`` asks the provider even when a pending result is cached (a final one still
    counts): what a waiter polling for CI to finish needs.
    """
    module_name = PROVIDERS.get(provider)
    if module_name is None:
        return CiStatus(provider, "unknown", detail=f"unknown CI provider {provider!r} "
                        f"(loopx.ci.provider is one of {', '.join(PROVIDERS)})")
    cache = None if provider == "ledger" else _cache_path(repo, provider, sha)
    cached = _load(cache, offline=offline)
    if fresh and not offline and cached is not None and cached.state not in ("success", "failure"):
        cached = None
    if cached is not None:
        return cached
    if offline and provider != "ledger":
        return CiStatus(provider, "unknown", detail="CI unknown (offline)")
    ctx = Context(repo, config, snapshot, _timeout(config))
    status: CiStatus = importlib.import_module(module_name).check(sha, ctx=ctx)
    if cache is not None:
        _save(cache, status)
    return status


def _timeout(config: dict[str, str]) -> float:
    try:
        return float(config.get("loopx.ci.timeout", DEFAULT_TIMEOUT_S))
    except ValueError:
        return DEFAULT_TIMEOUT_S


def _cache_path(repo: gateway.Repo, provider: str, sha: str) -> Any:
    key = hashlib.sha1(f"{provider}:{sha}".encode()).hexdigest()[:20]
    return repo.loopx_dir / "ci-cache" / f"{key}.json"


def _load(path: Any, *, offline: bool) -> Optional[CiStatus]:
    """A cached status still within its time to live (any age when offline)."""
    if path is None:
        return None
    try:
        doc = json.loads(files.read(path, 1 << 20))  # one commit's checks
        status = CiStatus(**doc["status"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if not _well_formed(status):  # derived data: of another version, or edited by hand
        return None
    ttl = FINAL_TTL_S if status.state in ("success", "failure") else PENDING_TTL_S
    if offline or time.time() - float(doc["at"]) < ttl:
        return status
    return None


_CHECK_KEYS = {"name", "state", "url", "evidence"}


def _well_formed(status: CiStatus) -> bool:
    """Whether a cached status has the shape status documents (its checks ``{name, state,
    url?}``, strings), so that it types as one (loopx.projection.environment.CiStatus)."""
    return (status.state in STATES and isinstance(status.checks, list)
            and (status.detail is None or isinstance(status.detail, str))
            and all(isinstance(c, dict) and _CHECK_KEYS.issuperset(c)
                    and isinstance(c.get("name"), str) and isinstance(c.get("state"), str)
                    and all(isinstance(v, str) for v in c.values() if v is not None)
                    for c in status.checks))


def _save(path: Any, status: CiStatus) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        files.replace(path, json.dumps({"at": time.time(), "status": status.as_dict()}).encode())
    except OSError:
        pass  # a cache we cannot write only costs another request
