"""`git loopx wait` and `git loopx watch` as real processes: each cause that ends a wait (a time
wake, a gate answered in another clone and pushed to a bare remote, a write by another
process), and watch running a command on a wake, with its lock and --max-runs."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import git, invoke, run_loopx
from syncutil import bare_remote, clone
from webhookkit import Hook

AGENT = "agent:codex@devbox"
ALICE = "human:alice@example.com"
FAST = ["--poll", "0.1", "--fetch-every", "0.2"]


class Waiter:
    """`git loopx --debug ...` in the background; its stderr (every git call, with --debug)
    tells when it has taken its first look, after which a change is news to it."""

    def __init__(self, cwd: Path, *args: str, actor: str = AGENT) -> None:
        env = dict(os.environ, LOOPX_ACTOR=actor)
        self.proc = subprocess.Popen(["git", "loopx", "--debug", *args], cwd=cwd, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.err: list[str] = []
        assert self.proc.stderr is not None
        threading.Thread(target=self._read, args=(self.proc.stderr,), daemon=True).start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.lines.put(line)

    def looked(self, timeout: float = 30) -> None:
        """Block until the waiter has read the work tree (its first status look)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                assert self.proc.poll() is None, f"exited early: {self.proc.stderr}"
                continue
            self.err.append(line)
            if "git status --porcelain" in line:
                return
        raise AssertionError("the waiter never looked: " + "".join(self.err))

    def result(self, timeout: float = 60) -> tuple[int, dict[str, object]]:
        out, _ = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, json.loads(out)


def _ledger(repo: Path) -> None:
    for args in (["init"], ["config", "set", "--role", f"maintainer={ALICE}"],
                 ["goal", "add", "Ship", "--id", "g"], ["todo", "add", "g", "Release", "--id", "rel"],
                 ["gate", "open", "g", "Release now?", "--id", "q", "--authority",
                  "role:maintainer", "--blocks", "rel"]):
        assert invoke(repo, *args, actor=ALICE).code == 0


def test_wait_returns_0_when_a_time_wake_is_due(repo: Path) -> None:
    _ledger(repo)
    assert run_loopx(repo, "wake", "set", "--in", "1s", "--id", "w-soon").code == 0
    result = run_loopx(repo, "wait", "--timeout", "30", "--json", *FAST, actor=AGENT)
    assert result.code == 0, result.err  # the wake, not the 30 s timeout (exit 124), ended it
    assert result.json()["cause"] == "wake" and result.json()["wakes"] == ["w-soon"]  # type: ignore[index]
    for n in range(5):
        assert run_loopx(repo, "wake", "set", "--in", "0s", "--id", f"w-{n}").code == 0
    text = run_loopx(repo, "wait", "--timeout", "0", actor=AGENT)  # due until acted on
    assert text.code == 0 and text.out.startswith("wake: ")
    assert "  acted on it? git loopx wake ack w-soon\n" in text.out
    assert text.out.count("git loopx wake ack") == 3 and "... and 3 more" in text.out
    assert run_loopx(repo, "wake", "ack", "w-soon", actor=AGENT).code == 0
    assert "wake ack w-soon" not in run_loopx(repo, "wait", "--timeout", "0", actor=AGENT).out


def test_wait_returns_12_when_another_process_writes(repo: Path) -> None:
    _ledger(repo)
    waiter = Waiter(repo, "wait", "--timeout", "60", "--json", *FAST)
    waiter.looked()
    assert run_loopx(repo, "note", "add", "hello").code == 0
    code, doc = waiter.result()
    assert code == 12 and doc["cause"] == "state"
    assert doc["tip"] == git(repo, "rev-parse", "loopx/state")


