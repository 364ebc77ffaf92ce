"""Evidence: results bound to the code they ran on (tests, CI, reviews, receipts), recorded by
hand, by running a command (``git loopx run``), by re-running what went stale
(``git loopx rerun``) or from CI (``git loopx ci record``)."""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Optional

from loopx.errors import LoopxError, NotFound, UsageError
from loopx.hooks import capture
from loopx.recovery import readback
from loopx.redaction import redact
from loopx.ledger.book import Ledger
from loopx.ledger import layout
from loopx.ledger.draft import Draft
from loopx.model import clock, typed
from loopx.model.ids import new_short_id
from loopx.ops import lookup
from loopx.projection import answers, compact, entities, environment, views
from loopx.storage import gateway

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        Event, EvidenceRecorded,
    )

KINDS = ("test", "ci", "commit", "review", "receipt", "note")
Evidence = answers.Evidence  # what listing answers: the status document's evidence entry
EvidenceShown = answers.EvidenceShown  # what show answers


@dataclass(frozen=True)
class Binding:
    """What evidence is bound to: a commit (None before the first one) and the tree it ran
    on, ``dirty`` when that differs from the commit's tree."""

    commit: Optional[str]
    tree: str
    dirty: bool


def binding(ledger: Ledger, rev: Optional[str] = None) -> Optional[Binding]:
    """What evidence is bound to: ``rev``'s commit and tree; by default HEAD and the tree of the
    work tree as it is now (uncommitted changes and untracked files included, the user's index
    untouched), ``dirty`` when that differs from HEAD's tree. Nothing without code at all."""
    repo = ledger.repo
    commit = ledger.store.resolve(rev or "HEAD")
    if rev is not None:
        if commit is None:
            raise NotFound(f"no commit {rev!r}")
        return Binding(commit, _tree_of(repo, commit), False)
    head_tree = _tree_of(repo, commit) if commit else None
    tree = readback.work_tree_tree(repo) if repo.work_tree is not None else head_tree
    if tree is None:
        return None
    return Binding(commit, tree, tree != head_tree)


def _tree_of(repo: gateway.Repo, commit: str) -> str:
    return gateway.out(repo.cwd, "rev-parse", f"{commit}^{{tree}}")


def add(txn: Txn, kind: str, *, bound: Binding | Mapping[str, Any] | None, todo: Optional[str] = None,
        goal: Optional[str] = None, criteria: Sequence[str] = (), command: Optional[str] = None,
        exit_code: Optional[int] = None, duration_s: Optional[float] = None,
        summary: Optional[str] = None, url: Optional[str] = None, digest: Optional[str] = None,
        output_tail: Optional[str] = None, paths: Sequence[str] = (),
        check: Optional[str] = None, cwd: Optional[str] = None, id: Optional[str] = None,
        event_id: Optional[str] = None) -> Event[EvidenceRecorded]:
    """Record evidence of ``kind`` for a todo or goal (and the criteria it meets), bound to
    the code described by ``bound`` (see :func:`binding`) and judged on ``paths`` (globs;
    none: the whole tree)."""
    tid = lookup.optional(txn.fold.todos, todo, "todo")
    code = typed.fields_of(bound) if isinstance(bound, Binding) else dict(bound or {})
    data = {"id": id or new_short_id("e", event_id), "kind": kind, **code, "command": command,
            "exit_code": exit_code, "duration_s": duration_s, "summary": summary, "url": url,
            "digest": digest, "output_tail": output_tail, "todo": tid,
            "criteria": list(criteria), "paths": list(paths) or None, "check": check,
            "cwd": cwd}
    return txn.add(Draft("evidence.recorded", data, lookup.goal_of(txn.fold, goal, tid),
                         event_id))


@dataclass
class RunResult:
    """A command run by :func:`run`: its outcome and the evidence recorded for it.

    ``error`` is set (and ``event`` None) when the command failed *and* recording failed too:
    the command's own exit code is then the more important one to pass on.
    """

    outcome: capture.RunOutcome
    event: Optional[Event[EvidenceRecorded]]
    error: Optional[LoopxError] = None


