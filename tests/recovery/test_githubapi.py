"""The GitHub provider's reads and writes (loopx/recovery/githubapi.py) against a stand-in for
its REST API on 127.0.0.1: each write finds what an earlier try with its key made, so a retry
never posts twice."""

from __future__ import annotations

import pytest

from githubkit import GitHubStandIn
from loopx.recovery import githubapi as gh

SLUG = "acme/widget"


def _client(stand_in: GitHubStandIn) -> gh.GitHub:
    return gh.GitHub.configured({}, timeout=2)


def test_link_states_of_issues_and_pull_requests(github: GitHubStandIn) -> None:
    github.add_issue(SLUG, 1)
    github.add_issue(SLUG, 2, state="closed")
    github.add_issue(SLUG, 3, pull=True, state="closed", merged=True)
    github.add_issue(SLUG, 4, pull=True, reviewers=1)
    github.add_issue(SLUG, 5, pull=True)
    client = _client(github)
    states = [client.link_state(SLUG, n)["state"] for n in (1, 2, 3, 4, 5)]
    assert states == ["open", "closed", "merged", "review requested", "open"]
    assert client.link_state(SLUG, 4)["kind"] == "pull"


def test_a_comment_is_posted_once_whatever_the_retries(github: GitHubStandIn) -> None:
    github.add_issue(SLUG, 7)
    client = _client(github)
    first = client.comment(SLUG, 7, "Hello", key="k-1")
    again = client.comment(SLUG, 7, "Hello", key="k-1")
    assert first.created and not again.created and first.url == again.url
    [posted] = github.comments_on(SLUG, 7)
    assert posted["body"].startswith("Hello") and gh.marker("k-1") in posted["body"]
    assert sum(1 for r in github.writes()) == 1


def test_a_post_whose_answer_was_lost_is_found_by_its_key(github: GitHubStandIn) -> None:
    github.add_issue(SLUG, 7)
    github.lose_answers = 1
    client = _client(github)
    with pytest.raises(gh.GitHubError, match="HTTP 502"):
        client.comment(SLUG, 7, "Hello", key="k-2")
    receipt = client.comment(SLUG, 7, "Hello", key="k-2")
    assert not receipt.created
    assert len(github.comments_on(SLUG, 7)) == 1


def test_update_replaces_the_comment_with_the_key(github: GitHubStandIn) -> None:
    github.add_issue(SLUG, 7)
    client = _client(github)
    client.comment(SLUG, 7, "v1", key="status", update=True)
    client.comment(SLUG, 7, "v2", key="status", update=True)
    client.comment(SLUG, 7, "v2", key="status", update=True)  # same body: nothing sent
    [comment] = github.comments_on(SLUG, 7)
    assert comment["body"].startswith("v2")
    assert [r["method"] for r in github.writes()] == ["POST", "PATCH"]


def test_the_marker_is_found_on_a_later_page(github: GitHubStandIn) -> None:
    github.add_issue(SLUG, 7)
    client = _client(github)
    client.comment(SLUG, 7, "mine", key="k-late")
    for i in range(gh.PAGE + 5):
        github._post_comment(SLUG, "7", body={"body": f"noise {i}"})
    # Listed newest first, ours is the last of 106: on the second page.
    github.comments = dict(sorted(github.comments.items(), key=lambda kv: -kv[0]))
    assert client.find_comment(SLUG, 7, "k-late") is not None


def test_an_issue_and_a_pull_request_are_opened_once(github: GitHubStandIn) -> None:
    client = _client(github)
    issue = client.open_issue(SLUG, "Flaky test", "It flakes.", key="i-1")
    assert client.open_issue(SLUG, "Flaky test", "It flakes.", key="i-1") == gh.Receipt(
        issue.url, issue.id, False)
    pull = client.open_pull(SLUG, "Fix", "Fixes it.", head="fix", base="main", key="p-1")
    assert pull.created and pull.id == issue.id + 1
    assert not client.open_pull(SLUG, "Fix", "Fixes it.", head="fix", base="main", key="p-1").created
    assert [r["path"] for r in github.writes()] == [f"/repos/{SLUG}/issues", f"/repos/{SLUG}/pulls"]
    assert client.find_item(SLUG, "p-1")["number"] == pull.id  # type: ignore[index]


def test_the_token_is_sent_as_a_bearer_header(github: GitHubStandIn) -> None:
    github.add_issue(SLUG, 1)
    _client(github).link_state(SLUG, 1)
    assert github.requests[0]["headers"]["Authorization"] == "Bearer ghp_sEcReT-token-0123456789"


@pytest.mark.parametrize("code, said", [(401, "unauthorised"), (404, "not found"),
                                        (500, "HTTP 500")])
def test_errors_say_what_to_check(github: GitHubStandIn, code: int, said: str) -> None:
    github.fail_with = code
    with pytest.raises(gh.GitHubError, match=said):
        _client(github).link_state(SLUG, 1)


def test_targets_parse_or_are_refused() -> None:
    assert gh.parse("github:acme/widget#12") == ("acme/widget", 12)
    assert gh.parse("github:acme/widget") == ("acme/widget", None)
    with pytest.raises(gh.GitHubError):
        gh.parse("github:acme#12")
