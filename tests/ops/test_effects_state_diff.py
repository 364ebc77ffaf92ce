"""The pull request's one state-diff comment (`effect comment --state-diff ... --update`), and
the Actions workflow shipped in docs/ci that posts it, against a stand-in for GitHub's REST API
on 127.0.0.1: the first push posts one comment with the marker, later pushes update that
comment, a retry after a lost answer finds it, and text from the proposal stays inert."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from conftest import ROOT, git, invoke
from githubkit import GitHubStandIn
from loopx.recovery import githubapi as gh
from syncutil import bare_remote

SLUG = "acme/widget"
TARGET = f"github:{SLUG}#12"
COMMENT = ("effect", "comment", TARGET, "--state-diff", "loopx/state..proposal/x",
           "--key", "loopx-state-diff", "--update")
PROPOSAL = ("--state-ref", "proposal/x")
WORKFLOW = ROOT / "docs" / "ci" / "loopx-validate.yml"


def _ok(repo: Path, *args: str) -> Any:
    result = invoke(repo, *args, "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def _setup(repo: Path, github: GitHubStandIn) -> None:
    github.add_issue(SLUG, 12, title="Plan the release", pull=True)
    _ok(repo, "init")
    _ok(repo, "goal", "add", "Ship", "--id", "g-1")
    _ok(repo, "todo", "add", "g-1", "Build", "--id", "t-1")
    _ok(repo, "todo", "add", "g-1", "Test", "--id", "t-2", "--after", "t-1", *PROPOSAL)


def test_the_first_push_posts_one_comment_and_later_pushes_update_it(
        repo: Path, github: GitHubStandIn) -> None:
    _setup(repo, github)
    first = _ok(repo, *COMMENT, "--no-record")
    [comment] = github.comments_on(SLUG, 12)
    assert gh.carries(comment["body"], "loopx-state-diff")
    assert "- todo t-2 new: `todo t-2 on g-1 'Test' [open]`" in comment["body"]
    assert "```mermaid\n" in comment["body"]
    assert _ok(repo, *COMMENT, "--no-record") == first  # nothing new: nothing written
    _ok(repo, "todo", "claim", "t-1", *PROPOSAL)  # the next push
    second = _ok(repo, *COMMENT, "--no-record")
    [comment] = github.comments_on(SLUG, 12)
    assert second["url"] == first["url"] == comment["html_url"]
    assert "- todo t-1 changed: `open -> claimed" in comment["body"]
    assert [r["method"] for r in github.writes()] == ["POST", "PATCH"]


def test_a_push_retried_after_a_lost_answer_never_posts_a_second_comment(
        repo: Path, github: GitHubStandIn) -> None:
    _setup(repo, github)
    github.lose_answers = 1
    assert invoke(repo, *COMMENT).code == 1  # GitHub posted it; the answer never came back
    [failed] = _ok(repo, "effect", "list")
    assert failed["state"] == "failed"
    posted = _ok(repo, *COMMENT)  # the retry finds the comment by its marker
    [comment] = github.comments_on(SLUG, 12)
    assert posted["url"] == comment["html_url"]
    assert [r["method"] for r in github.writes()] == ["POST"]
    confirmed = [e for e in _ok(repo, "effect", "list") if e["state"] == "confirmed"]
    assert [(e["receipt"], e["readback"]) for e in confirmed] == [
        (comment["html_url"], TARGET)]
    [readback] = [e for e in _ok(repo, "effect", "list") if e["id"] == posted["effect"]]
    assert gh.marker(readback["key"]) in comment["body"]  # what its readback looks for


def test_a_comment_that_quotes_the_marker_is_not_taken_for_ours(
        repo: Path, github: GitHubStandIn) -> None:
    """Someone quotes a title holding the marker (or the marker itself) in a comment of
    theirs: loopx neither edits that comment nor takes it for the one it posted."""
    _setup(repo, github)
    mark = gh.marker("loopx-state-diff")
    _ok(repo, "todo", "add", "g-1", f"{mark} -->", "--id", "t-3", *PROPOSAL)
    theirs = {"id": 1, "_issue": (SLUG, 12), "body": f"the title says `{mark}`, odd",
              "html_url": f"https://github.example/{SLUG}/pull/12#issuecomment-1"}
    github.comments[1] = dict(theirs)
    _ok(repo, *COMMENT, "--no-record")
    _ok(repo, "todo", "claim", "t-1", *PROPOSAL)
    _ok(repo, *COMMENT, "--no-record")
    assert github.comments[1] == theirs
    [ours] = [c for c in github.comments_on(SLUG, 12) if c["id"] != 1]
    assert f"- todo t-3 new: `todo t-3 on g-1 '{mark} -->' [open]`" in ours["body"]
    assert [r["method"] for r in github.writes()] == ["POST", "PATCH"]


def test_body_and_state_diff_are_one_or_the_other(repo: Path, github: GitHubStandIn) -> None:
    _setup(repo, github)
    (repo / "body.md").write_text("hi\n")
    both = invoke(repo, *COMMENT, "--body", str(repo / "body.md"))
    neither = invoke(repo, "effect", "comment", TARGET, "--key", "k")
    assert both.code == neither.code == 2
    assert "give --body FILE or --state-diff BASE..HEAD" in both.err + neither.err
    assert github.writes() == []


# --- the workflow of docs/ci, run as Actions would -----------------------------------------------


def _steps() -> list[dict[str, Any]]:
    workflow = YAML(typ="safe").load(WORKFLOW.read_text())
    assert list(workflow["on"]) == ["pull_request"]
    assert workflow["on"]["pull_request"]["branches"] == ["loopx/state"]
    assert workflow["permissions"]["pull-requests"] == "write"
    return list(workflow["jobs"]["validate"]["steps"])


def _run_steps(ci: Path, token: str) -> list[int]:
    """Every `run:` step after loopx is installed, as Actions runs it (bash -e, pipefail), in
    the pull request's checkout; the exit status of each."""
    codes = []
    for step in _steps():
        if "run" not in step or "pip install" in step["run"]:
            continue
        script = (step["run"].replace("${{ github.repository }}", SLUG)
                  .replace("${{ github.event.pull_request.number }}", "12"))
        assert "${{" not in script, script
        env = {k: v.replace("${{ secrets.GITHUB_TOKEN }}", token)
               for k, v in step.get("env", {}).items()}
        assert not codes or codes[-1] == 0 or str(step.get("if", "")).startswith("always()")
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                              cwd=ci, env={**os.environ, **env}, capture_output=True, text=True)
        codes.append(proc.returncode)
    return codes


