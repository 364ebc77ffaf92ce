"""`git loopx log` and `git loopx diff` on a scripted history, compared with the expected
text under tests/snapshots/. Regenerate after an intended change with
``LOOPX_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_review_log_diff.py`` and review the diff."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import invoke
from statekit import run

from loopx import Ledger
from loopx.model import ids
from loopx.ledger.draft import Draft

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
UPDATE = bool(
    os.environ.get("LOOPX_UPDATE_SNAPSHOTS")
)  # read before the hermetic fixture clears it
T0 = datetime(2026, 11, 29, 9, 0, tzinfo=timezone.utc)
ALICE, AGENT = "human:alice@example.com", "agent:codex@devbox"
SHA = "0123456789abcdef0123456789abcdef01234567"

STORY: list[tuple[str, str, dict, str | None]] = [
    (ALICE, "ledger.initialised", {"name": "demo", "loopx_version": "0.1.0"}, None),
    (ALICE, "config.set", {"roles": {"maintainer": [ALICE]}, "lease_ttl_seconds": 2700}, None),
    (
        ALICE,
        "goal.created",
        {
            "id": "g-1",
            "title": "Stable error codes",
            "acceptance": [
                {"id": "a1", "text": "error_code is documented"},
                {"id": "a2", "text": "tests pass"},
            ],
        },
        "g-1",
    ),
    (
        ALICE,
        "todo.added",
        {"id": "t-1", "goal": "g-1", "title": "Document error_code", "criteria": ["a1"]},
        "g-1",
    ),
    (
        ALICE,
        "todo.added",
        {"id": "t-2", "goal": "g-1", "title": "Ship it", "depends_on": ["t-1"]},
        "g-1",
    ),
    (
        ALICE,
        "gate.opened",
        {
            "id": "q-1",
            "goal": "g-1",
            "question": "Is error_code stable?",
            "authority": ["role:maintainer"],
            "blocks": ["t-2"],
        },
        "g-1",
    ),
    (AGENT, "todo.claimed", {"id": "t-1", "until": "2099-01-01T14:05:00Z"}, "g-1"),
    # --- the diff snapshot compares the state here with the end ---
    (
        AGENT,
        "evidence.recorded",
        {
            "id": "e-1",
            "kind": "test",
            "command": "pytest -q",
            "exit_code": 0,
            "commit": SHA,
            "tree": SHA,
            "todo": "t-1",
            "criteria": ["a1", "a2"],
        },
        "g-1",
    ),
    (AGENT, "todo.done", {"id": "t-1", "evidence": ["e-1"], "summary": "documented"}, "g-1"),
    (AGENT, "gate.answered", {"id": "q-1", "decision": "approve"}, "g-1"),  # not the authority
    (
        ALICE,
        "gate.answered",
        {"id": "q-1", "decision": "approve", "comment": "error_code is stable"},
        "g-1",
    ),
    (AGENT, "wake.set", {"id": "w-1", "on_todo": "t-2", "reason": "ship when ready"}, "g-1"),
    (ALICE, "note.added", {"id": "n-1", "text": "Remember the changelog"}, None),
]
MIDDLE = 7


@pytest.fixture
def story(repo: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The scripted history with fixed ids, times and commit dates; returns its commits."""
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2026-11-29T09:00:00Z")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-11-29T09:00:00Z")
    base_ms = int(T0.timestamp() * 1000)
    tips = []
    with Ledger(_discover(repo)) as led:
        for n, (actor, type_, data, goal) in enumerate(STORY):
            eid = ids._encode(base_ms + n * 60_000, 10) + ids._encode(n, 16)
            draft = Draft(type_, data, goal, eid)
            now = T0 + timedelta(minutes=n)
            if type_ == "gate.answered" and actor == AGENT:
                _commit_refused(repo, led, draft, actor, now)
            else:
                led.write(lambda txn, d=draft: txn.add(d), actor=actor, now=now)
            tips.append(led.tip())
    return tips


def _discover(repo: Path):  # type: ignore[no-untyped-def]
    from loopx.storage import gateway

    return gateway.discover(repo)


