#!/usr/bin/env python3
"""Build ledgers of any size with a realistic mix of events, for the benchmarks.

    python benchmarks/ledgers.py 100000 /tmp/ledger-100k             # a repository to try
    python benchmarks/ledgers.py 100000 /tmp/ledger-100k --checkpoint # ... with a checkpoint

The mix follows a busy repository with a few agents: goals with three acceptance criteria,
a gate per goal opened by an agent and answered by a human, fifty todos per goal (chains of
dependencies, every fifth one gated), each added, claimed, renewed, noted, evidenced, charged
to a quota and finished; criteria met by the last todos' evidence, and each goal closed once
achieved. The last goal is still in progress. Every event is legal where it falls: the
ledger validates, and replaying it gives the state its story tells.

Events go to the state branch through ONE ``git fast-import`` per call, one commit per 5,000
events (loopx's own writes fsync each object: right for real writes, far too slow to make a
100k ledger). The event files are byte for byte what loopx writes (``loopx.model.codec``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from loopx.model import clock, codec, ids  # noqa: E402
from loopx.storage import gateway  # noqa: E402
from loopx.storage.store import STATE_REF, Store  # noqa: E402

TODOS_PER_GOAL = 50
GATED_EVERY = 5  # every fifth todo waits on its goal's gate
BATCH = 5000
AGENTS = ["agent:codex@devbox", "agent:claude@laptop", "agent:ci@runner"]
HUMAN = "human:alice@example.com"
START_MS = 1_760_000_000_000  # 2025-10-09
STEP_MS = 60_000  # events a minute apart: a 100k ledger spans a few months


class Generator:
    """Yields event documents in clock order, each one legal where it falls."""

    def __init__(self, head: str, tree: str, start_ms: int = START_MS, clock0: int = 0,
                 prefix: str = "") -> None:
        self.head, self.tree = head, tree
        self.ms, self.clock, self.prefix = start_ms, clock0, prefix

    def event(self, type_: str, data: dict[str, Any], *, actor: str = AGENTS[0],
              goal: Optional[str] = None) -> dict[str, Any]:
        self.clock += 1
        self.ms += STEP_MS
        doc = {"id": ids.new_event_id(self.ms), "type": type_, "v": 1,
               "at": clock.format_ts(_dt(self.ms)), "clock": self.clock, "actor": actor}
        if goal:
            doc["goal"] = goal
        doc["data"] = data
        return doc

    def stream(self) -> Iterator[dict[str, Any]]:
        if not self.prefix:
            yield self.event("ledger.initialised", {"name": "bench", "loopx_version": "0.1.0"},
                             actor=HUMAN)
        n = 0
        while True:
            n += 1
            yield from self.goal(f"g-{self.prefix}{n}")

    def goal(self, gid: str) -> Iterator[dict[str, Any]]:
        crits = [{"id": f"a{i}", "text": f"criterion {i}"} for i in (1, 2, 3)]
        yield self.event("goal.created", {"id": gid, "title": f"Goal {gid}", "acceptance": crits},
                         actor=HUMAN, goal=gid)
        yield self.event("gate.opened", {"id": f"q-{gid}", "goal": gid, "question": "Go ahead?",
                                         "authority": [HUMAN], "blocks": []},
                         actor=AGENTS[0], goal=gid)
        yield self.event("gate.answered", {"id": f"q-{gid}", "decision": "approve"},
                         actor=HUMAN, goal=gid)
        for t in range(TODOS_PER_GOAL):
            yield from self.todo(gid, f"t-{gid}-{t}", t)
        yield self.event("goal.closed", {"id": gid, "outcome": "achieved", "reason": "done"},
                         actor=HUMAN, goal=gid)

    def todo(self, gid: str, tid: str, t: int) -> Iterator[dict[str, Any]]:
        actor = AGENTS[t % len(AGENTS)]
        added: dict[str, Any] = {"id": tid, "goal": gid, "title": f"Step {t} of {gid}",
                                 "depends_on": [f"t-{gid}-{t - 1}"] if t and t % 3 else []}
        if t % GATED_EVERY == 0:
            added["gates"] = [f"q-{gid}"]
        yield self.event("todo.added", added, actor=actor, goal=gid)
        until = clock.format_ts(_dt(self.ms + 3_600_000))
        yield self.event("todo.claimed", {"id": tid, "until": until}, actor=actor, goal=gid)
        yield self.event("todo.renewed", {"id": tid, "until": until}, actor=actor, goal=gid)
        yield self.event("note.added", {"id": f"n-{tid}", "text": "made progress; " * 8,
                                        "todo": tid}, actor=actor, goal=gid)
        crit = [f"a{1 + t % 3}"] if t >= TODOS_PER_GOAL - 3 else []
        yield self.event("evidence.recorded", {
            "id": f"e-{tid}", "kind": "test", "commit": self.head, "tree": self.tree,
            "command": "pytest -q", "exit_code": 0, "todo": tid, "criteria": crit,
            "summary": "42 passed"}, actor=actor, goal=gid)
        yield self.event("quota.spent", {"turns": 3, "tokens": 12000, "todo": tid},
                         actor=actor, goal=gid)
        yield self.event("todo.done", {"id": tid, "evidence": [f"e-{tid}"]}, actor=actor, goal=gid)


def _dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def _path(doc: dict[str, Any]) -> str:
    day = _dt(ids.ulid_ms(doc["id"]))
    return f"events/{day:%Y/%m/%d}/{doc['id']}.{doc['type']}.yaml"


def write_events(repo: Path, docs: Iterator[dict[str, Any]], count: int,
                 ref: str = STATE_REF) -> str:
    """Append ``count`` documents to ``ref`` in one ``git fast-import``; the new tip."""
    store = Store(gateway.discover(repo))
    tip = store.tip(ref)
    stream: list[bytes] = []
    written = 0
    while written < count:
        batch = [next(docs) for _ in range(min(BATCH, count - written))]
        message = f"bench: {len(batch)} events\n".encode()
        stream.append(b"commit %s\ncommitter bench <bench@example.com> 1760000000 +0000\n"
                      b"data %d\n%s" % (ref.encode(), len(message), message))
        if tip is not None and written == 0:
            stream.append(b"from %s\n" % tip.encode())
        for doc in batch:
            body = codec.dump(doc)
            stream.append(b"M 100644 inline %s\ndata %d\n%s\n"
                          % (_path(doc).encode(), len(body), body))
        written += len(batch)
    gateway.run(repo, "fast-import", "--quiet", input=b"".join(stream))
    new = store.tip(ref)
    store.close()
    assert new is not None
    return new


class Built:
    """A repository with a ledger, and the generator that made it (to continue its story)."""

    def __init__(self, path: Path, generator: Generator, rest: Iterator[dict[str, Any]]) -> None:
        self.path, self.generator, self.rest = path, generator, rest

    def more(self, count: int) -> str:
        """Append ``count`` further events of the same story (as a fetch would bring)."""
        return write_events(self.path, self.rest, count)


def make_repo(where: Path, events: int, *, name: Optional[str] = None,
              checkpoint: bool = False) -> Built:
    """A new repository ``where/name`` with a work-tree commit and ``events`` events; with
    ``checkpoint``, ``git loopx checkpoint`` commits a checkpoint of the result, signed by
    HUMAN's key, which the ledger lists (:func:`sign_as_listed`: one more event)."""
    repo = where / (name or f"ledger-{events}")
    repo.mkdir(parents=True)
    gateway.run(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("bench\n")
    gateway.run(repo, "add", "README")
    gateway.run(repo, "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q", "-m", "init")
    gen = Generator(gateway.out(repo, "rev-parse", "HEAD"),
                    gateway.out(repo, "rev-parse", "HEAD^{tree}"))
    stream = gen.stream()
    write_events(repo, stream, events)
    if checkpoint:
        sign_as_listed(repo)
        subprocess.run([sys.executable, "-m", "loopx", "-C", str(repo), "--actor", HUMAN,
                        "checkpoint"], check=True, capture_output=True)
    return Built(repo, gen, stream)


def sign_as_listed(repo: Path) -> None:
    """A fresh ssh key for HUMAN, listed in the ledger's allowed_signers (`signer add`, one
    event) and used by ``repo`` to sign: fresh clones adopt only checkpoints a listed key
    signed."""
    key = repo.parent / f"{repo.name}-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", HUMAN, "-f", str(key)],
                   check=True, capture_output=True)
    gateway.run(repo, "config", "gpg.format", "ssh")
    gateway.run(repo, "config", "user.signingkey", str(key))
    subprocess.run([sys.executable, "-m", "loopx", "-C", str(repo), "--actor", HUMAN, "signer",
                    "add", HUMAN, "--key", f"{key}.pub"], check=True, capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("events", type=int, help="how many events")
    parser.add_argument("path", type=Path, help="the repository to create (must not exist)")
    parser.add_argument("--checkpoint", action="store_true",
                        help="commit a checkpoint (what sync does every 10,000 events)")
    args = parser.parse_args()
    if args.path.exists():
        parser.error(f"{args.path} exists")
    made = make_repo(args.path.parent.resolve(), args.events, name=args.path.name,
                     checkpoint=args.checkpoint)
    print(f"{made.path}: {args.events} events on {STATE_REF}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
