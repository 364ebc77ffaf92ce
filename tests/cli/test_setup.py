"""`git loopx setup TOOL` as a user types it: what it prints, --check's exit code, --json, and
the MCP entry it wrote started the way the tool starts it, driven by the SDK's own client."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import invoke, run_loopx

AGENT = "agent:claude@laptop"


def test_setup_says_what_it_wrote_then_that_nothing_changed(repo: Path) -> None:
    first = run_loopx(repo, "setup", "claude", actor=None, env={"LOOPX_HOST": "laptop"})
    assert first.code == 0, first.err
    assert first.out.splitlines() == [
        "created .mcp.json (MCP server loopx)",
        "created .claude/settings.json (SessionStart hook (git loopx prime))",
        "Claude Code: set up as agent:claude@laptop"]
    again = run_loopx(repo, "setup", "claude", actor=None)
    assert again.code == 0
    assert again.out.splitlines()[-1] == ("Claude Code: already set up as agent:claude@laptop; "
                                          "nothing changed")
    assert "unchanged .mcp.json (MCP server loopx)" in again.out


def test_check_exits_1_naming_what_is_missing_and_0_once_set_up(repo: Path) -> None:
    missing = invoke(repo, "setup", "gemini", "--check", actor=AGENT)
    assert missing.code == 1
    assert missing.out.splitlines() == [
        ".gemini/settings.json: MCP server loopx is missing",
        ".gemini/settings.json: SessionStart hook (git loopx prime) is missing",
        "Gemini CLI: run `git loopx setup gemini` to write them"]
    assert not (repo / ".gemini").exists()
    assert invoke(repo, "setup", "gemini", actor=AGENT).code == 0
    assert invoke(repo, "setup", "gemini", "--check", actor=AGENT).code == 0
    stale = invoke(repo, "setup", "gemini", "--check", "--actor", "agent:other@box")
    assert stale.code == 1 and "is out of date" in stale.out


def test_json_output_and_remove(repo: Path) -> None:
    result = invoke(repo, "--json", "setup", "codex", actor=AGENT)
    doc = json.loads(result.out)
    assert doc["actor"] == AGENT and doc["changed"] is True and doc["removed"] is False
    assert [(f["path"], f["action"]) for f in doc["files"]] == [
        (".codex/config.toml", "created"), (".codex/hooks.json", "created")]
    assert doc["notes"] and "trust" in doc["notes"][0]
    removed = json.loads(invoke(repo, "--json", "setup", "codex", "--remove").out)
    assert [f["action"] for f in removed["files"]] == ["deleted", "deleted"]
    nothing = invoke(repo, "setup", "codex", "--remove")
    assert nothing.out.splitlines()[-1] == "Codex CLI: nothing of loopx's to remove"


def test_bad_use_is_one_line_and_exit_1_or_2(repo: Path) -> None:
    both = invoke(repo, "setup", "claude", "--check", "--remove")
    assert both.code == 1 and "do not go together" in both.err
    unknown = invoke(repo, "setup", "emacs")
    assert unknown.code == 2 and "emacs" in unknown.err
    bad_actor = invoke(repo, "setup", "claude", "--actor", "no spaces allowed")
    assert bad_actor.code == 1 and "is not an identity" in bad_actor.err
    assert not (repo / ".mcp.json").exists()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_entry_setup_wrote_starts_a_server_the_sdk_client_can_use(
        repo: Path, anyio_backend: str) -> None:
    """VS Code's entry, as VS Code starts it: ${workspaceFolder} is the folder it opened."""
    assert invoke(repo, "init").code == 0
    assert invoke(repo, "setup", "vscode", "--actor", AGENT).code == 0
    entry = json.loads((repo / ".vscode/mcp.json").read_text())["servers"]["loopx"]
    args = [a.replace("${workspaceFolder}", str(repo)) for a in entry["args"]]
    params = StdioServerParameters(command=entry["command"], args=args, env=dict(os.environ),
                                   cwd=str(repo.parent))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            result = await client.call_tool("status", {})
            assert not result.is_error, result.content
            prime = await client.call_tool("prime", {})
            assert "loopx" in json.loads(prime.content[0].text)["markdown"]  # type: ignore[union-attr]


def test_an_agents_shell_actor_does_not_turn_an_existing_setup_stale(repo: Path) -> None:
    assert invoke(repo, "setup", "claude", "--actor", AGENT).code == 0
    shell = run_loopx(repo, "setup", "claude", "--check", actor="agent:codex@devbox")
    assert shell.code == 0 and shell.out.strip() == f"Claude Code: set up as {AGENT}"
    assert run_loopx(repo, "setup", "claude", actor="agent:codex@devbox").out.splitlines()[-1] \
        == f"Claude Code: already set up as {AGENT}; nothing changed"
    moved = invoke(repo, "setup", "claude", "--actor", "agent:codex@devbox")
    assert "updated .mcp.json" in moved.out
