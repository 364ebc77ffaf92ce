"""Test fixtures. Every test is sealed from the machine: its own HOME and git config, fixed
identities, no system config, file:// only. Real git in temporary directories, never a fake."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest_plugins = ["githubkit", "webhookkit", "leasekit"]  # fixtures: `github` (GitHub's REST
# API), `hook` (a webhook), `leased` (a todo claimed, the hooks installed)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--stress", action="store_true", help="run the full stress variants")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--stress"):
        return
    skip = pytest.mark.skip(reason="stress variant: run with --stress")
    for item in items:
        if "stress" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def loopx_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bin dir whose `git-loopx` runs this checkout's loopx with this interpreter."""
    bindir = tmp_path_factory.mktemp("bin")
    shim = bindir / "git-loopx"
    shim.write_text(
        f"#!/bin/sh\nPYTHONPATH={ROOT}${{PYTHONPATH:+:$PYTHONPATH}} exec {sys.executable} -m loopx \"$@\"\n"
    )
    shim.chmod(0o755)
    return bindir


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loopx_bin: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n[gc]\n\tauto = 0\n"
        "[protocol \"file\"]\n\tallow = always\n[advice]\n\tdetachedHead = false\n"
    )
    for name in list(os.environ):
        if name.startswith(("GIT_", "LOOPX_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test User")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test User")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.com")
    monkeypatch.setenv("PATH", f"{loopx_bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def git(cwd: Path, *args: str, input: str | None = None) -> str:
    """Run real git in a test; fail loudly."""
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A work tree with one commit on main."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q")
    (path / "README").write_text("hello\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "initial")
    return path


@pytest.fixture
def ledger(repo: Path) -> Iterator[object]:
    from loopx import Ledger

    with Ledger.open(repo) as led:
        led.init(actor="human:test@example.com")
        yield led


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> object:
        import json

        return json.loads(self.out)


def run_loopx(cwd: Path, *args: str, input: str | None = None, actor: str | None = "human:test@example.com",
              env: dict[str, str] | None = None) -> Result:
    """`git loopx ...` as a real subprocess, the way users and agents run it."""
    full_env = dict(os.environ, **(env or {}))
    if actor:
        full_env["LOOPX_ACTOR"] = actor
    proc = subprocess.run(["git", "loopx", *args], cwd=cwd, input=input, capture_output=True,
                          text=True, env=full_env)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def invoke(cwd: Path, *args: str, input: str | None = None, actor: str | None = "human:test@example.com") -> Result:
    """The CLI in-process (fast): same entry point and exit codes as the console script."""
    from click.testing import CliRunner

    from loopx.cli import main

    runner = CliRunner()
    argv = ["-C", str(cwd), *(["--actor", actor] if actor else []), *args]
    with runner.isolation(input=input) as streams:
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out, err = streams[0].getvalue().decode(), streams[1].getvalue().decode()
    return Result(code, out, err)


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The argv of every git process the gateway runs from here on (real git still runs)."""
    from loopx.storage import gateway

    seen: list[tuple[str, ...]] = []
    real = gateway.run

    def counting(cwd: Path | str, *args: str, **kwargs: object) -> object:
        seen.append(args)
        return real(cwd, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(gateway, "run", counting)
    return seen