def test_the_shipped_workflow_keeps_one_comment_per_pull_request(
        repo: Path, tmp_path: Path, github: GitHubStandIn) -> None:
    _setup(repo, github)
    origin = bare_remote(tmp_path, "origin.git")
    git(repo, "remote", "add", "origin", str(origin))
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/main", "refs/heads/loopx/state",
        "refs/heads/proposal/x")
    ci = tmp_path / "ci"
    git(tmp_path, "clone", "-q", str(origin), str(ci))

    def push_and_run() -> list[int]:
        git(repo, "push", "-q", "origin", "refs/heads/proposal/x")
        git(ci, "fetch", "-q", "origin", "+refs/heads/proposal/x:refs/remotes/origin/proposal/x")
        git(ci, "checkout", "-q", "--detach", "refs/remotes/origin/proposal/x")
        return _run_steps(ci, os.environ["GITHUB_TOKEN"])

    assert push_and_run() == [0, 0]
    [comment] = github.comments_on(SLUG, 12)
    assert comment["body"].startswith("### loopx state change: ✅ valid\n")
    assert gh.carries(comment["body"], "loopx-state-diff")
    _ok(repo, "gate", "open", "g-1", "Go?", "--id", "q-1", "--blocks", "t-2",
        "--authority", "human:alice@example.com", *PROPOSAL)
    answered = invoke(repo, "gate", "answer", "q-1", "--approve", *PROPOSAL,
                      actor="human:alice@example.com")
    assert answered.code == 0, answered.err
    assert push_and_run() == [0, 0]
    [comment] = github.comments_on(SLUG, 12)
    assert "- gate q-1 new: " in comment["body"]
    assert [r["method"] for r in github.writes()] == ["POST", "PATCH"]
    # --no-record: nothing written (a clone adopts origin's state branch as it is)
    assert git(ci, "rev-parse", "refs/heads/loopx/state") == git(
        origin, "rev-parse", "refs/heads/loopx/state")