def run(ledger: Ledger, argv: Sequence[str], *, actor: str, kind: str = "test",
        todo: Optional[str] = None, goal: Optional[str] = None, criteria: Sequence[str] = (),
        paths: Sequence[str] = (), summary: Optional[str] = None, id: Optional[str] = None,
        event_id: Optional[str] = None, now: Optional[datetime] = None,
        cwd: Optional[Path] = None, environ: Optional[Mapping[str, str]] = None,
        env: Optional[Mapping[str, str]] = None,
        stdout: Optional[IO[bytes]] = None, stderr: Optional[IO[bytes]] = None) -> RunResult:
    """Run ``argv`` in ``cwd`` (default: here; output streamed to ``stdout``/``stderr``) and
    record it as evidence bound to the work tree as it was when the command started.

    The command runs with ``environ`` (default: this process's environment) plus ``env``;
    nothing of ``env`` is recorded, and its values are redacted wherever they show (command,
    output, summary) whatever their names. Without ``todo`` or ``goal`` the evidence goes to
    the one todo ``actor`` holds, if any. Secrets are redacted before anything is written.
    A command that could not start (exit 127 or 126: not found, not executable) is no
    evidence: a :class:`UsageError`, nothing recorded.
    """
    ledger.require()
    fold = ledger.fold()  # unknown ids fail now, not after a long run
    lookup.optional(fold.todos, todo, "todo")
    lookup.optional(fold.goals, goal, "goal")
    if not todo and not goal:  # like a commit: the todo you hold is what you work on
        held = held_by(ledger, actor, now=now)
        todo = held[0] if len(held) == 1 else None
    bound = binding(ledger)  # before the command runs: it may change the work tree
    where = _relative(ledger.repo, cwd or Path.cwd())

    def record(outcome: capture.RunOutcome, text: str) -> Callable[[Txn], Event[EvidenceRecorded]]:
        return lambda txn: add(txn, kind, bound=bound, todo=todo, goal=goal, criteria=criteria,
                               command=outcome.command, exit_code=outcome.exit_code,
                               duration_s=outcome.duration_s, summary=text,
                               digest=outcome.digest, output_tail=outcome.tail or None,
                               paths=paths, cwd=where, id=id, event_id=event_id)

    # Checked before the command runs: refused only after it, a typo would cost its whole run.
    _rehearse(ledger, record(capture.RunOutcome(shlex.join(argv), 0, 0.0, "sha256:" + "0" * 64,
                                                ""), "-"), actor=actor, now=now)
    environ = {**(os.environ if environ is None else environ), **(env or {})}
    passed = redact.secret_values(env or {}, every=True)
    outcome = capture.run_command(list(argv), environ=environ, cwd=cwd,
                                  stdout=stdout or sys.stdout.buffer,
                                  stderr=stderr or sys.stderr.buffer, secrets=passed)
    if not outcome.started:
        raise UsageError(f"`{outcome.command}` could not start ({_why_not_started(outcome)}); "
                         "nothing recorded")
    text = (redact.Redactor({**redact.secret_values(environ), **passed}).text(summary)
            if summary else capture.run_summary(outcome))

    try:
        event, _ = ledger.write(record(outcome, text), actor=actor, now=now)
    except LoopxError as exc:
        if not outcome.exit_code:
            raise
        return RunResult(outcome, None, exc)
    return RunResult(outcome, event)


class _Rehearsed(Exception):
    """Ends a rehearsal's transaction: the event passed every check and is not written."""


def _rehearse(ledger: Ledger, build: Callable[[Txn], object], *, actor: str,
              now: Optional[datetime]) -> None:
    """Check the event ``build`` stages as a write would (its schema, the actor, an id already
    taken, a criterion the goal does not have) and write nothing."""
    def staged(txn: Txn) -> None:
        build(txn)
        raise _Rehearsed
    try:
        ledger.write(staged, actor=actor, now=now)
    except _Rehearsed:
        pass


def _why_not_started(outcome: capture.RunOutcome) -> str:
    """The exit code and the last line the command (or the shell that ran it) printed."""
    lines = [line.strip() for line in outcome.tail.splitlines() if line.strip()]
    last = lines[-1].removeprefix("loopx run: ")[:200] if lines else ""
    return f"exit {outcome.exit_code}" + (f": {last}" if last else "")


def _relative(repo: gateway.Repo, where: Path) -> Optional[str]:
    """``where`` relative to the top of the work tree (None outside it)."""
    if repo.work_tree is None:
        return None
    try:
        rel = Path(os.path.realpath(where)).relative_to(os.path.realpath(repo.work_tree))
    except ValueError:
        return None
    return rel.as_posix() if rel.parts else None


