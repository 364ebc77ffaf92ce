"""`git loopx setup TOOL`'s library (loopx.agents.setup) against real config files in
each tool's documented format: written fresh, merged into files that hold the user's own
entries (kept as they were, in their order; TOML comments too), unchanged on a second run,
checked, and removed so that a file loopx added to is byte-identical to what it was. Files
that do not parse, or hold loopx's entry in a shape setup does not edit, are refused with
nothing written."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import git, invoke

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from loopx.errors import UsageError
from loopx.agents import setup

ACTOR = "agent:claude@laptop"

# Claude Code: a project .mcp.json with an HTTP server, and .claude/settings.json with
# permissions and hooks of the user's own (formats of code.claude.com/docs: mcp, hooks).
CLAUDE_MCP = """{
  "mcpServers": {
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/"
    }
  }
}
"""
CLAUDE_SETTINGS = """{
  "permissions": {
    "allow": [
      "Bash(npm run lint)"
    ]
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "./scripts/check-bash.sh"
          }
        ]
      }
    ],
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [
          {
            "type": "command",
            "command": "cat NOTES.md"
          }
        ]
      }
    ]
  }
}
"""
# Codex CLI: config.toml with comments, a profile and a stdio server with an env table
# (developers.openai.com/codex: config.toml, [mcp_servers.NAME]).
CODEX_CONFIG = """# my Codex settings
model = "gpt-5-codex"  # the default model

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]

[mcp_servers.context7.env]
TOKEN_FILE = "~/.context7"   # read by the server

