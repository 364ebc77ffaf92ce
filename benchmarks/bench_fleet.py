#!/usr/bin/env python3
"""A fleet through one hub: W clones append and sync concurrently through one plain bare
repository (no loopx on it), the way a team of agents on many machines would (issue 20).

    python benchmarks/bench_fleet.py                  # 4, 16 and 32 writers, a path remote
    python benchmarks/bench_fleet.py --daemon         # the same through `git daemon` (git://)
    python benchmarks/bench_fleet.py --writers 8 --events 5

Each writer is its own process with its own clone; after a start signal each appends one event
and runs a sync (default policy), E times. Printed per fleet: syncs that gave up, p50/p95 wall
time of one sync, git processes per sync, hub growth in bytes, and the yardsticks of the same
run: one uncontended sync (one clone appends and syncs while nobody else does) and a plain
`git push` of one commit to the same hub. Afterwards every clone syncs once more
and the script checks what the fleet promises: every acknowledged event on the hub's
loopx/state exactly once, all clones at one tip, the hub's loopx/state only fast-forwarded
(from its reflog). Exits 1 when a sync gave up or a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_sync  # noqa: E402  (benchmarks/bench_sync.py: the same isolation and git runner)
from bench_sync import ROOT, STATE, git  # noqa: E402

WORKER = r"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from loopx import Ledger
from loopx.errors import LoopxError
from loopx.remote import sync
from loopx.model.ids import new_short_id
from loopx.storage import gateway
path, events, go = Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
acked, gave_up, times, retries, errors, procs, parked = [], 0, [], [], [], [], 0
started_git = [0]
run = gateway.run
def counted(*args, **kwargs):
    started_git[0] += 1
    return run(*args, **kwargs)
gateway.run = counted  # every git process loopx starts (but the one long-lived cat-file)
with Ledger.open(path) as led:
    while not go.exists():
        time.sleep(0.01)
    for i in range(events):
        event = led.append("note.added", {"id": new_short_id("n"), "text": f"{path.name} {i}"},
                           actor="agent:" + path.name)
        started, started_git[0] = time.perf_counter(), 0
        try:
            report = sync.sync(ledger=led)
        except LoopxError as exc:
            gave_up += 1
            errors.append(f"{type(exc).__name__}: {exc}")
            continue
        times.append(time.perf_counter() - started)
        procs.append(started_git[0])
        retries.append(report.retries)
        parked += bool(report.parked)
        acked.append(event.id)
print(json.dumps({"acked": acked, "gave_up": gave_up, "times": times, "retries": retries,
                  "errors": errors[:3], "procs": procs, "parked": parked}))
"""


def seal(home: Path) -> None:
    """bench_sync's isolation, git:// allowed as well."""
    bench_sync.seal(home)
    os.environ["GIT_ALLOW_PROTOCOL"] = "file:git"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Hub:
    """A plain bare repository keeping a reflog of every ref update; served by `git daemon`
    on 127.0.0.1 when ``daemon``, else reached by its path."""

    def __init__(self, base: Path, name: str, daemon: bool) -> None:
        self.path = base / "served" / f"{name}.git"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        git(base, "init", "-q", "--bare", str(self.path))
        git(self.path, "config", "core.logAllRefUpdates", "always")
        self.daemon = None
        self.url = str(self.path)
        if daemon:
            port = free_port()
            self.daemon = subprocess.Popen(
                ["git", "daemon", f"--base-path={self.path.parent}", "--export-all",
                 "--enable=receive-pack", "--listen=127.0.0.1", f"--port={port}", "--reuseaddr",
                 "--max-connections=0", str(self.path.parent)],
                stderr=subprocess.DEVNULL, start_new_session=True)
            self.url = f"git://127.0.0.1:{port}/{self.path.name}"
            for _ in range(200):  # until it listens
                if subprocess.run(["git", "ls-remote", self.url],
                                  capture_output=True).returncode == 0:
                    break
                time.sleep(0.05)

    def size(self) -> int:
        return sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file())

    def stop(self) -> None:
        if self.daemon is not None:
            os.killpg(self.daemon.pid, 15)  # by its pid (its own process group)
            self.daemon.wait(timeout=10)


def setup(base: Path, hub: Hub, clones: int) -> list[Path]:
    """``clones`` clones of a hub whose ledger the first one created; all adopted it."""
    return bench_sync.seeded_clones(
        [base / f"{hub.path.stem}-w{n:02d}" for n in range(clones)], hub.url)


def p95(times: list[float]) -> float:
    """The 95th percentile (interpolated between the samples; never below the median)."""
    if len(times) < 2:
        return times[0] if times else 0.0
    return statistics.quantiles(times, n=20, method="inclusive")[-1]


