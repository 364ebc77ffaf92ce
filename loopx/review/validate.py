"""``git loopx validate``: may this range of state commits be merged into ``loopx/state``?

Made for CI on pull requests into the state branch. The range is ``BASE..HEAD``; what it adds
is judged against ``merge-base(BASE, HEAD)`` (like a pull request's diff). The per-file rules
are :mod:`loopx.rules`, the same functions sync's incoming check applies to a fetched tip:

- ``bad-path``, ``bad-mode``, ``too-big``: every added file is
  ``events/YYYY/MM/DD/<ulid>.<type>.yaml`` (or a session transcript chunk,
  ``model.SESSION_FILE_RE``), a plain ``100644`` blob, at most ``codec.MAX_BYTES``
  (``TRANSCRIPT_CHUNK_BYTES`` for a chunk); no ``.git`` or ``..`` component, and no two
  names in one directory of HEAD that differ only in case.
- ``bad-yaml``, ``schema``: it parses with the safe loader and validates against the model
  (and its name matches its id, type and date).
- ``modified``, ``deleted``: no commit in the range changes or removes an event file, and
  HEAD's tree still holds every file of the merge base, byte for byte.
- ``clock-regression``: an event added by a commit must have a clock greater than every
  clock in that commit's parents' trees (the ledger its writer saw). For a merge commit this
  applies to the files the merge itself introduces (in none of its parents); files it brings
  in from one side were judged on the commit that added them.
- ``illegal-transition``, ``unauthorised-answer``: HEAD's tree replayed through the same
  projection the CLI uses (``Ledger.fold_at``); any event of the range that lands in
  ``problems`` fails; answers and withdrawals from outside a gate's authority (for a
  withdrawal, its opener too) or without a required valid signature are
  ``unauthorised-answer``.
- ``conflicting-decision``: a gate that HEAD leaves conflicted and the merge base did not (a
  decision that does not supersede the one in force; see docs/review.md).
- ``unauthorised-config``: while signed answers are on, a change to roles or signing rules
  that is not in a commit signed by its actor's key in allowed_signers.
- ``unauthorised-act``: another authority act (finishing or cancelling a todo a gate still
  holds, an ``override``, a ``force``) by someone who is not the authority, or without the
  signature the policy requires.
- ``conflicts-with-base``: BASE moved since the range forked, and replaying the union of
  both (what the merge will hold) refuses an event that applies on either side alone, or
  leaves a gate conflicted that neither side alone does (the same gate answered differently
  on both sides).
- ``breaks-existing``: an event that applied at the merge base no longer applies at HEAD
  (something in the range sorts before it and changes its meaning).
- ``unauthorised-at-base``: an event of the range that applies at HEAD only thanks to a change
  of signers or signing policy the range itself makes: every act is judged by the signers and
  policy at the merge base, so a change cannot add its own signer and use it.

Config changes in the range are listed for reviewers (who may answer gates is config) but
are not failures on their own.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from loopx.storage import commits
from loopx.projection import history
from loopx.review import changes
from loopx.remote import incoming
from loopx.projection import authority, entities
from loopx.ledger import layout
from loopx.errors import NotFound
from loopx.ledger import checkpoints
from loopx.ledger.book import Ledger
from loopx.model import inert, typed
from loopx.storage.store import STATE_REF

if TYPE_CHECKING:
    from loopx.model.events import Event


@dataclass
class Finding:
    """One broken rule: which rule, the file or event, the commit that brought it."""

    rule: str
    where: str
    commit: str
    message: str


@dataclass
class Added:
    """A file some commit of the range introduced, and the event parsed from it."""

    path: str
    mode: str
    oid: str
    commit: str
    event: Optional[Event] = None


@dataclass(frozen=True)
class NewEvent:
    """An event the range adds, in replay order, described for a reviewer."""

    id: str
    type: str
    actor: str
    clock: int
    commit: str
    path: str
    text: str


@dataclass
class Report:
    base: str
    head: str
    merge_base: Optional[str]
    commits: int = 0
    events: list[NewEvent] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    config: list[changes.Change] = field(default_factory=list)  # for reviewers, not failures

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "base": self.base,
            "head": self.head,
            "merge_base": self.merge_base,
            "commits": self.commits,
            "events": [typed.plain(e) for e in self.events],
            "findings": [asdict(f) for f in self.findings],
            "config_changes": [typed.plain(c) for c in self.config],
        }


# --- the range ---------------------------------------------------------------------------------


def default_range(ledger: Ledger) -> tuple[Optional[str], str]:
    """What to check when no range is given: a proposal against loopx/state, loopx/state
    against origin's copy (what a push would add), else its whole history."""
    if ledger.ref != STATE_REF:
        return STATE_REF, ledger.ref
    remote = "refs/remotes/origin/loopx/state"
    return (remote if ledger.store.tip(remote) else None), ledger.ref


