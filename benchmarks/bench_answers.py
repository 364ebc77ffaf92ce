#!/usr/bin/env python3
"""Benchmark the size and latency of the answers an agent reads: `status --format json`,
`todo list --format json` and `prime --format json`, compact (the default) and whole
(`status --detail`), on ledgers with 100 and 1000 open todos.

    python benchmarks/bench_answers.py                 # 100 and 1000 open todos
    python benchmarks/bench_answers.py --todos 100     # one size

Each ledger has three goals with two criteria each, a gate per goal blocking every tenth
todo, chains of dependencies, evidence on three todos and leases held by two agents (one
of them the actor asking). Latency is the median wall time of `git loopx ...` as a
process, warm (its cache built), beside `git rev-parse HEAD` from the same run (the floor of
any git command) and the whole answer (what status printed before it was compact). Exit 1
when a default answer is above 8 KB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from loopx.ledger.book import Ledger  # noqa: E402
from loopx.ops import batch  # noqa: E402

BUDGET = 8192
HUMAN = "human:alice@example.com"
AGENT = "agent:codex@devbox"
OTHER = "agent:claude@laptop"
ANSWERS = {  # name -> argv; "default" ones must fit the budget
    "status": ("status", "--format", "json", "--no-ci"),
    "todo list": ("todo", "list", "--format", "json"),
    "prime": ("prime", "--format", "json", "--no-ci"),
    "status --detail": ("status", "--format", "json", "--no-ci", "--detail"),
}
WHOLE = {"status --detail"}  # the yardstick: the whole answer


def build(where: Path, todos: int) -> Path:
    """A repository whose ledger has ``todos`` open todos (see the module's docstring)."""
    repo = where / f"open-{todos}"
    repo.mkdir(parents=True)
    for args in (("init", "-q", "-b", "main"), ("add", "README"),
                 ("-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q", "-m", "init")):
        if args[0] == "add":
            (repo / "README").write_text("bench\n")
        subprocess.run(["git", *args], cwd=repo, check=True)
    lines: list[list[str]] = []
    for g in range(3):
        lines += [["goal", "add", f"Goal {g}: ship the thing, whole and tested", "--id", f"g{g}",
                   "--accept", "the whole suite passes", "--accept", "the docs say how"],
                  ["gate", "open", f"g{g}", f"May goal {g} ship on Friday?", "--id", f"q{g}",
                   "--authority", HUMAN]]
    for i in range(todos):
        line = ["todo", "add", f"g{i % 3}", f"Todo {i}: a title about as long as real ones are",
                "--id", f"t-{i:04d}", "--priority", str(i % 5)]
        line += ["--after", f"t-{i - 1:04d}"] if i % 4 == 3 else []
        line += ["--gate", f"q{i % 3}"] if i % 10 == 9 else []
        lines.append(line)
    with Ledger.open(repo) as led:
        led.init(actor=HUMAN)
        batch.apply(led, batch.parse(lines), actor=lambda: HUMAN)
    for tid, who in (("t-0000", AGENT), ("t-0050", AGENT), ("t-0001", OTHER)):
        loopx(repo, who, "todo", "claim", tid)
        loopx(repo, who, "run", "--todo", tid, "--criterion", "a1", "--", "true")
    return repo


def loopx(repo: Path, actor: str, *args: str) -> tuple[float, int]:
    """One `git loopx` process: its wall time in seconds and the bytes it printed."""
    env = dict(os.environ, LOOPX_ACTOR=actor, PYTHONPATH=str(ROOT))
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "loopx", "-C", str(repo), *args],
                          capture_output=True, env=env)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"loopx {' '.join(args)} failed: {proc.stderr.decode()}")
    return elapsed, len(proc.stdout)


def rev_parse(repo: Path) -> float:
    started = time.perf_counter()
    subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True)
    return time.perf_counter() - started


def measure(repo: Path, runs: int) -> dict[str, tuple[int, float]]:
    """Per answer: its bytes and median warm latency (ms); ``git rev-parse`` beside them."""
    out: dict[str, tuple[int, float]] = {}
    for name, argv in ANSWERS.items():
        loopx(repo, AGENT, *argv)  # warm the cache
        timed = [loopx(repo, AGENT, *argv) for _ in range(runs)]
        out[name] = (timed[-1][1], statistics.median(t for t, _ in timed) * 1000)
    out["git rev-parse HEAD"] = (0, statistics.median(rev_parse(repo) for _ in range(runs)) * 1000)
    return out


def report(rows: dict[int, dict[str, tuple[int, float]]]) -> int:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"median of warm runs; budget {BUDGET} bytes for each default answer")
    print(f"{'open todos':>10}  {'answer':<20} {'bytes':>8} {'ms':>8}")
    missed = []
    for todos, answers in rows.items():
        for name, (size, ms) in answers.items():
            over = name in ANSWERS and name not in WHOLE and size > BUDGET
            mark = "  OVER" if over else ""
            print(f"{todos:>10}  {name:<20} {size if name in ANSWERS else '-':>8} {ms:>8.1f}{mark}")
            if over:
                missed.append(f"{name} at {todos} open todos: {size} bytes")
    print()
    for line in missed or ["every default answer fits"]:
        print(f"  [{'MISSED' if missed else 'ok'}] {line}")
    return 1 if missed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--todos", type=int, nargs="*", default=[100, 1000],
                        help="open todos per ledger (default: 100 1000)")
    parser.add_argument("--runs", type=int, default=5, help="warm runs per answer (median)")
    args = parser.parse_args()
    where = Path(tempfile.mkdtemp(prefix="loopx-bench-answers-"))
    try:
        rows = {n: measure(build(where, n), args.runs) for n in args.todos}
    finally:
        shutil.rmtree(where, ignore_errors=True)
    return report(rows)


if __name__ == "__main__":
    sys.exit(main())
