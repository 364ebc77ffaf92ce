"""Bytes of new objects per append, with one day holding 1k and 50k events: the layout loopx
writes now (a fan-out under the day) beside the layout before it (one directory per day), in
the same run, before and after loopx's own maintenance (``Store.maintenance``, run with
gc.auto=0). Exits 1 when an append of the new layout grows the repository by more than 5 KB
after maintenance (issue 20, invariant 10).

    python benchmarks/bench_growth.py [--appends 20] [--smoke]

Appends go through the store's own tree builder and commit path (what ``Ledger._commit``
does), on a base commit whose day already holds the events.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from loopx.model.paths import file_path, legacy_event_dir
from loopx.storage import gateway
from loopx.storage.store import Store

LIMIT = 5 * 1024
REF = "refs/heads/loopx/state"
AUTHOR = ("bench", "bench@example.com")


def _size(repo: Path) -> int:
    objects = repo / ".git" / "objects"
    return sum(f.stat().st_size for f in objects.rglob("*") if f.is_file())


def _old_path(event_id: str) -> str:
    return f"{legacy_event_dir(event_id)}/{event_id}.note.added.yaml"


def _new_path(event_id: str) -> str:
    return file_path(event_id, "note.added")


def measure(events: int, appends: int, layout: str) -> tuple[float, float]:
    """(bytes per append before maintenance, after) for a day already holding ``events``."""
    place = _new_path if layout == "new" else _old_path
    with tempfile.TemporaryDirectory() as scratch:
        repo = Path(scratch)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        subprocess.run(["git", "-C", str(repo), "config", "gc.auto", "0"], check=True)
        store = Store(gateway.discover(repo))
        blob = store.write_blobs([b"id: x\n"])[0]
        tree = store.write_tree(None, {place(_ulid(DAY_MS + n * 86_400_000 // events)): blob
                                       for n in range(events)})
        base = store.commit_tree(tree, [], "base\n", author=AUTHOR)
        store.update_ref_if(REF, base, expected=None, reason="base")
        subprocess.run(["git", "-C", str(repo), "repack", "-a", "-d", "-q"], check=True)
        before = _size(repo)
        tip = base
        for n in range(appends):  # spread over the same day, among the events it holds
            event_id = _ulid(DAY_MS + (2 * n + 1) * 43_200_000 // appends)
            oid = store.write_blobs([f"id: {event_id}\ntext: append {n}\n".encode()])[0]
            tree = store.write_tree(tip, {place(event_id): oid})
            commit = store.commit_tree(tree, [tip], f"append {n}\n", author=AUTHOR)
            store.update_ref_if(REF, commit, expected=tip, reason="append")
            tip = commit
        loose = _size(repo)
        subprocess.run(["git", *store.maintenance()], cwd=repo, check=True)
        after = _size(repo)
        store.close()
    return (loose - before) / appends, (after - before) / appends


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
DAY_MS = 1_780_272_000_000  # 2026-06-01T00:00:00Z: the day the events are spread over


def _ulid(ms: int) -> str:
    """A ULID of millisecond ``ms`` with a random tail (what a writer at that moment makes)."""
    value = (ms << 80) | random.getrandbits(80)
    return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in range(25, -1, -1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=20)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny counts (200 and 2,000 events, 3 appends): that it runs")
    args = parser.parse_args()
    days = (200, 2_000) if args.smoke else (1_000, 50_000)
    args.appends = 3 if args.smoke else args.appends
    print(f"git {gateway.out('.', 'version').split()[-1]}, Python {sys.version.split()[0]}, "
          f"{args.appends} appends each")
    worst = 0.0
    for events in days:
        for layout in ("old", "new"):
            loose, packed = measure(events, args.appends, layout)
            print(f"{events:>6} events in the day, {layout} layout: {loose / 1024:7.1f} KB per "
                  f"append before maintenance, {packed / 1024:6.2f} KB after")
            if layout == "new":
                worst = max(worst, packed)
    ok = worst <= LIMIT
    print(f"new layout after maintenance: at most {worst / 1024:.2f} KB per append "
          f"({'within' if ok else 'over'} {LIMIT // 1024} KB)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
