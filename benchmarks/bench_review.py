"""How fast are `git loopx log` and `validate` on a long history? Prints figures.

Builds a throwaway ledger of COMMITS commits x PER events, then times:
- review.log over the whole history (one `git log` + one `cat-file --batch`), against a peer
  in the same run doing the same work the obvious way (a git process per commit and per file);
- validate over the last 50 commits (fewer if the ledger is shorter), and over the whole
  history.

    python benchmarks/bench_review.py [COMMITS] [PER]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from loopx import Ledger
from loopx.review import changes
from loopx.review import validate
from loopx.ledger import layout
from loopx.ledger.draft import Draft


def build(where: Path, commits: int, per: int) -> Ledger:
    subprocess.run(["git", "init", "-q", str(where)], check=True)
    led = Ledger.open(where)
    led.init(actor="human:bench@example.com")
    led.append("goal.created", {"id": "g-1", "title": "bench"}, actor="human:bench@example.com")
    for c in range(commits):
        drafts = [
            Draft("note.added", {"id": f"n-{c}-{i}", "text": f"note {c}.{i}"}, "g-1")
            for i in range(per)
        ]
        led.write(lambda txn, ds=drafts: [txn.add(d) for d in ds], actor="agent:bench@host")
    return led


def timed(label: str, fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    took = time.perf_counter() - start
    print(f"{label:<48} {took * 1000:8.1f} ms")
    return took


def naive_log(led: Ledger) -> None:
    """The same output the obvious way: a process per commit for its files, one per blob."""
    from loopx.projection import history

    cwd = led.store.cwd
    oids = subprocess.run(
        ["git", "rev-list", "loopx/state"], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.split()
    for oid in oids:
        names = subprocess.run(
            ["git", "show", "--name-only", "--format=", oid],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        for name in names:
            data = subprocess.run(
                ["git", "cat-file", "blob", f"{oid}:{name}"],
                cwd=cwd,
                capture_output=True,
                check=True,
            ).stdout
            history.describe(layout.read_event(name, data))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commits", nargs="?", type=int, default=300,
                        help="commits in the ledger (default 300; at least 1)")
    parser.add_argument("per", nargs="?", type=int, default=5, help="events per commit (default 5)")
    args = parser.parse_args()
    if args.commits < 1 or args.per < 1:
        parser.error("COMMITS and PER must be at least 1")
    commits, per = args.commits, args.per
    window = min(50, commits)  # `validate` of the last commits: never past the first one
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp) / "repo"
        start = time.perf_counter()
        led = build(where, commits, per)
        print(f"built {commits} commits x {per} events in {time.perf_counter() - start:.1f} s")
        led.fold()
        ours = timed("loopx log (whole history, described)", lambda: changes.log(led))
        peer = timed("peer: a git process per commit and per file", lambda: naive_log(led))
        print(f"{'log vs peer':<48} {peer / ours:8.1f}x faster")
        timed(
            f"validate last {window} commits",
            lambda: validate.validate(led, base=f"loopx/state~{window}", head="loopx/state"),
        )
        timed(
            "validate whole history", lambda: validate.validate(led, base=None, head="loopx/state")
        )


if __name__ == "__main__":
    main()