def test_wait_returns_11_when_a_gate_is_answered_in_another_clone(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    agent = clone(remote, tmp_path / "agent")
    git(agent, "commit", "-q", "--allow-empty", "-m", "initial")
    git(agent, "push", "-q", "origin", "HEAD")
    _ledger(agent)
    assert run_loopx(agent, "sync").code == 0
    human = clone(remote, tmp_path / "human")

    waiter = Waiter(agent, "wait", "--fetch", "--timeout", "60", "--json", *FAST)
    waiter.looked()
    assert run_loopx(human, "gate", "answer", "q", "--approve", actor=ALICE).code == 0
    assert run_loopx(human, "sync", actor=ALICE).code == 0
    code, doc = waiter.result()
    assert code == 11 and doc["cause"] == "gate" and doc["gate"] == "q"
    assert "approved by human:alice@example.com" in str(doc["reason"])


def test_a_wait_that_cannot_see_other_clones_says_so_once(tmp_path: Path) -> None:
    """An agent waiting on a gate a human answers in another clone waits for ever without
    --fetch: a clone that shares its state through a remote is told, in one line on stderr;
    with --fetch, or a clone that shares nothing, nothing is said."""
    remote = bare_remote(tmp_path)
    agent = clone(remote, tmp_path / "agent")
    git(agent, "commit", "-q", "--allow-empty", "-m", "initial")
    _ledger(agent)
    alone = run_loopx(agent, "wait", "--timeout", "0.2", *FAST)
    assert run_loopx(agent, "sync").code == 0

    shared = run_loopx(agent, "wait", "--timeout", "0.2", *FAST)
    fetching = run_loopx(agent, "wait", "--fetch", "--timeout", "0.2", *FAST)

    assert alone.code == shared.code == fetching.code == 124
    assert alone.err == "" and fetching.err == ""
    assert shared.err == ("wait: waiting on this clone's state only: gates answered and work "
                          "pushed in other clones reach it from origin with --fetch\n")


def test_wait_times_out_with_124(repo: Path) -> None:
    _ledger(repo)
    result = run_loopx(repo, "wait", "--timeout", "0")
    assert result.code == 124 and result.out.startswith("timeout: nothing happened")


def test_watch_runs_the_command_on_a_wake_holds_its_lock_and_stops_after_max_runs(
        repo: Path) -> None:
    _ledger(repo)
    ran = repo.parent / "ran.txt"
    watcher = Waiter(repo, "watch", "--max-runs", "1", "--json", *FAST, "--",
                     "sh", "-c", f'echo "$LOOPX_WAKE_CAUSE $LOOPX_WAKE_IDS" >> {ran}')
    watcher.looked()
    second = run_loopx(repo, "watch", "--max-runs", "1", "--", "true", actor=AGENT)
    assert second.code == 1 and "another `git loopx watch` (pid" in second.err

    assert run_loopx(repo, "wake", "set", "--at", "2020-01-01T00:00:00Z", "--id", "w-now").code == 0
    code, report = watcher.result()
    assert code == 0 and report["runs"] == 1 and report["wakes"] == ["w-now"]
    assert ran.read_text() == "wake w-now\n"
    assert json.loads(run_loopx(repo, "wake", "list", "--json").out) == []  # acknowledged
    assert run_loopx(repo, "watch", "--timeout", "0", "--", "true").code == 0  # lock released


def test_watch_passes_on_a_failing_command_exit_code_and_keeps_the_wake(repo: Path) -> None:
    _ledger(repo)
    assert run_loopx(repo, "wake", "set", "--at", "2020-01-01T00:00:00Z", "--id", "w-1").code == 0
    result = run_loopx(repo, "watch", "--max-runs", "1", "--", "sh", "-c", "exit 3")
    assert result.code == 3 and "exited 3; the wake stays due" in result.err
    assert [w["id"] for w in json.loads(run_loopx(repo, "wake", "list", "--json").out)] == ["w-1"]


def _until(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def test_watch_notify_posts_a_gate_waiting_on_the_watcher_once(repo: Path, hook: Hook) -> None:
    for args in (["init"], ["goal", "add", "Ship", "--id", "g"],
                 ["todo", "add", "g", "Release", "--id", "rel"]):
        assert invoke(repo, *args, actor=ALICE).code == 0
    git(repo, "config", "loopx.notify.webhook", hook.url)
    ran = repo.parent / "ran.txt"
    watcher = Waiter(repo, "watch", "--notify", *FAST, "--", "sh", "-c", f"echo ran >> {ran}",
                     actor=ALICE)
    watcher.looked()
    assert hook.received == []  # nothing waits on alice yet
    assert run_loopx(repo, "gate", "open", "g", "Release now?", "--id", "q", "--authority",
                     ALICE, "--blocks", "rel", actor=AGENT).code == 0
    _until(lambda: len(hook.received) == 1, "the gate was posted")
    assert "gate q asks you: Release now?" in hook.received[0]["text"]
    # The tip moves again, no new gate: the watcher looks (it runs the command for the wake
    # due now, after looking) and posts nothing more.
    assert run_loopx(repo, "wake", "set", "--at", "2020-01-01T00:00:00Z", "--id", "w-now").code == 0
    _until(ran.exists, "the watcher ran the command for the wake")
    _until(lambda: json.loads(run_loopx(repo, "wake", "list", "--json").out) == [],
           "the wake was acknowledged")
    watcher.proc.send_signal(signal.SIGTERM)
    watcher.proc.wait(timeout=30)
    assert len(hook.received) == 1
    effects = _effects(repo)
    assert [(e["action"], e["state"]) for e in effects] == [("notify", "confirmed")]
    while not watcher.lines.empty():
        watcher.err.append(watcher.lines.get())
    said = [line for line in watcher.err if line.startswith("loopx watch: sent")]
    assert said == [f"loopx watch: sent webhook gate q  [{effects[0]['id']}]  "
                    f"HTTP 200 from 127.0.0.1: ok\n"]
    assert not any("skipped" in line for line in watcher.err)  # only what went out is said


def test_watch_notify_tries_a_failed_send_again_when_the_state_moves_not_on_its_own_write(
        repo: Path, hook: Hook) -> None:
    for args in (["init"], ["goal", "add", "Ship", "--id", "g"],
                 ["gate", "open", "g", "Release now?", "--id", "q", "--authority", ALICE]):
        assert invoke(repo, *args, actor=AGENT).code == 0
    git(repo, "config", "loopx.notify.webhook", hook.url)
    hook.status = 500
    ran = repo.parent / "ran.txt"
    watcher = Waiter(repo, "watch", "--notify", *FAST, "--", "sh", "-c", f"echo ran >> {ran}",
                     actor=ALICE)
    _until(lambda: len(hook.received) == 1, "the gate was posted at the first look")
    _until(lambda: len(_effects(repo)) == 1, "the failed send was recorded")
    # The failed effect moved the state; the watcher sees that move (and the wake's, below)
    # before it runs the command: its own write is no reason to post again (in a loop).
    assert run_loopx(repo, "wake", "set", "--at", "2020-01-01T00:00:00Z", "--id", "w-1").code == 0
    _until(ran.exists, "the watcher ran the command for the wake")
    hook.status = 200
    before = len(hook.received)  # 2: the wake's write moved the state, a retry, failed too
    assert before in (1, 2), hook.received  # 1: the wake landed before the watcher read its tip
    assert run_loopx(repo, "note", "add", "moving the state").code == 0
    _until(lambda: len(hook.received) == before + 1, "the retry after the state moved")
    _until(lambda: [e["state"] for e in _effects(repo)] == ["failed"] * before + ["confirmed"],
           "the retry was confirmed")
    watcher.proc.send_signal(signal.SIGTERM)
    watcher.proc.wait(timeout=30)
    assert len(hook.received) == before + 1


def _effects(repo: Path) -> list[dict[str, object]]:
    found = json.loads(run_loopx(repo, "effect", "list", "--json").out)
    assert isinstance(found, list)
    return found


def test_watch_notify_without_a_channel_is_refused_up_front(repo: Path) -> None:
    _ledger(repo)
    result = run_loopx(repo, "watch", "--notify", "--", "true")
    assert result.code == 1 and result.err.count("\n") == 1, result.err
    assert "loopx.notify.webhook" in result.err and "--webhook" not in result.err


@pytest.mark.parametrize("args, message", [
    (["wait", "--timeout", "soon"], "not a duration: 'soon'"),
    (["wait", "--timeout", "-5"], "'-5' is not a time span of 0 or more seconds"),
    (["wait", "--poll", "0"], "'0' is not a time span of more than 0 seconds"),
    (["wait", "--fetch-every", "nan"], "'nan' is not a time span"),
    (["watch", "--backoff", "-1", "--", "true"], "'-1' is not a time span of 0 or more"),
])
def test_bad_arguments_say_what_to_give(repo: Path, args: list[str], message: str) -> None:
    _ledger(repo)
    result = invoke(repo, *args)
    assert result.code == 2 and message in result.err


@pytest.mark.parametrize("line", ['["wait", "--timeout", "0"]', '["watch", "--", "true"]',
                                  '["mcp"]'])
def test_long_running_commands_cannot_run_inside_a_batch(repo: Path, line: str) -> None:
    _ledger(repo)
    result = invoke(repo, "batch", input=line + "\n")
    assert result.code == 1 and "cannot run inside a batch" in result.err
