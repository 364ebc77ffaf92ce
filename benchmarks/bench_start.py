#!/usr/bin/env python3
"""Every command fast: the start-up figures of issue 14 in one run, against `python -c pass`
and git-annex (when installed) measured alongside.

    python benchmarks/bench_start.py            # a 100k-event ledger for status (a few minutes)
    python benchmarks/bench_start.py --quick    # 10k events, fewer runs
    python benchmarks/bench_start.py --smoke    # tiny: only proves the script runs

Each figure is the median of N runs, the two sides of a comparison alternating so that load
from other work hits both alike; wall and CPU (user + system of the command and everything it
ran). Then `python -X importtime` of `note add`, `status` and the recording post-commit hook:
the slowest imports, to show where what is left of each command goes. Exits 1 when a goal
is missed. docs/benchmarks.md explains the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Optional

import bench_hooks  # noqa: E402  (benchmarks/bench_hooks.py: commits with and without hooks)
from bench_scale import Bench, Figure, Took, annex_repo, median  # noqa: E402
from ledgers import make_repo  # noqa: E402


def ms(took: Took) -> str:
    return f"{took.wall * 1000:.0f} ms ({took.cpu * 1000:.0f} ms cpu)"


def alternate(runs: int, *sides: Callable[[int], Took]) -> list[Took]:
    """Median of each side, run in turn."""
    got: list[list[Took]] = [[] for _ in sides]
    for i in range(runs):
        for column, side in zip(got, sides):
            column.append(side(i))
    return [median(column) for column in got]


def startup(bench: Bench, runs: int) -> list[Figure]:
    here = bench.where
    python, version, help_ = alternate(
        runs,
        lambda i: bench.probe([sys.executable, "-c", "pass"], here),
        lambda i: bench.probe(["git", "loopx", "--version"], here),
        lambda i: bench.probe(["git", "loopx", "-h"], here))
    return [
        Figure("yardstick: python -c pass", ms(python), "", None),
        Figure("git loopx --version vs python -c pass",
               f"{ms(version)}: {version.wall / python.wall:.2f}x", "<= 2x",
               version.wall <= 2 * python.wall),
        Figure("git loopx -h vs python -c pass", f"{ms(help_)}: {help_.wall / python.wall:.2f}x",
               "<= 2x", help_.wall <= 2 * python.wall),
    ]


def note_add(bench: Bench, runs: int) -> list[Figure]:
    repo = make_repo(bench.where, 1000, name="notes").path
    bench.loopx(repo, "status", "--json", "--no-ci")  # the cache, as any clone in use has it
    annex = annex_repo(bench)
    if annex is None:
        (ours,) = alternate(runs, lambda i: bench.loopx(repo, "note", "add", f"n {i}"))
        return [Figure("one git loopx note add (git-annex not installed: no ratio)", ms(ours),
                       "", None)]
    ours, theirs = alternate(
        runs, lambda i: bench.probe(["git", "loopx", "note", "add", f"n {i}"], repo),
        lambda i: bench.probe(["git", "annex", "metadata", "--set", f"tag=v{i}", "f"], annex))
    return [Figure("one git loopx note add vs git annex metadata --set",
                   f"{ms(ours)} vs {ms(theirs)}: {ours.wall / theirs.wall:.2f}x "
                   f"({ours.cpu / theirs.cpu:.2f}x cpu)", "<= 2x", ours.wall <= 2 * theirs.wall)]


def status(bench: Bench, events: int, runs: int) -> list[Figure]:
    repo = make_repo(bench.where, events, name="status").path
    bench.loopx(repo, "status", "--json", "--no-ci")
    as_json, as_text = alternate(
        runs, lambda i: bench.probe(["git", "loopx", "status", "--json", "--no-ci"], repo),
        lambda i: bench.probe(["git", "loopx", "status", "--no-ci"], repo))
    goal = events >= 100_000
    return [
        Figure(f"warm status --format json, {events} events"
               + ("" if goal else " (the goal is for 100k: <= 60 ms)"), ms(as_json),
               "<= 60 ms" if goal else "", as_json.wall <= 0.060 if goal else None),
        Figure("warm text status vs the JSON status (CPU)",
               f"{as_text.cpu * 1000:.0f} vs {as_json.cpu * 1000:.0f} ms cpu", "<= the JSON",
               as_text.cpu <= as_json.cpu * 1.05),  # 5%: the noise of two medians
    ]


def hooks(bench: Bench, commits: int) -> list[Figure]:
    (bench.where / "hooks-home").mkdir()
    root = bench.where / "hooks"
    root.mkdir()
    found = bench_hooks.measure(root, bench_hooks.sealed_env(bench.where / "hooks-home"), commits)
    wall, cpu, count = found.wall, found.cpu, found.recorded["recording"]
    idle, rec = wall["idle"] - wall["plain"], wall["recording"] - wall["plain"]
    return [
        Figure("yardstick: git commit without hooks",
               f"{wall['plain']:.0f} ms ({cpu['plain']:.0f} ms cpu)", "", None),
        Figure("git commit with hooks, nothing to record",
               f"+{idle:.0f} ms (+{cpu['idle'] - cpu['plain']:.0f} ms cpu)", "<= +25 ms",
               idle <= 25),
        Figure(f"git commit recording evidence for a held todo ({count} recorded of "
               f"{commits + 1} commits)",
               f"+{rec:.0f} ms (+{cpu['recording'] - cpu['plain']:.0f} ms cpu)", "<= +150 ms",
               rec <= 150 and count == commits + 1),
    ]


def import_tops(bench: Bench, top: int) -> list[str]:
    """`python -X importtime` of three commands: total, and the slowest top-level imports."""
    repo = make_repo(bench.where, 1000, name="imports").path
    bench.loopx(repo, "goal", "add", "Held", "--id", "held")
    bench.loopx(repo, "todo", "add", "held", "Held", "--id", "held")
    bench.loopx(repo, "todo", "claim", "held")
    commands = {"note add": ["note", "add", "x"], "status": ["status", "--no-ci"],
                "post-commit hook (recording)": ["hook", "post-commit"]}
    lines = []
    for label, argv in commands.items():
        bench.git(repo, "commit", "-q", "--allow-empty", "-m", "work")  # for the hook
        bench.loopx(repo, *argv)  # warm: bytecode, cache
        bench.git(repo, "commit", "-q", "--allow-empty", "-m", "more work")
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "loopx", *argv],
                              cwd=repo, env=bench.env, capture_output=True, text=True)
        rows = []
        for line in proc.stderr.splitlines():
            found = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
            if found and len(found.group(3)) == 1:  # top level: one space of indent
                rows.append((int(found.group(2)), found.group(4)))
        total = sum(us for us, _ in rows)
        shown = ", ".join(f"{name} {us / 1000:.0f}" for us, name in sorted(rows, reverse=True)[:top])
        lines.append(f"  {label}: {total / 1000:.0f} ms of imports; slowest (ms): {shown}")
    return lines


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k events, fewer runs")
    parser.add_argument("--smoke", action="store_true", help="tiny counts (the CI check)")
    args = parser.parse_args(argv)
    events, runs, commits = ((300, 2, 2) if args.smoke else (10_000, 7, 9) if args.quick
                             else (100_000, 15, 15))
    where = Path(tempfile.mkdtemp(prefix="loopx-start-"))
    try:
        bench = Bench(where)
        bench.env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{bench.env['PATH']}"
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
              f"Python {sys.version.split()[0]}; medians of {runs} runs")
        figures = (startup(bench, runs) + note_add(bench, runs) + status(bench, events, runs)
                   + hooks(bench, commits))
        imports = import_tops(bench, 6)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    for f in figures:
        mark = "      " if f.met is None else ("[ok]  " if f.met else "[MISS]")
        print(f"{mark} {f.name}: {f.value}" + (f"  (goal {f.goal})" if f.goal else ""))
    print("imports (python -X importtime):")
    print("\n".join(imports))
    return 0 if all(f.met is not False for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
