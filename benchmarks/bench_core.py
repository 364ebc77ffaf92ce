#!/usr/bin/env python3
"""Benchmark loopx's write path against a peer, measured in the same run on the same machine.

    python benchmarks/bench_core.py            # the figures of issue 2 (a few minutes)
    python benchmarks/bench_core.py --quick    # smaller counts, same table
    python benchmarks/bench_core.py --no-annex # plain-git peer even when git-annex is installed

The peer is ``git annex metadata`` when git-annex is installed, else a plumbing-only shell
append (hash-object, mktree, commit-tree, update-ref): the cheapest honest way to put one
file on a branch with git alone. Every figure runs ``git loopx`` as a real subprocess, the way
a shell or an agent does, in throwaway repositories sealed from the user's git config.
docs/benchmarks.md explains each figure. Stdlib only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ACTOR = "agent:bench@localhost"


@dataclass(frozen=True)
class Counts:
    """How much work each figure does."""

    prepopulate: int  # events already in the ledger before single appends are timed
    single_runs: int
    batch_events: int
    batch_runs: int
    writers: int
    appends_per_writer: int


FULL = Counts(prepopulate=300, single_runs=15, batch_events=1000, batch_runs=3,
              writers=8, appends_per_writer=100)
QUICK = Counts(prepopulate=300, single_runs=9, batch_events=1000, batch_runs=1,
               writers=8, appends_per_writer=10)
SMOKE = Counts(prepopulate=0, single_runs=1, batch_events=3, batch_runs=1,
               writers=2, appends_per_writer=1)


# --- running things -----------------------------------------------------------------------------


@dataclass
class Took:
    """Wall seconds, and CPU seconds of every process the measured command ran."""

    wall: float = 0.0
    cpu: float = 0.0


class measure:
    """Context manager timing a block: wall clock and the CPU time of children it waited for.

    CPU time barely moves when other work crowds the machine; wall time does. Both are shown.
    """

    def __enter__(self) -> Took:
        self.took = Took()
        self._wall, self._cpu = time.perf_counter(), _children_cpu()
        return self.took

    def __exit__(self, *exc: object) -> None:
        self.took.wall = time.perf_counter() - self._wall
        self.took.cpu = _children_cpu() - self._cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Sandbox:
    """A temp directory with its own HOME and git config; every command runs inside it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        home = root / "home"
        home.mkdir()
        (home / ".gitconfig").write_text(
            "[user]\n\tname = Bench\n\temail = bench@example.com\n"
            "[init]\n\tdefaultBranch = main\n[gc]\n\tauto = 0\n"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "LOOPX_"))}
        # Let Python cache bytecode as an installed package would; some shells disable it.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
                   GIT_CONFIG_NOSYSTEM="1", LOOPX_ACTOR=ACTOR, LC_ALL="C")
        self.env = env

    def run(self, argv: list[str], cwd: Path, input: bytes | None = None) -> bytes:
        proc = subprocess.run(argv, cwd=cwd, input=input, capture_output=True, env=self.env)
        if proc.returncode != 0:
            raise SystemExit(f"bench: {' '.join(argv[:4])} failed in {cwd}:\n"
                             f"{proc.stderr.decode(errors='replace')}")
        return proc.stdout

    def timed(self, argv: list[str], cwd: Path, input: bytes | None = None) -> Took:
        with measure() as took:
            self.run(argv, cwd, input)
        return took

    def new_repo(self, name: str) -> Path:
        path = self.root / name
        path.mkdir()
        self.run(["git", "init", "-q"], path)
        self.run(["git", "commit", "-q", "--allow-empty", "-m", "initial"], path)
        return path


def note_lines(count: int, tag: str) -> bytes:
    """``git loopx batch`` input: one note per line."""
    return "".join(json.dumps(["note", "add", f"{tag} note {i}"]) + "\n"
                   for i in range(count)).encode()


def loopx_repo(box: Sandbox, name: str, prepopulate: int) -> Path:
    repo = box.new_repo(name)
    box.run(["git", "loopx", "init"], repo)
    if prepopulate:
        box.run(["git", "loopx", "batch"], repo, note_lines(prepopulate, "seed"))
    return repo


# --- peers --------------------------------------------------------------------------------------


