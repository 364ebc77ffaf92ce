"""Links to issues and pull requests (`--link github:OWNER/REPO#N` on goals and todos):
status shows each one's state, read through the GitHub provider, cached like CI, and never
written into the ledger."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import git, invoke
from githubkit import GitHubStandIn

SLUG = "acme/widget"


def _status(repo: Path, *args: str) -> dict[str, Any]:
    result = invoke(repo, "status", "--format", "json", "--no-ci", *args)
    assert result.code == 0, result.err
    return json.loads(result.out)  # type: ignore[no-any-return]


def _setup(repo: Path, github: GitHubStandIn) -> None:
    github.add_issue(SLUG, 1, title="Crash on start")
    github.add_issue(SLUG, 2, pull=True, reviewers=1, title="Fix the crash")
    github.add_issue(SLUG, 3, pull=True, merged=True, state="closed")
    assert invoke(repo, "init").code == 0
    assert invoke(repo, "goal", "add", "Ship", "--id", "g1", "--link", f"github:{SLUG}#1").code == 0
    added = invoke(repo, "todo", "add", "g1", "Fix it", "--id", "t1",
                   "--link", f"github:{SLUG}#2", "--link", f"github:{SLUG}#1")
    assert added.code == 0, added.err
    assert invoke(repo, "goal", "update", "g1", "--link", f"github:{SLUG}#3").code == 0


def test_status_shows_the_state_of_each_link(repo: Path, github: GitHubStandIn) -> None:
    _setup(repo, github)
    doc = _status(repo)
    links = doc["environment"]["links"]
    assert {k: v["state"] for k, v in links.items()} == {
        f"github:{SLUG}#1": "open", f"github:{SLUG}#3": "merged",
        f"github:{SLUG}#2": "review requested"}
    assert links[f"github:{SLUG}#1"]["by"] == ["g1", "t1"]
    assert links[f"github:{SLUG}#2"]["title"] == "Fix the crash"
    assert doc["goals"][0]["links"] == [f"github:{SLUG}#1", f"github:{SLUG}#3"]
    text = invoke(repo, "status", "--no-ci")
    assert f"github:{SLUG}#2  review requested" in text.out


def test_link_states_are_cached_and_never_recorded(repo: Path, github: GitHubStandIn) -> None:
    _setup(repo, github)
    _status(repo)
    asked = len(github.requests)
    github.issues[(SLUG, 1)]["state"] = "closed"
    assert _status(repo)["environment"]["links"][f"github:{SLUG}#1"]["state"] == "open"
    assert len(github.requests) == asked  # within the cache's minute: not asked again
    files = git(repo, "ls-tree", "-r", "--name-only", "refs/heads/loopx/state")
    assert not any("closed" in git(repo, "show", f"refs/heads/loopx/state:{f}")
                   for f in files.split())


def test_offline_or_unreachable_links_are_unknown_not_fatal(repo: Path,
                                                           github: GitHubStandIn) -> None:
    _setup(repo, github)
    offline = _status(repo, "--offline")["environment"]["links"]
    assert {v["state"] for v in offline.values()} == {"unknown"}
    github.close()
    doc = _status(repo)
    details = [v["detail"] for v in doc["environment"]["links"].values()]
    assert all(d and ("offline" in d or "did not answer" in d) for d in details)


def test_a_link_must_name_an_issue_or_pull_request(repo: Path) -> None:
    assert invoke(repo, "init").code == 0
    result = invoke(repo, "goal", "add", "Ship", "--link", "https://github.com/acme/widget/issues/1")
    assert result.code != 0 and "link" in result.err
    assert "Ship" not in git(repo, "log", "--format=%s", "refs/heads/loopx/state")
