"""Wake conditions: when to look again (a time, a gate answered, CI finished, a todo done)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import IO, TYPE_CHECKING, Optional

from loopx.errors import LoopxError, NotFound, TransitionError, UsageError
from loopx.recovery import ci, readback
from loopx.agents import hosts, waker
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import clock, inert, typed
from loopx.model.ids import new_short_id
from loopx.model.limits import WAKE_EVERY_MAX_S, WAKE_EVERY_MIN_S
from loopx.ops import lookup, notify, quotas, status, sync
from loopx.projection import answers, views

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        Event, WakeCleared, WakeFired, WakeSet,
    )

_FULL_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def set_(txn: Txn, *, at: Optional[str] = None, after: Optional[int] = None,
         on_gate: Optional[str] = None, on_ci: Optional[str] = None, on_todo: Optional[str] = None,
         goal: Optional[str] = None, reason: Optional[str] = None, every: Optional[int] = None,
         id: Optional[str] = None, event_id: Optional[str] = None) -> Event[WakeSet]:
    """Set a wake: at an RFC 3339 time ``at``, ``after`` seconds from now, when a gate is
    answered, when CI finishes for a commit (``on_ci``: any revision, resolved to its full
    commit now), or when a todo is done.

    With ``every`` (seconds) the wake recurs: first due at ``at``/``after`` (default: ``every``
    from now), then ``every`` after each time it is acted on (:func:`ack`).
    """
    if at is None and after is None and every is None and not (on_gate or on_ci or on_todo):
        # (the event's own rule says "a time, a gate, CI or a todo", naming no option)
        raise UsageError("say when to look again: --in DURATION, --at TIME, --every DURATION, "
                         "--on-gate GATE, --on-ci REV or --on-todo TODO")
    when = at
    if after is not None:
        when = clock.format_ts(txn.now + timedelta(seconds=after))
    elif at:
        try:
            when = clock.format_ts(clock.parse_ts(at))
        except ValueError:
            raise UsageError(f"not a time: {at!r} (use RFC 3339, e.g. 2026-12-01T09:00:00Z)") \
                from None
    if every is not None:
        if every < WAKE_EVERY_MIN_S:
            raise UsageError(f"a recurring wake repeats at most once a minute, not every {every}s")
        if every > WAKE_EVERY_MAX_S:  # the event's bound: the CLI's durations go up to a century
            raise UsageError(f"a recurring wake repeats at least once a year ({WAKE_EVERY_MAX_S // 86400}d), "
                             f"not every {every // 86400}d")
        when = when or clock.format_ts(txn.now + timedelta(seconds=every))
    fold = txn.fold
    data = {"id": id or new_short_id("w", event_id), "at": when, "reason": reason,
            "on_gate": lookup.optional(fold.gates, on_gate, "gate"),
            "on_todo": lookup.optional(fold.todos, on_todo, "todo"),
            "on_ci": commit_of(txn.ledger, on_ci) if on_ci else None, "every": every}
    return txn.add(Draft("wake.set", data, lookup.goal_of(fold, goal, None), event_id))


def commit_of(ledger: Ledger, rev: str) -> str:
    """The full commit ``rev`` names (a short sha, ``HEAD``, a branch): what CI will judge,
    fixed now. A full sha this clone lacks is taken as given (CI may know it)."""
    found = ledger.store.resolve(rev)
    if found is not None:
        return found
    if _FULL_SHA.fullmatch(rev):
        return rev
    raise NotFound(f"no commit {rev!r} in this repository; give a revision it has, or a full "
                   "40-character sha")


def clear(txn: Txn, wake: str, *, event_id: Optional[str] = None) -> Event[WakeCleared]:
    """Clear a wake condition."""
    return lookup.about(txn, "wakes", wake, "wake", "wake.cleared", {}, event_id)


def ack(txn: Txn, wake: str, *,
        event_id: Optional[str] = None) -> Event[WakeCleared] | Event[WakeFired]:
    """Say a due wake was acted on: a one-shot wake is cleared, a recurring one re-armed
    (due again ``every`` seconds from now)."""
    wid = views.resolve_id(txn.fold.wakes, wake, "wake")
    found = txn.fold.wakes[wid]
    if not found.every:
        return clear(txn, wid, event_id=event_id)
    data = {"id": wid, "at": clock.format_ts(txn.now),
            "next": clock.format_ts(txn.now + timedelta(seconds=found.every))}
    return txn.add(Draft("wake.fired", data, found.goal, event_id))


def listing(ledger: Ledger, *, now: Optional[datetime] = None) -> list[answers.Wake]:
    """Every wake condition set."""
    ledger.require()
    return [typed.build(answers.Wake, w) for w in ledger.snapshot(now)["wakes"]]


# --- acting on wakes: wait and watch (docs/agents.md) ------------------------------------------

Wakeup = waker.Wakeup
WatchReport = waker.WatchReport
Pace = waker.Pace


class _Probe:
    """What a waiter looks at, for one ledger and actor (see :class:`waker.Probe`)."""

    def __init__(self, ledger: Ledger, actor: Optional[str], remote: Optional[str]) -> None:
        self.ledger, self.actor, self.remote = ledger, actor, remote

    def tip(self) -> Optional[str]:
        return self.ledger.tip()

    def look(self, now: datetime) -> status.StatusDoc:
        # CI is asked separately (ci below), only about the commits a waiter waits for.
        return status.status(self.ledger, actor=self.actor, ci=False, now=now)

    def fetch(self) -> None:
        sync.fetch(self.ledger, remote=self.remote)

    def ci(self, sha: str, snapshot: status.StatusDoc) -> str:
        config = readback.read_config(self.ledger.repo)  # afresh: a watch runs for days
        provider = config.get("loopx.ci.provider")
        if not provider:
            return "unknown"
        return ci.check(sha, provider=provider, repo=self.ledger.repo, config=config,
                        snapshot={"evidence": typed.plain(snapshot.evidence)}, fresh=True).state


def wait(ledger: Ledger, *, actor: Optional[str], timeout: Optional[float] = None,
         fetch: bool = False, remote: Optional[str] = None, pace: waker.Pace = waker.Pace(),
         clock_fn: waker.Clock = clock.now, sleep: waker.Sleep = lambda s: None) -> Wakeup:
    """Block until a wake is due, a gate ``actor`` waits on is answered, the state changes
    (with ``fetch``: at the remote too, polled with backoff), CI for HEAD finishes, or
    ``timeout`` seconds pass (0: look once). Changes nothing. ``clock_fn`` and ``sleep`` are
    the time to use (tests pass a fake clock whose sleep only moves it on)."""
    ledger.require()
    return waker.wait(_Probe(ledger, actor, remote), timeout=timeout, fetch=fetch, pace=pace,
                      clock=clock_fn, sleep=sleep)


def local_only(ledger: Ledger, remote: Optional[str]) -> Optional[str]:
    """What a wait without ``fetch`` cannot see, when this clone shares its state through a
    remote (it has fetched or pushed it): gates answered and work pushed in other clones,
    which reach it only by a fetch. None for a clone that shares nothing."""
    from loopx.remote import sync as remote_sync  # (a wait that fetches loads it anyway)

    name = remote or remote_sync.default_remote(ledger.repo)
    if not ledger.store.has_ref(remote_sync.tracking_ref(ledger.ref, name)):
        return None
    return (f"waiting on this clone's state only: gates answered and work pushed in other "
            f"clones reach it from {name} with --fetch")


def ack_due(ledger: Ledger, ids: Sequence[str], *, actor: str,
            now: Optional[datetime] = None) -> list[str]:
    """Acknowledge (:func:`ack`) the wakes ``ids`` that a run was for, each in its own commit,
    unless someone (the run itself, say) already did: a cleared wake is gone, a re-armed
    recurring one is not due before a later time. Returns those acked."""
    moment = now or clock.now()
    done = []
    for wake in ids:
        found = ledger.fold().wakes.get(wake)
        if found is None:
            continue
        seen = ledger.first_seen([found.set_event], moment) if found.set_event else None
        due = views.wake_due(found, seen)
        if found.every and due is not None and due > moment:
            continue
        try:
            ledger.run(ack, wake, actor=actor, now=moment)
        except (NotFound, TransitionError):
            continue  # cleared between our look and our write
        done.append(wake)
    return done


def runner(argv: Sequence[str], *, cwd: str, environ: Optional[Mapping[str, str]] = None,
           stdout: Optional[IO[str]] = None) -> Callable[[Wakeup], int]:
    """Runs ``argv`` for one wakeup (in ``cwd``; its output passed through, stdout to
    ``stdout`` when given), with the wakeup in its environment: ``LOOPX_WAKE_CAUSE``,
    ``LOOPX_WAKE_IDS`` (comma-separated), ``LOOPX_WAKE_REASON`` and ``LOOPX_WAKE_JSON``;
    returns its exit code."""
    def run(wakeup: Wakeup) -> int:
        env = dict(os.environ if environ is None else environ)
        env.update(LOOPX_WAKE_CAUSE=wakeup.cause, LOOPX_WAKE_IDS=",".join(wakeup.wakes),
                   LOOPX_WAKE_REASON=wakeup.reason, LOOPX_WAKE_JSON=json.dumps(wakeup.to_dict()))
        try:
            return subprocess.run(list(argv), cwd=cwd, env=env, stdout=stdout).returncode
        except OSError as exc:
            raise LoopxError(f"cannot run {argv[0]!r}: {exc.strerror}") from None
    return run


def watch(ledger: Ledger, argv: Sequence[str], *, actor: str, max_runs: Optional[int] = None,
          timeout: Optional[float] = None, fetch: bool = False, remote: Optional[str] = None,
          backoff: float = 10.0, pace: waker.Pace = waker.Pace(),
          clock_fn: waker.Clock = clock.now, sleep: waker.Sleep = lambda s: None,
          run: Optional[Callable[[Wakeup], int]] = None,
          host: Optional[str] = None, nudge: Optional[notify.Channels] = None,
          told: Callable[[notify.Report], None] = lambda report: None) -> WatchReport:
    """Run ``argv`` each time a wake is due, one watch per repository (a lock); when it exits
    0 the wakes it ran for are acknowledged (one-shot cleared, recurring re-armed), when it
    fails they stay due and the next run waits ``backoff`` seconds, doubling. With ``host``
    each run is a turn of that agent CLI (:func:`turn_runner`; ``argv`` is added to its
    command, or is the command for ``command``). With ``nudge`` (channels), each time the
    state moves the nudges `git loopx notify` would send go out through them
    (:func:`notify.watcher`), each once; ``told`` gets what was done."""
    ledger.require()
    cwd = str(ledger.repo.work_tree or ledger.repo.cwd)
    run = run or driver(ledger, argv, host=host, actor=actor, cwd=cwd)
    with waker.runner_lock(ledger.repo.loopx_dir / "watch.lock"):
        return waker.watch(
            _Probe(ledger, actor, remote), run=run,
            ack=lambda ids: ack_due(ledger, ids, actor=actor, now=clock_fn()),
            max_runs=max_runs, timeout=timeout, fetch=fetch, backoff=backoff, pace=pace,
            clock=clock_fn, sleep=sleep,
            seen=notify.watcher(ledger, nudge, actor=actor, told=told) if nudge else None)



# --- the turn driver: watch --host (docs/agents.md) --------------------------------------------

QUOTA_SPENT_EXIT = 75  # EX_TEMPFAIL: no turn was started, the budget is spent; the wake stays due


def turn_prompt(ledger: Ledger, wakeup: Wakeup, *, actor: str) -> str:
    """What an agent's turn starts from: the primer (`git loopx prime`) and why it woke."""
    primer = status.prime(ledger, actor=actor, ci=False).markdown
    return (f"{primer.rstrip()}\n\n## Why this turn\n\n`git loopx watch` started it: "
            f"{inert.md(wakeup.reason)}\n")


