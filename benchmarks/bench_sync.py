"""Sync benchmark: loopx sync against plain git, and four clones racing through one remote.

    python benchmarks/bench_sync.py [--events 1000] [--clones 4] [--appends 250]

1. Carry N new events (in commits of 10) from clone A to clone B through a bare remote:
   `loopx sync` on A (push) then on B (fetch + incoming check + merge), against plain
   `git push` on A and `git fetch` + fast-forward `update-ref` on B of the very same commits.
   Goal: loopx within 2x of plain git.
2. C clones each append and sync M times concurrently: wall time, syncs per second,
   retries per sync (a retry is a push rejected because another clone pushed first).

Prints a table; runs in a temporary directory with a sealed git configuration.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STATE = "refs/heads/loopx/state"


# loopx runs every git command with these (loopx/git.py); they reach the remote's
# receive-pack too, so its pushes and fetches fsync objects and refs. The "fsync" variant of
# plain git uses them as well, to show what the durability costs by itself.
FSYNC = ("-c", "core.fsync=committed", "-c", "core.fsyncMethod=fsync")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def seal(home: Path) -> None:
    """Same isolation as the tests: our own HOME and git config, no system config."""
    home.mkdir()
    config = home / ".gitconfig"
    config.write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n"
                      "[init]\n\tdefaultBranch = main\n[gc]\n\tauto = 0\n")
    for name in list(os.environ):
        if name.startswith(("GIT_", "LOOPX_")):
            del os.environ[name]
    os.environ.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(config),
                      GIT_ALLOW_PROTOCOL="file", PYTHONPATH=str(ROOT))


def setup(base: Path, name: str, clones: int) -> tuple[Path, list[Path]]:
    """A bare remote holding an initialised ledger, and ``clones`` clones that adopted it."""
    remote = base / f"{name}.git"
    git(base, "init", "-q", "--bare", str(remote))
    return remote, seeded_clones([base / f"{name}-{n}" for n in range(clones)], str(remote))


def seeded_clones(paths: list[Path], url: str) -> list[Path]:
    """Clones of ``url`` at ``paths``: the first one creates the ledger and syncs it, the others
    adopt it."""
    from loopx import Ledger
    from loopx.remote import sync

    for path in paths:
        git(path.parent, "clone", "-q", url, str(path))
    with Ledger.open(paths[0]) as led:
        led.init(actor="agent:bench")
        sync.sync(ledger=led)
    for path in paths[1:]:
        with Ledger.open(path) as led:
            sync.fetch(ledger=led)
    return paths


def append_events(path: Path, count: int, per_commit: int = 10) -> None:
    from loopx import Ledger
    from loopx.model.ids import new_short_id
    from loopx.ledger.draft import Draft

    with Ledger.open(path) as led:
        for start in range(0, count, per_commit):
            def build(txn, start=start):  # type: ignore[no-untyped-def]
                for i in range(start, min(count, start + per_commit)):
                    txn.add(Draft("note.added", {"id": new_short_id("n"), "text": f"event {i}"}))
            led.write(build, actor="agent:bench")


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def bench_transfer(base: Path, events: int) -> dict[str, float]:
    from loopx import Ledger
    from loopx.remote import sync

    _, (a, b) = setup(base, "loopx", 2)
    _, (pa, pb) = setup(base, "plain", 2)
    _, (fa, fb) = setup(base, "fsync", 2)
    for path in (a, pa, fa):
        append_events(path, events)

    def loopx_push() -> None:
        with Ledger.open(a) as led:
            sync.sync(ledger=led)

    def loopx_fetch() -> None:
        with Ledger.open(b) as led:
            report = sync.sync(ledger=led)
            assert report.received == events, report

    def plain_push(path: Path, *config: str) -> None:
        git(path, *config, "push", "-q", "origin", f"{STATE}:{STATE}")

    def plain_fetch(path: Path, *config: str) -> None:
        old = git(path, "rev-parse", STATE)
        git(path, *config, "fetch", "-q", "origin", f"+{STATE}:refs/remotes/origin/loopx/state")
        git(path, *config, "update-ref", STATE, "refs/remotes/origin/loopx/state", old)

    result = {"loopx push": timed(loopx_push), "loopx fetch+check+merge": timed(loopx_fetch),
              "git push": timed(lambda: plain_push(pa)),
              "git fetch+update-ref": timed(lambda: plain_fetch(pb)),
              "git push (fsync)": timed(lambda: plain_push(fa, *FSYNC)),
              "git fetch+update-ref (fsync)": timed(lambda: plain_fetch(fb, *FSYNC))}
    assert git(a, "rev-parse", STATE) == git(b, "rev-parse", STATE)
    return result


WORKER = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from loopx import Ledger
from loopx.remote import sync
from loopx.model.ids import new_short_id
path, appends = Path(sys.argv[2]), int(sys.argv[3])
retries, failures, errors = [], 0, []
with Ledger.open(path) as led:
    for i in range(appends):
        led.append("note.added", {"id": new_short_id("n"), "text": f"{path.name} {i}"},
                   actor="agent:" + path.name)
        try:
            retries.append(sync.sync(ledger=led, retries=10).retries)
        except Exception as exc:
            failures += 1
            errors.append(f"{type(exc).__name__}: {exc}")
print(json.dumps({"retries": retries, "failures": failures, "errors": errors[:3]}))
"""