def held_by(ledger: Ledger, actor: str, *, now: Optional[datetime] = None) -> list[str]:
    """The todos ``actor`` holds a live lease on."""
    todos = ledger.snapshot(now)["todos"]  # leases as this clone judges them
    return [t["id"] for t in todos if t["claimed_by"] == actor]


Window = Callable[[list[dict[str, Any]]], compact.Page[dict[str, Any]]]


def listing(ledger: Ledger, *, todo: Optional[str] = None, goal: Optional[str] = None,
            now: Optional[datetime] = None, judged: bool = True,
            page: Optional[Window] = None) -> list[Evidence]:
    """Evidence, optionally of one todo or goal (id prefixes match), oldest first. Each item
    is the status document's ``evidence[]`` entry; ``current_commit`` is the commit it points
    to now (after amends and rebases; ``commit`` is the one it was recorded on) and, when
    ``judged``, ``freshness`` how it stands against the code as it is now. ``page``: the page
    of them to answer (a :class:`~loopx.projection.compact.Page`), the only ones judged."""
    ledger.require()
    fold = ledger.fold()
    items: list[dict[str, Any]] = views.snapshot(fold, now or clock.now())["evidence"]
    if todo:
        items = [e for e in items if e["todo"] and e["todo"].startswith(todo)]
    if goal:
        items = [e for e in items if e["goal"] and e["goal"].startswith(goal)]
    window = page(items) if page else None
    items = list(window) if window is not None else items
    found = readback.freshness(ledger.repo, items, readback.look(ledger.repo, ledger.store.reader),
                               fold.remaps, reader=ledger.store.reader,
                               ignore=fold.config.get("evidence_ignore"),
                               default_scope=fold.config.get("evidence_scope")) if judged else {}
    for item in items:
        item["current_commit"] = readback.follow(fold.remaps, item["commit"]) if (
            item["commit"]) else None
        item["freshness"] = found[item["id"]].state if item["id"] in found else (
            "unbound" if judged else None)
    built = [typed.build(Evidence, item) for item in items]
    return built if window is None else compact.Page(built, total=window.total,
                                                     offset=window.offset)


def show(ledger: Ledger, evidence: str, *, now: Optional[datetime] = None) -> EvidenceShown:
    """One piece of evidence: its ``listing`` entry, how it stands now (``judged``: state,
    files in scope that changed, why, the scope it was judged on) and, from the event that
    recorded it, the output's digest and tail and the run's duration."""
    ledger.require()
    fold = ledger.fold()
    ev_id = lookup.evidence(fold, evidence)
    item = next(typed.fields_of(e) for e in listing(ledger, now=now, judged=False)
                if e.id == ev_id)
    judge_ = judge(ledger, fold)
    fresh = judge_.evidence(item)
    item["freshness"] = fresh.state
    item["judged"] = {"state": fresh.state, "changed": fresh.changed, "reason": fresh.reason,
                      "paths": fresh.paths, "ignored": fresh.ignored,
                      "outside_scope": fresh.outside_scope, "judged_tree": judge_.env.judged_tree}
    recorded = _recorded(ledger, ev_id, item["at"])
    item["event"] = recorded.id if recorded else None
    for key in ("digest", "output_tail", "duration_s", "author", "cwd"):
        item[key] = getattr(recorded.data, key, None) if recorded else None
    return typed.build(EvidenceShown, item)


def _recorded(ledger: Ledger, ev_id: str, at: str) -> Optional[Event[Any]]:
    """The ``evidence.recorded`` event of ``ev_id``: looked for in the day directory of its
    time first (where its ULID puts it unless the clock was pinned), then among all."""
    tip = ledger.tip()
    day = f"events/{at[:4]}/{at[5:7]}/{at[8:10]}/"  # both layouts: its files and its fan-out
    names = gateway.out(ledger.repo.cwd, "ls-tree", "-r", "--name-only", f"{tip}", "--",
                        day).splitlines()
    for attempt in (names, None):
        if attempt is None:
            listed = gateway.out(ledger.repo.cwd, "ls-tree", "-r", "--name-only", f"{tip}",
                                 "--", "events/")
            attempt = sorted((n for n in listed.splitlines() if n not in names), reverse=True)
        wanted = [n for n in attempt if n.endswith(".evidence.recorded.yaml")]
        blobs = ledger.store.read_blobs([f"{tip}:{n}" for n in wanted])  # capped, by header
        for name, blob in zip(wanted, blobs):
            event = layout.read_event(name, blob)
            if getattr(event.data, "id", None) == ev_id:
                return event
    return None


