#!/usr/bin/env python3
"""The bounds the tests once asserted as wall-clock limits, measured beside a yardstick of the
same run (issue 23: no test asserts a wall-clock time).

    python benchmarks/bench_bounds.py           # median of 5 runs each
    python benchmarks/bench_bounds.py --smoke   # one run each, no demo: only proves it runs

Figures, each with its yardstick:
  hostile YAML      codec.load refusing each case of tests/model/test_codec.py (HOSTILE)
                    vs loading one ordinary event file
  hostile text      redact.scrub of the long lines of tests/redaction/test_redact.py
                    vs scrubbing ordinary prose of the same length
  busy commit       `git commit` (hooks installed, a lease held) while another process holds
                    the clone lock (tests/hooks/test_spool.py) vs the same commit when free;
                    the hook gives up after spool.WAIT_S and queues its work
  killed writer     an append after the lock's holder was killed (tests/storage/test_store.py)
                    vs an append with no holder ever
  due wake          `git loopx wait` for a wake due in 1 s (tests/cli/test_waiting.py) vs 1 s
  demo              `git loopx demo` (tests/cli/test_demo.py) vs one `git loopx --version`
Nothing here has a goal to miss: the figures are for people to read.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)] + [str(ROOT / "tests" / d) for d in ("", "model", "redaction", "hooks")]

from bench_hooks import make_repo, sealed_env  # noqa: E402
from loopx.errors import CodecError  # noqa: E402
from loopx.redaction import redact  # noqa: E402
from loopx.hooks import spool  # noqa: E402
from loopx.model import codec  # noqa: E402
from test_codec import HOSTILE  # noqa: E402  (the same cases the test refuses)
from test_redact import HOSTILE_TEXTS  # noqa: E402
from test_spool import HOLD_LOCK  # noqa: E402  (holds the clone lock for 120 s)

ORDINARY_EVENT = (b"id: 01J0000000000000000000000A\ntype: note.added\nv: 1\n"
                  b"at: '2026-01-01T00:00:00Z'\nclock: 1\nactor: agent:x\n"
                  b"data:\n  id: n-1\n  text: an ordinary note, of ordinary length\n")


def median_s(runs: int, once: Callable[[], object]) -> float:
    took = []
    for _ in range(runs):
        started = time.perf_counter()
        once()
        took.append(time.perf_counter() - started)
    return statistics.median(took)


def line(figure: str, took: float, yardstick: str, base: float) -> None:
    print(f"{figure:<44} {took * 1000:9.1f} ms   {yardstick}: {base * 1000:.1f} ms "
          f"({took / base if base else float('inf'):.1f}x)")


def refuse(data: bytes) -> None:
    try:
        codec.load(data, "events/2026/01/01/evil.yaml")
    except CodecError:
        return
    raise SystemExit("hostile YAML was accepted")


def hostile_input(runs: int) -> None:
    codec.load(ORDINARY_EVENT, "events/2026/01/01/n.yaml")  # warm-up: imports, first parse
    redact.scrub("warm up")
    base = median_s(runs, lambda: codec.load(ORDINARY_EVENT, "events/2026/01/01/n.yaml"))
    for case in sorted(HOSTILE):
        line(f"hostile YAML: {case}", median_s(runs, lambda: refuse(HOSTILE[case][0])),
             "one ordinary event", base)
    for text in HOSTILE_TEXTS:
        prose = ("the quick brown fox jumps over the lazy dog " * (len(text) // 44 + 1))[:len(text)]
        line(f"hostile text: {text[:10]!r}... ({len(text)} chars)",
             median_s(runs, lambda: redact.scrub(text)),
             "prose of the same length", median_s(runs, lambda: redact.scrub(prose)))


def run(cwd: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=True)


def commit(repo: Path, env: dict[str, str], n: int) -> None:
    (repo / "f").write_text(f"change {n}\n")
    run(repo, env, "git", "add", "f")
    run(repo, env, "git", "commit", "-qm", f"change {n}\n\nLoopx-Todo: t1")


def holding(repo: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    lock = repo / ".git" / "loopx" / "write.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(lock)], env=env,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def busy_lock(root: Path, env: dict[str, str], runs: int) -> None:
    loopx = ["git", "loopx"]
    repo = make_repo(root, "busy", env, [
        loopx + ["init"], loopx + ["hooks", "install"], loopx + ["goal", "add", "G", "--id", "g1"],
        loopx + ["todo", "add", "g1", "T", "--id", "t1"],
        loopx + ["todo", "claim", "t1", "--ttl", "2h"],
        # Written inside the hook, so that a free commit is the whole cost of recording.
        ["git", "config", "loopx.hooks.background", "false"]])
    counter = iter(range(10_000))
    commit(repo, env, next(counter))  # warm-up
    free = median_s(runs, lambda: commit(repo, env, next(counter)))
    holder = holding(repo, env)
    try:
        busy = median_s(runs, lambda: commit(repo, env, next(counter)))
    finally:
        holder.kill()
        holder.wait()
    line(f"git commit, clone lock held (WAIT_S {spool.WAIT_S:g} s)", busy,
         "the same commit, lock free", free)
    run(repo, env, *loopx, "status")  # applies what the busy commits queued

    def after_a_kill() -> None:
        killed = holding(repo, env)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        started = time.perf_counter()
        run(repo, env, *loopx, "note", "add", "after the crash")
        after.append(time.perf_counter() - started)

    after: list[float] = []
    for _ in range(runs):
        after_a_kill()
    line("note add after the lock holder was killed", statistics.median(after),
         "note add, no holder ever", median_s(runs, lambda: run(repo, env, *loopx, "note", "add",
                                                                "an ordinary note")))

    def wake_and_wait() -> None:
        run(repo, env, *loopx, "wake", "set", "--in", "1s")
        run(repo, env, *loopx, "wait", "--timeout", "30", "--json")

    line("wake set --in 1s, then wait until it is due", median_s(runs, wake_and_wait),
         "the wake's delay", 1.0)


def demo(root: Path, env: dict[str, str], runs: int) -> None:
    version = median_s(runs, lambda: run(root, env, "git", "loopx", "--version"))
    counter = iter(range(100))
    took = median_s(runs, lambda: run(root, env, "git", "loopx", "demo", "--dir",
                                      str(root / f"story-{next(counter)}"), "--json"))
    line("git loopx demo", took, "git loopx --version", version)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one run each (the CI check)")
    args = parser.parse_args()
    runs = 1 if args.smoke else 5
    with tempfile.TemporaryDirectory(prefix="loopx-bounds-") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        env = sealed_env(root / "home")
        hostile_input(runs)
        busy_lock(root, env, runs)
        if args.smoke:  # tests/cli/test_demo.py runs the demo itself
            print("git loopx demo: not in --smoke")
        else:
            demo(root, env, 3)
    return 0


if __name__ == "__main__":
    sys.exit(main())
