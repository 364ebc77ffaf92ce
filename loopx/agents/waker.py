"""Acting on wakes: :func:`wait` blocks until something worth a look happens, :func:`watch`
runs a command each time a wake is due (one runner per repository).

What wakes a waiter, in the order it is reported (docs/agents.md):

- ``wake``: a wake is due (its time passed, its gate was answered, its todo finished, CI for
  its commit finished);
- ``gate``: a gate the actor waits on was answered or withdrawn;
- ``state``: the state ref moved (another process wrote, or ``fetch`` brought events);
- ``ci``: CI for the judged commit (HEAD), pending when the wait began, finished;
- ``timeout``: nothing of the above before the timeout.

Everything outside is reached through a :class:`Probe` (the state tip, the status document,
a fetch, CI for one commit), and time through ``clock`` and ``sleep`` parameters, so tests
drive it with real repositories and a fake clock that never really sleeps.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Optional, Protocol

from loopx.errors import LoopxError, Quarantined, SyncError
from loopx.model import clock
from loopx.projection.answers import StatusDoc
from loopx.storage import locks

CAUSES = ("wake", "gate", "state", "ci", "timeout")
FINAL_CI = ("success", "failure")
Clock = Callable[[], datetime]
Sleep = Callable[[float], None]
Seen = Callable[[StatusDoc, datetime], None]  # told of each status document a waiter looks at


class Probe(Protocol):
    """What a waiter looks at. :mod:`loopx.ops.wakes` builds one from a ledger."""

    def tip(self) -> Optional[str]:
        """The state ref's commit now."""

    def look(self, now: datetime) -> StatusDoc:
        """The status document (``status --format json``) for ``now``."""

    def fetch(self) -> None:
        """Fetch, check and merge the remote's state into the local state ref."""

    def ci(self, sha: str, snapshot: StatusDoc) -> str:
        """The CI state of ``sha`` (success, failure, pending or unknown), asked afresh."""


@dataclass(frozen=True)
class Pace:
    """How often to look: the local ref every ``poll`` seconds; the remote (``fetch``) first
    after ``fetch_first`` seconds, the gap doubling while nothing arrives up to
    ``fetch_max``; CI every ``ci_every`` seconds."""

    poll: float = 1.0
    fetch_first: float = 5.0
    fetch_max: float = 300.0
    ci_every: float = 15.0


@dataclass
class Wakeup:
    """Why a wait ended (``cause`` is one of :data:`CAUSES`) and what it saw."""

    cause: str
    reason: str
    wakes: list[str] = field(default_factory=list)  # due wakes (cause "wake")
    gate: Optional[str] = None  # cause "gate"
    commit: Optional[str] = None  # cause "ci": the commit whose CI finished
    ci: Optional[str] = None  # that CI's state
    tip: Optional[str] = None  # the state ref when the wait ended
    waited_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def wait(probe: Probe, *, timeout: Optional[float] = None, fetch: bool = False,
         causes: tuple[str, ...] = CAUSES, pace: Pace = Pace(), clock: Clock = clock.now,
         sleep: Sleep = lambda s: None, seen: Optional[Seen] = None) -> Wakeup:
    """Block until one of ``causes`` happens or ``timeout`` seconds pass (0: look once).
    ``seen`` is given each status document looked at (the first, and one each time the state
    ref moves or a wake's time comes), with the time it was made for."""
    return _Waiter(probe, causes, pace, clock, sleep, fetch, seen).run(timeout)


