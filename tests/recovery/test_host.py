"""What this host can do (status's environment.capabilities): tools on PATH with versions,
the remote reachable or not, free disk, the agent runtime; cached in .git/loopx/host.json
and checked before use. Stand-in tools are scripts on PATH; the remote is a bare hub."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import git, invoke, run_loopx
from loopx.recovery import host
from loopx.storage import gateway
from syncutil import bare_remote

AGENT = "agent:codex@devbox"


def _tool(bindir: Path, name: str, says: str) -> Path:
    bindir.mkdir(exist_ok=True)
    script = bindir / name
    script.write_text(f"#!/bin/sh\necho '{says}'\necho ran >> '{bindir}/{name}.runs'\n")
    script.chmod(0o755)
    return script


@pytest.fixture
def bindir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    found = tmp_path / "standins"
    found.mkdir()
    monkeypatch.setenv("PATH", f"{found}{os.pathsep}{os.environ['PATH']}")
    return found


def test_a_tool_on_path_is_found_with_its_version_and_a_missing_one_is_not(
        repo: Path, bindir: Path) -> None:
    _tool(bindir, "frob", "frob version 1.12.3, build abc")
    caps = host.capabilities(gateway.discover(repo), tools=["frob", "nosuchtool"], remote="origin")
    assert caps["tools"]["frob"] == {"found": True, "version": "1.12.3",
                                     "path": str(bindir / "frob")}
    assert caps["tools"]["nosuchtool"] == {"found": False, "version": None, "path": None}
    assert caps["disk_free_mb"] > 0 and caps["cached"] is False
    assert caps["remote"] == {"name": "origin", "reachable": None}  # no such remote


def test_a_second_look_within_the_ttl_is_cached_and_after_it_probes_again(
        repo: Path, bindir: Path) -> None:
    _tool(bindir, "frob", "frob 2.0")
    r = gateway.discover(repo)
    first = host.capabilities(r, tools=["frob"], remote="origin", clock=lambda: 1000.0)
    again = host.capabilities(r, tools=["frob"], remote="origin", clock=lambda: 1030.0)
    assert not first["cached"] and again["cached"] and again["tools"] == first["tools"]
    assert (bindir / "frob.runs").read_text() == "ran\n"  # probed once
    host.capabilities(r, tools=["frob"], remote="origin", clock=lambda: 1000.0 + host.TTL)
    assert (bindir / "frob.runs").read_text() == "ran\nran\n"


@pytest.mark.parametrize("damage", ["{not json", '{"v": 1, "at": 1000, "path": 3, "tools": {}}',
                                    '{"v": 1, "at": 1000, "path": "", "tools": {"frob": {"found": "yes"}}}',
                                    '{"v": 9}'])
def test_a_damaged_cache_is_never_trusted_only_rebuilt(repo: Path, bindir: Path,
                                                       damage: str) -> None:
    _tool(bindir, "frob", "frob 2.0")
    r = gateway.discover(repo)
    (r.common_dir / "loopx").mkdir(exist_ok=True)
    (r.common_dir / "loopx" / host.CACHE).write_text(damage)
    caps = host.capabilities(r, tools=["frob"], remote="origin", clock=lambda: 1001.0)
    assert caps["tools"]["frob"]["version"] == "2.0" and not caps["cached"]
    assert json.loads((r.common_dir / "loopx" / host.CACHE).read_text())["v"] == 1


def test_a_cache_probed_under_another_path_is_not_used(repo: Path, bindir: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    r = gateway.discover(repo)
    assert not host.capabilities(r, tools=["frob"], remote="origin")["tools"]["frob"]["found"]
    _tool(bindir / "later", "frob", "frob 3.1")
    monkeypatch.setenv("PATH", f"{bindir / 'later'}{os.pathsep}{os.environ['PATH']}")
    assert host.capabilities(r, tools=["frob"], remote="origin")["tools"]["frob"]["version"] == "3.1"


def test_the_remote_is_reachable_when_the_hub_answers_and_not_when_it_is_gone(
        repo: Path, tmp_path: Path) -> None:
    hub = bare_remote(tmp_path)
    git(repo, "remote", "add", "origin", str(hub))
    r = gateway.discover(repo)
    assert host.capabilities(r, tools=[], remote="origin")["remote"]["reachable"] is True
    git(repo, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    assert host.capabilities(r, tools=[], remote="origin", clock=lambda: 1e10)["remote"] == {
        "name": "origin", "reachable": False}
    assert host.capabilities(r, tools=[], remote="origin", offline=True,
                             clock=lambda: 2e10)["remote"]["reachable"] is None  # not asked


def test_the_runtime_is_the_agent_cli_when_it_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LOOPX_AGENT_HOST", "CLAUDECODE", "GEMINI_CLI", "CODEX_SANDBOX", "CODEX_THREAD_ID"):
        monkeypatch.delenv(var, raising=False)
    assert host.runtime() is None
    monkeypatch.setenv("GEMINI_CLI", "1")
    assert host.runtime() == "gemini"
    monkeypatch.setenv("LOOPX_AGENT_HOST", "claude")
    assert host.runtime() == "claude"


def _ledger(repo: Path) -> None:
    for args in (["init"], ["goal", "add", "Ship", "--id", "g"],
                 ["todo", "add", "g", "Build the image", "--id", "img", "--priority", "0",
                  "--needs", "frob>=2.5,nosuchtool"],
                 ["todo", "add", "g", "Write docs", "--id", "docs", "--needs", "frob"]):
        assert invoke(repo, *args).code == 0


def test_next_offers_no_todo_this_host_lacks_what_for_and_says_why(repo: Path,
                                                                   bindir: Path) -> None:
    _ledger(repo)
    _tool(bindir, "frob", "frob 2.1")
    doc = json.loads(run_loopx(repo, "status", "--json", "--detail", actor=AGENT).out)
    assert doc["environment"]["capabilities"]["tools"]["frob"]["version"] == "2.1"
    assert [t["needs"] for t in doc["todos"]] == [["frob>=2.5", "nosuchtool"], ["frob"]]
    kinds = [(a["kind"], a.get("todo")) for a in doc["actions"]]
    assert ("work", "docs") in kinds and ("wait_host", "img") in kinds
    assert ("work", "img") not in kinds
    why = next(a["reason"] for a in doc["actions"] if a["kind"] == "wait_host")
    assert why == ("img needs what this host lacks: frob 2.1 is older than 2.5; "
                   "nosuchtool is not on PATH")
    best = run_loopx(repo, "next", "--json", actor=AGENT)
    assert best.code == 0 and json.loads(best.out)["action"]["todo"] == "docs"


def test_next_waits_when_every_ready_todo_needs_what_this_host_lacks(repo: Path) -> None:
    _ledger(repo)
    assert invoke(repo, "todo", "cancel", "docs", "--reason", "later").code == 0
    best = run_loopx(repo, "next", actor=AGENT)
    assert best.code == 10 and "img needs what this host lacks: frob is not on PATH" in best.out


def test_a_bad_need_is_refused_and_nothing_is_written(repo: Path) -> None:
    _ledger(repo)
    before = git(repo, "rev-parse", "refs/heads/loopx/state")
    result = invoke(repo, "todo", "add", "g", "Oops", "--needs", "rm -rf /")
    assert result.code == 1 and result.err.count("\n") == 1 and "is not a need" in result.err
    assert git(repo, "rev-parse", "refs/heads/loopx/state") == before