def validate(ledger: Ledger, *, base: Optional[str], head: str) -> Report:
    """Check every rule above for ``base..head`` (no base: all of head's history)."""
    store = ledger.store
    base_oid, head_oid = (store.resolve(base) if base else None), store.resolve(head)
    if (base and base_oid is None) or head_oid is None:
        missing = head if head_oid is None else base
        raise NotFound(f"no commit {missing!r} (fetch the state branch first?)")
    mb = store.merge_base(base_oid, head_oid) if base_oid else None
    report = Report(base or "", head, mb)
    walked = commits.walk(store.cwd, [head_oid, f"^{mb}"] if mb else [head_oid], topo=True)
    report.commits = len(walked)
    added = _added_files(ledger, walked, report)
    _check_case(store, head_oid, added, report)
    _check_tree_kept(store, mb, head_oid, report)
    _check_clocks(ledger, walked, added, report)
    _check_replay(ledger, mb, head_oid, added, report)
    _check_checkpoints(ledger, head_oid, added, report)
    if base_oid is not None and base_oid != mb:
        _check_merge(ledger, base_oid, head_oid, added, report)
    return report


def _added_files(ledger: Ledger, walked: list[commits.Commit], report: Report) -> list[Added]:
    store = ledger.store
    found: dict[tuple[str, str], Added] = {}
    for commit in walked:
        for change in commit.changes:
            broken = layout.change_rule(change.status)
            if broken:
                _broke(report, broken, change.path, commit.oid)
            else:
                found.setdefault(
                    (change.path, change.oid),
                    Added(change.path, change.mode, change.oid, commit.oid),
                )
    files = list(found.values())
    sizes = incoming.blob_sizes(store, [f.oid for f in files])
    readable = [item for item in files if _file_ok(item, sizes.get(item.oid), report)]
    for chunk in ledger.progress.chunks(readable):
        for item, data in zip(chunk, store.read_blobs([f.oid for f in chunk])):
            item.event, broken = layout.event_rule(item.path, data)
            if broken:
                _broke(report, broken, item.path, item.commit)
    return files


def _file_ok(item: Added, size: Optional[int], report: Report) -> bool:
    """Whether an added file passes the path, mode and size rules and is an event to read
    (a transcript chunk is plain text: the session events that cite it carry its size and
    oid). A missing blob is read, and fails as an event."""
    broken = layout.path_rule(item.path, item.mode) or (
        layout.size_rule(item.path, size) if size is not None else None)
    if broken:
        _broke(report, broken, item.path, item.commit)
    return broken is None and layout.is_event(item.path)


def _check_case(store: Any, head: str, added: list[Added], report: Report) -> None:
    """Names in one directory of HEAD that differ only in case (they collide on macOS and
    Windows checkouts); reported on the commit that added the file, if one did."""
    names = incoming.names_along(incoming.TreeDirs(store, head), [a.path for a in added])
    for path, broken in layout.case_collisions(names):
        under = (a.commit for a in added if a.path == path or a.path.startswith(f"{path}/"))
        _broke(report, broken, path, next(under, head))


def _check_tree_kept(store: Any, mb: Optional[str], head: str, report: Report) -> None:
    """Catches what per-commit diffs can miss, e.g. a merge that drops a file by taking the
    side without it."""
    if mb is None:
        return
    for status, _, entry in store.added_files(mb, head):
        broken = layout.change_rule(status)
        if broken and not any(f.where == entry.path for f in report.findings):
            _broke(report, broken, entry.path, head)