class AnnexPeer:
    """``git annex metadata``: git-annex's own append-a-fact-to-a-branch command."""

    name = "git-annex metadata"

    def __init__(self, box: Sandbox, files: int) -> None:
        self.box = box
        self.repo = box.new_repo("annex")
        box.run(["git", "annex", "init", "-q", "bench"], self.repo)
        for i in range(files):
            (self.repo / f"f{i}").write_text(f"{i}\n")
        box.run(["git", "annex", "add", "-q", "--jobs=1", "."], self.repo)
        box.run(["git", "commit", "-q", "-m", "files"], self.repo)
        self.files = files

    def one(self, i: int) -> Took:
        return self.box.timed(["git", "annex", "metadata", "--set", f"tag=v{i}",
                               f"f{i % self.files}"], self.repo)

    def batch(self, count: int, run: int) -> Took:
        records = ({"file": f"f{i % self.files}", "fields": {"tag": [f"r{run}-{i}"]}}
                   for i in range(count))
        lines = "".join(json.dumps(record) + "\n" for record in records).encode()
        return self.box.timed(["git", "annex", "metadata", "--batch", "--json"], self.repo, lines)


# One append with git plumbing only: blob, tree (the old tree plus the file), commit, CAS.
_PLUMBING_ONE = r"""set -e
ref=refs/heads/bench/state
old=$(git rev-parse -q --verify "$ref^{commit}" || true)
blob=$(printf '%s\n' "$1" | git hash-object -w --stdin)
tree=$( { [ -n "$old" ] && git ls-tree "$old"; printf '100644 blob %s\t%s\n' "$blob" "$2"; } |
       git mktree)
commit=$(echo "append $2" | git commit-tree "$tree" ${old:+-p "$old"})
git update-ref "$ref" "$commit" ${old:-0000000000000000000000000000000000000000}
"""

# Many appends in one commit: every stdin line becomes a file (one hash-object process).
_PLUMBING_BATCH = r"""set -e
ref=refs/heads/bench/state
old=$(git rev-parse -q --verify "$ref^{commit}" || true)
dir=$(mktemp -d)
n=0
while IFS= read -r line; do printf '%s\n' "$line" > "$dir/$n"; n=$((n+1)); done
ls "$dir" | sed "s|^|$dir/|" > "$dir.paths"
tree=$( { [ -n "$old" ] && git ls-tree "$old";
          git hash-object -w --stdin-paths < "$dir.paths" | paste - "$dir.paths" |
          sed "s|^\([0-9a-f]*\)\t$dir/\(.*\)|100644 blob \1\tb$1-\2|"; } | git mktree)
commit=$(echo "batch $1" | git commit-tree "$tree" ${old:+-p "$old"})
git update-ref "$ref" "$commit" ${old:-0000000000000000000000000000000000000000}
rm -rf "$dir" "$dir.paths"
"""


class PlumbingPeer:
    """A plumbing-only shell append: what any tool writing files to a branch must do."""

    name = "git plumbing (sh)"

    def __init__(self, box: Sandbox, files: int) -> None:
        self.box = box
        self.repo = box.new_repo("plumbing")
        self.one_sh = box.root / "append-one.sh"
        self.one_sh.write_text(_PLUMBING_ONE)
        self.batch_sh = box.root / "append-batch.sh"
        self.batch_sh.write_text(_PLUMBING_BATCH)

    def one(self, i: int) -> Took:
        return self.box.timed(["sh", str(self.one_sh), f"fact {i}", f"e{i}"], self.repo)

    def batch(self, count: int, run: int) -> Took:
        lines = "".join(f"fact {run}-{i}\n" for i in range(count)).encode()
        return self.box.timed(["sh", str(self.batch_sh), str(run)], self.repo, lines)


# --- figures ------------------------------------------------------------------------------------


@dataclass
class Row:
    label: str
    loopx: str
    peer: str
    ratio: float
    goal: float
    cpu_ratio: float


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]


def single_append(box: Sandbox, peer: AnnexPeer | PlumbingPeer, counts: Counts) -> Row:
    """One `git loopx note add` vs one peer append, alternating so load hits both alike."""
    repo = loopx_repo(box, "single", counts.prepopulate)
    ours: list[Took] = []
    theirs: list[Took] = []
    first = -1 if counts.single_runs > 1 else 0  # run -1 warms caches (bytecode, page cache)
    for i in range(first, counts.single_runs):
        took = box.timed(["git", "loopx", "note", "add", f"single note {i}"], repo)
        took_peer = peer.one(i + 1)
        if i >= 0:
            ours.append(took)
            theirs.append(took_peer)
    return Row(f"one append from the shell (median of {counts.single_runs}; p90)",
               _median_p90(ours), _median_p90(theirs), _ratio(ours, theirs, "wall"), 3.0,
               _ratio(ours, theirs, "cpu"))