# --- judging evidence now (the write rules that need the work tree) ----------------------------


def judge(ledger: Ledger, fold: entities.Fold) -> readback.Judge:
    """A judge of evidence against the code as it is now (HEAD, or the work tree when it has
    changes), with the ledger's ``evidence_ignore`` and ``evidence_scope``."""
    env = readback.look(ledger.repo, ledger.store.reader)
    return readback.Judge(ledger.repo, env, fold.remaps, reader=ledger.store.reader,
                          ignore=fold.config.get("evidence_ignore"),
                          default_scope=fold.config.get("evidence_scope"))


def stale_note(fresh: readback.Freshness) -> str:
    """Why evidence does not vouch for the code now, in a few words."""
    if fresh.state == "stale" and fresh.changed:
        shown = ", ".join(fresh.changed[:3]) + (", ..." if len(fresh.changed) > 3 else "")
        return f"stale: {shown} changed since"
    return f"{fresh.state}: {fresh.reason or 'it cannot be compared here'}"


# --- git loopx rerun ---------------------------------------------------------------------------

_REDACTED = re.compile(r"\[REDACTED(?::([A-Za-z_][A-Za-z0-9_]*))?\]")


@dataclass
class Rerun:
    """One command to run again: the evidence it re-runs (latest verdicts that went stale or
    failed), why, and, once run, the result (or why it could not be run)."""

    evidence: list[str]
    why: list[str]
    kind: str
    todo: Optional[str]
    goal: Optional[str]
    criteria: list[str]
    paths: list[str]
    command: Optional[str]
    cwd: Optional[str]
    skipped: Optional[str] = None
    result: Optional[RunResult] = None
    argv: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """What `git loopx rerun --format json` prints for it."""
        return {"evidence": self.evidence, "why": self.why, "command": self.command,
                "cwd": self.cwd, "todo": self.todo, "goal": self.goal,
                "criteria": self.criteria, "paths": self.paths, "skipped": self.skipped,
                "exit_code": self.result.outcome.exit_code if self.result else None,
                "recorded": (self.result.event.to_dict()
                             if self.result and self.result.event else None)}


def rerun(ledger: Ledger, *, actor: str, stale_only: bool = False, todo: Optional[str] = None,
          criterion: Optional[str] = None, goal: Optional[str] = None, dry_run: bool = False,
          now: Optional[datetime] = None, environ: Optional[Mapping[str, str]] = None,
          stdout: Optional[IO[bytes]] = None, stderr: Optional[IO[bytes]] = None) -> list[Rerun]:
    """Run again the recorded commands of evidence that went stale or failed (the latest verdict
    of a criterion or of an open todo, in goals in play) through the same capture as
    :func:`run`, recording new evidence for the same todo, goal, criteria and paths.

    ``stale_only`` leaves out evidence that failed on the code as it is; ``todo``,
    ``criterion`` (``GOAL:CRITERION``, or an id with ``goal``) narrow the choice. The commands
    come from the ledger: anyone who can write the state branch can record one, so
    ``dry_run`` shows what would run without running it.
    """
    ledger.require()
    environ = os.environ if environ is None else environ
    plan = _rerun_plan(ledger, stale_only=stale_only, todo=todo, criterion=criterion, goal=goal)
    for item in plan:
        _prepare(ledger.repo, item, environ)
        if dry_run or item.skipped:
            continue
        try:
            item.result = run(ledger, item.argv, actor=actor, kind=item.kind, todo=item.todo,
                              goal=None if item.todo else item.goal, criteria=item.criteria,
                              paths=item.paths, now=now, environ=environ, stdout=stdout,
                              stderr=stderr, cwd=_cwd(ledger.repo, item.cwd))
        except UsageError as exc:  # it could not start here: no evidence, say why
            item.skipped = str(exc)
    return plan


