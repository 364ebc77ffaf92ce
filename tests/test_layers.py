"""The layers of docs/design.md hold: `lint-imports` passes on the package, and its contracts
would catch an upward import, click below the interfaces, git or I/O in the pure state, an
interface or operation running git itself, or a standard-library I/O module outside its owners."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

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


# (module, the line appended to it, the contract it breaks, the import the report names)
VIOLATIONS = [
    ("projection/views.py", "from loopx.ops import status", "Layers", "loopx.ops.status"),
    ("storage/store.py", "from loopx.model import events", "Layers", "loopx.model.events"),
    ("mcp/tools.py", "from loopx.cli import app", "Layers", "loopx.cli.app"),  # siblings
    ("cli/serve.py", "from loopx.mcp import tools", "Layers", "loopx.mcp.tools"),
    ("ledger/book.py", "import click", "No click below the interfaces", "click"),
    ("mcp/server.py", "import click", "No click below the interfaces", "click"),
    ("projection/checks.py", "import subprocess", "No git and no I/O in projection and model",
     "subprocess"),
    ("model/ids.py", "import tempfile", "No git and no I/O in projection and model", "tempfile"),
    ("projection/folding.py", "import sqlite3", "No git and no I/O in projection and model", "sqlite3"),
    ("projection/tables.py", "from loopx.ledger import rows",
     "No git and no I/O in projection and model", "loopx.ledger.rows"),
    ("cli/render.py", "from loopx.storage import gateway",
     "The interfaces reach git through the operations", "loopx.storage.gateway"),
    ("mcp/tools.py", "from loopx.storage import store",
     "The interfaces reach git through the operations", "loopx.storage.store"),
    ("ops/goals.py", "from loopx.storage import gateway",
     "The operations reach git through the ledger and the features", "loopx.storage.gateway"),
    ("upkeep/doctor.py", "import subprocess", "subprocess only where a process is the job",
     "subprocess"),
    ("ops/todos.py", "import subprocess", "subprocess only where a process is the job",
     "subprocess"),
    ("ledger/cache.py", "import sqlite3", "sqlite3 only in the cache's rows", "sqlite3"),
    ("remote/sync.py", "import urllib.request",
     "The network only in the REST module of recovery", "urllib"),
    ("ledger/book.py", "import socket",
     "The network only in the REST module of recovery", "socket"),
    ("recovery/ci/github.py", "import http.client", "No http.client or http.server", "http"),
    ("ops/status.py", "import starlette", "Starlette and uvicorn only in the web page",
     "starlette"),
    ("ledger/replay.py", "import tqdm", "tqdm only in the terminal's progress bar", "tqdm"),
]


def _sections(report: str) -> dict[str, str]:
    """The details lint-imports prints under each broken contract's underlined name."""
    lines = report.splitlines()
    starts = [i - 1 for i, line in enumerate(lines)
              if i > 0 and line and set(line) == {"-"} and len(line) == len(lines[i - 1])]
    return {lines[a]: "\n".join(lines[a + 2:b]) for a, b in zip(starts, starts[1:] + [None])}


def test_each_contract_catches_its_violation(tmp_path: Path) -> None:
    """One copy of the package with every violation planted, one lint run: each contract is
    broken, and its report names the import planted for it (not one that reaches it by
    chance)."""
    shutil.copytree(ROOT / "loopx", tmp_path / "loopx",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for module, line, _, _ in VIOLATIONS:
        target = tmp_path / "loopx" / module
        target.write_text(target.read_text() + f"\n{line}  # a violation, on purpose\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    sections = _sections(result.stdout)
    for module, line, contract, imported in VIOLATIONS:
        importer = "loopx." + module.removesuffix(".py").replace("/", ".")
        found = [text for name, text in sections.items() if name.startswith(contract)]
        assert found, f"{contract!r} not broken by {line!r} in {module}:\n{result.stdout}"
        assert re.search(rf"^-\s+{re.escape(importer)} -> {re.escape(imported)} \(l\.",
                         found[0], re.M), (contract, importer, found[0])


def test_module_names_are_unique_but_for_a_feature_s_own_name() -> None:
    """docs/design.md: no two modules share a name (no `import sync as sync_`), except that a
    feature's command module (cli/), its operations (ops/) and the module below that does the
    work take the feature's name: one in each layer, never two in one."""
    names: dict[str, list[Path]] = {}
    for path in (ROOT / "loopx").rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            names.setdefault(path.stem, []).append(path.relative_to(ROOT / "loopx"))

    def layer(module: Path) -> str:
        return module.parts[0] if module.parts[0] in ("cli", "mcp", "ops") else "below"

    assert {name: sorted(map(str, modules)) for name, modules in names.items()
            if len({layer(m) for m in modules}) < len(modules)} == {}


def test_no_module_is_over_600_lines() -> None:
    """A module that outgrows a screenful of screens owns more than one thing (issue 10)."""
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "loopx").rglob("*.py")
            if (n := len(p.read_text("utf-8").splitlines())) > 600}
    assert long == {}


def _map() -> dict[str, str]:
    """docs/design.md's map of the layers: each folder, in order, and what the map says of it."""
    text = (ROOT / "docs" / "design.md").read_text()
    section = text[text.index("## Layers"):]
    block = section.split("```\n", 2)[1]
    parts = re.split(r"(loopx/[a-z_]+/)", block)
    return {parts[i].strip("/"): parts[i + 1] for i in range(1, len(parts), 2)}


def _layers() -> dict[str, int]:
    """The folders of the layers contract in pyproject.toml, and their layer (0 the top)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = next(c for c in config["tool"]["importlinter"]["contracts"]
                    if c["type"] == "layers")
    return {p.replace(".", "/"): n for n, layer in enumerate(contract["layers"])
            for p in re.split(r"\s*[|:]\s*", layer)}


def test_the_map_in_docs_design_names_every_folder_in_its_layer_and_every_module() -> None:
    mapped, layers = _map(), _layers()
    assert sorted(mapped) == sorted(layers), "the map's folders are the layers contract's"
    order = [layers[folder] for folder in mapped]
    assert order == sorted(order), "the map lists the layers top first, as the contract does"
    folders = sorted(f"loopx/{p.name}" for p in (ROOT / "loopx").iterdir()
                     if (p / "__init__.py").is_file())
    assert sorted(mapped) == folders
    unnamed = []
    for folder, said in mapped.items():
        words = set(re.findall(r"[a-z_]+", said))
        prefixes = tuple(w[:-1] for w in re.findall(r"([a-z_]+_)\*", said))  # catalog_*
        for path in sorted((ROOT / folder).iterdir()):
            name = path.stem if path.suffix == ".py" else path.name
            if path.name.startswith("__") or not (path.suffix == ".py" or (path / "__init__.py").is_file()):
                continue
            if name not in words and not name.startswith(prefixes):
                unnamed.append(f"{folder}/{path.name}")
    assert unnamed == [], "name each module in its folder's part of the map"
