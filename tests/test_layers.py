"""The layers of docs/design.md hold: `lint-imports` passes on the package, and its contracts
would catch an upward import, click below the interfaces, or git in the pure state."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
        "sys.exit(lint_imports_command())", "--config", str(ROOT / "pyproject.toml")]


def _lint(package_root: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(package_root))
    return subprocess.run(LINT, cwd=package_root, env=env, capture_output=True, text=True)


def test_the_package_keeps_every_contract() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("module, line, contract", [
    ("state/views.py", "from loopx.ops import status", "Layers"),
    ("storage/store.py", "from loopx.model import events", "Layers"),
    ("ledger/book.py", "import click", "No click below the interfaces"),
    ("state/checks.py", "import subprocess", "No git and no I/O in state and model"),
    ("mcp/tools.py", "from loopx.cli import app", "Layers"),  # the interfaces are siblings
    ("cli/serve.py", "from loopx.mcp import tools", "Layers"),
    ("mcp/tools.py", "import click", "No click below the interfaces"),
])
def test_the_contracts_catch_a_violation(tmp_path: Path, module: str, line: str,
                                         contract: str) -> None:
    shutil.copytree(ROOT / "loopx", tmp_path / "loopx",
                    ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "loopx" / module
    target.write_text(target.read_text() + f"\n{line}  # an upward import, on purpose\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert contract in result.stdout and "BROKEN" in result.stdout


def test_module_names_are_unique_across_the_package() -> None:
    """docs/design.md: no two modules share a name (no `import sync as sync_`)."""
    names: dict[str, list[str]] = {}
    for path in (ROOT / "loopx").rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            names.setdefault(path.stem, []).append(str(path.relative_to(ROOT)))
    assert {n: p for n, p in names.items() if len(p) > 1} == {}


def test_no_module_is_over_600_lines() -> None:
    """A module that outgrows a screenful of screens owns more than one thing (issue 10)."""
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "loopx").rglob("*.py")
            if (n := len(p.read_text("utf-8").splitlines())) > 600}
    assert long == {}