def _rerun_plan(ledger: Ledger, *, stale_only: bool, todo: Optional[str],
                criterion: Optional[str], goal: Optional[str]) -> list[Rerun]:
    fold = ledger.fold()
    tid = lookup.optional(fold.todos, todo, "todo")
    target = _criterion_filter(fold, criterion, goal)
    judged = judge(ledger, fold)
    plan: dict[tuple[Any, ...], Rerun] = {}
    for ev_id, crit_paths, why in _candidates(fold, tid, target):
        ev = fold.evidence[ev_id]
        fresh = judged.evidence(views.evidence_view(ev), criterion_paths=crit_paths)
        failing = not views.verdict(ev)
        if fresh.state in ("fresh", "unbound") and (stale_only or not failing):
            continue
        note = f"{why}: {ev.id} " + (stale_note(fresh) if fresh.state not in (
            "fresh", "unbound") else f"failed (exit {ev.exit_code})")
        key = (ev.command, ev.cwd, ev.kind, ev.todo, ev.goal, tuple(ev.paths))
        item = plan.setdefault(key, Rerun([], [], ev.kind, ev.todo, ev.goal, [], list(ev.paths),
                                          ev.command, ev.cwd))
        if ev.id not in item.evidence:
            item.evidence.append(ev.id)
            item.criteria += [c for c in ev.criteria if c not in item.criteria]
        item.why.append(note)
    return list(plan.values())


def _criterion_filter(fold: entities.Fold, criterion: Optional[str],
                      goal: Optional[str]) -> Optional[tuple[str, str]]:
    """(goal, criterion) named by ``GOAL:CRITERION``, or by a criterion id (with ``goal``, or
    when only one goal in play has it)."""
    if criterion is None:
        return None
    gid, sep, cid = criterion.rpartition(":")
    if sep:
        goal = gid
    if goal:
        gid = lookup.goal(fold, goal)
        if cid not in {c["id"] for c in fold.goals[gid].acceptance}:
            raise NotFound(f"goal {gid} has no criterion {cid} in force")
        return gid, cid
    having = [g.id for g in fold.goals.values() if g.state in ("active", "paused")
              and cid in {c["id"] for c in g.acceptance}]
    if len(having) != 1:
        which = f"goals {', '.join(having)} all have" if having else "no goal in play has"
        raise UsageError(f"{which} a criterion {cid}; name it as GOAL:{cid}")
    return having[0], cid


def _candidates(fold: entities.Fold, todo: Optional[str], target: Optional[tuple[str, str]]
                ) -> list[tuple[str, list[str], str]]:
    """(evidence id, criterion paths, what it stands for): the latest verdict of each criterion
    in force and of each unfinished todo of the goals in play, narrowed by ``todo``/``target``."""
    found: list[tuple[str, list[str], str]] = []
    for goal in fold.goals.values():
        if goal.state not in ("active", "paused") or (target and target[0] != goal.id):
            continue
        for crit in goal.acceptance:
            latest = views.criterion_verdict(fold, goal, crit["id"]).latest
            if latest and (not target or target[1] == crit["id"]) and (
                    not todo or fold.evidence[latest].todo == todo):
                found.append((latest, list(crit.get("paths") or []),
                              f"criterion {goal.id}:{crit['id']}"))
        if target:
            continue
        for unfinished in views.unfinished_todos(fold, goal):
            if not todo or unfinished.id == todo:
                found += [(e, [], f"todo {unfinished.id}")
                          for e in views.latest_verdict(fold, unfinished)]
    return found


def _prepare(repo: gateway.Repo, item: Rerun, environ: Mapping[str, str]) -> None:
    """The argv to run, or why it cannot be run again."""
    if not item.command:
        item.skipped = ("no command was recorded (CI results are re-run by CI; record them "
                        "again with `git loopx ci record`)") if item.kind == "ci" else (
            "no command was recorded; run it again with `git loopx run ... -- CMD`")
        return
    if len(item.command) >= 10_000:
        item.skipped = "its recorded command was cut at 10,000 characters"
        return
    missing = [m.group(1) or "" for m in _REDACTED.finditer(item.command)
               if not m.group(1) or m.group(1) not in environ]
    if missing:
        named = ", ".join(sorted({n for n in missing if n}))
        item.skipped = (f"its command held secrets that were redacted; set {named} and try again"
                        if named and "" not in missing else
                        "its command held a secret that was redacted; run it again by hand")
        return
    command = _REDACTED.sub(lambda m: environ[m.group(1)], item.command)
    try:
        item.argv = shlex.split(command)
    except ValueError as exc:
        item.skipped = f"its recorded command does not parse ({exc})"
    if item.cwd and _cwd(repo, item.cwd) is None:
        item.skipped = f"it ran in {item.cwd}, which is not in this work tree"


def _cwd(repo: gateway.Repo, relative: Optional[str]) -> Optional[Path]:
    """Where to run again: the recorded folder inside the work tree (its top by default)."""
    if repo.work_tree is None:
        return None
    top = Path(os.path.realpath(repo.work_tree))
    where = Path(os.path.realpath(top / (relative or ".")))
    return where if where.is_dir() and (where == top or top in where.parents) else None