def uncontended(path: Path, runs: int = 5) -> tuple[float, float]:
    """Median wall time of one sync after an append, while nobody else syncs (a sync
    alone), and of a plain `git push` of one new commit to the same hub (git alone)."""
    from loopx import Ledger
    from loopx.remote import sync
    from loopx.model.ids import new_short_id

    times, plain = [], []
    with Ledger.open(path) as led:
        for n in range(runs):
            led.append("note.added", {"id": new_short_id("n"), "text": f"alone {n}"},
                       actor="agent:alone")
            started = time.perf_counter()
            sync.sync(ledger=led)
            times.append(time.perf_counter() - started)
    for n in range(runs):
        git(path, "commit", "-q", "--allow-empty", "-m", f"yardstick {n}")
        started = time.perf_counter()
        git(path, "push", "-q", "origin", "HEAD:refs/heads/yardstick")
        plain.append(time.perf_counter() - started)
    return statistics.median(times), statistics.median(plain)


def fleet(base: Path, writers: int, events: int, daemon: bool) -> dict[str, Any]:
    from loopx import Ledger
    from loopx.remote import sync

    hub = Hub(base, f"hub{writers}", daemon)
    try:
        paths = setup(base, hub, writers)
        yardstick, plain = uncontended(paths[0])
        before = hub.size()
        go = base / f"go{writers}"
        procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(ROOT), str(p), str(events),
                                   str(go)], stdout=subprocess.PIPE, text=True) for p in paths]
        time.sleep(1.0)  # every worker imported loopx and waits for the signal
        started = time.perf_counter()
        go.touch()
        results = [json.loads(p.communicate()[0]) for p in procs]
        wall = time.perf_counter() - started
        growth = hub.size() - before
        for path in paths * 2:  # carry the last merges everywhere
            with Ledger.open(path) as led:
                sync.sync(ledger=led)
        problems = check(hub, paths, [e for r in results for e in r["acked"]])
    finally:
        hub.stop()
    times = sorted(t for r in results for t in r["times"])
    retries = [n for r in results for n in r["retries"]]
    procs = [n for r in results for n in r["procs"]]
    return {"writers": writers, "syncs": writers * events,
            "gave up": sum(r["gave_up"] for r in results),
            "p50": statistics.median(times) if times else 0.0,
            "p95": p95(times),
            "retries max": max(retries, default=0), "wall": wall, "growth": growth,
            "yardstick": yardstick, "plain": plain, "problems": problems,
            "procs": statistics.mean(procs) if procs else 0.0, "procs max": max(procs, default=0),
            "parked": sum(r["parked"] for r in results),
            "errors": sorted({e for r in results for e in r["errors"]})[:3]}


def check(hub: Hub, paths: list[Path], acked: list[str]) -> list[str]:
    """What the fleet promises, from the hub itself."""
    problems = []
    names = git(hub.path, "ls-tree", "-r", "--name-only", STATE, "--", "events").splitlines()
    ids = [n.rsplit("/", 1)[1].split(".")[0] for n in names]
    missing = set(acked) - set(ids)
    if missing:
        problems.append(f"{len(missing)} acknowledged events not on the hub's loopx/state")
    if len(ids) != len(set(ids)):
        problems.append("an event is on the hub twice")
    if len({git(p, "rev-parse", STATE) for p in paths} | {git(hub.path, "rev-parse", STATE)}) != 1:
        problems.append("clones did not converge")
    for line in (hub.path / "logs" / STATE).read_text().splitlines():
        old, new = line.split()[:2]
        if set(old) != {"0"} and subprocess.run(["git", "merge-base", "--is-ancestor", old, new],
                                                cwd=hub.path).returncode:
            problems.append(f"hub's loopx/state moved {old[:12]} -> {new[:12]}, not forward")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, nargs="+", default=[4, 16, 32])
    parser.add_argument("--events", type=int, default=10, help="appends (and syncs) per writer")
    parser.add_argument("--daemon", action="store_true", help="through git daemon on 127.0.0.1")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="loopx-bench-fleet-"))
    missed = False
    try:
        seal(base / "home")
        print(f"fleet through one {'git daemon' if args.daemon else 'path'} hub, "
              f"{args.events} appends+syncs per writer (goal: no sync gives up)")
        print(f"{'writers':>7} {'syncs':>6} {'gave up':>7} {'parked':>6} {'p50 s':>7} "
              f"{'p95 s':>7} {'max retries':>11} {'git/sync':>8} {'max':>4} {'wall s':>7} "
              f"{'hub growth':>11} {'alone s':>7} {'push s':>6}")
        for writers in args.writers:
            r = fleet(base, writers, args.events, args.daemon)
            print(f"{r['writers']:>7} {r['syncs']:>6} {r['gave up']:>7} {r['parked']:>6} "
                  f"{r['p50']:>7.2f} {r['p95']:>7.2f} {r['retries max']:>11} {r['procs']:>8.1f} "
                  f"{r['procs max']:>4} {r['wall']:>7.1f} {r['growth']:>11,} "
                  f"{r['yardstick']:>7.2f} {r['plain']:>6.2f}", flush=True)
            for line in r["problems"] + r["errors"]:
                print(f"        {line}")
            missed = missed or bool(r["gave up"] or r["problems"])
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print("parked: syncs that returned with their tip in their inbox (folded by a later sync); "
          "git/sync: git processes one sync started (mean, and max), besides the one "
          "long-lived cat-file; alone s: one uncontended sync on the same hub (median of 5); "
          "push s: a plain `git push` of one commit to it (median of 5): the yardsticks")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
