"""The README and docs/ work when pasted: every shell block meant to be pasted runs, in order,
in a fresh repository with real git and `git loopx` on PATH, and must exit 0. A block that is
not meant to be pasted (a synopsis, an install) has `<!-- not run ... -->` just before it.

The README's blocks run in a scratch repository made as the README says; each docs page's
blocks run in one where the README's blocks ran first (the pages build on what it set up: the
goal json, its todos, the hooks, a remote). The README runs once per test process: each page
gets its own copy of the scratch repository and the remote beside it, as the README left them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"(?P<skip><!--\s*not run[^>]*-->[ \t]*\n)?^```(?P<lang>sh|python)\n(?P<code>.*?)^```",
                   re.S | re.M)
# A comment line in a block that quotes what loopx prints ("..." stands for what varies: ids).
QUOTED = re.compile(r"^# (loopx: .*)$", re.M)
PAGES = ["agents.md", "hooks.md", "sync.md", "recovery.md", "sessions.md", "review.md", "cli.md", "status.md",
         "design.md", "library.md", "benchmarks.md", "security.md"]


def blocks(path: Path) -> list[tuple[str, str, int]]:
    """(language, code, line) of each block meant to be pasted, in order."""
    text = path.read_text()
    return [(m["lang"], m["code"], text.count("\n", 0, m.start("code")) + 1)
            for m in FENCE.finditer(text) if not m["skip"]]


def scratch(tmp_path: Path) -> Path:
    """What the README says to make: `git init try-loopx && cd try-loopx && git commit
    --allow-empty -m start`."""
    repo = tmp_path / "try-loopx"
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "commit", "-q", "--allow-empty", "-m", "start")
    return repo


def paste(repo: Path, path: Path, lang: str, code: str, line: int) -> str:
    """Run one block as a reader would paste it; fail naming the file and line."""
    env = dict(os.environ)
    env.pop("LOOPX_ACTOR", None)  # the README's identity: human:<git user.email>
    argv = ["bash", "-e", "-o", "pipefail", "-c", code] if lang == "sh" else [sys.executable, "-c", code]
    proc = subprocess.run(argv, cwd=repo, capture_output=True, text=True, env=env, timeout=300)
    where = f"{path.relative_to(ROOT)}:{line}"
    assert proc.returncode == 0, f"{where} failed (exit {proc.returncode}):\n{code}\n--- stdout\n" \
        f"{proc.stdout}\n--- stderr\n{proc.stderr}"
    printed = (proc.stdout + proc.stderr).splitlines()
    for quoted in QUOTED.findall(code):  # a line the page says loopx prints, is printed
        pattern = ".*".join(re.escape(part) for part in quoted.split("..."))
        assert any(re.fullmatch(pattern, line) for line in printed), \
            f"{where}: the block says loopx prints {quoted!r}; it printed:\n" + "\n".join(printed)
    return proc.stdout


_README: dict[str, tuple[Path, list[str]]] = {}


def readme_pasted(factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The README's blocks pasted in order in a scratch repository, once per test process:
    (the folder holding the repository and what the README made beside it, each block's
    output). Run inside the first test that asks, so under its sealed HOME and config."""
    if "run" not in _README:
        readme = ROOT / "README.md"
        base = factory.mktemp("readme")
        repo = scratch(base)
        outputs = [paste(repo, readme, *block) for block in blocks(readme)]
        # Settles what the hooks queued, so that a copy holds no work under way.
        subprocess.run(["git", "loopx", "status"], cwd=repo, capture_output=True, check=True)
        _README["run"] = (base, outputs)
    return _README["run"]


@pytest.mark.slow
def test_every_readme_block_runs_when_pasted_in_order(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    assert len([b for b in blocks(ROOT / "README.md") if b[0] == "sh"]) >= 5
    base, outputs = readme_pasted(tmp_path_factory)
    assert any(o.startswith("On ledger loopx/state") for o in outputs)  # "Use it" ends in status
    status = subprocess.run(["git", "loopx", "status", "--json"], cwd=base / "try-loopx",
                            capture_output=True, text=True, check=True)
    assert '"problems":[]' in status.stdout.replace(" ", "")


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in PAGES if blocks(ROOT / "docs" / p)])
def test_every_docs_block_runs_when_pasted_after_the_readme(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, page: str) -> None:
    base, _ = readme_pasted(tmp_path_factory)
    shutil.copytree(base, tmp_path / "pasted", symlinks=True)
    repo = tmp_path / "pasted" / "try-loopx"
    path = ROOT / "docs" / page
    for block in blocks(path):
        paste(repo, path, *block)


def test_the_runner_skips_only_blocks_marked_not_run(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- not run: a synopsis -->\n```sh\ngit loopx nope [X]\n```\n\n"
                    "```sh\necho pasted\n```\n```text\nnot a shell block\n```\n")
    assert [(lang, code) for lang, code, _ in blocks(page)] == [("sh", "echo pasted\n")]


def test_a_quoted_output_line_must_be_printed(tmp_path: Path) -> None:
    paste(tmp_path, ROOT / "README.md", "sh", "echo 'loopx: did e-123 now' >&2\n# loopx: did ... now\n", 1)
    with pytest.raises(AssertionError, match="the block says loopx prints"):
        paste(tmp_path, ROOT / "README.md", "sh", "echo 'loopx: did it'\n# loopx: did e-1 then\n", 1)


# `pip install loopx` resolves to an unrelated project (which also installs a `loopx` import
# package and a `loopx` command): every install line names this distribution, git-loopx.
WRONG_INSTALL = re.compile(r"pip3? install\s+(?:-[-\w]+\s+)*['\"]?loopx(?:\[|[=<>~!]|['\"\s]|$)", re.M)


def test_every_install_line_names_the_distribution_git_loopx() -> None:
    project = (ROOT / "pyproject.toml").read_text().partition("\n[project]\n")[2]
    assert re.search(r'^name = "git-loopx"$', project.partition("\n[")[0], re.M)
    paths = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "docs").rglob("*.yml"),
             *(ROOT / "loopx").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py"),
             ROOT / ".ci" / "run"]
    wrong = [f"{p.relative_to(ROOT)}: {m[0]!r}" for p in paths
             for m in WRONG_INSTALL.finditer(p.read_text(encoding="utf-8"))]
    assert wrong == []
    assert WRONG_INSTALL.search("run: pip install loopx\n")  # the pattern finds what it looks for
    assert WRONG_INSTALL.search("pip install -U 'loopx[mcp]'")
    assert not WRONG_INSTALL.search("pip install git-loopx 'git-loopx[mcp]' '.[mcp]'")