# --- git loopx ci record -----------------------------------------------------------------------


@dataclass(frozen=True)
class CiPlanned:
    """One piece of ci evidence to record: a finished check mapped to criteria of a goal in
    play, not recorded yet."""

    goal: str
    criteria: list[str]
    check: str
    state: str  # success | failure
    url: Optional[str]
    exit_code: int


@dataclass
class CiRecord:
    """What `git loopx ci record` found for HEAD and what it recorded (or would record)."""

    commit: str
    ci: environment.CiStatus
    planned: list[CiPlanned]
    events: list[Event[EvidenceRecorded]] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)


def record_ci(ledger: Ledger, *, actor: str, offline: bool = False, dry_run: bool = False,
              now: Optional[datetime] = None) -> CiRecord:
    """Record the finished CI checks for HEAD that the ledger config maps to criteria
    (``ci_criteria``) as evidence of kind ``ci`` (with the check's URL), once per result, so
    every clone sees them without asking the provider."""
    ledger.require()
    fold = ledger.fold()
    mapping = fold.config.get("ci_criteria") or {}
    if not mapping:
        raise UsageError("no CI check is mapped to a criterion: "
                         "git loopx config set --ci-criterion 'CHECK=GOAL:CRITERION'")
    head = ledger.store.resolve("HEAD")
    if head is None:
        raise NotFound("no commit to record CI for (HEAD does not exist yet)")
    config = readback.read_config(ledger.repo)
    if not config.get("loopx.ci.provider"):
        raise UsageError("no CI provider to ask: git config loopx.ci.provider github|command|ledger")
    # The ledger provider reads CI evidence recorded for HEAD (say, by the CI job, for no
    # criterion): only that is looked at, not the whole history.
    recorded = [views.evidence_view(e) for e in fold.evidence.values()
                if e.kind == "ci" and e.commit == head] if (
        config.get("loopx.ci.provider") == "ledger") else []
    status = readback.ci_status(ledger.repo, head, config=config,
                                snapshot={"evidence": recorded}, offline=offline)
    found = CiRecord(head, typed.build(environment.CiStatus, status),
                     _ci_plan(fold, head, status, mapping))
    found.pending = [c["name"] for c in status.get("checks", [])
                     if c.get("name") in mapping and c.get("state") not in ("success", "failure")]
    if dry_run or not found.planned:
        return found
    bound = {"commit": head, "tree": _tree_of(ledger.repo, head), "dirty": False}

    def build(txn: Txn) -> list[Event[EvidenceRecorded]]:
        return [add(txn, "ci", bound=bound, goal=item.goal, criteria=item.criteria,
                    check=item.check, url=item.url, exit_code=item.exit_code,
                    summary=f"{item.check}: {item.state}")
                for item in _ci_plan(txn.fold, head, status, mapping)]

    found.events, _ = ledger.write(build, actor=actor, now=now)
    return found


def _ci_plan(fold: entities.Fold, head: str, status: dict[str, Any],
             mapping: dict[str, list[str]]) -> list[CiPlanned]:
    """One piece of evidence per finished mapped check and goal in play, unless recorded."""
    plan = []
    for check in status.get("checks", []):
        name, state = check.get("name"), check.get("state")
        if name not in mapping or state not in ("success", "failure"):
            continue
        per_goal: dict[str, list[str]] = {}
        for target in mapping[name]:
            gid, _, cid = target.partition(":")
            goal = fold.goals.get(gid)
            if goal and goal.state in ("active", "paused") and cid in {
                    c["id"] for c in goal.acceptance} and not _ci_recorded(
                    fold, goal, cid, name, head, state == "success"):
                per_goal.setdefault(gid, []).append(cid)
        plan += [CiPlanned(gid, crits, name, state, check.get("url"),
                           0 if state == "success" else 1)
                 for gid, crits in per_goal.items()]
    return plan


def _ci_recorded(fold: entities.Fold, goal: entities.Goal, crit: str, check: str, head: str,
                 passed: bool) -> bool:
    entry = goal.verdicts.get(crit) or {"evidence": []}
    return any(fold.evidence[e].kind == "ci" and fold.evidence[e].check == check
               and fold.evidence[e].commit == head and views.verdict(fold.evidence[e]) is passed
               for e in entry["evidence"] if e in fold.evidence)
