"""`git loopx demo`: each step of the story ends as it should, checked on its outcome (exit
codes, the state in `status --format json`), not on its wording; either agent may win the race."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import run_loopx
from loopx.cli import demo

pytestmark = pytest.mark.slow


def _lines(text: str) -> dict[str, dict[str, Any]]:
    steps = [json.loads(line) for line in text.splitlines()]
    assert [s["step"] for s in steps] == list(range(1, len(demo.STORY) + 1))
    return {s["key"]: s for s in steps}


def _criteria(status: dict[str, Any]) -> dict[str, tuple[str, list[str]]]:
    (goal,) = [g for g in status["goals"] if g["id"] == "json"]
    return {c["id"]: (c["freshness"], c["changed"]) for c in goal["acceptance"]}


def _check_story(steps: dict[str, dict[str, Any]], base: Path) -> str:
    """Every outcome of the story; returns the winner of the race."""
    for step in steps.values():
        assert step["exit_code"] == step["expected_exit_code"], step

    planned = steps["status-planned"]["output"]
    assert planned["frontier"] == ["output"]  # compact: the frontier, the rest counted
    assert planned["todos"] == [] and planned["omitted"]["waiting"] == 2
    assert [a["todo"] for a in planned["actions"] if a["kind"] == "work"] == ["output"]

    failed, passed = steps["run-fails"]["output"]["data"], steps["run-passes"]["output"]["data"]
    assert (failed["exit_code"], failed["todo"], failed["command"]) == (1, "output", "python test_app.py")
    assert (passed["id"], passed["exit_code"], passed["dirty"]) == ("json-test", 0, True)

    adopted = steps["status-devbox"]["output"]  # the second clone, before any loopx command
    assert adopted["ledger"]["events"] == planned["ledger"]["events"] + 5
    assert adopted["frontier"] == ["tests"]

    racers = steps["race"]["racers"]
    (won,) = [r for r in racers if r["exit_code"] == 0]
    (lost,) = [r for r in racers if r["exit_code"] != 0]
    assert lost["exit_code"] == 1 and won["actor"] in lost["output"]["error"]["message"]
    assert won["output"]["data"]["id"] == "tests" and steps["race"]["winner"] == won["actor"]
    assert steps["run-tests"]["where"] == won["where"] and steps["run-tests"]["actor"] == won["actor"]

    assert _criteria(steps["status-stale"]["output"]) == {"a1": ("stale", ["app.py"]),
                                                          "a2": ("stale", ["app.py"])}
    assert any(a["kind"] == "rerun_evidence" for a in steps["status-stale"]["output"]["actions"])
    assert [r["exit_code"] for r in steps["rerun"]["output"]] == [0]
    fresh = steps["status-fresh"]["output"]
    assert _criteria(fresh) == {"a1": ("fresh", []), "a2": ("fresh", [])}
    assert not any(a["kind"] == "rerun_evidence" for a in fresh["actions"])

    assert steps["agent-answers"]["exit_code"] == 1
    assert steps["answer"]["output"]["data"]["decision"] == "approve"
    assert steps["close"]["output"]["data"]["outcome"] == "achieved"

    end = steps["status-end"]["output"]
    assert [(g["id"], g["state"]) for g in end["goals"]] == [("json", "achieved")]
    assert {t["id"]: t["state"] for t in end["todos"]} == {
        "output": "done", "tests": "done", "release": "done"}
    kinds = {(e["kind"], e["todo"]) for e in end["evidence"]}
    assert {("commit", "output"), ("commit", "tests"), ("test", "output"), ("test", "tests"),
            ("receipt", "release")} <= kinds  # the hooks recorded both commits
    assert end["problems"] == []

    # The other machine takes the end of the story over by fetch too.
    other = base / ("devbox" if won["where"] == "laptop" else "laptop")
    assert run_loopx(other, "sync").code == 0
    there = run_loopx(other, "status", "--all", "--json").json()
    assert there["goals"] == end["goals"] or [g["state"] for g in there["goals"]] == ["achieved"]
    assert there["ledger"]["events"] == end["ledger"]["events"]
    return str(won["actor"])


def test_the_demo_tells_its_story(tmp_path: Path) -> None:
    """(How long it takes: benchmarks/bench_bounds.py.)"""
    base = tmp_path / "story"
    result = run_loopx(tmp_path, "demo", "--dir", str(base), "--json", actor=None)
    assert result.code == 0, result.err
    _check_story(_lines(result.out), base)


def test_either_agent_may_win_the_race_and_the_story_still_ends_well(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(demo, "RACERS", [("devbox", demo.AGENT2), ("laptop", demo.AGENT)])
    monkeypatch.setattr(demo, "RACE_STAGGER", 2.0)  # devbox's claim lands first
    base = tmp_path / "story"
    assert demo.run(keep=False, where=str(base), as_json=True) == 0
    assert _check_story(_lines(capsys.readouterr().out), base) == demo.AGENT2


def test_the_story_as_text_runs_in_a_folder_it_removes(tmp_path: Path) -> None:
    result = run_loopx(tmp_path, "demo", actor=None)
    assert result.code == 0, result.out + result.err
    folder = Path(re.search(r"# a throwaway folder: (\S+)", result.out).group(1))  # type: ignore[union-attr]
    assert not folder.exists()
    shown = [line for line in result.out.splitlines() if re.match(r"^(laptop|devbox)\$ ", line)]
    assert len(shown) == len(demo.STORY) + 1  # the race shows both commands
    assert "the story expected" not in result.out


def test_a_step_that_does_not_end_as_expected_fails_the_demo(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = [demo.Step("oops", "laptop", demo.MAINTAINER, ["todo", "claim", "nope"])]
    monkeypatch.setattr(demo, "STORY", demo.STORY[:1] + broken)
    assert demo.run(keep=False, where=str(tmp_path / "d"), as_json=True) == 1
    assert subprocess.run(["git", "-C", str(tmp_path / "d" / "laptop"), "rev-parse",
                           "loopx/state"], capture_output=True).returncode == 0