def bench_race(base: Path, clones: int, appends: int) -> dict[str, float]:
    from loopx import Ledger
    from loopx.remote import sync

    _, paths = setup(base, "race", clones)
    started = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(ROOT), str(p), str(appends)],
                              stdout=subprocess.PIPE, text=True) for p in paths]
    results = [json.loads(p.communicate()[0]) for p in procs]
    wall = time.perf_counter() - started
    for path in paths * 2:
        with Ledger.open(path) as led:
            sync.sync(ledger=led, retries=20)
    tips = {git(p, "rev-parse", STATE) for p in paths}
    retries = [r for res in results for r in res["retries"]]
    return {"wall s": wall, "syncs": len(retries), "syncs/s": len(retries) / wall,
            "retries/sync mean": statistics.mean(retries) if retries else 0.0,
            "retries/sync max": max(retries, default=0),
            "failed syncs": sum(res["failures"] for res in results),
            "clones converged": float(len(tips) == 1),
            "errors": sorted({e for res in results for e in res["errors"]})[:3]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--clones", type=int, default=4)
    parser.add_argument("--appends", type=int, default=250)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="loopx-bench-sync-"))
    try:
        seal(base / "home")
        t = bench_transfer(base, args.events)
        loopx_total = t["loopx push"] + t["loopx fetch+check+merge"]
        plain_total = t["git push"] + t["git fetch+update-ref"]
        fsync_total = t["git push (fsync)"] + t["git fetch+update-ref (fsync)"]
        print(f"1. carrying {args.events} new events (commits of 10) between two clones")
        for name, seconds in t.items():
            print(f"   {name:<30} {seconds * 1000:9.1f} ms")
        print(f"   {'loopx total':<30} {loopx_total * 1000:9.1f} ms")
        print(f"   {'plain git total':<30} {plain_total * 1000:9.1f} ms")
        print(f"   {'plain git total (fsync)':<30} {fsync_total * 1000:9.1f} ms")
        print(f"   {'ratio (goal <= 2.0)':<30} {loopx_total / plain_total:9.2f} x")
        print(f"   {'ratio vs fsync git':<30} {loopx_total / fsync_total:9.2f} x")
        r = bench_race(base, args.clones, args.appends)
        print(f"2. {args.clones} clones x {args.appends} appends, each followed by a sync")
        errors = r.pop("errors")
        for name, value in r.items():
            print(f"   {name:<30} {value:9.2f}")
        for error in errors:
            print(f"   failed sync: {error}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
