"""Reading an effect back: did the external write an intent announced happen?

An effect's ``readback`` (effect.intended v2) says how to look:

- ``http:URL`` — GET the URL: a 2xx answer confirms it, with the URL as receipt;
- ``github:OWNER/REPO#N`` — a comment on issue or pull request N carrying the effect's
  idempotency key (its hidden marker, :mod:`loopx.recovery.githubapi`), its URL the receipt;
  ``github:OWNER/REPO`` — an issue or pull request carrying the key;
- ``cmd:COMMAND`` — ``sh -c COMMAND`` with ``LOOPX_EFFECT_ID``, ``LOOPX_EFFECT_KEY`` and
  ``LOOPX_EFFECT_TARGET`` set: exit 0 confirms it, the first line it prints the receipt.

Every look is bounded by ``timeout`` and never raises: what it found is ``confirmed`` with a
receipt, or ``indeterminate`` with the evidence (what was seen, in words).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from loopx.recovery import githubapi, rest
from loopx.storage import gateway

DEFAULT_TIMEOUT_S = 5.0
EVIDENCE_MAX = 500  # characters of what a readback saw that status shows


@dataclass
class Found:
    """What one readback saw."""

    state: str  # confirmed | indeterminate
    receipt: Optional[str]
    evidence: str

    def as_dict(self) -> dict[str, Any]:
        return {"state": self.state, "receipt": self.receipt, "evidence": self.evidence[:EVIDENCE_MAX]}


def timeout(config: Mapping[str, str]) -> float:
    """``git config loopx.effect.timeout`` (seconds), else 5."""
    try:
        return max(0.1, float(config.get("loopx.effect.timeout", DEFAULT_TIMEOUT_S)))
    except ValueError:
        return DEFAULT_TIMEOUT_S


def read_back(effect: Mapping[str, Any], *, repo: gateway.Repo, config: Mapping[str, str],
              client: Optional[githubapi.GitHub] = None) -> Found:
    """Look for ``effect`` (a status effect: id, key, target, readback) where its readback
    says; never raises."""
    spec = str(effect.get("readback") or "")
    kind, _, rest_of = spec.partition(":")
    limit = timeout(config)
    if kind == "http":
        return _http(rest_of, limit)
    if kind == "github":
        return _github(spec, str(effect["key"]), client or githubapi.GitHub.configured(
            config, timeout=limit))
    if kind == "cmd":
        return _command(rest_of, effect, repo, limit)
    return Found("indeterminate", None, "no readback given: read the target back by hand")


def _http(url: str, limit: float) -> Found:
    try:
        answer = rest.request("GET", url, headers={"User-Agent": "loopx"}, timeout=limit)
    except rest.Trouble as exc:
        return Found("indeterminate", None, f"GET {url}: {exc}")
    if 200 <= answer.status < 300:
        return Found("confirmed", url, f"GET {url}: HTTP {answer.status}")
    return Found("indeterminate", None, f"GET {url}: HTTP {answer.status}")


def _github(spec: str, key: str, client: githubapi.GitHub) -> Found:
    try:
        slug, number = githubapi.parse(spec)
        found = (client.find_comment(slug, number, key) if number is not None
                 else client.find_item(slug, key))
    except githubapi.GitHubError as exc:
        return Found("indeterminate", None, f"{spec}: {exc}")
    what = f"a comment on {spec}" if number is not None else f"an issue or pull request in {spec}"
    if found is None or not isinstance(found.get("html_url"), str):
        return Found("indeterminate", None, f"no {what.split(' ', 1)[1]} carries key {key}")
    return Found("confirmed", found["html_url"], f"{what} carries key {key}")


def _command(command: str, effect: Mapping[str, Any], repo: gateway.Repo, limit: float) -> Found:
    env = dict(os.environ, LOOPX_EFFECT_ID=str(effect["id"]), LOOPX_EFFECT_KEY=str(effect["key"]),
               LOOPX_EFFECT_TARGET=str(effect["target"]))
    try:
        # A session of its own: on a timeout the whole group goes, children holding the
        # pipes included (else reading them would wait for the children to finish).
        proc = subprocess.Popen(["sh", "-c", command, "loopx-readback"], cwd=repo.cwd, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        return Found("indeterminate", None, f"readback command failed to start: {exc}")
    try:
        stdout, stderr = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return Found("indeterminate", None, f"readback command timed out after {limit:g}s")
    out = stdout.decode("utf-8", "replace").strip().splitlines()
    if proc.returncode == 0:
        receipt = out[0].strip()[:2_000] if out and out[0].strip() else f"cmd: {command}"
        return Found("confirmed", receipt, "readback command exited 0")
    err = stderr.decode("utf-8", "replace").strip().splitlines()
    said = (err or out or ["no output"])[-1]
    return Found("indeterminate", None, f"readback command exited {proc.returncode}: {said}")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass  # gone already
    proc.communicate()
