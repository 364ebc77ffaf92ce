"""Evidence captured without anyone remembering to: commits (post-commit), rewrites
(post-rewrite) and command runs (`git loopx run`).

Everything here takes the ledger as a keyword argument and writes through ``ledger.write``;
each call is at most one commit on the state branch, however many events it records.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Optional

from loopx.errors import Ambiguous, NotFound
from loopx.redaction import redact
from loopx.hooks import spool
from loopx.ledger import cache
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import clock
from loopx.model.ids import new_short_id
from loopx.projection.appliers import ANY_EVIDENCE
from loopx.projection.views import resolve_id
from loopx.storage import gateway
from loopx.storage.store import STATE_REF

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import Event

TAIL_LINES = 40
TAIL_BYTES = 4096
_SEP = "\x1f"  # between fields of the one `git log` call; cannot occur in a subject line


@dataclass(frozen=True)
class CommitInfo:
    """What post-commit needs to know about a commit, read with one git call."""

    sha: str
    tree: str
    author: str
    subject: str
    todos: list[str]
    goals: list[str]
    opted_out: bool = False  # `Loopx-Todo: none`: no todo's work, whatever leases are held
    merge: bool = False  # more than one parent: mostly others' work, brought in

    @property
    def leased(self) -> bool:
        """Whether the todos its committer holds may claim it: no trailer names a todo or a
        goal, it is not opted out and not a merge (docs/hooks.md, "Which todo a commit
        serves")."""
        return not (self.todos or self.goals or self.opted_out or self.merge)


OPT_OUT = "none"  # `Loopx-Todo: none`: this commit is no todo's work


def read_commit(cwd: Any, rev: str = "HEAD") -> CommitInfo:
    """Sha, tree, author, subject and Loopx-Todo/Loopx-Goal trailers of ``rev``."""
    fmt = _SEP.join([
        "%H", "%T", "%an <%ae>", "%s",
        "%(trailers:key=Loopx-Todo,valueonly,separator=%x2C)",
        "%(trailers:key=Loopx-Goal,valueonly,separator=%x2C)", "%P",
    ])
    text = gateway.out(cwd, "log", "-1", "--no-show-signature", f"--format={fmt}", rev, "--")
    sha, tree, author, subject, todos, goals, parents = text.split(_SEP)
    named = _ids(todos)
    opted_out = any(i.lower() == OPT_OUT for i in named)
    return CommitInfo(sha, tree, author, subject, [i for i in named if i.lower() != OPT_OUT],
                      _ids(goals), opted_out, len(parents.split()) > 1)


def _ids(text: str) -> list[str]:
    found: list[str] = []
    for part in text.replace(",", " ").split():
        if part not in found:
            found.append(part)
    return found


@dataclass
class Recorded:
    """The outcome of a capture: events written and lines worth telling the user."""

    events: list["Event[Any]"] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def record_commit(*, ledger: Ledger, actor: str, rev: str = "HEAD",
                  info: Optional[CommitInfo] = None, now: Optional[datetime] = None,
                  branch: Optional[str] = None, amended: Optional[str] = None) -> Recorded:
    """Commit evidence for ``rev``: one per todo named in its trailers, else per todo
    ``actor`` holds a live lease on that was taken on ``branch`` (the branch the commit is
    on), unless it is a merge or says ``Loopx-Todo: none``; a Loopx-Goal trailer alone gives
    goal-level evidence. Never for a closed goal.

    ``amended`` is the commit an amend replaced: what was recorded for it is remapped by
    post-rewrite, so it is not recorded a second time here.
    """
    info = info or read_commit(ledger.repo.cwd, rev)
    result = Recorded()
    # The todos held on this branch, from the live part of the cache (leases are on goals in
    # play): the transaction then looks them up by id, never scanning every todo.
    held = _leased_by(ledger.live_fold(), actor, now or clock.now(), branch)

    def build(txn: "Txn") -> None:
        result.events.clear()
        result.notes.clear()
        targets = _targets(txn, info, actor, now or clock.now(), result.notes, branch, held)
        for todo, goal in targets:
            if not _already_recorded(txn, {info.sha, amended or info.sha}, todo, goal):
                result.events.append(txn.add(_commit_draft(info, todo, goal)))

    ledger.write(build, actor=actor, now=now)
    return result


def _targets(txn: "Txn", info: CommitInfo, actor: str, now: datetime, notes: list[str],
             branch: Optional[str], held: list[str]) -> list[tuple[Optional[str], Optional[str]]]:
    """(todo, goal) pairs the commit works on."""
    fold = txn.fold
    todos = [t for i in info.todos if (t := _resolve(fold.todos, i, "todo", notes))]
    goals = [g for i in info.goals if (g := _resolve(fold.goals, i, "goal", notes))]
    if info.leased:  # still held now that we are the one writer?
        todos = [t for t in held if t in fold.todos and _leased_by(
            {t: fold.todos[t]}, actor, now, branch)]
    todos = [t for t in todos if _open_goal(fold, fold.todos[t].goal, f"todo {t}", notes)]
    goals = [g for g in goals if _open_goal(fold, g, f"goal {g}", notes)]
    pairs: list[tuple[Optional[str], Optional[str]]] = [(t, None) for t in todos]
    covered = {fold.todos[t].goal for t in todos}
    pairs += [(None, g) for g in goals if g not in covered]
    return pairs


def _open_goal(fold: Any, goal_id: str, what: str, notes: list[str]) -> bool:
    goal = fold.goals.get(goal_id)
    if goal is not None and goal.state in ("achieved", "abandoned"):
        owner = "" if what == f"goal {goal_id}" else f"'s goal {goal_id}"
        notes.append(f"trailer ignored: {what}{owner} is {goal.state}")
        return False
    return True


def _resolve(table: Mapping[str, Any], prefix: str, kind: str, notes: list[str]) -> Optional[str]:
    try:
        return resolve_id(table, prefix, kind)
    except (NotFound, Ambiguous) as exc:
        notes.append(f"trailer ignored: {exc}")
        return None


def cached_leases(*, loopx_dir: Path, ref: str, tip: str, actor: str,
                  branch: Optional[str] = None, now: Optional[datetime] = None
                  ) -> Optional[list[str]]:
    """The todos ``actor`` holds a live lease on, taken on ``branch``, from the projection
    cache of ``tip``; None when the cache is not of that tip. Imports no pydantic:
    post-commit's common case (no trailer, no lease) stays cheap."""
    cached = cache.load_live(cache.paths_for(loopx_dir / "cache", ref)[1])
    if cached is None or cached[0] != tip:
        return None
    if ref == STATE_REF:  # the shim asked us: let it answer the next commit itself
        cache.save_hooks_state(cache.hooks_state_path(loopx_dir), tip, cached[1])
    return _leased_by(cached[1], actor, now or clock.now(), branch)


def _leased_by(fold_or_todos: Any, actor: str, now: datetime,
               branch: Optional[str]) -> list[str]:
    """The todos (of a fold, or a todo table) ``actor`` holds on ``branch``. Leases count for
    commits on the branch they were taken on only: a commit elsewhere (a release branch,
    another worktree's branch, a detached HEAD) is not that work."""
    todos = getattr(fold_or_todos, "todos", fold_or_todos)
    return sorted(
        todo.id for todo in todos.values()
        if todo.state == "open" and todo.holder == actor and todo.until
        and branch is not None and todo.branch == branch
        and clock.parse_ts(todo.until) > now
    )


def _already_recorded(txn: "Txn", shas: set[str], todo: Optional[str],
                      goal: Optional[str]) -> bool:
    # post-commit can run twice for one commit (a retried hook, a chained runner), and an amend
    # is remapped by post-rewrite: record once. Commits are followed through earlier remaps.
    fold = txn.fold
    found = [fold.evidence[e] for e in _recorded_on(fold, shas) if e in fold.evidence]
    return any(ev.kind == "commit" and ev.todo == todo and (todo or ev.goal == goal)
               for ev in found)


def _recorded_on(fold: Any, shas: set[str]) -> set[str]:
    """Ids of the commit records on these commits or on commits rewritten into them (the
    fold's index by commit; a rewrite is listed under its new commit as ``remap:<old>``)."""
    found: set[str] = set()
    todo, seen = list(shas), set(shas)
    while todo:
        for item in fold.by_commit.get(todo.pop()) or []:
            if item == ANY_EVIDENCE:
                continue  # not a commit record
            old = item.removeprefix("remap:")
            if old == item:
                found.add(item)
            elif old not in seen:
                seen.add(old)
                todo.append(old)
    return found


def _commit_draft(info: CommitInfo, todo: Optional[str], goal: Optional[str]) -> Draft:
    data = {"id": new_short_id("e"), "kind": "commit", "commit": info.sha, "tree": info.tree,
            "author": info.author[:500], "summary": info.subject[:20_000] or None, "todo": todo}
    return Draft("evidence.recorded", data, goal)


# What a hook queues when the state branch is busy (loopx.hooks.spool): hook name ->
# how the next loopx command applies it, with the hook's actor and time.
def _spooled_commit(ledger: Ledger, entry: spool.Entry) -> None:
    record_commit(ledger=ledger, actor=entry.actor, rev=entry.inputs["commit"], now=entry.when,
                  branch=entry.inputs.get("branch"), amended=entry.inputs.get("amended"))


def _spooled_rewrite(ledger: Ledger, entry: spool.Entry) -> None:
    record_rewrite(ledger=ledger, actor=entry.actor, pairs=list(entry.inputs["pairs"]),
                   now=entry.when)


SPOOLED: dict[str, Callable[[Ledger, spool.Entry], None]] = {
    "post-commit": _spooled_commit, "post-rewrite": _spooled_rewrite,
}


def parse_rewrites(lines: Iterable[str]) -> list[dict[str, str]]:
    """post-rewrite's stdin (``<old> <new> [<extra>]`` per line) as old/new mappings."""
    pairs = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 2 and parts[0] != parts[1]:
            pairs.append({"old": parts[0], "new": parts[1]})
    return pairs


def record_rewrite(*, ledger: Ledger, actor: str, pairs: list[dict[str, str]],
                   now: Optional[datetime] = None) -> Recorded:
    """One ``evidence.remapped`` for the rewritten commits that evidence (or a remap) names."""
    result = Recorded()

    def build(txn: "Txn") -> None:
        result.events.clear()
        # Evidence (or an earlier rewrite) names the commit: the fold's index by commit says.
        relevant = [p for p in pairs if p["old"] in txn.fold.by_commit]
        for start in range(0, len(relevant), 10_000):  # the model's cap per event
            chunk = relevant[start : start + 10_000]
            result.events.append(txn.add(Draft("evidence.remapped", {"mappings": chunk})))

    if pairs:
        ledger.write(build, actor=actor, now=now)
    return result


# --- git loopx run ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RunOutcome:
    """A finished command, redacted: what `git loopx run` records."""

    command: str
    exit_code: int
    duration_s: float
    digest: str
    tail: str

    @property
    def started(self) -> bool:
        """Whether the command ran at all: 127 (not found) and 126 (not executable) are what
        a shell, and :func:`run_command` itself, answer for a command that could not start."""
        return self.exit_code not in (126, 127)


def run_command(argv: list[str], *, environ: Mapping[str, str],
                stdout: IO[bytes], stderr: IO[bytes],
                cwd: Optional[Path] = None,
                secrets: Optional[Mapping[str, str]] = None) -> RunOutcome:
    """Run ``argv``, streaming its output to ``stdout``/``stderr`` while capturing it.
    ``secrets`` (value -> name) are redacted besides the secret-looking ``environ`` values.

    The digest and tail are of the *redacted* output: the digest is stored in git forever,
    and a digest of the raw output would let anyone holding the rest of the output test
    guesses of a redacted secret offline; it also lets a reader who has the redacted log
    check it.
    """
    redactor = redact.Redactor({**redact.secret_values(environ), **(secrets or {})})
    command = shlex.join(redact.redact_argv(argv, environ, secrets))[:10_000]
    started = time.monotonic()
    spool = _Spool()
    code = _tee(argv, environ, spool, stdout, stderr, cwd)
    digest, tail = spool.summarise(redactor)
    return RunOutcome(command, code, round(time.monotonic() - started, 3), digest, tail)


def _tee(argv: list[str], environ: Mapping[str, str], spool: "_Spool",
         stdout: IO[bytes], stderr: IO[bytes], cwd: Optional[Path]) -> int:
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=dict(environ), cwd=cwd)
    except OSError as exc:  # not found, not executable: the shell's 127/126
        message = f"loopx run: {argv[0]}: {exc.strerror}\n".encode()
        stderr.write(message)
        stderr.flush()
        spool.add(message)
        return 127 if isinstance(exc, FileNotFoundError) else 126
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [threading.Thread(target=_pump, args=(src, dst, spool), daemon=True)
             for src, dst in ((proc.stdout, stdout), (proc.stderr, stderr))]
    for pump in pumps:
        pump.start()
    code = _wait(proc)
    for pump in pumps:
        pump.join()
    return code