def _check_clocks(
    ledger: Ledger, walked: list[commits.Commit], added: list[Added], report: Report
) -> None:
    in_range = {c.oid for c in walked}
    clocks: dict[str, int] = {}  # commit -> highest clock in its tree
    by_commit: dict[str, list[Event]] = {}
    for item in added:
        if item.event is not None:
            by_commit.setdefault(item.commit, []).append(item.event)
    for commit in reversed(walked):  # --topo-order reversed: parents first
        seen = max((_max_clock(ledger, p, clocks, in_range) for p in commit.parents), default=0)
        mine = by_commit.get(commit.oid, [])
        for event in mine:
            if event.env.clock <= seen:
                _fail(
                    report,
                    "clock-regression",
                    event.id,
                    commit.oid,
                    f"{event.type} {event.id} has clock {event.env.clock}, but the ledger its "
                    f"commit was written on already reached {seen}; it would sort before "
                    "events its writer had seen",
                )
        clocks[commit.oid] = max([seen, *(e.env.clock for e in mine)])


def _max_clock(ledger: Ledger, commit: str, clocks: dict[str, int], in_range: set[str]) -> int:
    if commit not in clocks:
        # Outside the range (the merge base, or a state tip merged in): read its tree once.
        assert commit not in in_range, "topological order visits parents first"
        events = ledger.read_events(commit, [])
        clocks[commit] = max((e.env.clock for e in events), default=0)
    return clocks[commit]


def _check_replay(
    ledger: Ledger, mb: Optional[str], head: str, added: list[Added], report: Report
) -> None:
    after = ledger.fold_at(head)
    before = ledger.fold_at(mb) if mb else entities.Fold()
    ours = {item.event.id: item for item in added if item.event is not None}
    refused_before = {p.event for p in before.problems}
    for problem in after.problems:
        if problem.type == "file":
            continue  # reported by the file rules, for files of the range
        if problem.event in ours:
            rule = _rule_for(problem)
            _fail(
                report,
                rule,
                problem.event,
                ours[problem.event].commit,
                f"{problem.type} by {problem.actor}: {problem.reason}",
            )
        elif problem.event not in refused_before:
            _fail(
                report,
                "breaks-existing",
                problem.event,
                head,
                f"{problem.type} by {problem.actor} applied before this range, "
                f"now: {problem.reason}",
            )
    _check_conflicts(before, after, report, "conflicting-decision", head,
                     "leaves it conflicted; answer with --supersede to replace a decision")
    if mb is not None:  # a whole history has no base to judge by
        _check_at_base(ledger, head, after, ours, report)
    report.events = [
        _event_row(ours[e.id], e)
        for e in sorted((i.event for i in ours.values() if i.event is not None), key=lambda event: event.sort_key())
    ]
    report.config = [typed.build(changes.Change, c)
                     for c in history.config_changes(before.config, after.config)]


def _check_at_base(ledger: Ledger, head: str, after: entities.Fold, ours: dict[str, Added],
                   report: Report) -> None:
    """Every act of the range judged by the signers and signing policy at the merge base: a
    range that changes them (say, adds a signer) cannot also use the change. Replays HEAD
    once more with the range's own such changes held back, only when it has any."""
    held = frozenset(
        i.event.id for i in ours.values() if i.event is not None and i.event.type == "config.set"
        and i.event.data is not None
        and authority.SIGNING_CONFIG & set(i.event.data.model_dump(exclude_none=True)))
    if not held:
        return
    refused = {p.event for p in after.problems}
    for problem in ledger.fold_at(head, held=held).problems:
        if problem.type != "file" and problem.event in ours and problem.event not in refused:
            _fail(report, "unauthorised-at-base", problem.event, ours[problem.event].commit,
                  f"{problem.type} by {problem.actor}, judged by the signers and signing policy "
                  f"of the merge base (this range changes them; use a change once it is "
                  f"merged): {problem.reason}")


def _check_checkpoints(ledger: Ledger, head: str, added: list[Added], report: Report) -> None:
    """A checkpoint the range adds must be the fold of its commit's events: replay and compare
    (derived data is trusted no further than the events; docs/design.md, "Checkpoints")."""
    new = {a.path.split("/")[1]: a.commit for a in added
           if a.path.startswith("checkpoints/") and a.path.endswith("/manifest.json")}
    listed = {m.commit: m for m in checkpoints.listed(ledger.store, head)}
    for commit, where in sorted(new.items()):
        manifest = listed.get(commit)
        if manifest is None:
            _fail(report, "checkpoint", f"checkpoints/{commit}", where,
                  f"checkpoint {commit[:12]} is unreadable, of another loopx, or of a commit "
                  "that is not in the history of the range")
            continue
        for problem in checkpoints.verify(ledger.fold_at(commit), ledger.store, head, manifest):
            _fail(report, "checkpoint", f"checkpoints/{commit}", where, problem)


