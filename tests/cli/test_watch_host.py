"""`git loopx watch --host NAME`: a turn of an agent CLI per due wake, with stand-ins for
each tool's headless mode on PATH (scripts that check their argv the way `claude -p`,
`codex exec -` and `gemini -p` take a prompt, keep what they got, and exit as told)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import invoke, run_loopx
from loopx.ledger.book import Ledger

AGENT = "agent:claude@devbox"
PAST = "2020-01-01T00:00:00Z"

# Each stand-in refuses a call its real tool would not take headless, and writes the prompt
# it got (from argv or stdin), its other arguments and $LOOPX_AGENT_HOST next to itself.
STANDINS = {
    "claude": '[ "$1" = "-p" ] || exit 64\nprintf %s "$2" > "$OUT/prompt"\nshift 2\n',
    "gemini": '[ "$1" = "-p" ] || exit 64\nprintf %s "$2" > "$OUT/prompt"\nshift 2\n',
    "codex": '[ "$1" = "exec" ] || exit 64\nshift\nfor last; do :; done\n'
             '[ "$last" = "-" ] || exit 64\ncat > "$OUT/prompt"\n',
}


@pytest.fixture
def standins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "standins"
    bindir.mkdir()
    for name, body in STANDINS.items():
        script = bindir / name
        script.write_text(f'#!/bin/sh\nOUT={bindir}\n{body}echo "$@" > "$OUT/args"\n'
                          'echo "$LOOPX_AGENT_HOST" > "$OUT/host"\nexit "${STANDIN_EXIT:-0}"\n')
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return bindir


def _ledger(repo: Path, *wakes: str) -> None:
    for args in (["init"], ["goal", "add", "Ship", "--id", "g"],
                 ["todo", "add", "g", "Release", "--id", "rel"]):
        assert invoke(repo, *args).code == 0
    for wake in wakes:
        assert invoke(repo, "wake", "set", "--at", PAST, "--goal", "g", "--id", wake,
                      "--reason", "look at *CI* again").code == 0


def _turns(repo: Path) -> list[dict[str, object]]:
    with Ledger.open(repo) as ledger:
        events = ledger.read_events(str(ledger.tip()), [])
        return [e.to_dict()["data"] for e in sorted(events, key=lambda e: e.env.clock)
                if e.env.type == "quota.spent"]


@pytest.mark.parametrize("name", ["claude", "codex", "gemini"])
def test_a_due_wake_starts_one_headless_turn_with_the_primer_and_the_cause(
        repo: Path, standins: Path, name: str) -> None:
    _ledger(repo, "w-1")
    result = run_loopx(repo, "watch", "--host", name, "--max-runs", "1", "--json", "--",
                       "--extra", actor=AGENT)
    assert result.code == 0, result.err
    assert json.loads(result.out)["wakes"] == ["w-1"]  # acknowledged: the turn finished
    prompt = (standins / "prompt").read_text()
    assert prompt.startswith(f"# loopx primer for `{AGENT}`")
    assert "## Why this turn" in prompt and "rel" in prompt
    assert "`wake w-1 is due (it is past 2020-01-01T00:00:00Z): look at *CI* again`" in prompt
    assert "--extra" in (standins / "args").read_text()
    assert (standins / "host").read_text() == f"{name}\n"
    assert _turns(repo) == [{"turns": 1, "tokens": 0, "cost": 0.0, "host": name, "exit": 0,
                             "wakes": ["w-1"]}]


def test_a_failed_turn_is_recorded_with_its_exit_and_leaves_the_wake_due(
        repo: Path, standins: Path) -> None:
    _ledger(repo, "w-1")
    result = run_loopx(repo, "watch", "--host", "claude", "--max-runs", "1", actor=AGENT,
                       env={"STANDIN_EXIT": "3"})
    assert result.code == 3 and "the wake stays due" in result.err
    assert [t["exit"] for t in _turns(repo)] == [3]
    assert [w["id"] for w in json.loads(run_loopx(repo, "wake", "list", "--json").out)] == ["w-1"]


def test_no_turn_starts_once_the_goal_has_no_turns_left(repo: Path, standins: Path) -> None:
    _ledger(repo, "w-1")
    assert invoke(repo, "quota", "set", "--goal", "g", "--turns", "1").code == 0
    assert run_loopx(repo, "watch", "--host", "gemini", "--max-runs", "1", actor=AGENT).code == 0
    (standins / "prompt").unlink()
    assert invoke(repo, "wake", "set", "--at", PAST, "--goal", "g", "--id", "w-2").code == 0
    result = run_loopx(repo, "watch", "--host", "gemini", "--max-runs", "1", "--backoff", "0",
                       actor=AGENT)
    assert result.code == 75 and "no turn for gemini" in result.err
    assert not (standins / "prompt").exists() and len(_turns(repo)) == 1


def test_host_command_runs_the_given_command_with_the_prompt_on_stdin(
        repo: Path, tmp_path: Path) -> None:
    _ledger(repo, "w-1")
    got = tmp_path / "got"
    result = run_loopx(repo, "watch", "--host", "command", "--max-runs", "1", "--", "sh", "-c",
                       f'cat > {got}; echo "$LOOPX_AGENT_HOST $LOOPX_WAKE_IDS" >> {got}',
                       actor=AGENT)
    assert result.code == 0, result.err
    text = got.read_text()
    assert text.startswith("# loopx primer") and text.endswith("command w-1\n")
    assert _turns(repo)[0]["host"] == "command"


@pytest.mark.parametrize("args, message", [
    (["watch"], "give the command to run"),
    (["watch", "--host", "command"], "--host command needs the command to run"),
    (["watch", "--host", "vim"], "Invalid value for '--host'"),
])
def test_a_host_without_what_it_needs_is_refused(repo: Path, args: list[str], message: str) -> None:
    _ledger(repo)
    result = invoke(repo, *args)
    assert result.code in (1, 2) and message in result.err


def test_a_host_cli_that_is_not_installed_is_named(repo: Path, tmp_path: Path) -> None:
    _ledger(repo, "w-1")
    result = run_loopx(repo, "watch", "--host", "codex", "--max-runs", "1", actor=AGENT,
                       env={"PATH": f"{Path(os.environ['PATH'].split(os.pathsep)[0])}:/usr/bin:/bin"})
    assert result.code == 1 and "cannot start codex ('codex')" in result.err