class _Waiter:
    def __init__(self, probe: Probe, causes: tuple[str, ...], pace: Pace, clock: Clock,
                 sleep: Sleep, fetch: bool, seen: Optional[Seen] = None) -> None:
        self.probe, self.causes, self.pace = probe, causes, pace
        self.clock, self.sleep, self.fetching = clock, sleep, fetch
        self.seen = seen or (lambda doc, now: None)
        self.start = clock()
        if fetch:  # what arrived while nobody waited counts as the starting point
            self._fetch()
        self.fetch_gap = pace.fetch_first
        self.next_fetch = self.start + timedelta(seconds=pace.fetch_first)
        self.tip = probe.tip()
        self.doc = probe.look(self.start)
        self.seen(self.doc, self.start)
        self.gates = waited_gates(self.doc)
        self.judged = self._judged()  # commit -> the wakes on it (none: HEAD's own CI)
        self.next_ci = self.start + timedelta(seconds=pace.ci_every)

    def run(self, timeout: Optional[float]) -> Wakeup:
        deadline = None if timeout is None else self.start + timedelta(seconds=timeout)
        found = self._due(self.start) or self._ci_finished(first=True)
        while found is None:
            now = self.clock()
            if deadline is not None and now >= deadline:
                found = Wakeup("timeout", f"nothing happened within {clock.format_duration(deadline - self.start)}")
                break
            self._pause(now, deadline)
            now = self.clock()
            found = self._step(now)
        found.tip = self.probe.tip()
        found.waited_s = round((self.clock() - self.start).total_seconds(), 3)
        return found

    def _pause(self, now: datetime, deadline: Optional[datetime]) -> None:
        until = [now + timedelta(seconds=self.pace.poll)]
        until += [deadline] if deadline is not None else []
        until += [self.next_fetch] if self.fetching else []
        until += [self.next_ci] if self.judged else []
        until += [t for t in [_next_time(self.doc)] if t is not None and t > now]
        self.sleep(max(0.0, (min(until) - now).total_seconds()))

    def _step(self, now: datetime) -> Optional[Wakeup]:
        if self.fetching and now >= self.next_fetch:
            arrived = self._fetch()
            self.fetch_gap = self.pace.fetch_first if arrived else min(
                self.fetch_gap * 2, self.pace.fetch_max)
            self.next_fetch = now + timedelta(seconds=self.fetch_gap)
        tip = self.probe.tip()
        moved = tip != self.tip
        wake_time = _next_time(self.doc)
        if moved or (wake_time is not None and now >= wake_time):
            before = self.doc
            self.doc, self.tip = self.probe.look(now), tip
            self.seen(self.doc, now)
            found = self._due(now) or self._answered(before) or (
                Wakeup("state", f"the state changed (now at {(tip or '')[:12]})")
                if moved and "state" in self.causes else None)
            if found is not None:
                return found
            self.gates, self.judged = waited_gates(self.doc), self._judged()
            found = self._ci_finished(first=True)
            if found is not None:
                return found
        if self.judged and now >= self.next_ci:
            self.next_ci = now + timedelta(seconds=self.pace.ci_every)
            return self._ci_finished(first=False)
        return None

    def _fetch(self) -> bool:
        """Fetch the remote's state; whether anything arrived."""
        before = self.probe.tip()
        try:
            self.probe.fetch()
        except Quarantined:
            raise  # hostile remote state: the user must look, waiting on is pointless
        except SyncError:
            return False  # no network, a remote down: try again later, less often
        return self.probe.tip() != before

    def _due(self, now: datetime) -> Optional[Wakeup]:
        if "wake" not in self.causes:
            return None
        due = [a for a in self.doc.actions if a.kind == "wake_due"]
        if not due:
            return None
        return Wakeup("wake", "; ".join(a.reason for a in due),
                      wakes=[a.wake for a in due if a.wake])

    def _answered(self, before: StatusDoc) -> Optional[Wakeup]:
        if "gate" not in self.causes:
            return None
        now_gates = {g.id: g for g in self.doc.gates}
        for gate_id in self.gates:
            gate = now_gates.get(gate_id)
            if gate is not None and gate.state != "open":
                said = gate.decision or gate.state
                by = f" by {gate.answered_by}" if gate.answered_by else ""
                return Wakeup("gate", f"gate {gate_id} was {_past(said)}{by}: {gate.question}",
                              gate=gate_id)
        return None

    def _judged(self) -> dict[str, list[str]]:
        """Commits whose CI a waiter waits for: each on-CI wake's, and HEAD's own."""
        judged: dict[str, list[str]] = {}
        head = self.doc.environment.head
        for wake in self.doc.wakes:
            sha = head if wake.on_ci == "HEAD" else wake.on_ci  # (older wakes)
            if sha and "wake" in self.causes:
                judged.setdefault(sha, []).append(wake.id)
        if head and "ci" in self.causes and head not in judged:
            judged[head] = []
        return judged

    def _ci_finished(self, *, first: bool) -> Optional[Wakeup]:
        """A wake on CI whose commit's CI is final; HEAD's CI, running when we began, done."""
        for sha, wake_ids in list(self.judged.items()):
            state = self.probe.ci(sha, self.doc)
            if wake_ids and state in FINAL_CI:
                return Wakeup("wake", f"CI finished for {sha[:12]}: {state}", wakes=wake_ids,
                              commit=sha, ci=state)
            if wake_ids:
                continue
            if first and state != "pending":
                del self.judged[sha]  # HEAD's CI is not running (or has no provider)
            elif state in FINAL_CI:
                return Wakeup("ci", f"CI finished for HEAD {sha[:12]}: {state}", commit=sha,
                              ci=state)
        return None


