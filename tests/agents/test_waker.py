"""wait and watch with real repositories (and a bare remote) and a fake clock: `sleep` only
moves the clock on, and is where the test makes the world change, as another process or
another clone would while a waiter sleeps."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Optional

import pytest

from conftest import git
from syncutil import bare_remote, clone, do_sync
from loopx.errors import LoopxError
from loopx.agents import waker
from loopx.ledger.book import Ledger
from loopx.ops import config, gates, goals, ledgers, notes, todos, wakes

ALICE = "human:alice@example.com"
AGENT = "agent:codex@devbox"
T0 = datetime(2030, 1, 1, 9, 0, tzinfo=timezone.utc)


class FakeTime:
    """A clock that moves only when slept on; ``then`` runs once the clock passes a time."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start
        self.slept: list[float] = []
        self.events: list[tuple[datetime, Callable[[], None]]] = []

    def clock(self) -> datetime:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.slept.append(seconds)
        self.now += timedelta(seconds=seconds)
        for when, action in [e for e in self.events if e[0] <= self.now]:
            self.events.remove((when, action))
            action()

    def then(self, after_s: float, action: Callable[[], None]) -> None:
        self.events.append((T0 + timedelta(seconds=after_s), action))


SLOW_POLL = wakes.Pace(poll=30)  # fewer looks at the ref: the answers are the same


def _wait(ledger: Ledger, fake: FakeTime, **kw: object) -> wakes.Wakeup:
    kw.setdefault("pace", SLOW_POLL)
    return wakes.wait(ledger, actor=AGENT, clock_fn=fake.clock, sleep=fake.sleep,
                      **kw)  # type: ignore[arg-type]


def test_a_time_wake_ends_the_wait_when_it_is_due_without_really_sleeping(ledger: Ledger) -> None:
    ledger.run(wakes.set_, after=1800, id="w-1", reason="look at the queue", actor=AGENT, now=T0)
    fake = FakeTime()
    woke = _wait(ledger, fake, timeout=7200)
    assert (woke.cause, woke.wakes) == ("wake", ["w-1"])
    assert woke.reason == "wake w-1 is due (it is past 2030-01-01T09:30:00Z): look at the queue"
    assert woke.waited_s == 1800.0 and max(fake.slept) <= 30.0  # polled, never overslept
    fake = FakeTime(T0 + timedelta(minutes=29, seconds=50))
    woke = _wait(ledger, fake, timeout=60, pace=wakes.Pace())
    assert woke.cause == "wake" and woke.waited_s == 10.0 and max(fake.slept) <= 1.0


def test_a_write_by_another_process_ends_the_wait_as_a_state_change(repo: Path,
                                                                    ledger: Ledger) -> None:
    fake = FakeTime()

    def someone_writes() -> None:
        with ledgers.open_ledger(repo) as other:
            other.run(notes.add, "hello from elsewhere", actor=ALICE)

    fake.then(42, someone_writes)
    woke = _wait(ledger, fake, timeout=600)
    assert woke.cause == "state" and woke.tip == git(repo, "rev-parse", "loopx/state")
    assert woke.waited_s == 60.0  # the first look after the write (polling every 30 s)


def test_nothing_happening_is_a_timeout_and_zero_looks_once(ledger: Ledger) -> None:
    fake = FakeTime()
    assert _wait(ledger, fake, timeout=90).cause == "timeout" and fake.now == T0 + timedelta(seconds=90)
    fake = FakeTime()
    woke = _wait(ledger, fake, timeout=0)
    assert woke.cause == "timeout" and fake.slept == []


def test_a_due_wake_ends_the_wait_at_once(ledger: Ledger) -> None:
    ledger.run(wakes.set_, at="2029-12-31T00:00:00Z", id="w-old", actor=AGENT)
    fake = FakeTime()
    assert _wait(ledger, fake, timeout=0).wakes == ["w-old"] and fake.slept == []


def _gated(path: Path) -> None:
    with ledgers.open_ledger(path) as led:
        def plan(txn: object) -> None:
            config.set_(txn, roles={"maintainer": [ALICE]})  # type: ignore[arg-type]
            goals.add(txn, "Ship", id="g")  # type: ignore[arg-type]
            todos.add(txn, "g", "Release", id="t-rel")  # type: ignore[arg-type]
            gates.open_(txn, "g", "Release now?", id="q-rel", authority=["role:maintainer"],
                        blocks=["t-rel"])  # type: ignore[arg-type]
        led.write(plan, actor=ALICE)


