#!/usr/bin/env python3
"""Every command at the floor (issue 27): each figure beside its yardstick, from one run.

    python benchmarks/bench_floor.py            # 100k events for the cold replay (minutes)
    python benchmarks/bench_floor.py --quick    # 20k events, fewer runs
    python benchmarks/bench_floor.py --smoke    # tiny: only proves the script runs
    python benchmarks/bench_floor.py --replay-only 10000 100000  # only the cold replay

Figures (median of alternating runs, wall and CPU of the command and everything it ran):
  - one `git loopx note add` vs `git annex metadata --set`, and a warm `status --json` vs
    `git annex metadata --get`: goal <= 2x in wall and CPU. Without git-annex installed the
    yardstick is the plumbing-only shell append of bench_scale.py (for `note add`) and
    `git cat-file -p` of the state tip (for `status`), said so in the output.
  - cold replay: `Reader.rebuild` of the whole ledger against the floor of reading every
    event blob through one `git cat-file --batch` and decoding it as UTF-8, both in one
    process each, CPU of the process and its git children: goal >= 40,000 events/s and
    <= 3x the floor.
  - recording evidence on `git commit`, on a held lease and for a Loopx-Todo trailer (both
    queued by the shim and written by a detached drain, the default), against a commit
    without hooks: goal <= +60 ms; loopx.hooks.background=false (written inside the
    commit, a user's choice) printed beside them, not judged.
Exits 1 when a goal is missed. docs/benchmarks.md gives the table and what is left.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

import bench_hooks  # noqa: E402  (benchmarks/bench_hooks.py)
from bench_scale import _PLUMBING as APPEND_SH, Bench, Figure, Took, annex_repo  # noqa: E402
from bench_start import alternate, ms  # noqa: E402
from ledgers import make_repo  # noqa: E402

SINGLE_GOAL = 2.0
REPLAY_RATE_GOAL = 40_000
REPLAY_FLOOR_GOAL = 3.0
COMMIT_GOAL_MS = 60.0

# Each prints {"cpu", "wall"}: CPU of this process and the git it ran, measured
# after the imports (the replay's own work, not the interpreter's start). RUSAGE_CHILDREN
# counts a child only once it has been waited for, so both scripts reap every git they
# started before the second reading: the replay closes its store (the long-lived cat-file,
# uncounted before: the replay's figure left out its reads), the floor waits for its cat-file.
_TIMER = r"""
import json, resource, sys, time
def clock():
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime, time.perf_counter()
"""
_REPLAY = _TIMER + r"""
from loopx.ledger.replay import Reader
from loopx.storage import gateway
from loopx.storage.store import STATE_REF, Store
store = Store(gateway.discover("."))
tip = store.resolve(STATE_REF)
cpu0, wall0 = clock()
fold = Reader(store).rebuild(tip)
store.close()
cpu1, wall1 = clock()
assert not fold.problems, fold.problems[:3]
print(json.dumps({"cpu": cpu1 - cpu0, "wall": wall1 - wall0}))
"""
_FLOOR = _TIMER + r"""
import subprocess, threading
cpu0, wall0 = clock()
listing = subprocess.run(["git", "ls-tree", "-r", "-z", "loopx/state", "--", "events"],
                         capture_output=True, check=True).stdout.split(b"\0")
oids = [line.split(b"\t", 1)[0].split()[2] for line in listing if line]
cat = subprocess.Popen(["git", "cat-file", "--batch"], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE)
def feed():
    cat.stdin.write(b"\n".join(oids) + b"\n")
    cat.stdin.close()
threading.Thread(target=feed).start()
for _ in oids:
    size = int(cat.stdout.readline().split()[2])
    cat.stdout.read(size + 1)[:-1].decode("utf-8")
