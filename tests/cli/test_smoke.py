import json
import os
import subprocess
from pathlib import Path

from conftest import invoke, run_loopx


def test_init_then_status_through_git_loopx(repo: Path) -> None:
    assert run_loopx(repo, "init").code == 0
    result = run_loopx(repo, "status", "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["goals"] == []


def test_in_process_invoke_maps_user_errors_to_exit_1(repo: Path) -> None:
    invoke(repo, "init")
    result = invoke(repo, "todo", "claim", "nope")
    assert result.code == 1
    assert "no todo matches 'nope'" in result.err


def test_the_readme_for_agents_block_works_when_pasted(repo: Path) -> None:
    """The shell block of README's "For agents" section, run as written in a fresh repo."""
    import re

    text = (Path(__file__).parents[2] / "README.md").read_text()
    section = text.split("## For agents", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```sh\n(.*?)```", section, re.S)[0]
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=repo,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, LOOPX_ACTOR="agent:codex@devbox"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "# loopx primer for `agent:codex@devbox`" in proc.stdout
    assert "P0 parser: Fix the parser" in proc.stdout
    assert "woke: 0" in proc.stdout and "an agent turn runs here" in proc.stdout
    config = json.loads((repo / ".mcp.json").read_text())  # what `setup claude` wrote
    assert config["mcpServers"]["loopx"]["args"] == ["loopx", "--actor", "agent:claude@laptop",
                                                     "mcp"]
    assert "prime --offline --as-hook" in (repo / ".claude" / "settings.json").read_text()