def turn_runner(ledger: Ledger, adapter: hosts.Adapter, extra: Sequence[str], *, actor: str,
                cwd: str, stdout: Optional[IO[str]] = None) -> Callable[[Wakeup], int]:
    """Runs one turn of ``adapter``'s agent CLI per wakeup: the prompt from
    :func:`turn_prompt` (in argv or on stdin, and in ``$LOOPX_PROMPT``), the wakeup in the
    environment as for :func:`runner`, ``$LOOPX_AGENT_HOST`` naming the host. Each turn
    spends one turn of the quota covering its wakes' goal, recording the host and its exit;
    when that budget is spent no turn starts (exit :data:`QUOTA_SPENT_EXIT`)."""
    def run(wakeup: Wakeup) -> int:
        goal = _wakes_goal(ledger, wakeup.wakes)
        over = views.quota_overrun(ledger.fold(), goal, {"turns": 1})
        if over:
            print(f"loopx watch: no turn for {adapter.name}: {over}", file=sys.stderr)
            return QUOTA_SPENT_EXIT
        prompt = turn_prompt(ledger, wakeup, actor=actor)
        code = _start(adapter, adapter.argv(prompt, extra), prompt, wakeup, cwd, stdout)
        try:
            ledger.run(quotas.spend, goal=goal, turns=1, host=adapter.name, exit=code,
                       wakes=wakeup.wakes, actor=actor)
        except LoopxError as exc:  # raced past the budget: the turn happened, say so
            print(f"loopx watch: the turn was not recorded: {exc}", file=sys.stderr)
        return 0 if adapter.finished(code) else (code or 1)
    return run


