"""--state-ref / $LOOPX_STATE_REF names a state branch, or one not made yet: anything else is
refused in one line, exit 1, before it is read as state or written to (tests/cli/test_cli.py
has the branch of code, the tag or remote-tracking ref given in full, the symbolic ref)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import git, invoke, run_loopx

ACTOR = "human:maint@example.com"


@pytest.fixture
def project(repo: Path) -> Path:
    assert invoke(repo, "init", actor=ACTOR).code == 0
    assert invoke(repo, "note", "add", "first", actor=ACTOR).code == 0
    return repo


def _refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)")


def _branch(repo: Path, name: str, tree_lines: str) -> None:
    """A branch whose one commit has the tree ``tree_lines`` (git mktree input) at its top."""
    tree = git(repo, "mktree", input=tree_lines)
    commit = git(repo, "commit-tree", tree, "-m", name)
    git(repo, "update-ref", f"refs/heads/{name}", commit)


def _refused(repo: Path, ref: str, message: str) -> None:
    before = _refs(repo)
    for args in (["--state-ref", ref, "note", "add", "x"], ["status", "--state-ref", ref],
                 ["--state-ref", ref, "init", "--offline"], ["--state-ref", ref, "hooks", "drain"]):
        refused = invoke(repo, *args, actor=ACTOR)
        assert refused.code == 1 and refused.err.count("\n") == 1, refused.err
        assert refused.err.startswith(f"error: --state-ref: {message}"), refused.err
        assert "nothing was read or written" in refused.err
    by_env = run_loopx(repo, "note", "add", "x", actor=ACTOR, env={"LOOPX_STATE_REF": ref})
    assert by_env.code == 1 and message in by_env.err and by_env.err.count("\n") == 1
    assert _refs(repo) == before  # no ref moved, none made


@pytest.mark.parametrize("kind", ["tag", "annotated", "short commit", "commit", "HEAD",
                                  "remote-tracking"])
def test_a_name_git_reads_as_no_branch_is_refused(project: Path, kind: str) -> None:
    """`--state-ref v1` (a tag), a commit id or `HEAD` was taken for a new branch of that
    name: a ledger write made refs/heads/v1 beside the tag, and every later `v1` was ambiguous."""
    head = git(project, "rev-parse", "HEAD")
    git(project, "tag", "v1")
    git(project, "tag", "-a", "-m", "t", "v2")
    git(project, "update-ref", "refs/remotes/origin/work", head)
    ref, meant = {"tag": ("v1", "refs/tags/v1"), "annotated": ("v2", "refs/tags/v2"),
                  "short commit": (head[:9], "an object id"), "commit": (head, "an object id"),
                  "HEAD": ("HEAD", "refs/heads/"),
                  "remote-tracking": ("origin/work", "refs/remotes/origin/work")}[kind]
    _refused(project, ref, f"git reads {ref!r} as {meant}")


@pytest.mark.parametrize("kind", ["empty", "events file", "events link", "sessions only"])
def test_a_branch_without_an_events_folder_is_no_state_branch(project: Path, kind: str) -> None:
    """A branch whose top held only names of the state layout passed for a state branch
    (an empty one, `events` a file or a link, only sessions/) and was read, and written, as one."""
    blob = git(project, "hash-object", "-w", "--stdin", input="x\n")
    sub = git(project, "mktree", input=f"100644 blob {blob}\ta\n")
    lines = {"empty": "", "events file": f"100644 blob {blob}\tevents\n",
             "events link": f"120000 blob {blob}\tevents\n",
             "sessions only": f"040000 tree {sub}\tsessions\n"}[kind]
    _branch(project, "odd", lines)
    why = "it has no events/ folder" if kind in ("empty", "sessions only") else "its events is no folder"
    _refused(project, "odd", f"refs/heads/odd is not a state branch ({why})")
    _refused(project, "refs/heads/odd", f"refs/heads/odd is not a state branch ({why})")
    doctor = invoke(project, "doctor", "--state-ref", "odd", actor=ACTOR)
    assert doctor.code == 1 and f"refs/heads/odd is not a state branch ({why})" in doctor.err


def test_state_refs_that_are_one_are_taken(project: Path) -> None:
    git(project, "tag", "v1")
    for ref in ("loopx/state", "refs/heads/loopx/state", "proposal/x", "refs/heads/v1"):
        done = invoke(project, "--state-ref", ref, "note", "add", "x", actor=ACTOR)
        assert done.code == 0, (ref, done.err)
    assert git(project, "rev-parse", "refs/heads/v1^{tree}") != git(project, "rev-parse",
                                                                    "v1^{tree}")
    again = invoke(project, "--state-ref", "proposal/x", "status", actor=ACTOR)
    assert again.code == 0, again.err


def test_doctor_still_examines_a_state_branch_with_a_stray_file(project: Path) -> None:
    """A commit from a stale index on a proposal branch (README beside events/): every other
    command refuses it, doctor examines it (it is a state branch, damaged)."""
    git(project, "branch", "proposal/y", "loopx/state")
    listing = git(project, "ls-tree", "proposal/y")
    blob = git(project, "hash-object", "-w", "--stdin", input="stray\n")
    _branch(project, "proposal/z", listing + f"\n100644 blob {blob}\tREADME\n")
    git(project, "update-ref", "refs/heads/proposal/z", git(
        project, "commit-tree", git(project, "rev-parse", "proposal/z^{tree}"), "-p",
        "proposal/y", "-m", "stale index"))
    assert invoke(project, "status", "--state-ref", "proposal/z", actor=ACTOR).code == 1
    doctor = invoke(project, "doctor", "--state-ref", "proposal/z", actor=ACTOR)
    assert "README: is outside the state layout" in doctor.out + doctor.err, doctor.err


def test_drain_and_hooks_refuse_a_state_ref_that_is_no_state_branch(project: Path) -> None:
    assert invoke(project, "hooks", "install", actor=ACTOR).code == 0
    git(project, "branch", "feature")
    before = _refs(project)
    drained = invoke(project, "--state-ref", "feature", "hooks", "drain", actor=ACTOR)
    assert drained.code == 1 and drained.err.startswith(
        "error: --state-ref: refs/heads/feature is not a state branch"), drained.err
    (project / "b.txt").write_text("b\n")
    git(project, "add", "b.txt")
    proc = subprocess.run(["git", "commit", "-q", "-m", "work\n\nLoopx-Todo: t1"], cwd=project,
                          capture_output=True, text=True,
                          env=dict(os.environ, LOOPX_STATE_REF="feature", LOOPX_ACTOR=ACTOR))
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "refs/heads/feature is not a state branch" in lines[0], lines
    after = _refs(project)
    assert [r for r in after.splitlines() if "refs/heads/main" not in r] == [
        r for r in before.splitlines() if "refs/heads/main" not in r]


def test_init_makes_a_ledger_on_a_state_ref_not_made_yet(repo: Path) -> None:
    made = invoke(repo, "--state-ref", "proposal/new", "init", "--offline", actor=ACTOR)
    assert made.code == 0 and "initialised ledger on refs/heads/proposal/new" in made.out, made.err
    assert git(repo, "ls-tree", "--name-only", "proposal/new") == "events"
