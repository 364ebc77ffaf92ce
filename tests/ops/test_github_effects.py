"""GitHub writes as effects: `gate open --notify github` asks the question as a comment that
mentions the authority, and `effect comment` (the Actions workflow's PR-comment step) posts
or updates one comment per key. Against a stand-in for GitHub's REST API on 127.0.0.1; the
token comes from the environment and never reaches the ledger."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import git, invoke
from githubkit import GitHubStandIn
from loopx.recovery import githubapi as gh

SLUG = "acme/widget"
TOKEN = "ghp_sEcReT-token-0123456789"  # what the `github` fixture puts in GITHUB_TOKEN


def _ok(repo: Path, *args: str) -> Any:
    result = invoke(repo, *args, "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def _ledger_text(repo: Path) -> str:
    """Every event file of the state branch, and every commit message on it."""
    files = git(repo, "ls-tree", "-r", "--name-only", "refs/heads/loopx/state").split()
    return "\n".join([git(repo, "log", "--format=%B", "refs/heads/loopx/state")] +
                     [git(repo, "show", f"refs/heads/loopx/state:{f}") for f in files])


def _setup(repo: Path, github: GitHubStandIn) -> None:
    github.add_issue(SLUG, 12, title="Ship it")
    assert invoke(repo, "init").code == 0
    git(repo, "config", "loopx.github.logins", "human:alice@example.com=alice")
    _ok(repo, "goal", "add", "Ship", "--id", "g1", "--link", f"github:{SLUG}#12")
    _ok(repo, "todo", "add", "g1", "Release", "--id", "t1")


def test_gate_open_notify_asks_on_the_goals_issue_mentioning_the_authority(
        repo: Path, github: GitHubStandIn) -> None:
    _setup(repo, github)
    _ok(repo, "gate", "open", "g1", "Release on *Friday*?", "--id", "q1", "--blocks", "t1",
        "--authority", "human:alice@example.com", "--notify", "github")
    [comment] = github.comments_on(SLUG, 12)
    assert "@alice" in comment["body"] and "q1" in comment["body"]
    assert "`Release on *Friday*?`" in comment["body"]  # text from the ledger stays inert
    assert gh.marker("gate-notify:q1") in comment["body"]
    [effect] = _ok(repo, "effect", "list")
    assert (effect["state"], effect["receipt"]) == ("confirmed", comment["html_url"])
    assert effect["readback"] == f"github:{SLUG}#12"
    assert TOKEN not in _ledger_text(repo)


def test_a_failed_notification_leaves_the_gate_open_and_the_effect_failed(
        repo: Path, github: GitHubStandIn) -> None:
    _setup(repo, github)
    github.fail_with = 500
    result = invoke(repo, "gate", "open", "g1", "Go?", "--id", "q1",
                    "--authority", "human:alice@example.com", "--notify", "github")
    assert result.code == 1 and "gate q1 is open, but asking on" in result.err
    assert "HTTP 500" in result.err
    [effect] = _ok(repo, "effect", "list")
    assert effect["state"] == "failed"
    assert _ok(repo, "gate", "show", "q1")["state"] == "open"


def test_notify_without_a_link_is_refused_before_anything_is_written(
        repo: Path, github: GitHubStandIn) -> None:
    assert invoke(repo, "init").code == 0
    _ok(repo, "goal", "add", "Ship", "--id", "g1")
    tip = git(repo, "rev-parse", "refs/heads/loopx/state")
    result = invoke(repo, "gate", "open", "g1", "Go?", "--authority", "human:a@b.c",
                    "--notify", "github")
    assert result.code == 1 and "no issue or pull request to notify on" in result.err
    assert git(repo, "rev-parse", "refs/heads/loopx/state") == tip
    assert github.requests == []


def test_effect_comment_posts_once_and_updates_in_place(repo: Path, github: GitHubStandIn) -> None:
    _setup(repo, github)
    report = repo / "report.txt"
    report.write_text("validate: ok ``` [x] <b>\n")
    args = ("effect", "comment", f"github:{SLUG}#12", "--body", str(report),
            "--key", "loopx-validate", "--update", "--code")
    first = _ok(repo, *args)
    assert github.comments_on(SLUG, 12)[0]["body"].startswith("````text\n")  # past its ```
    assert _ok(repo, *args) == first  # the same report again: the same effect, no new write
    report.write_text("validate: 1 problem\n")
    second = _ok(repo, *args)
    [comment] = github.comments_on(SLUG, 12)
    assert "1 problem" in comment["body"] and comment["body"].startswith("```text\n")
    assert second["url"] == first["url"] and second["effect"] != first["effect"]
    assert [r["method"] for r in github.writes()] == ["POST", "PATCH"]
    states = {e["id"]: e["state"] for e in _ok(repo, "effect", "list")}
    assert set(states.values()) == {"confirmed"} and len(states) == 2
    assert TOKEN not in _ledger_text(repo)


def test_a_retry_after_a_lost_answer_never_posts_twice(repo: Path, github: GitHubStandIn) -> None:
    _setup(repo, github)
    body = repo / "body.md"
    body.write_text("Deployed.\n")
    args = ("effect", "comment", f"github:{SLUG}#12", "--body", str(body), "--key", "deploy-1")
    github.lose_answers = 1
    assert invoke(repo, *args).code == 1  # GitHub posted it, but the answer was lost
    assert _ok(repo, "effect", "list")[0]["state"] == "failed"
    posted = _ok(repo, *args)
    assert len(github.comments_on(SLUG, 12)) == 1
    assert posted["url"] == github.comments_on(SLUG, 12)[0]["html_url"]


def test_no_record_posts_without_touching_the_ledger(repo: Path, github: GitHubStandIn) -> None:
    github.add_issue(SLUG, 3, pull=True)
    body = repo / "body.md"
    body.write_text("hi\n")
    posted = _ok(repo, "effect", "comment", f"github:{SLUG}#3", "--body", str(body),
                 "--key", "k", "--no-record")
    assert posted["effect"] is None and posted["url"].endswith("issuecomment-1001")
    assert git(repo, "for-each-ref", "refs/heads/loopx/") == ""