def driver(ledger: Ledger, argv: Sequence[str], *, host: Optional[str], actor: str, cwd: str,
           stdout: Optional[IO[str]] = None) -> Callable[[Wakeup], int]:
    """What a watch runs per wakeup: ``argv`` as it is, or a turn of the agent CLI ``host``."""
    if host is None:
        if not argv:
            raise UsageError("give the command to run: git loopx watch -- CMD [ARG...] (or "
                             "--host claude|codex|gemini|command)")
        return runner(argv, cwd=cwd, stdout=stdout)
    adapter = hosts.get(host)
    if adapter is None:
        raise UsageError(f"no adapter for host {host!r}: use one of {', '.join(hosts.names())}")
    if adapter.name == "command" and not argv:
        raise UsageError("--host command needs the command to run: "
                         "git loopx watch --host command -- CMD [ARG...]")
    return turn_runner(ledger, adapter, argv, actor=actor, cwd=cwd, stdout=stdout)


def _start(adapter: hosts.Adapter, argv: list[str], prompt: str, wakeup: Wakeup, cwd: str,
           stdout: Optional[IO[str]]) -> int:
    env = dict(os.environ, **adapter.env)
    env.update(LOOPX_AGENT_HOST=adapter.name, LOOPX_PROMPT=prompt,
               LOOPX_WAKE_CAUSE=wakeup.cause, LOOPX_WAKE_IDS=",".join(wakeup.wakes),
               LOOPX_WAKE_REASON=wakeup.reason, LOOPX_WAKE_JSON=json.dumps(wakeup.to_dict()))
    try:
        return subprocess.run(argv, cwd=cwd, env=env, stdout=stdout, text=True,
                              input=prompt if adapter.stdin else None,
                              stdin=None if adapter.stdin else subprocess.DEVNULL).returncode
    except OSError as exc:
        raise LoopxError(f"cannot start {adapter.name} ({argv[0]!r}): {exc.strerror}; is it "
                         "installed and on PATH?") from None


def _wakes_goal(ledger: Ledger, ids: Sequence[str]) -> Optional[str]:
    """The goal the wakes share (None: none, or several: the ledger-wide budget)."""
    wakes = ledger.fold().wakes
    goals = {wakes[w].goal for w in ids if w in wakes}
    return goals.pop() if len(goals) == 1 else None