def waited_gates(doc: StatusDoc) -> list[str]:
    """The open gates the status document's actor waits on (answered by others)."""
    return [a.gate for a in doc.actions if a.kind == "wait_gate" and a.gate]


def _next_time(doc: StatusDoc) -> Optional[datetime]:
    text = doc.next_wake
    return clock.parse_ts(text) if text else None


def _past(decision: str) -> str:
    return {"approve": "approved", "reject": "rejected", "answer": "answered"}.get(decision, decision)


# --- watch ----------------------------------------------------------------------------------


@dataclass
class WatchReport:
    """What a watch did: runs of the command, the last exit code, why it stopped."""

    runs: int = 0
    failures: int = 0
    last_code: Optional[int] = None
    stopped: str = ""  # max-runs | timeout
    wakes: list[str] = field(default_factory=list)  # every wake acted on

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def watch(probe: Probe, *, run: Callable[[Wakeup], int], ack: Callable[[list[str]], list[str]],
          max_runs: Optional[int] = None, timeout: Optional[float] = None, fetch: bool = False,
          backoff: float = 10.0, backoff_max: float = 900.0, pace: Pace = Pace(),
          clock: Clock = clock.now, sleep: Sleep = lambda s: None,
          seen: Optional[Seen] = None) -> WatchReport:
    """Each time a wake is due, ``run`` the command; when it exits 0, ``ack`` the wakes (a
    one-shot wake is cleared, a recurring one re-armed). A failure leaves them due and waits
    ``backoff`` seconds, doubling with each failure in a row up to ``backoff_max``. ``seen``:
    as for :func:`wait`, across the whole watch."""
    report = WatchReport()
    start = clock()
    while max_runs is None or report.runs < max_runs:
        left = None if timeout is None else max(0.0, timeout - (clock() - start).total_seconds())
        wakeup = wait(probe, timeout=left, fetch=fetch, causes=("wake",), pace=pace,
                      clock=clock, sleep=sleep, seen=seen)
        if wakeup.cause == "timeout":
            report.stopped = "timeout"
            return report
        report.last_code = run(wakeup)
        report.runs += 1
        if report.last_code == 0:
            report.failures = 0
            report.wakes += ack(wakeup.wakes)
        else:
            report.failures += 1
            if max_runs is None or report.runs < max_runs:
                sleep(min(backoff * 2 ** (report.failures - 1), backoff_max))
    report.stopped = "max-runs"
    return report


@contextlib.contextmanager
def runner_lock(path: Path) -> Iterator[None]:
    """One watch per repository: an exclusive lock on ``path``, refused (not waited for) when
    another process holds it. Released when the process exits, however it exits."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = locks.open_file(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = locks.read_holder(path) or "unknown"
            raise LoopxError(f"another `git loopx watch` (pid {holder}) is already running for "
                             "this repository; one runner per repository (stop it first)") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)