def _median_p90(runs: list[Took]) -> str:
    walls, cpus = [t.wall for t in runs], [t.cpu for t in runs]
    cpu = statistics.median(cpus)
    return f"{ms(statistics.median(walls))} (p90 {ms(p90(walls))}; cpu {ms(cpu)})"


def _ratio(ours: list[Took], theirs: list[Took], field: str) -> float:
    mine = statistics.median(getattr(t, field) for t in ours)
    return mine / max(statistics.median(getattr(t, field) for t in theirs), 1e-9)


def batch_append(box: Sandbox, peer: AnnexPeer | PlumbingPeer, counts: Counts) -> Row:
    """`git loopx batch` of N notes (one commit) vs the peer's batch mode, per record."""
    repo = loopx_repo(box, "batch", 0)
    n = counts.batch_events
    ours = [box.timed(["git", "loopx", "batch"], repo, note_lines(n, f"run{r}"))
            for r in range(counts.batch_runs)]
    theirs = [peer.batch(n, r) for r in range(counts.batch_runs)]
    _check_commits(box, repo, expected=1 + counts.batch_runs)

    def per_record(runs: list[Took]) -> str:
        wall = statistics.median(t.wall for t in runs) / n
        cpu = statistics.median(t.cpu for t in runs) / n
        return f"{wall * 1000:.3f} ms (cpu {cpu * 1000:.3f} ms)"

    return Row(f"{n} events in one batch, per record (median of {counts.batch_runs})",
               per_record(ours), per_record(theirs), _ratio(ours, theirs, "wall"), 0.5,
               _ratio(ours, theirs, "cpu"))


_WRITER = ('i=0; while [ $i -lt "$1" ]; do '
           'git loopx note add "$2 $i" >/dev/null || exit 1; i=$((i+1)); done')


def writers(box: Sandbox, repo: Path, count: int, each: int) -> Took:
    """Wall time of ``count`` shell loops, each doing ``each`` appends, started together."""
    with measure() as took:
        procs = [subprocess.Popen(["sh", "-c", _WRITER, "writer", str(each), f"w{k}"], cwd=repo,
                                  env=box.env, stderr=subprocess.PIPE) for k in range(count)]
        failed = [p.communicate()[1] for p in procs if p.wait() != 0]
    if failed:
        raise SystemExit(f"bench: a writer failed:\n{failed[0].decode(errors='replace')}")
    return took


def concurrent_appends(box: Sandbox, counts: Counts) -> Row:
    """N writers x M appends vs one writer doing N*M, each on its own fresh ledger."""
    total = counts.writers * counts.appends_per_writer
    alone = loopx_repo(box, "sequential", counts.prepopulate)
    crowd = loopx_repo(box, "concurrent", counts.prepopulate)
    sequential = writers(box, alone, 1, total)
    concurrent = writers(box, crowd, counts.writers, counts.appends_per_writer)
    for repo in (alone, crowd):  # every append landed once, one commit each, linear history
        _check_commits(box, repo, expected=1 + (1 if counts.prepopulate else 0) + total)
        _check_events(box, repo, expected=1 + counts.prepopulate + total)
    return Row(f"{counts.writers} writers x {counts.appends_per_writer} vs 1 x {total} (wall)",
               f"{concurrent.wall:.2f} s (cpu {concurrent.cpu:.2f} s)",
               f"{sequential.wall:.2f} s (cpu {sequential.cpu:.2f} s; 1 writer)",
               concurrent.wall / sequential.wall, 1.5, concurrent.cpu / max(sequential.cpu, 1e-9))


def _check_commits(box: Sandbox, repo: Path, *, expected: int) -> None:
    ref = "refs/heads/loopx/state"
    count = int(box.run(["git", "rev-list", "--count", ref], repo))
    merges = box.run(["git", "rev-list", "--merges", ref], repo).strip()
    if count != expected or merges:
        raise SystemExit(f"bench: {repo.name}: {count} commits (expected {expected}), "
                         f"merges: {bool(merges)}")


def _check_events(box: Sandbox, repo: Path, *, expected: int) -> None:
    files = box.run(["git", "ls-tree", "-r", "--name-only", "refs/heads/loopx/state"], repo).split()
    if len(files) != expected or len(set(files)) != len(files):
        raise SystemExit(f"bench: {repo.name}: {len(files)} event files, expected {expected}")