def _commit_refused(repo: Path, led: Ledger, draft: Draft, actor: str, now: datetime) -> None:
    """An event the rules refuse (an answer from outside the authority), committed anyway the
    way a merged branch could bring it: log must show it as not applied."""
    from loopx.model import clock
    from loopx.model import codec
    from loopx.model.events import event_path, make_event

    event = make_event(
        type=draft.type,
        data=draft.data,
        event_id=draft.event_id,
        at=clock.format_ts(now),
        clock=led.fold().max_clock + 1,
        actor=actor,
        goal=draft.goal,
    )
    from statekit import commit_files

    commit_files(
        repo,
        "refs/heads/loopx/state",
        {event_path(event): codec.dump(event.to_dict())},
        message="gate.answered q-1",
    )


def _check(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"{path} is missing: run with LOOPX_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(), f"{name} differs from its snapshot"


def test_log_text(repo: Path, story: list[str]) -> None:
    result = invoke(repo, "log")
    assert result.code == 0, result.err
    _check("log.txt", result.out)


def test_log_range_and_count(repo: Path, story: list[str]) -> None:
    result = invoke(repo, "log", f"{story[MIDDLE - 1]}..loopx/state", "-n", "3")
    assert result.code == 0, result.err
    _check("log-range.txt", result.out)


def test_log_json(repo: Path, story: list[str]) -> None:
    result = invoke(repo, "log", "-n", "4", "--format", "json")
    assert result.code == 0, result.err
    _check("log.json", json.dumps(json.loads(result.out), indent=2) + "\n")


def test_diff_text(repo: Path, story: list[str]) -> None:
    result = invoke(repo, "diff", f"{story[MIDDLE - 1]}..loopx/state")
    assert result.code == 0, result.err
    _check("diff.txt", result.out)


def test_diff_json_names_the_frontier_before_and_after(repo: Path, story: list[str]) -> None:
    result = invoke(repo, "diff", f"{story[MIDDLE - 1]}..{story[-1]}", "--format", "json").json()
    assert result["frontier"] == {"before": [], "after": ["t-2"]}
    kinds = {(c["kind"], c["id"], c["change"]) for c in result["changes"]}
    assert ("gate", "q-1", "changed") in kinds and ("evidence", "e-1", "added") in kinds
    assert ("problem", result["changes"][-1]["id"], "added") in kinds


def test_diff_between_a_commit_and_itself_says_nothing_changed(
    repo: Path, story: list[str]
) -> None:
    result = invoke(repo, "diff", f"{story[2]}..{story[2]}")
    assert "no change in state" in result.out


def test_log_of_a_proposal_shows_only_its_commits(repo: Path, story: list[str]) -> None:
    assert (
        invoke(repo, "note", "add", "proposed", "--state-ref", "proposal/x", actor=ALICE).code == 0
    )
    result = invoke(repo, "log", "loopx/state..proposal/x")
    assert result.out.count("commit ") == 1 and "noted 'proposed'" in result.out
    assert run(repo, "rev-parse", "proposal/x~1") == story[-1]


def test_log_oneline_has_one_line_per_event(repo: Path, story: list[str]) -> None:
    full = invoke(repo, "log", "--format", "json").json()
    lines = invoke(repo, "log", "--oneline").out.splitlines()
    assert len(lines) == sum(len(row["events"]) for row in full)
    assert lines[0].startswith(full[0]["commit"][:12] + " ")


def test_diff_without_a_range_shows_the_last_state_commit(repo: Path, story: list[str]) -> None:
    assert invoke(repo, "diff").out == invoke(repo, "diff", "loopx/state~1..loopx/state").out


@pytest.mark.parametrize("args", [["diff", "HEAD~1..HEAD"], ["diff", "HEAD"],
                                  ["diff", "loopx/state..HEAD"], ["log", "HEAD"],
                                  ["log", "loopx/state..HEAD", "-n", "2"]])
def test_a_code_commit_is_not_read_as_a_ledger(repo: Path, story: list[str],
                                               args: list[str]) -> None:
    """HEAD is the code: read as a state commit it was a ledger of 0 events (a diff to it
    said every goal was gone, its log named commits and no events), exit 0."""
    run(repo, "commit", "-q", "--allow-empty", "-m", "more code")
    result = invoke(repo, *args)
    assert result.code == 1 and result.out == "", result.out
    assert result.err == ("error: HEAD is not a commit of a loopx state branch (its tree has no "
                          "events/): name one like loopx/state, loopx/state~1 or "
                          "origin/loopx/state\n") or result.err.startswith("error: HEAD~1 is not")