def _wait(proc: subprocess.Popen[bytes]) -> int:
    while True:
        try:
            code = proc.wait()
            break
        except KeyboardInterrupt:  # the child got the same SIGINT; wait for it to finish
            continue
    return 128 - code if code < 0 else code  # killed by a signal: the shell's 128+N


def _pump(src: IO[bytes], dst: IO[bytes], spool: "_Spool") -> None:
    fd = src.fileno()
    partial = b""  # the spool takes whole lines, so stdout and stderr interleave by line
    passing = True
    while chunk := os.read(fd, 65536):
        try:
            if passing:
                dst.write(chunk)
                dst.flush()
        except (OSError, ValueError):
            # Our reader went away, or our stdout is a file on a full disk: keep capturing
            # so the record is complete (an exception here ended the thread, and the command
            # blocked on its full pipe forever).
            passing = False
        lines, _, partial = (partial + chunk).rpartition(b"\n")
        if lines:
            spool.add(lines + b"\n")
    if partial:
        spool.add(partial)
    src.close()


class _Spool:
    """Interleaved output of both streams, kept in a temporary file (outputs can be large).

    A write that fails (the temporary folder full) is kept, not raised: raised in a pump
    thread it ended that thread, nobody read the command's pipe any more, and the command
    and `git loopx run` waited on each other forever. The pumps go on passing the output
    through; ``summarise`` raises it, so nothing is recorded from part of the output."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()
        self._lock = threading.Lock()
        self._failed: Optional[OSError] = None

    def add(self, chunk: bytes) -> None:
        with self._lock:
            if self._failed is None:
                try:
                    self._file.write(chunk)
                    self._file.flush()  # so that a write that fails fails here
                except OSError as exc:
                    self._failed = OSError(exc.errno, exc.strerror, tempfile.gettempdir())

    def summarise(self, redactor: redact.Redactor) -> tuple[str, str]:
        """sha256 and tail of the redacted output, reading it back line by line; the
        OSError of a write that failed, when one did."""
        if self._failed is not None:
            self._file.close()
            raise self._failed
        self._file.seek(0)
        digest = hashlib.sha256()
        tail: deque[str] = deque(maxlen=TAIL_LINES)
        for raw in self._file:
            line = redactor.line(raw.decode("utf-8", "replace"))
            digest.update(line.encode("utf-8"))
            tail.append(line)
        self._file.close()
        text = "".join(tail)
        return "sha256:" + digest.hexdigest(), text.encode()[-TAIL_BYTES:].decode("utf-8", "ignore")


def run_summary(outcome: RunOutcome) -> str:
    """One line for the evidence summary (built from the already redacted command)."""
    command = outcome.command if len(outcome.command) <= 200 else outcome.command[:197] + "..."
    verdict = "passed" if outcome.exit_code == 0 else f"failed (exit {outcome.exit_code})"
    return f"`{command}` {verdict} in {outcome.duration_s:.1f}s"


def stdio() -> tuple[IO[bytes], IO[bytes]]:
    """This process's binary stdout and stderr."""
    return sys.stdout.buffer, sys.stderr.buffer