[profiles.deep]
model_reasoning_effort = "high"
"""
# VS Code: .vscode/mcp.json with an input variable (code.visualstudio.com, MCP configuration).
VSCODE_MCP = """{
    "inputs": [
        {
            "type": "promptString",
            "id": "api-key",
            "description": "API key",
            "password": true
        }
    ],
    "servers": {
        "perplexity": {
            "type": "stdio",
            "command": "npx",
            "args": ["-y", "server-perplexity-ask"],
            "env": {"PERPLEXITY_API_KEY": "${input:api-key}"}
        }
    }
}
"""
# Gemini CLI: .gemini/settings.json with a theme, a server and a BeforeTool hook
# (geminicli.com/docs: configuration, hooks).
GEMINI_SETTINGS = """{
  "ui": {
    "theme": "GitHub"
  },
  "mcpServers": {
    "pythonTools": {
      "command": "python",
      "args": ["-m", "my_mcp_server"],
      "cwd": "./mcp-servers/python",
      "timeout": 15000
    }
  },
  "hooks": {
    "BeforeTool": [
      {
        "matcher": "write_file",
        "hooks": [{"name": "guard", "type": "command", "command": "./guard.sh"}]
      }
    ]
  }
}
"""
CURSOR_MCP = '{\n\t"mcpServers": {\n\t\t"docs": {"url": "https://example.com/mcp"}\n\t}\n}\n'
EXISTING = {"claude": {".mcp.json": CLAUDE_MCP, ".claude/settings.json": CLAUDE_SETTINGS},
            "codex": {".codex/config.toml": CODEX_CONFIG},
            "vscode": {".vscode/mcp.json": VSCODE_MCP},
            "gemini": {".gemini/settings.json": GEMINI_SETTINGS},
            "cursor": {".cursor/mcp.json": CURSOR_MCP}}


def _setup(repo: Path, tool: str, *, actor: str | None = ACTOR, remove: bool = False) -> setup.Plan:
    plan = setup.plan(tool, cwd=repo, actor=actor, remove=remove)
    setup.write(plan)
    return plan


def _files(repo: Path) -> dict[str, bytes]:
    return {str(p.relative_to(repo)): p.read_bytes() for p in sorted(repo.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(repo).parts}


def _load(path: Path) -> Any:
    if path.suffix == ".toml":
        return tomllib.loads(path.read_text())
    return json.loads(path.read_text())


def _server(repo: Path, tool: str) -> dict[str, Any]:
    part = setup.TOOLS[tool].parts[0]
    doc = _load(repo / part.path)
    return doc["mcp_servers" if tool == "codex" else getattr(part, "key")]["loopx"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("tool", sorted(setup.TOOLS))
def test_a_fresh_setup_writes_each_file_a_second_run_changes_nothing_remove_leaves_none(
        repo: Path, tool: str) -> None:
    before = _files(repo)
    plan = _setup(repo, tool)
    assert all(change.changed and change.before is None for change in plan.files)
    server = _server(repo, tool)
    assert server["command"] == "git" and server["args"][-4:] == ["loopx", "--actor", ACTOR, "mcp"]
    assert ("-C" in server["args"]) == (tool in ("cursor", "vscode"))  # GUI apps: pinned
    hooks = [p for p in setup.TOOLS[tool].parts if isinstance(p, setup.Hook)]
    for part in hooks:
        (group,) = _load(repo / part.path)["hooks"]["SessionStart"]
        (hook,) = group["hooks"]
        assert hook["command"] == f"git loopx --actor {ACTOR} prime --offline --as-hook"
    assert bool(hooks) == (tool in ("claude", "codex", "gemini"))
    written = _files(repo)
    again = _setup(repo, tool, actor=None)  # the actor already set up is kept
    assert not any(change.changed for change in again.files) and again.actor == ACTOR
    assert _files(repo) == written
    assert setup.plan(tool, cwd=repo, actor=None).missing == ()
    _setup(repo, tool, remove=True)
    assert _files(repo) == before
    assert not any((repo / d).exists() for d in (".claude", ".codex", ".cursor", ".gemini", ".vscode"))


@pytest.mark.parametrize("tool", sorted(EXISTING))
def test_setup_merges_into_the_users_files_and_remove_gives_back_the_same_bytes(
        repo: Path, tool: str) -> None:
    for path, text in EXISTING[tool].items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    before = _files(repo)
    _setup(repo, tool)
    for path, text in EXISTING[tool].items():
        old, new = _load_text(path, text), _load(repo / path)
        if path.endswith(".toml"):
            assert (repo / path).read_text().startswith(text)  # comments and layout as they were
            assert new == {**old, "mcp_servers": {**old["mcp_servers"], "loopx": _server(repo, tool)}}
            continue
        assert list(new)[:len(old)] == list(old)  # the user's keys first, in their order
        for key, value in old.items():
            if isinstance(value, dict) and key in ("mcpServers", "servers"):
                assert list(new[key])[:-1] == list(value) and list(new[key])[-1] == "loopx"
                assert {k: v for k, v in new[key].items() if k != "loopx"} == value
            elif key == "hooks":
                kept = {e: [g for g in gs if not setup._has_prime(g)] for e, gs in new[key].items()}
                assert {e: gs for e, gs in kept.items() if gs} == value
            else:
                assert new[key] == value
    assert not any(c.changed for c in _setup(repo, tool, actor=None).files)
    _setup(repo, tool, remove=True)
    assert _files(repo) == before


def _load_text(path: str, text: str) -> Any:
    return tomllib.loads(text) if path.endswith(".toml") else json.loads(text)


def test_the_users_own_session_start_hook_stays_and_runs_first(repo: Path) -> None:
    (repo / ".claude").mkdir()
    (repo / ".claude/settings.json").write_text(CLAUDE_SETTINGS)
    _setup(repo, "claude")
    groups = _load(repo / ".claude/settings.json")["hooks"]["SessionStart"]
    assert [g["hooks"][0]["command"] for g in groups][0] == "cat NOTES.md"
    assert setup.is_prime_hook(groups[1]["hooks"][0])


def test_a_new_actor_updates_loopx_entries_in_place(repo: Path) -> None:
    (repo / ".codex").mkdir()
    (repo / ".codex/config.toml").write_text(CODEX_CONFIG)
    _setup(repo, "codex")
    with_tail = (repo / ".codex/config.toml").read_text() + "\n[profiles.fast]\nmodel = \"mini\"\n"
    (repo / ".codex/config.toml").write_text(with_tail)  # the user adds a table after loopx's
    plan = _setup(repo, "codex", actor="agent:codex@devbox")
    assert [c.changed for c in plan.files] == [True, True]
    text = (repo / ".codex/config.toml").read_text()
    assert text == with_tail.replace(ACTOR, "agent:codex@devbox")  # the same lines, one value
    assert setup.plan("codex", cwd=repo, actor="agent:codex@devbox").missing == ()
    assert setup.plan("codex", cwd=repo, actor=ACTOR).missing == (
        ".codex/config.toml: MCP server loopx is out of date",
        ".codex/hooks.json: SessionStart hook (git loopx prime) is out of date")


def test_a_hand_written_loopx_table_with_a_sub_table_is_replaced_where_it_stood(repo: Path) -> None:
    text = ('[mcp_servers.loopx]\ncommand = "git-loopx"\nargs = ["mcp"]\n\n'
            '[mcp_servers.loopx.env]\nLOOPX_ACTOR = "agent:old"\n\n[profiles.deep]\nx = 1\n')
    (repo / ".codex").mkdir()
    (repo / ".codex/config.toml").write_text(text)
    _setup(repo, "codex")
    after = (repo / ".codex/config.toml").read_text()
    assert after.endswith("\n\n[profiles.deep]\nx = 1\n") and "LOOPX_ACTOR" not in after
    assert tomllib.loads(after)["mcp_servers"] == {"loopx": setup.server_entry(ACTOR)}
    _setup(repo, "codex", remove=True)
    assert (repo / ".codex/config.toml").read_text() == "\n[profiles.deep]\nx = 1\n"


@pytest.mark.parametrize("path,text,says", [
    (".mcp.json", '{"mcpServers": {"a": 1},}\n', "not valid JSON"),
    (".mcp.json", '{\n  // my servers\n  "mcpServers": {}\n}\n', "no comments"),
    (".mcp.json", '{"mcpServers": {}, "mcpServers": {"x": {}}}\n', "appears twice"),
    (".mcp.json", '{"mcpServers": ["loopx"]}\n', "is not an object"),
    (".mcp.json", '["not", "an", "object"]\n', "not a JSON object"),
    (".claude/settings.json", '{"hooks": {"SessionStart": {"hooks": []}}}\n', "not a list"),
    (".mcp.json", b'{"mcpServers": {"\xff": 1}}\n', "not UTF-8"),
    (".codex/config.toml", 'model = "gpt-5\n', "not valid TOML"),
    (".codex/config.toml", 'mcp_servers = { loopx = { command = "x" } }\n', "does not edit"),
    (".codex/config.toml", 'mcp_servers.loopx.command = "x"\n', "does not edit"),
    (".codex/config.toml", '[mcp_servers]\nloopx = { command = "x" }\n', "does not edit"),
])
def test_a_file_setup_cannot_edit_is_refused_in_one_line_and_nothing_is_written(
        repo: Path, path: str, text: str | bytes, says: str) -> None:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(text if isinstance(text, bytes) else text.encode())
    before = _files(repo)
    tool = {".mcp.json": "claude", ".claude/settings.json": "claude"}.get(path, "codex")
    with pytest.raises(UsageError, match=says) as raised:
        _setup(repo, tool)
    assert "\n" not in str(raised.value) and path in str(raised.value)
    assert _files(repo) == before
    result = invoke(repo, "setup", tool)
    assert result.code == 1 and says in result.err and _files(repo) == before


def test_a_symlinked_config_file_or_folder_is_refused(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "mcp.json").write_text("{}\n")
    (repo / ".cursor").symlink_to(outside)
    with pytest.raises(UsageError, match="symbolic link"):
        _setup(repo, "cursor")
    (repo / ".cursor").unlink()
    (repo / ".vscode").mkdir()
    (repo / ".vscode/mcp.json").symlink_to(outside / "mcp.json")
    with pytest.raises(UsageError, match="symbolic link"):
        _setup(repo, "vscode")
    assert (outside / "mcp.json").read_text() == "{}\n"


def test_a_mixed_hook_group_keeps_the_users_hook_when_loopx_is_removed(repo: Path) -> None:
    mine = {"type": "command", "command": "echo mine"}
    ours = {"type": "command", "command": setup.prime_command(ACTOR)}
    settings = {"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [mine, ours]}]}}
    (repo / ".claude").mkdir()
    (repo / ".claude/settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    _setup(repo, "claude", remove=True)
    assert _load(repo / ".claude/settings.json") == {
        "hooks": {"SessionStart": [{"matcher": "startup", "hooks": [mine]}]}}


def test_an_actor_the_shell_would_split_is_quoted_and_still_recognised(repo: Path) -> None:
    actor = "agent:o'brien;rm@host$HOME"
    _setup(repo, "claude", actor=actor)
    (group,) = _load(repo / ".claude/settings.json")["hooks"]["SessionStart"]
    command = group["hooks"][0]["command"]
    assert shlex.split(command)[:4] == ["git", "loopx", "--actor", actor]
    assert setup.is_prime_hook(group["hooks"][0])
    assert not any(c.changed for c in _setup(repo, "claude", actor=None).files)
    with pytest.raises(UsageError, match="is not an identity"):
        setup.plan("claude", cwd=repo, actor="nobody")


def test_the_toml_strings_loopx_writes_read_back_exactly() -> None:
    for actor in ('agent:a"b\\c@h', "agent:tab\x7fdel@h", "agent:ünï@h"):
        text = setup.toml_server(None, setup.server_entry(actor), shown="config.toml")
        assert text is not None
        assert tomllib.loads(text)["mcp_servers"]["loopx"]["args"][2] == actor


def test_the_hook_setup_writes_injects_the_primer_when_its_tool_runs_it(repo: Path) -> None:
    """The command as Claude Code, Codex CLI and Gemini CLI run it: a shell in the project,
    answering JSON whose additionalContext is the primer."""
    assert invoke(repo, "init").code == 0
    assert invoke(repo, "goal", "add", "Ship it", "--id", "ship").code == 0
    assert invoke(repo, "todo", "add", "ship", "Fix the parser", "--id", "parser").code == 0
    for tool in ("claude", "codex", "gemini"):
        _setup(repo, tool, actor=f"agent:{tool}@laptop")
        part = next(p for p in setup.TOOLS[tool].parts if isinstance(p, setup.Hook))
        (group,) = _load(repo / part.path)["hooks"]["SessionStart"]
        proc = subprocess.run(group["hooks"][0]["command"], shell=True, cwd=repo / ".git" / "..",
                              capture_output=True, text=True, env=dict(os.environ))
        assert proc.returncode == 0, proc.stderr
        answer = json.loads(proc.stdout)
        assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
        assert "Fix the parser" in answer["hookSpecificOutput"]["additionalContext"]
    git(repo, "status")  # the work tree is still a repository git reads


def test_the_hook_in_a_repository_without_a_ledger_says_so_as_a_hook(repo: Path) -> None:
    proc = subprocess.run(setup.prime_command(ACTOR), shell=True, cwd=repo, capture_output=True,
                          text=True)
    assert proc.returncode == 0
    assert "no loopx ledger" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_file_keeps_its_mode_and_a_new_one_follows_the_umask(repo: Path) -> None:
    (repo / ".mcp.json").write_text(CLAUDE_MCP)
    (repo / ".mcp.json").chmod(0o600)
    old = os.umask(0o027)
    try:
        _setup(repo, "claude")
    finally:
        os.umask(old)
    assert (repo / ".mcp.json").stat().st_mode & 0o777 == 0o600
    assert (repo / ".claude/settings.json").stat().st_mode & 0o777 == 0o640
    assert [p.name for p in repo.iterdir() if "loopx-tmp" in p.name] == []


def test_setup_from_a_subdirectory_writes_at_the_top_of_the_work_tree(repo: Path) -> None:
    (repo / "src" / "deep").mkdir(parents=True)
    _setup(repo / "src" / "deep", "gemini")
    assert (repo / ".gemini/settings.json").is_file()
    assert not (repo / "src" / "deep" / ".gemini").exists()


def test_a_crlf_file_gets_crlf_lines_and_its_bytes_back(repo: Path) -> None:
    (repo / ".cursor").mkdir()
    original = CLAUDE_MCP.replace("\n", "\r\n").encode()
    (repo / ".cursor/mcp.json").write_bytes(original)
    _setup(repo, "cursor")
    written = (repo / ".cursor/mcp.json").read_bytes()
    assert b"loopx" in written and written.count(b"\n") == written.count(b"\r\n")
    _setup(repo, "cursor", remove=True)
    assert (repo / ".cursor/mcp.json").read_bytes() == original


def test_a_crlf_config_toml_gets_crlf_lines_and_its_bytes_back(repo: Path) -> None:
    (repo / ".codex").mkdir()
    original = CODEX_CONFIG.replace("\n", "\r\n").encode()
    (repo / ".codex/config.toml").write_bytes(original)
    _setup(repo, "codex")
    written = (repo / ".codex/config.toml").read_bytes()
    assert written.startswith(original) and written.count(b"\n") == written.count(b"\r\n")
    assert not any(c.changed for c in _setup(repo, "codex", actor=None).files)
    _setup(repo, "codex", actor="agent:codex@devbox")  # the table is found again, and replaced
    assert tomllib.loads((repo / ".codex/config.toml").read_text())["mcp_servers"]["loopx"] == \
        setup.server_entry("agent:codex@devbox")
    _setup(repo, "codex", remove=True)
    assert (repo / ".codex/config.toml").read_bytes() == original


def test_an_entry_naming_no_valid_actor_is_still_removed(repo: Path) -> None:
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"loopx": {
        "command": "git", "args": ["loopx", "--actor", "not an actor", "mcp"]}}}) + "\n")
    with pytest.raises(UsageError, match="is not an identity"):
        setup.plan("claude", cwd=repo, actor=None)
    _setup(repo, "claude", actor=None, remove=True)
    assert not (repo / ".mcp.json").exists()
