"""`git loopx --help` where man is missing or cannot find the page, and shell completion for
`git-loopx` and `git loopx`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import git, run_loopx


def _bin_without_man(tmp_path: Path, loopx_bin: Path) -> Path:
    """A PATH folder with git, sh and git-loopx, and no man."""
    folder = tmp_path / "noman"
    folder.mkdir()
    for name in ("git", "sh"):
        found = shutil.which(name)
        assert found is not None
        (folder / name).symlink_to(found)
    (folder / "git-loopx").symlink_to(loopx_bin / "git-loopx")
    assert shutil.which("man", path=str(folder)) is None
    return folder


def test_help_falls_back_to_the_built_in_help_without_man(repo: Path, tmp_path: Path,
                                                          loopx_bin: Path) -> None:
    assert run_loopx(repo, "init").code == 0  # sets this repository's help viewer
    env = dict(os.environ, PATH=str(_bin_without_man(tmp_path, loopx_bin)))
    proc = subprocess.run(["git", "loopx", "--help"], cwd=repo, env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert "Usage: git loopx [OPTIONS] COMMAND" in proc.stdout and "status" in proc.stdout
    # Other pages still go to man, as git would send them (here there is none: it says so).
    other = subprocess.run(["git", "help", "commit"], cwd=repo, env=env, capture_output=True,
                           text=True)
    assert other.returncode != 0


@pytest.mark.skipif(shutil.which("man") is None, reason="needs man")
def test_help_shows_the_packaged_page_when_man_has_no_page_on_its_path(repo: Path) -> None:
    assert run_loopx(repo, "hooks", "install").code == 0  # sets the help viewer too
    env = dict(os.environ, MANPATH=str(repo / "nowhere"), MANWIDTH="80")
    proc = subprocess.run(["git", "loopx", "--help"], cwd=repo, env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert "GIT-LOOPX(1)" in proc.stdout or "Usage: git loopx" in proc.stdout  # no groff: text


def test_the_help_viewer_leaves_a_chosen_viewer_alone_and_uninstall_removes_it(repo: Path) -> None:
    git(repo, "config", "man.viewer", "woman")
    assert run_loopx(repo, "init").code == 0
    assert git(repo, "config", "--get-all", "man.viewer") == "woman"
    git(repo, "config", "--unset", "man.viewer")
    assert run_loopx(repo, "hooks", "install").code == 0
    assert git(repo, "config", "--get-all", "man.viewer") == "loopx"
    assert run_loopx(repo, "hooks", "uninstall").code == 0
    assert subprocess.run(["git", "config", "man.viewer"], cwd=repo).returncode == 1


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_are_generated_for_git_loopx(repo: Path, shell: str) -> None:
    result = run_loopx(repo, "completion", shell)
    assert result.code == 0
    assert "_GIT_LOOPX_COMPLETE" in result.out and "git-loopx" in result.out
    assert "GIT LOOPX" not in result.out  # the program name's space never reaches the shell
    via_env = subprocess.run(["git-loopx"], env=dict(os.environ, _GIT_LOOPX_COMPLETE=f"{shell}_source"),
                             capture_output=True, text=True)
    assert via_env.returncode == 0 and via_env.stdout == result.out
    hook = {"bash": "_git_loopx()", "zsh": "_git-loopx()", "fish": "--command git"}[shell]
    assert hook in result.out


def test_the_bash_completion_script_sources_and_completes_git_loopx_and_git_space_loopx(
        repo: Path) -> None:
    script = run_loopx(repo, "completion", "bash").out
    (repo / ".." / "loopx.bash").write_text(script)
    probe = r"""
set -e
source ../loopx.bash
COMP_WORDS=(git-loopx to); COMP_CWORD=1; _git_loopx_completion git-loopx
echo "dashed: ${COMPREPLY[*]}"
COMPREPLY=(); words=(git loopx todo cl); cword=3; _git_loopx
echo "git: ${COMPREPLY[*]}"
COMPREPLY=(); words=(git -C . loopx evidence sh); cword=5; _git_loopx
echo "git -C: ${COMPREPLY[*]}"
complete -p git-loopx
"""
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", probe], cwd=repo,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "dashed: todo" in lines and "git: claim" in lines and "git -C: show" in lines
    assert "complete -o nosort -F _git_loopx_completion git-loopx" in lines


def test_help_install_viewer_global_covers_repositories_without_loopx(tmp_path: Path,
                                                                      loopx_bin: Path) -> None:
    plain = tmp_path / "plain"
    git(tmp_path, "init", "-q", str(plain))
    env = dict(os.environ, PATH=str(_bin_without_man(tmp_path, loopx_bin)))
    before = subprocess.run(["git", "loopx", "--help"], cwd=plain, env=env, capture_output=True)
    assert before.returncode == 128  # git's own "no man viewer handled the request"
    result = run_loopx(plain, "help", "--install-viewer", "global")
    assert result.code == 0 and "in every repository" in result.out
    assert git(plain, "config", "--global", "man.viewer") == "loopx"  # the test's own HOME
    after = subprocess.run(["git", "loopx", "--help"], cwd=plain, env=env, capture_output=True,
                           text=True)
    assert after.returncode == 0 and "Usage: git loopx" in after.stdout
    assert "set already" in run_loopx(plain, "help", "--install-viewer", "global").out


def test_the_docs_name_every_command_that_takes_no_json() -> None:
    """The README and docs/cli.md said every command takes --format json; `help` and
    `completion` (usage, a shell script) do not."""
    import click

    from loopx.cli.root import cli

    def leaves(group: click.Group, ctx: click.Context, path: str) -> list[tuple[str, click.Command]]:
        found = []
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            found += (leaves(command, ctx, f"{path}{name} ") if isinstance(command, click.Group)
                      else [(f"{path}{name}", command)])
        return found

    ctx = click.Context(cli)
    without = {name for name, command in leaves(cli, ctx, "")
               if not any("--json" in p.opts for p in command.params)}
    assert without == {"help", "completion"}
    root = Path(__file__).resolve().parents[2]
    for doc in ("README.md", "docs/cli.md"):
        text = " ".join((root / doc).read_text().split())
        assert "Every command takes" not in text
        assert "Every command but `help` and `completion`" in text, doc
