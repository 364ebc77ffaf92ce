"""Benchmark secret redaction (loopx.redaction.redact.scrub), the write path's choke point.

    python benchmarks/bench_redact.py

Per line, median of several rounds: ordinary lines a cheap gate clears, the 50 ordinary lines
of issue 22's corpus (commit ids, hashes, base64 images: most pass the gate and are scanned),
and the 125 secret lines (tests/secretkit.py). Yardstick of the same run: the same scrub with
the gitleaks rules switched off (detect-secrets and loopx's own shapes only), so the figure
says what the maintained rule set costs. Also the one-time cost, in a fresh interpreter, of
the first text that needs the rules: detect-secrets' import and reading the rule file.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import secretkit  # noqa: E402
from loopx.redaction import gitleaks, redact  # noqa: E402

ROUNDS = 15
PLAIN = ["collected 12 items in 0.3s: all passed", "make[2]: Leaving directory '/build/src'",
         "Compiling loopx v0.1.0 (/work/loopx)", "  File \"app.py\", line 3, in main"] * 10


def per_line_us(lines: list[str], rounds_: int = ROUNDS) -> float:
    """Median microseconds per line over some rounds (each line its own scrub call)."""
    rounds = []
    for _ in range(rounds_):
        start = time.perf_counter()
        for line in lines:
            redact.scrub(line)
        rounds.append((time.perf_counter() - start) / len(lines) * 1e6)
    return statistics.median(rounds)


def first_use_ms() -> tuple[float, float]:
    """(ms to import loopx.redaction.redact, ms of the first scrub of a secret line)."""
    code = ("import time; t = time.perf_counter()\n"
            "from loopx.redaction import redact\n"
            "t1 = time.perf_counter()\n"
            "redact.scrub('age AGE-SECRET-KEY-1' + 'QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L' * 2)\n"
            "print((t1 - t) * 1e3, (time.perf_counter() - t1) * 1e3)\n")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, cwd=ROOT).stdout.split() for _ in range(5)]
    return (statistics.median(float(r[0]) for r in runs),
            statistics.median(float(r[1]) for r in runs))


def main() -> None:
    sets = {"ordinary (gate clears)": PLAIN,
            "ordinary, issue 22 (50)": [line for _, line in secretkit.NEGATIVES_4],
            "secrets, issue 22 (125)": [l for c in secretkit.POSITIVES_4 for l in c.lines]}
    redact.scrub("warm up: token=" + "aB3dE5fG7hJ9kL1mN2pQ4rS6")
    stats = gitleaks.stats()
    print(f"gitleaks {stats['version']}: {stats['loaded']} rules loaded, "
          f"{stats['skipped']} skipped {stats['reasons']}")
    real, empty = gitleaks.rules, gitleaks.RuleSet([], gitleaks.Allow((), ()))
    with_rules: dict[str, list[float]] = {name: [] for name in sets}
    without: dict[str, list[float]] = {name: [] for name in sets}
    for _ in range(ROUNDS):  # interleaved, so that a busy machine slows both alike
        for name, lines in sets.items():
            with_rules[name].append(per_line_us(lines, 1))
            gitleaks.rules = lambda: empty  # type: ignore[assignment]
            try:
                without[name].append(per_line_us(lines, 1))
            finally:
                gitleaks.rules = real  # type: ignore[assignment]
    med = statistics.median
    print(f"{'lines':28} {'with gitleaks':>14} {'yardstick: without':>20} {'ratio':>6}")
    for name in sets:
        a, b = med(with_rules[name]), med(without[name])
        print(f"{name:28} {a:11.1f} us {b:17.1f} us {a / b:6.2f}")
    imported, first = first_use_ms()
    print(f"fresh interpreter: import redact {imported:.1f} ms; first secret line "
          f"{first:.1f} ms (detect-secrets import + rule file + its patterns)")


if __name__ == "__main__":
    main()