cat.wait()
cpu1, wall1 = clock()
print(json.dumps({"events": len(oids), "cpu": cpu1 - cpu0, "wall": wall1 - wall0}))
"""


def inline(bench: Bench, repo: Path, code: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, env=bench.env,
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"bench: replay script failed in {repo}:\n{out.stderr}")
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def ratio_figure(name: str, ours: Took, theirs: Took, yardstick: str) -> Figure:
    wall, cpu = ours.wall / theirs.wall, ours.cpu / theirs.cpu
    return Figure(f"{name} vs {yardstick}", f"{ms(ours)} vs {ms(theirs)}: {wall:.2f}x "
                  f"({cpu:.2f}x cpu)", f"<= {SINGLE_GOAL:g}x wall and cpu",
                  wall <= SINGLE_GOAL and cpu <= SINGLE_GOAL)


def single(bench: Bench, runs: int, annex_ok: bool) -> list[Figure]:
    repo = make_repo(bench.where, 1000, name="single").path
    bench.loopx(repo, "status", "--json", "--no-ci")  # the cache, as any clone in use has it
    annex = annex_repo(bench) if annex_ok else None
    note = lambda i: bench.probe(["git", "loopx", "note", "add", f"n {i}"], repo)  # noqa: E731
    status = lambda i: bench.probe(["git", "loopx", "status", "--json", "--no-ci"],  # noqa: E731
                                   repo)
    if annex is not None:
        set_ = lambda i: bench.probe(  # noqa: E731
            ["git", "annex", "metadata", "--set", f"tag=v{i}", "f"], annex)
        get = lambda i: bench.probe(["git", "annex", "metadata", "--get", "tag", "f"],  # noqa: E731
                                    annex)
        names = ("git annex metadata --set", "git annex metadata --get")
        head: list[Figure] = []
    else:
        print("git-annex is not installed (apt-get install git-annex) or --no-annex: the yardsticks are the "
              "plumbing-only shell append and `git cat-file -p` of the state tip")
        script = bench.where / "append.sh"
        script.write_text(APPEND_SH)
        floor = bench.where / "floor"
        floor.mkdir()
        bench.git(floor, "init", "-q")
        set_ = lambda i: bench.probe(["sh", str(script), f"n-{i:06d}"], floor)  # noqa: E731
        get = lambda i: bench.probe(["git", "cat-file", "-p", "loopx/state"], repo)  # noqa: E731
        names = ("the plumbing append", "git cat-file -p of the state tip")
        head = [Figure("git-annex not installed: plumbing yardsticks", "", "", None)]
    full_note, theirs_set, full_status, theirs_get = alternate(runs, note, set_, status, get)
    pid = json.loads(subprocess.run(
        [sys.executable, "-m", "loopx", "--json", "server", "start"], cwd=repo, env=bench.env,
        capture_output=True, text=True, check=True).stdout.splitlines()[-1])["pid"]
    try:
        served = alternate(runs, with_server(pid, note), set_, with_server(pid, status), get)
    finally:
        subprocess.run([sys.executable, "-m", "loopx", "server", "stop"], cwd=repo,
                       env=bench.env, capture_output=True, check=True)
    ours_note, theirs_set2, ours_status, theirs_get2 = served
    return head + [
        Figure(f"one git loopx note add, full path (no server) vs {names[0]}",
               f"{ms(full_note)} vs {ms(theirs_set)}", "", None),
        Figure(f"warm git loopx status --json, full path (no server) vs {names[1]}",
               f"{ms(full_status)} vs {ms(theirs_get)}", "", None),
        ratio_figure("one git loopx note add (git loopx server start)", ours_note, theirs_set2,
                     names[0]),
        ratio_figure("warm git loopx status --json (git loopx server start)", ours_status,
                     theirs_get2, names[1])]


def with_server(pid: int, probe: Callable[[int], Took]) -> Callable[[int], Took]:
    """The probe's figure with the server's share added: the CPU of the child it forked for
    the command (reaped by the server, so in its children's time) and its own."""
    def run(i: int) -> Took:
        before = server_cpu(pid)
        took = probe(i)
        return Took(took.wall, took.cpu + server_cpu(pid) - before, took.rss_mb)
    return run


def server_cpu(pid: int) -> float:
    """utime + stime + cutime + cstime of ``pid`` once it has reaped every child it forked."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if not children.exists():
        raise SystemExit(f"bench: the loopx server (pid {pid}) stopped during the run: a file "
                         f"of the loopx package changed, which makes a server stale")
    for _ in range(500):
        if not children.read_text().strip():
            break
        time.sleep(0.002)
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def replay(bench: Bench, events: int, runs: int) -> list[Figure]:
    repo = make_repo(bench.where, events, name=f"replay-{events}").path
    got: dict[str, list[dict[str, float]]] = {"replay": [], "floor": []}
    for _ in range(runs):
        got["replay"].append(inline(bench, repo, _REPLAY))
        got["floor"].append(inline(bench, repo, _FLOOR))
    best = {k: sorted(v, key=lambda r: r["cpu"])[len(v) // 2] for k, v in got.items()}
    ours, floor = best["replay"], best["floor"]
    rate, floor_rate = events / ours["cpu"], events / floor["cpu"]
    goal = events >= 100_000 or None
    return [
        Figure(f"yardstick: every event blob through one git cat-file --batch, decoded "
               f"({events} events)", f"{floor_rate:,.0f} events/s ({floor['cpu']:.2f} s cpu)",
               "", None),
        Figure(f"cold replay of {events} events (cpu; wall {ours['wall']:.2f} s)",
               f"{rate:,.0f} events/s", f">= {REPLAY_RATE_GOAL:,} events/s"
               + ("" if goal else " (judged at 100k)"),
               rate >= REPLAY_RATE_GOAL if goal else None),
        Figure("cold replay vs the cat-file floor (cpu)", f"{floor_rate / rate:.2f}x",
               f"<= {REPLAY_FLOOR_GOAL:g}x", floor_rate / rate <= REPLAY_FLOOR_GOAL),
    ]


def commit(bench: Bench, commits: int) -> list[Figure]:
    (bench.where / "hooks-home").mkdir()
    root = bench.where / "hooks"
    root.mkdir()
    found = bench_hooks.measure(root, bench_hooks.sealed_env(bench.where / "hooks-home"),
                                commits, foreground=True, trailer=True)
    wall, cpu = found.wall, found.cpu
    figures = [Figure("yardstick: git commit without hooks",
                      f"{wall['plain']:.0f} ms ({cpu['plain']:.0f} ms cpu)", "", None)]
    for name, label in (("recording", "on a held lease (the default: the shim queues it)"),
                        ("trailer", "a Loopx-Todo trailer (the default: the shim queues it)"),
                        ("foreground", "inside the commit (loopx.hooks.background=false, "
                                       "a user's choice: not judged)")):
        extra = wall[name] - wall["plain"]
        recorded = found.recorded[name] == commits + 1
        judged = name in bench_hooks.JUDGED
        figures.append(Figure(
            f"git commit recording evidence {label}",
            f"+{extra:.0f} ms (+{cpu[name] - cpu['plain']:.0f} ms cpu)"
            + ("" if recorded else f"; only {found.recorded[name]} of {commits + 1} recorded"),
            f"<= +{COMMIT_GOAL_MS:.0f} ms" if judged else "",
            (extra <= COMMIT_GOAL_MS and recorded) if judged else (None if recorded else False)))
    return figures


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20k events, fewer runs")
    parser.add_argument("--smoke", action="store_true", help="tiny counts (the CI check)")
    parser.add_argument("--no-annex", action="store_true", help="plumbing yardsticks")
    parser.add_argument("--replay-only", type=int, nargs="+", metavar="EVENTS",
                        help="only the cold replay and its floor, at each of these sizes")
    args = parser.parse_args(argv)
    events, runs, replays, commits = ((300, 2, 1, 2) if args.smoke else
                                      (20_000, 7, 3, 7) if args.quick else (100_000, 15, 3, 15))
    where = Path(tempfile.mkdtemp(prefix="loopx-floor-"))
    try:
        bench = Bench(where)
        bench.env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{bench.env['PATH']}"
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
              f"Python {sys.version.split()[0]}; medians of {runs} runs")
        if args.replay_only:
            figures = [f for size in args.replay_only for f in replay(bench, size, replays)]
        else:
            figures = (single(bench, runs, not args.no_annex) + replay(bench, events, replays)
                       + commit(bench, commits))
    finally:
        shutil.rmtree(where, ignore_errors=True)
    for f in figures:
        mark = "      " if f.met is None else ("[ok]  " if f.met else "[MISS]")
        print(f"{mark} {f.name}: {f.value}" + (f"  (goal {f.goal})" if f.goal else ""))
    return 0 if all(f.met is not False for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
