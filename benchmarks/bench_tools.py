#!/usr/bin/env python3
"""Measure the bytes of the MCP server's `tools/list` answer: what a client puts into the
agent's context at the start of every session, before the agent has asked anything.

    python benchmarks/bench_tools.py              # total, each tool, the largest properties
    python benchmarks/bench_tools.py --top 30     # more rows

Starts the real server (`python -m loopx.mcp`) in a fresh repository, speaks JSON-RPC to it
over stdio as a client does (initialize, then tools/list) and counts the bytes of the
`result` exactly as they came over the wire (compact JSON, UTF-8). Prints the total, each
tool's share (its whole entry; then its inputSchema and outputSchema apart), and the
properties that weigh most across all tools (`actor` on every tool counts once per tool).
Exit 1 when the total is above the budget. Needs the MCP SDK: pip install 'git-loopx[mcp]'.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from loopx.mcp.tools import BUDGET  # noqa: E402  (bytes; tests/mcp/test_server.py holds it too)

ACTOR = "agent:bench@host"


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def tools_list(repo: Path) -> bytes:
    """The raw ``result`` of tools/list from a server started on ``repo``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), LOOPX_ACTOR=ACTOR)
    proc = subprocess.Popen([sys.executable, "-m", "loopx.mcp", "-C", str(repo)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for message in (
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "bench_tools", "version": "0"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}):
            proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        for line in proc.stdout:
            reply = json.loads(line)
            if reply.get("id") == 2:
                # The bytes of the result alone, as the server wrote them (its envelope is
                # a few dozen bytes of jsonrpc and id).
                return json.dumps(reply["result"], separators=(",", ":"),
                                  ensure_ascii=False).encode()
        raise SystemExit("the server closed stdout before answering tools/list")
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def _repo(where: Path) -> Path:
    repo = where / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-m", "loopx", "-C", str(repo), "--actor",
                    "human:bench@example.com", "init"], env=env, check=True, capture_output=True)
    return repo


def report(raw: bytes, top: int) -> int:
    """Print the figures; the total in bytes."""
    tools = json.loads(raw)["tools"]
    print(f"tools/list: {len(raw):,} bytes, {len(tools)} tools (budget {BUDGET:,})")
    print(f"\n{'tool':<22} {'entry':>8} {'input':>8} {'output':>8} {'descr':>6}")
    rows = sorted(tools, key=_size, reverse=True)
    for tool in rows[:top]:
        print(f"{tool['name']:<22} {_size(tool):>8,} {_size(tool.get('inputSchema')):>8,} "
              f"{_size(tool['outputSchema']) if 'outputSchema' in tool else 0:>8,} "
              f"{len(tool.get('description', '').encode()):>6,}")
    weight: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    for tool in tools:
        for name, prop in tool["inputSchema"].get("properties", {}).items():
            weight[name] += _size(prop)
            count[name] += 1
    print(f"\n{'property':<22} {'bytes':>8} {'tools':>6}")
    for name, total in weight.most_common(top):
        print(f"{name:<22} {total:>8,} {count[name]:>6}")
    return len(raw)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=12, help="rows in each table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="loopx-bench-tools-") as tmp:
        total = report(tools_list(_repo(Path(tmp))), args.top)
    if total > BUDGET:
        print(f"\nOVER: {total:,} bytes > {BUDGET:,}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