def _shared_gated(tmp_path: Path) -> tuple[Path, Path]:
    """An agent's clone with the gated plan, synced to a bare remote, and a human's clone."""
    remote = bare_remote(tmp_path)
    agent = clone(remote, tmp_path / "agent")
    git(agent, "commit", "-q", "--allow-empty", "-m", "initial")
    git(agent, "push", "-q", "origin", "HEAD")
    with ledgers.open_ledger(agent) as led:
        ledgers.init(led, actor=ALICE)
    _gated(agent)
    do_sync(agent)
    human = clone(remote, tmp_path / "human")
    return agent, human


def test_a_gate_answered_in_another_clone_and_pushed_wakes_a_fetching_waiter(tmp_path: Path) -> None:
    agent, human = _shared_gated(tmp_path)

    def answer_and_push() -> None:
        with ledgers.open_ledger(human) as led:
            led.run(gates.answer, "q-rel", decision="approve", comment="go", actor=ALICE)
        do_sync(human)

    fake = FakeTime()
    fake.then(60, answer_and_push)
    fetched: list[datetime] = []
    with ledgers.open_ledger(agent) as led:
        real_fetch = wakes._Probe.fetch

        def counting(probe: wakes._Probe) -> None:
            fetched.append(fake.now)
            real_fetch(probe)

        wakes._Probe.fetch = counting  # type: ignore[method-assign]
        try:
            woke = _wait(led, fake, timeout=3600, fetch=True)
        finally:
            wakes._Probe.fetch = real_fetch  # type: ignore[method-assign]
    assert woke.cause == "gate" and woke.gate == "q-rel"
    assert woke.reason == f"gate q-rel was approved by {ALICE}: Release now?"
    # Nothing arrived for a while: the fetches backed off (5s, then 10, 20, 40 apart).
    gaps = [(b - a).total_seconds() for a, b in zip(fetched, fetched[1:])]
    assert gaps[:4] == [5.0, 10.0, 20.0, 40.0]
    with ledgers.open_ledger(agent) as led:  # the answer is merged into local state
        assert led.fold().gates["q-rel"].state == "answered"


def test_without_fetch_a_remote_answer_goes_unseen(tmp_path: Path) -> None:
    agent, human = _shared_gated(tmp_path)
    with ledgers.open_ledger(human) as led:
        led.run(gates.answer, "q-rel", decision="reject", actor=ALICE)
    do_sync(human)
    with ledgers.open_ledger(agent) as led:
        assert _wait(led, FakeTime(), timeout=120).cause == "timeout"


def _ci_command(repo: Path) -> Path:
    """The `command` CI provider reading its verdict from a file the test writes."""
    verdict = repo.parent / "ci-state"
    verdict.write_text("pending")
    git(repo, "config", "loopx.ci.provider", "command")
    git(repo, "config", "loopx.ci.command", f"printf '{{\"state\": \"%s\"}}' $(cat {verdict})")
    return verdict


def test_ci_for_head_finishing_ends_the_wait(repo: Path, ledger: Ledger) -> None:
    verdict = _ci_command(repo)
    fake = FakeTime()
    fake.then(100, lambda: verdict.write_text("failure"))
    woke = _wait(ledger, fake, timeout=3600)
    head = git(repo, "rev-parse", "HEAD")
    assert (woke.cause, woke.commit, woke.ci) == ("ci", head, "failure")
    assert woke.waited_s == 105.0  # CI is asked every 15 s


def test_a_wake_on_ci_is_due_when_its_commit_finishes_even_after_head_moved(
        repo: Path, ledger: Ledger) -> None:
    verdict = _ci_command(repo)
    judged = git(repo, "rev-parse", "HEAD")
    ledger.run(wakes.set_, on_ci="HEAD", id="w-ci", actor=AGENT)
    git(repo, "commit", "-q", "--allow-empty", "-m", "later work")
    fake = FakeTime()
    fake.then(20, lambda: verdict.write_text("success"))
    woke = _wait(ledger, fake, timeout=600)
    assert (woke.cause, woke.wakes, woke.commit) == ("wake", ["w-ci"], judged)


def test_ci_already_final_is_nothing_to_wait_for(repo: Path, ledger: Ledger) -> None:
    _ci_command(repo).write_text("success")
    assert _wait(ledger, FakeTime(), timeout=60).cause == "timeout"


# --- watch ----------------------------------------------------------------------------------


