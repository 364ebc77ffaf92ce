"""`git loopx prime` on the demo story, compared with the expected Markdown under
tests/snapshots/. Regenerate after an intended change with
``LOOPX_UPDATE_SNAPSHOTS=1 python -m pytest tests/cli/test_prime.py`` and review the diff."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from conftest import git, invoke, run_loopx
from loopx.cli import demo

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
UPDATE = bool(os.environ.get("LOOPX_UPDATE_SNAPSHOTS"))  # read before the hermetic fixture
NOW = "2030-01-01T09:00:00Z"
LATER = "2030-01-01T09:25:00Z"
# The demo story up to the agent holding `tests`: output is done (its evidence recorded on
# the first commit), the release waits for the maintainer's gate.
UNTIL_TESTS_CLAIMED = next(i for i, (_, _, argv, _) in enumerate(demo.STORY)
                           if argv == ["todo", "claim", "tests"]) + 1


def _normalise(text: str) -> str:
    """Ids that differ between runs: event ULIDs and commit shas."""
    text = re.sub(r"\b[0-9A-HJKMNP-TV-Z]{26}\b", "<ULID>", text)
    return re.sub(r"\b[0-9a-f]{40}\b", "<SHA>", text)


def _check(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"{path} is missing: run with LOOPX_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(), f"{name} changed; if intended, regenerate (see top)"


@pytest.fixture
def story(tmp_path: Path) -> Path:
    repo = tmp_path / "hello-cli"
    repo.mkdir()
    demo._setup(repo)
    for _, actor, argv, _ in demo.STORY[:UNTIL_TESTS_CLAIMED]:
        if argv == ["@commit"]:
            (repo / "app.py").write_text(demo._APP_JSON)
            git(repo, "commit", "-q", "-am", "Add --format json")
            continue
        result = invoke(repo, "--now", NOW, *argv, actor=actor)
        assert result.code == 0, (argv, result.err)
    # The agent's session gets a message from the maintainer; the code changes after the
    # schema test ran (its evidence goes stale); a bug found on the way is filed.
    for actor, argv in [
        (demo.AGENT, ["session", "open", "Keep the changelog", "--id", "s-log", "--goal", "json"]),
        (demo.AGENT, ["session", "respond", "s-log", "CHANGELOG updated"]),
        (demo.MAINTAINER, ["session", "send", "s-log", "mention the JSON schema too"]),
        (demo.AGENT, ["todo", "add", "json", "Fix the trailing newline", "--id", "newline",
                      "--discovered-from", "tests", "--priority", "1"]),
    ]:
        assert invoke(repo, "--now", NOW, *argv, actor=actor).code == 0
    (repo / "app.py").write_text(demo._APP_JSON.replace("hello, world", "hello, World"))
    git(repo, "commit", "-q", "-am", "Capitalise")
    return repo


@pytest.mark.parametrize("who, actor", [("agent", demo.AGENT), ("maintainer", demo.MAINTAINER)])
def test_prime_on_the_demo_story_matches_its_snapshot(story: Path, who: str, actor: str) -> None:
    result = invoke(story, "--now", LATER, "prime", "--no-ci", actor=actor)
    assert result.code == 0, result.err
    _check(f"prime-{who}.md", _normalise(result.out))


def test_prime_names_what_matters_to_each_actor(story: Path) -> None:
    agent = json.loads(invoke(story, "--now", LATER, "prime", "--no-ci", "--json",
                              actor=demo.AGENT).out)["primer"]
    assert [t["id"] for t in agent["leases"]] == ["tests"]
    assert [t["id"] for t in agent["frontier"]] == ["newline"]
    assert agent["inboxes"] == [{"session": "s-log", "task": "Keep the changelog", "unread": 1}]
    assert agent["gates"] == [] and "schema-test" in agent["stale"][0]["reason"]
    maint = json.loads(invoke(story, "--now", LATER, "prime", "--no-ci", "--json",
                              actor=demo.MAINTAINER).out)["primer"]
    assert maint["leases"] == [] and maint["inboxes"] == []
    assert [g["command"] for g in maint["gates"]][0].startswith("git loopx gate answer names")


def test_prime_outside_a_ledger_says_so_and_succeeds(repo: Path) -> None:
    result = run_loopx(repo, "prime")
    assert result.code == 0 and "no loopx ledger yet" in result.out
