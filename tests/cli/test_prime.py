"""`git loopx prime` on a small story (the shape of the demo), compared with the expected Markdown under
tests/snapshots/. Regenerate after an intended change with
``LOOPX_UPDATE_SNAPSHOTS=1 python -m pytest tests/cli/test_prime.py`` and review the diff."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from conftest import git, invoke, run_loopx

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
UPDATE = bool(os.environ.get("LOOPX_UPDATE_SNAPSHOTS"))  # read before the hermetic fixture
NOW = "2030-01-01T09:00:00Z"
LATER = "2030-01-01T09:25:00Z"
AGENT = "agent:demo-agent@laptop"
MAINTAINER = "human:maintainer@example.com"
APP = 'import sys\n\nprint("hello, world")\n'
APP_JSON = ('import json, sys\n\nif "--format" in sys.argv:\n'
            '    print(json.dumps({"greeting": "hello, world"}))\n'
            'else:\n    print("hello, world")\n')
# A goal with three criteria and four todos; output is done (its evidence recorded on the
# commit that adds JSON), the agent holds `tests`, the release waits for the maintainer's gate.
STORY: list[tuple[str, list[str]]] = [
    (MAINTAINER, ["init", "--name", "hello-cli"]),
    (MAINTAINER, ["config", "set", "--role", f"maintainer={MAINTAINER}"]),
    (MAINTAINER, ["goal", "add", "Add --format json to hello-cli", "--id", "json",
                  "--accept", "default text output unchanged",
                  "--accept", "JSON output validates against its schema",
                  "--accept", "CI is green on the change"]),
    (MAINTAINER, ["todo", "add", "json", "Add the JSON output layer", "--id", "output",
                  "--criterion", "a2"]),
    (MAINTAINER, ["todo", "add", "json", "Test text and JSON output", "--id", "tests",
                  "--after", "output", "--criterion", "a1", "--criterion", "a2"]),
    (MAINTAINER, ["todo", "add", "json", "Run CI", "--id", "ci", "--after", "tests",
                  "--criterion", "a3"]),
    (MAINTAINER, ["gate", "open", "json", "Are the JSON field names stable?", "--id", "names",
                  "--authority", "role:maintainer"]),
    (MAINTAINER, ["todo", "add", "json", "Release 1.1", "--id", "release", "--after", "ci",
                  "--gate", "names"]),
    (AGENT, ["todo", "claim", "output", "--ttl", "30m"]),
    (AGENT, ["@commit"]),
    (AGENT, ["evidence", "add", "--kind", "test", "--todo", "output", "--id", "schema-test",
             "--criterion", "a2", "--command", "python app.py --format json | check-schema",
             "--exit-code", "0", "--summary", "JSON validates"]),
    (AGENT, ["todo", "done", "output", "--evidence", "schema-test"]),
    (AGENT, ["todo", "claim", "tests"]),
]


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
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text(APP)
    git(repo, "add", "app.py")
    git(repo, "commit", "-q", "-m", "hello-cli")
    for actor, argv in STORY:
        if argv == ["@commit"]:
            (repo / "app.py").write_text(APP_JSON)
            git(repo, "commit", "-q", "-am", "Add --format json")
            continue
        result = invoke(repo, "--now", NOW, *argv, actor=actor)
        assert result.code == 0, (argv, result.err)
    # The agent's session gets a message from the maintainer; the code changes after the
    # schema test ran (its evidence goes stale); a bug found on the way is filed.
    for actor, argv in [
        (AGENT, ["session", "open", "Keep the changelog", "--id", "s-log", "--goal", "json"]),
        (AGENT, ["session", "respond", "s-log", "CHANGELOG updated"]),
        (MAINTAINER, ["session", "send", "s-log", "mention the JSON schema too"]),
        (AGENT, ["todo", "add", "json", "Fix the trailing newline", "--id", "newline",
                      "--discovered-from", "tests", "--priority", "1"]),
    ]:
        assert invoke(repo, "--now", NOW, *argv, actor=actor).code == 0
    (repo / "app.py").write_text(APP_JSON.replace("hello, world", "hello, World"))
    git(repo, "commit", "-q", "-am", "Capitalise")
    return repo


@pytest.mark.parametrize("who, actor", [("agent", AGENT), ("maintainer", MAINTAINER)])
def test_prime_on_a_story_matches_its_snapshot(story: Path, who: str, actor: str) -> None:
    result = invoke(story, "--now", LATER, "prime", "--no-ci", actor=actor)
    assert result.code == 0, result.err
    _check(f"prime-{who}.md", _normalise(result.out))


def test_prime_names_what_matters_to_each_actor(story: Path) -> None:
    agent = json.loads(invoke(story, "--now", LATER, "prime", "--no-ci", "--json",
                              actor=AGENT).out)["primer"]
    assert [t["id"] for t in agent["leases"]] == ["tests"]
    assert [t["id"] for t in agent["frontier"]] == ["newline"]
    assert agent["inboxes"] == [{"session": "s-log", "task": "Keep the changelog", "unread": 1}]
    assert agent["gates"] == [] and "schema-test" in agent["stale"][0]["reason"]
    maint = json.loads(invoke(story, "--now", LATER, "prime", "--no-ci", "--json",
                              actor=MAINTAINER).out)["primer"]
    assert maint["leases"] == [] and maint["inboxes"] == []
    assert [g["command"] for g in maint["gates"]][0].startswith("git loopx gate answer names")


def test_prime_outside_a_ledger_says_so_and_succeeds(repo: Path) -> None:
    result = run_loopx(repo, "prime")
    assert result.code == 0 and "no loopx ledger yet" in result.out