def test_watch_runs_for_each_due_wake_and_acks_it(ledger: Ledger) -> None:
    ledger.run(wakes.set_, after=600, id="w-once", actor=AGENT, now=T0)
    ledger.run(wakes.set_, every=3600, id="w-hourly", actor=AGENT, now=T0)
    fake = FakeTime()
    seen: list[tuple[list[str], datetime]] = []

    def run(wakeup: wakes.Wakeup) -> int:
        seen.append((wakeup.wakes, fake.now))
        return 0

    report = wakes.watch(ledger, ["true"], actor=AGENT, max_runs=3, clock_fn=fake.clock,
                         sleep=fake.sleep, run=run, pace=SLOW_POLL)
    assert [(w, (t - T0).total_seconds()) for w, t in seen] == [
        (["w-once"], 600.0), (["w-hourly"], 3600.0), (["w-hourly"], 7200.0)]
    assert (report.runs, report.stopped, report.last_code) == (3, "max-runs", 0)
    assert list(ledger.fold().wakes) == ["w-hourly"]  # the one-shot wake was cleared
    assert ledger.fold().wakes["w-hourly"].at == "2030-01-01T12:00:00Z"  # re-armed after 11:00


def test_watch_backs_off_after_failures_and_leaves_the_wake_due(ledger: Ledger) -> None:
    ledger.run(wakes.set_, at="2029-12-31T00:00:00Z", id="w-1", actor=AGENT)
    fake = FakeTime()
    codes = iter([3, 3, 3, 0])
    report = wakes.watch(ledger, ["false"], actor=AGENT, max_runs=4, backoff=10,
                         clock_fn=fake.clock, sleep=fake.sleep, run=lambda w: next(codes))
    assert [s for s in fake.slept if s >= 10] == [10, 20, 40]
    assert report.runs == 4 and report.wakes == ["w-1"] and ledger.fold().wakes == {}

    ledger.run(wakes.set_, at="2029-12-31T00:00:00Z", id="w-2", actor=AGENT)
    report = wakes.watch(ledger, ["false"], actor=AGENT, max_runs=1, clock_fn=fake.clock,
                         sleep=fake.sleep, run=lambda w: 7)
    assert (report.last_code, report.wakes) == (7, []) and "w-2" in ledger.fold().wakes


def test_watch_with_nothing_due_stops_at_its_timeout(ledger: Ledger) -> None:
    fake = FakeTime()
    report = wakes.watch(ledger, ["true"], actor=AGENT, timeout=0, clock_fn=fake.clock,
                         sleep=fake.sleep, run=lambda w: pytest.fail("nothing was due"))
    assert (report.runs, report.stopped, report.last_code) == (0, "timeout", None)


def test_one_watch_per_repository(repo: Path, ledger: Ledger) -> None:
    lock = ledger.repo.loopx_dir / "watch.lock"
    with waker.runner_lock(lock):
        with pytest.raises(LoopxError, match=r"another `git loopx watch` \(pid \d+\) is already"):
            wakes.watch(ledger, ["true"], actor=AGENT, max_runs=1)
    with waker.runner_lock(lock):  # released when its holder is done
        pass


def test_a_wake_cleared_by_the_command_itself_is_not_acked_twice(ledger: Ledger) -> None:
    ledger.run(wakes.set_, every=600, id="w-m", at="2029-12-31T00:00:00Z", actor=AGENT)
    fake = FakeTime()

    def run(wakeup: wakes.Wakeup) -> int:
        ledger.run(wakes.ack, "w-m", actor=AGENT, now=fake.now)  # the agent acked it
        return 0

    tip: Optional[str] = None
    report = wakes.watch(ledger, ["true"], actor=AGENT, max_runs=1, clock_fn=fake.clock,
                         sleep=fake.sleep, run=run)
    tip = ledger.tip()
    assert report.wakes == [] and tip is not None
    assert git(ledger.repo.cwd, "log", "--oneline", "loopx/state").count("wake.fired") == 1


def test_watch_acks_a_wake_on_ci_once_that_commits_ci_finished(repo: Path, ledger: Ledger) -> None:
    _ci_command(repo).write_text("success")
    ledger.run(wakes.set_, on_ci="HEAD", id="w-ci", actor=AGENT)
    git(repo, "commit", "-q", "--allow-empty", "-m", "HEAD moved on")  # status no longer judges it
    fake = FakeTime()
    report = wakes.watch(ledger, ["true"], actor=AGENT, max_runs=2, timeout=300,
                         clock_fn=fake.clock, sleep=fake.sleep, run=lambda w: 0, pace=SLOW_POLL)
    assert (report.runs, report.wakes, report.stopped) == (1, ["w-ci"], "timeout")
    assert ledger.fold().wakes == {}