# --- import cost --------------------------------------------------------------------------------

_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")
HEAVY = ("pydantic", "pydantic_core", "ruamel", "click", "git", "yaml", "jsonschema")


def import_report(box: Sandbox, python: str, repo: Path, *, smoke: bool) -> list[str]:
    """`python -X importtime` of `--help` and of one `note add`: totals and the top imports."""
    lines = []
    probes = [("--help", ["--help"])] if not smoke else []
    for label, args in [*probes, ("note add", ["note", "add", "import probe"])]:
        if not smoke:
            box.run([python, "-m", "loopx", *args], repo)  # warm bytecode
        err = subprocess.run([python, "-X", "importtime", "-m", "loopx", *args], cwd=repo,
                             env=box.env, capture_output=True).stderr.decode(errors="replace")
        top: list[tuple[int, str]] = []
        loaded = set()
        for line in err.splitlines():
            match = _IMPORT_LINE.match(line)
            if match:
                loaded.add(match.group(4).split(".")[0])
                if len(match.group(3)) == 1:  # imported directly, not by another module
                    top.append((int(match.group(2)), match.group(4)))
        total = sum(us for us, _ in top)
        heavy = ", ".join(h for h in HEAVY if h in loaded) or "none"
        lines.append(f"  `python -m loopx {' '.join(args)}`: imports {total / 1000:.1f} ms; "
                     f"heavy packages loaded: {heavy}")
        if label == "note add":
            for us, name in sorted(top, reverse=True)[:10]:
                lines.append(f"      {us / 1000:7.1f} ms  {name}")
    starts = [box.timed([python, "-c", "pass"], repo).wall for _ in range(1 if smoke else 5)]
    lines.append(f"  bare interpreter start (`python -c pass`): {ms(statistics.median(starts))}")
    return lines


# --- main ---------------------------------------------------------------------------------------


def annex_version(box: Sandbox) -> str | None:
    if shutil.which("git-annex") is None:
        return None
    proc = subprocess.run(["git", "annex", "version", "--raw"], capture_output=True, env=box.env)
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def _load() -> str:
    # Other work on the machine inflates every figure; ratios measured together are the point.
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def table(rows: list[Row]) -> list[str]:
    head = ("figure", "loopx", "peer", "ratio", "goal", "met", "cpu ratio")
    body = [(r.label, r.loopx, r.peer, f"{r.ratio:.2f}x", f"<= {r.goal:g}x",
             "yes" if r.ratio <= r.goal else "NO", f"{r.cpu_ratio:.2f}x") for r in rows]
    widths = [max(len(str(row[i])) for row in [head, *body]) for i in range(len(head))]
    fmt = "  ".join(f"{{:{'<' if i == 0 else '>'}{w}}}" for i, w in enumerate(widths))
    return [fmt.format(*head), fmt.format(*("-" * w for w in widths)),
            *(fmt.format(*row) for row in body)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts (about a minute)")
    parser.add_argument("--smoke", action="store_true", help="tiny counts: only checks it runs")
    parser.add_argument("--no-annex", action="store_true", help="use the plumbing peer")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter with loopx installed (for the import report)")
    args = parser.parse_args(argv)
    counts = SMOKE if args.smoke else QUICK if args.quick else FULL
    if shutil.which("git-loopx") is None:
        print("bench: git-loopx is not on PATH (pip install -e .)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="loopx-bench-") as tmp:
        box = Sandbox(Path(tmp))
        annex = None if args.no_annex else annex_version(box)
        peer_files = max(counts.batch_events, counts.single_runs + 1)
        peer = AnnexPeer(box, peer_files) if annex else PlumbingPeer(box, peer_files)
        git_version = box.run(["git", "version"], box.root).decode().strip()
        print(f"loopx write-path benchmark: {git_version}; peer: {peer.name}"
              f"{f' {annex}' if annex else ''}; {os.cpu_count()} CPUs; "
              f"Python {platform.python_version()}; load {_load()}; "
              f"git-loopx: {shutil.which('git-loopx')}")
        rows = [single_append(box, peer, counts), batch_append(box, peer, counts),
                concurrent_appends(box, counts)]
        print("\n".join(table(rows)))
        print(f"(load average after the figures: {_load()})")
        print("import cost:")
        print("\n".join(import_report(box, args.python, box.root / "single", smoke=args.smoke)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