def _check_merge(
    ledger: Ledger, base: str, head: str, added: list[Added], report: Report
) -> None:
    """The base moved since the range forked: replay the union, as merging would."""
    alone = {p.event for p in ledger.fold_at(head).problems} | {
        p.event for p in ledger.fold_at(base).problems
    }
    ours = {item.event.id: item.commit for item in added if item.event is not None}
    merged = ledger.fold_merged([base, head])
    _check_conflicts(ledger.fold_at(base), merged, report, "conflicts-with-base", head,
                     f"once merged with {report.base}; its authority decides again with "
                     "--supersede", ledger.fold_at(head))
    for problem in merged.problems:
        if problem.type == "file" or problem.event in alone:
            continue
        side = "this range" if problem.event in ours else "the base"
        _fail(
            report,
            "conflicts-with-base",
            problem.event,
            ours.get(problem.event, base),
            f"{problem.type} by {problem.actor} from {side} applies on its own but not once "
            f"merged with {report.base}: {problem.reason}",
        )


def _check_conflicts(before: entities.Fold, after: entities.Fold, report: Report, rule: str,
                     commit: str, why: str, *also: entities.Fold) -> None:
    """Gates conflicted in ``after`` but not in ``before`` (nor in any of ``also``)."""
    for gate in after.gates.values():
        if gate.state != "conflicted" or any(
                f.gates.get(gate.id) and f.gates[gate.id].state == "conflicted"
                for f in (before, *also)):
            continue
        said = ", ".join(f"{d['decision'] or 'withdraw'} by {d['actor']} ({d['event']})"
                         for d in gate.decisions)
        _fail(report, rule, gate.id, commit,
              f"gate {gate.id} gets decisions that did not see each other ({said}): {why}")


def _rule_for(problem: entities.Problem) -> str:
    """Which rule a refused event of the range breaks (the projection's reason says why)."""
    signing = any(m in problem.reason for m in ("signed", "allowed signers"))
    decision = problem.type in ("gate.answered", "gate.withdrawn")
    if decision and (signing or " only; you are " in problem.reason):
        return "unauthorised-answer"
    if problem.type == "config.set" and signing:
        return "unauthorised-config"
    if problem.type in ACTS and (signing or " only; you are " in problem.reason):
        return "unauthorised-act"
    return "illegal-transition"


# Authority acts besides gate decisions and config: they decide past a gate or a rule.
ACTS = ("todo.done", "todo.cancelled", "goal.closed", "quota.spent")


def _event_row(item: Added, event: Event) -> NewEvent:
    return NewEvent(event.id, event.type, event.env.actor, event.env.clock, item.commit,
                    item.path, history.describe(event))


def _fail(report: Report, rule: str, where: str, commit: str, message: str) -> None:
    report.findings.append(Finding(rule, where, commit, message))


def _broke(report: Report, broken: layout.Broken, path: str, commit: str) -> None:
    _fail(report, broken.rule, path, commit, f"{path}: {broken.message}")


def render(report: Report) -> str:
    """The report as text for a reviewer: verdict first, then what fails, then what the
    range does."""
    span = f"{report.base}..{report.head}" if report.base else report.head
    lines = [
        f"loopx validate {span}: "
        + (
            f"OK ({_n(report.commits, 'commit')}, {_n(len(report.events), 'new event')})"
            if report.ok
            else f"FAILED, {_n(len(report.findings), 'problem')} ({_n(report.commits, 'commit')})"
        )
    ]
    for f in report.findings:
        lines.append(f"  {f.rule:<20} {inert.line(f.message)}  [commit {f.commit[:12]}]")
    if report.config:
        lines.append("Config changes (who may answer gates, signing rules): review them")
        lines += [f"  {inert.line(c.text)}" for c in report.config]
    if report.events:
        lines.append("New events, in replay order:")
        lines += [f"  {inert.line(e.actor)}: {inert.line(e.text)}  [{e.id}]"
                  for e in report.events]
    return "\n".join(lines)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
