"""Benchmark `status` through the MCP server on a synthetic 10k-event ledger.

    python benchmarks/bench_mcp.py              # 10k events, 200 calls
    python benchmarks/bench_mcp.py --events 1000 --calls 20   # quick

Starts `python -m loopx.mcp` on a ledger made by benchmarks/ledgers.py (the same realistic
mix of goals, todos, gates, evidence and quota), talks to it with the MCP SDK's own client
over stdio, and prints per-call latency of the `status` tool (ci=false: no CI provider is
asked) after warm-up calls: median, p90, p99, against the goal (median <= 20 ms warm). Also:
the server's start (spawn + initialize), and a `status` right after another process wrote
(the server must notice the state ref moved, and does so by reading only what was added).
Needs the MCP SDK: pip install 'git-loopx[mcp]'.
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

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ledgers import AGENTS, ROOT, make_repo  # noqa: E402  (the builder: benchmarks/ledgers.py)

GOAL_MS = 20.0


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


async def _measure(repo: Path, calls: int, warmup: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    params = StdioServerParameters(command=sys.executable, env=env, args=[
        "-m", "loopx.mcp", "-C", str(repo), "--actor", AGENTS[0]])
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        start_ms = (time.perf_counter() - started) * 1000
        first = time.perf_counter()
        await client.call_tool("status", {"ci": False})
        first_ms = (time.perf_counter() - first) * 1000
        for _ in range(warmup):
            await client.call_tool("status", {"ci": False})
        times = []
        for _ in range(calls):
            t = time.perf_counter()
            result = await client.call_tool("status", {"ci": False})
            times.append((time.perf_counter() - t) * 1000)
            assert not result.is_error, result.content
        events = result.structured_content["ledger"]["events"]  # type: ignore[index]
        subprocess.run([sys.executable, "-m", "loopx", "-C", str(repo), "--actor", AGENTS[1],
                        "note", "add", "written by another process"], env=env, check=True,
                       capture_output=True)
        t = time.perf_counter()
        result = await client.call_tool("status", {"ci": False})
        after_write_ms = (time.perf_counter() - t) * 1000
        seen = result.structured_content["ledger"]["events"]  # type: ignore[index]
        assert seen == events + 1, "the server did not see the other process's write"
    return {"start_ms": start_ms, "first_ms": first_ms, "median_ms": statistics.median(times),
            "p90_ms": _pct(times, 0.9), "p99_ms": _pct(times, 0.99),
            "after_write_ms": after_write_ms, "events": events}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    where = Path(tempfile.mkdtemp(prefix="loopx-bench-mcp-"))
    try:
        repo = make_repo(where, args.events).path
        subprocess.run([sys.executable, "-m", "loopx", "-C", str(repo), "status", "--no-ci"],
                       env=dict(os.environ, PYTHONPATH=str(ROOT), LOOPX_ACTOR=AGENTS[0]),
                       check=True, capture_output=True)  # the projection cache, as in use
        r = anyio.run(_measure, repo, args.calls, args.warmup)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"{r['events']} events replayed")
    print(f"server start (spawn + initialize): {r['start_ms']:.0f} ms; "
          f"first status: {r['first_ms']:.1f} ms")
    print(f"status through MCP, {args.calls} calls after {args.warmup} warm-up: "
          f"median {r['median_ms']:.1f} ms, p90 {r['p90_ms']:.1f}, p99 {r['p99_ms']:.1f}")
    print(f"status after another process wrote: {r['after_write_ms']:.1f} ms (write seen)")
    ok = r["median_ms"] <= GOAL_MS
    print(f"\n  [{'ok' if ok else 'MISSED'}] median warm status <= {GOAL_MS:.0f} ms")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
