"""What this host can do for the next turn (status's ``environment.capabilities``): the tools
the ledger's todos need (``todo add --needs``, or git config ``loopx.needs``) found on PATH
with their versions, whether the state remote answers, free disk, and the agent runtime
when it is known.

Probing is cheap and cached: ``<git-common-dir>/loopx/host.json`` keeps what was probed for
``TTL`` seconds (a tool's version, the remote's answer). Like all derived data it is checked
before use (its shape, its age, the PATH it was probed under) and never required: any doubt
probes again, and a cache that cannot be written is simply not kept.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

from loopx.errors import GitError, LoopxError
from loopx.model import needs as needs_
from loopx.storage import files, gateway, settings

TTL = 60.0  # seconds a probe stays good: a host rarely changes within a turn
CACHE = "host.json"
MOST = 1 << 20  # bytes: a few tools' versions; a bigger file is not read
VERSION_TIMEOUT = 3.0  # a `TOOL --version` that takes longer is a tool of unknown version
REMOTE_TIMEOUT = 5.0
_VERSION_RE = re.compile(r"\d+(?:\.\d+)+[0-9A-Za-z.+-]*|\d+")
# How an agent CLI shows itself to what it runs ($LOOPX_AGENT_HOST, set by `watch --host`,
# comes first). Claude Code sets CLAUDECODE=1, Gemini CLI GEMINI_CLI=1, Codex CLI
# CODEX_SANDBOX (in its sandbox) or CODEX_THREAD_ID.
_RUNTIMES = (("CLAUDECODE", "claude"), ("GEMINI_CLI", "gemini"),
             ("CODEX_SANDBOX", "codex"), ("CODEX_THREAD_ID", "codex"))


def declared(todos: Sequence[Mapping[str, Any]], config: Mapping[str, str]) -> list[str]:
    """The tools worth probing: what open todos need and git config ``loopx.needs`` lists."""
    wanted = [n for t in todos if t.get("state") in ("open", "claimed") for n in t.get("needs") or []]
    try:
        wanted += needs_.split([config.get("loopx.needs", "")])
    except ValueError:
        pass  # a bad config value: the todos' own needs still count (doctor names it)
    return sorted({needs_.parse(n).tool for n in wanted})


def capabilities(repo: gateway.Repo, *, tools: Sequence[str], remote: str, offline: bool = False,
                 ttl: float = TTL, clock: Any = time.time) -> dict[str, Any]:
    """What this host can do now: ``{tools: {TOOL: {found, version, path}}, remote: {name,
    reachable}, disk_free_mb, runtime, probed_at, cached}``. ``offline`` asks no remote
    (a cached answer still counts); ``reachable`` is None when nobody asked."""
    now = clock()
    cache_path = _cache_path(repo)
    cache = _load(cache_path, now, ttl)
    fresh_tools = dict(cache.get("tools", {}))
    probed = False
    for tool in tools:
        if tool not in fresh_tools:
            fresh_tools[tool] = probe_tool(tool)
            probed = True
    reach = cache.get("remote") if (cache.get("remote") or {}).get("name") == remote else None
    if reach is None and not offline:
        reach, probed = {"name": remote, "reachable": remote_reachable(repo, remote)}, True
    if probed:
        _save(cache_path, {"v": 1, "at": now if not cache else cache["at"],
                           "path": os.environ.get("PATH", ""), "tools": fresh_tools,
                           "remote": reach if reach is not None else cache.get("remote")})
    return {"tools": {t: fresh_tools[t] for t in sorted(tools)},
            "remote": reach or {"name": remote, "reachable": None},
            "disk_free_mb": _disk_free_mb(repo), "runtime": runtime(),
            "probed_at": _iso(cache["at"] if cache else now), "cached": bool(cache) and not probed}


def probe_tool(tool: str) -> dict[str, Any]:
    """``{found, version, path}`` for ``tool`` on PATH (``python`` falls back to ``python3``)."""
    path = shutil.which(tool) or (shutil.which("python3") if tool == "python" else None)
    if path is None:
        return {"found": False, "version": None, "path": None}
    return {"found": True, "version": _version(path), "path": path}


def _version(path: str) -> Optional[str]:
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, stdin=subprocess.DEVNULL,
                              timeout=VERSION_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (proc.stdout or proc.stderr).decode("utf-8", "replace")[:400]
    found = _VERSION_RE.search(text)
    return found.group(0) if found else None


def remote_reachable(repo: gateway.Repo, remote: str) -> Optional[bool]:
    """Whether ``remote`` answers ``git ls-remote`` (None: no such remote is configured)."""
    if settings.get(repo.cwd, f"remote.{remote}.url") is None:
        return None
    try:
        proc = gateway.run(repo.cwd, "ls-remote", remote, "refs/heads/loopx/state", check=False,
                           timeout=REMOTE_TIMEOUT, env={"GIT_TERMINAL_PROMPT": "0"})
    except GitError:
        return False  # timed out
    return proc.returncode == 0


def runtime() -> Optional[str]:
    """The agent CLI this process runs under, when it says so."""
    named = os.environ.get("LOOPX_AGENT_HOST")
    if named:
        return named
    return next((name for var, name in _RUNTIMES if os.environ.get(var)), None)


def _disk_free_mb(repo: gateway.Repo) -> Optional[int]:
    try:
        return shutil.disk_usage(repo.common_dir).free // (1024 * 1024)
    except OSError:
        return None


def _cache_path(repo: gateway.Repo) -> Optional[Path]:
    try:
        return repo.loopx_dir / CACHE
    except LoopxError:
        return None  # a loopx dir that is not this repository's own: keep no cache


def _load(path: Optional[Path], now: float, ttl: float) -> dict[str, Any]:
    """The cache when it is sound, young and probed under this PATH; else {}."""
    if path is None:
        return {}
    try:
        doc = json.loads(files.read(path, MOST))
    except (OSError, ValueError):
        return {}
    if not _sound(doc) or not (0 <= now - doc["at"] < ttl):
        return {}
    return doc if doc["path"] == os.environ.get("PATH", "") else {}


def _sound(doc: Any) -> bool:
    if not (isinstance(doc, dict) and doc.get("v") == 1 and isinstance(doc.get("at"), (int, float))
            and isinstance(doc.get("path"), str) and isinstance(doc.get("tools"), dict)):
        return False
    tools_ok = all(isinstance(t, dict) and isinstance(t.get("found"), bool)
                   and isinstance(t.get("version"), (str, type(None)))
                   and isinstance(t.get("path"), (str, type(None))) for t in doc["tools"].values())
    remote = doc.get("remote")
    remote_ok = remote is None or (isinstance(remote, dict) and isinstance(remote.get("name"), str)
                                   and isinstance(remote.get("reachable"), (bool, type(None))))
    return tools_ok and remote_ok


def _save(path: Optional[Path], doc: dict[str, Any]) -> None:
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        files.replace(path, json.dumps(doc, sort_keys=True).encode())
    except OSError:
        pass  # never required: the next status probes again


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
