"""Start-up stays cheap where users feel it: each read command, on a warm cache, imports
neither pydantic nor the YAML stack nor the event models; --version and -h not even click.

Deterministic (it checks sys.modules in a fresh interpreter); the timings themselves are in
benchmarks/bench_start.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import invoke

HEAVY = ("pydantic", "ruamel", "loopx.model.events", "tqdm")
PROBE = """
import io, json, sys
from contextlib import redirect_stdout
from loopx.cli.launch import main
out = io.StringIO()
with redirect_stdout(out):
    try:
        main(sys.argv[1:])
    except SystemExit as exc:
        assert not exc.code or exc.code in (10, 20), exc.code
print(json.dumps(sorted(sys.modules)))
"""


def _imported(repo: Path, *args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True,
                          cwd=repo,
                          env={**__import__("os").environ, "LOOPX_ACTOR": "agent:a@x"})
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.fixture
def warm(repo: Path) -> Path:
    for args in (["init"], ["goal", "add", "G", "--id", "g", "--accept", "works"],
                 ["todo", "add", "g", "T", "--id", "t"], ["note", "add", "hi"]):
        assert invoke(repo, *args).code == 0
    assert invoke(repo, "status", "--no-ci").code == 0  # the live file is written
    return repo


@pytest.mark.parametrize("args", [
    ["status", "--no-ci"], ["status", "--format", "json", "--no-ci"], ["todo", "list"],
    ["next", "--no-ci"], ["brief", "--no-ci"], ["log", "--oneline"],
])
def test_a_warm_read_imports_no_pydantic_no_yaml_and_no_event_models(warm: Path,
                                                                    args: list[str]) -> None:
    heavy = sorted(m for m in _imported(warm, *args) if m.startswith(HEAVY))
    assert heavy == [], f"`git loopx {' '.join(args)}` imported {heavy}"


@pytest.mark.parametrize("args", [["--version"], ["-h"]])
def test_version_and_short_help_start_without_click(repo: Path, args: list[str]) -> None:
    imported = _imported(repo, *args)
    assert "click" not in imported and "loopx.cli.root" not in imported


def test_the_post_commit_hook_starts_without_click(warm: Path) -> None:
    """The shim's `git loopx hook post-commit` takes launch's own path, not the click tree."""
    imported = _imported(warm, "hook", "post-commit")
    assert "loopx.ops.hooks" in imported
    assert "click" not in imported and "loopx.cli.root" not in imported


def test_a_read_after_hooks_queued_and_drained_work_stays_light(warm: Path) -> None:
    """Once post-commit has used the queue its folder stays; an empty queue must not load
    capture (and with it the event model) on every read."""
    (warm / ".git" / "loopx" / "spool" / "failed").mkdir(parents=True)
    imported = _imported(warm, "status", "--format", "json", "--no-ci")
    heavy = sorted(m for m in imported if m.startswith((*HEAVY, "loopx.hooks.capture")))
    assert heavy == []
