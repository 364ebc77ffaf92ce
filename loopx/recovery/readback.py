"""Readback: a fresh look at the world, the other half of every recovery.

    next decision = replay(durable facts) + inspect(fresh environment)

:func:`inspect` reads the working tree (HEAD, branch, dirty and untracked files, an operation
in progress, upstream ahead/behind), the state branch against its remote-tracking branch, CI
for HEAD (through the provider ``git config loopx.ci.provider`` names) and how fresh each
piece of evidence is. It returns a plain :class:`Environment`; :mod:`loopx.decide` turns it
and the snapshot into actions. Every git call goes through :mod:`loopx.git`, batched: one
``git status --porcelain=v2`` gives branch, upstream and dirty files in one process.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

from loopx.errors import GitError, LoopxError
from loopx.model import globs, plural
from loopx.storage import gateway, settings

# Files git leaves in the (per-worktree) git dir while an operation waits for the user.
_IN_PROGRESS = (
    ("rebase-merge", "rebase"), ("rebase-apply", "rebase"), ("MERGE_HEAD", "merge"),
    ("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert"), ("BISECT_LOG", "bisect"),
)
MAX_LISTED = 200  # dirty/untracked/changed files listed; the counts stay exact


@dataclass
class Environment:
    """What readback saw, as plain values (``as_dict`` is the status JSON ``environment``)."""

    head: Optional[str] = None
    tree: Optional[str] = None
    branch: Optional[str] = None  # None when detached or outside a work tree
    detached: bool = False
    dirty: list[str] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)
    in_progress: Optional[str] = None  # merge | rebase | cherry-pick | revert | bisect
    upstream: Optional[dict[str, Any]] = None  # {name, ahead, behind}
    state: dict[str, Any] = field(default_factory=dict)  # {ref, remote, tracking, unpushed, unmerged}
    ci: dict[str, Any] = field(default_factory=dict)  # {provider, state, checks[], detail}
    host: str = ""
    worktree: Optional[str] = None
    evidence: dict[str, "Freshness"] = field(default_factory=dict)
    judged_tree: Optional[str] = None  # what evidence was judged against (None: nothing was)
    criteria: dict[str, dict[str, Any]] = field(default_factory=dict)  # GOAL:CRITERION -> verdict
    hooks: dict[str, Any] = field(default_factory=dict)  # the hook queue: {queued, set_aside[]}
    links: dict[str, dict[str, Any]] = field(default_factory=dict)  # LINK -> {state, ...}
    effects: dict[str, dict[str, Any]] = field(default_factory=dict)  # EFFECT -> what readback saw

    def as_dict(self) -> dict[str, Any]:
        # Shallow by hand: dataclasses.asdict deep-copies every list, which is slow here.
        doc = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        doc["evidence"] = {k: vars(v).copy() for k, v in self.evidence.items()}
        return doc


def inspect(
    repo: gateway.Repo, *, state_ref: str, snapshot: dict[str, Any], remaps: Mapping[str, str],
    config: Optional[dict[str, str]] = None, ci: bool = True, offline: bool = False,
    reader: Optional[gateway.ObjectReader] = None, ignore: Optional[list[str]] = None,
    ci_criteria: Optional[dict[str, list[str]]] = None,
    default_scope: Optional[list[str]] = None,
) -> Environment:
    """Look at the working tree, the state branch, CI and evidence freshness, right now.

    ``ignore`` is the ledger's ``evidence_ignore``, ``default_scope`` its ``evidence_scope``,
    ``ci_criteria`` its map of CI checks to
    the criteria they meet (``CHECK -> [GOAL:CRITERION]``).
    """
    config = read_config(repo) if config is None else config
    env = Environment(host=local_host(),
                      worktree=str(repo.work_tree) if repo.work_tree else None)
    env.head, env.tree = _read_head(repo, env, reader)
    env.state = state_branch(repo, state_ref, remote=config.get("loopx.remote", "origin"))
    judge = Judge(repo, env, remaps, reader=reader, ignore=ignore, default_scope=default_scope)
    env.evidence = freshness(repo, _evidence_in_play(snapshot), env, remaps, judge=judge)
    env.ci = _ci(repo, env, snapshot, config, enabled=ci, offline=offline)
    env.criteria = criteria(snapshot, env, judge, ci_criteria=ci_criteria)
    env.hooks = hook_queue(repo)
    env.links = _links(repo, snapshot, config, offline=offline)
    return env


def _links(repo: gateway.Repo, snapshot: dict[str, Any], config: dict[str, str], *,
           offline: bool) -> dict[str, dict[str, Any]]:
    """The state of every issue and pull request the snapshot links to (loopx.recovery.links)."""
    if not any(e.get("links") for kind in ("goals", "todos") for e in snapshot.get(kind, [])):
        return {}
    from loopx.recovery import links  # the network's modules load only when something links

    return links.states(snapshot, repo=repo, config=config, offline=offline)


def hook_queue(repo: gateway.Repo) -> dict[str, Any]:
    """The git hooks' queue as status shows it: entries waiting, and those set aside."""
    if not (repo.loopx_dir / "spool").is_dir():  # never used: no need to load the queue
        return {"queued": 0, "set_aside": []}
    from loopx.hooks import spool  # (start-up time of every status)

    return spool.summary(repo.loopx_dir)


def look(repo: gateway.Repo, reader: Optional[gateway.ObjectReader] = None) -> Environment:
    """Only the work tree: HEAD, its tree, the branch and the changed files (what judging
    evidence needs; no state branch, no CI)."""
    env = Environment(host=local_host(),
                      worktree=str(repo.work_tree) if repo.work_tree else None)
    env.head, env.tree = _read_head(repo, env, reader)
    return env


def current_branch(repo: gateway.Repo) -> Optional[str]:
    """The branch checked out (``refs/heads/...``), None when HEAD is detached or there is no
    work tree."""
    if repo.work_tree is None:
        return None
    return gateway.out(repo.cwd, "symbolic-ref", "-q", "HEAD", check=False) or None


def _read_head(repo: gateway.Repo, env: Environment, reader: Optional[gateway.ObjectReader]
               ) -> tuple[Optional[str], Optional[str]]:
    if repo.work_tree is not None:
        _read_worktree(repo, env)
    else:
        env.head = _rev(repo, "HEAD")
    return env.head, _head_tree(repo, env.head, reader) if env.head else None


def local_host() -> str:
    """This machine's name, as sessions record it and status compares it
    (``$LOOPX_HOST`` overrides, for tests)."""
    return os.environ.get("LOOPX_HOST") or os.uname().nodename or "localhost"


def read_config(repo: gateway.Repo) -> dict[str, str]:
    """Every ``loopx.*`` git config value, its last one (keys lower-cased by git)."""
    return {key: held[-1] or "" for key, held in settings.values(repo.cwd).items()
            if key.startswith("loopx.")}


def _rev(repo: gateway.Repo, rev: str) -> Optional[str]:
    proc = gateway.run(repo.cwd, "rev-parse", "--verify", "-q", rev, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def _head_tree(repo: gateway.Repo, head: str, reader: Optional[gateway.ObjectReader]) -> Optional[str]:
    """HEAD's tree: from its loose object (a commit just made), else through the caller's
    cat-file process when there is one."""
    found = gateway.loose_object(repo, head)
    if found is None:
        if reader is None:
            return _rev(repo, f"{head}^{{tree}}")
        found = reader.read(head)
    return _commit_tree(found[1]) if found and found[0] == "commit" else None


# --- the working tree ---------------------------------------------------------------------------


def _read_worktree(repo: gateway.Repo, env: Environment) -> None:
    raw = gateway.run(repo.cwd, "status", "--porcelain=v2", "--branch", "-z",
                  "--untracked-files=normal", "--ignore-submodules=dirty").stdout
    parse_status(raw, env)
    env.in_progress = next(
        (name for marker, name in _IN_PROGRESS if (repo.git_dir / marker).exists()), None)


def parse_status(raw: bytes, env: Environment) -> None:
    """Fill ``env`` from ``git status --porcelain=v2 --branch -z`` output."""
    items = raw.decode("utf-8", "surrogateescape").split("\0")
    upstream: dict[str, Any] = {}
    skip = False
    for item in items:
        if skip:  # the original path of a rename ("2" entries) follows it
            skip = False
            continue
        if item.startswith("# "):
            _branch_header(item[2:], env, upstream)
        elif item.startswith(("1 ", "u ")):
            env.dirty.append(item.split(" ", 8 if item[0] == "1" else 10)[-1])
        elif item.startswith("2 "):
            env.dirty.append(item.split(" ", 9)[-1])
            skip = True
        elif item.startswith("? "):
            env.untracked.append(item[2:])
    env.upstream = upstream or None


def _branch_header(header: str, env: Environment, upstream: dict[str, Any]) -> None:
    key, _, value = header.partition(" ")
    if key == "branch.oid":
        env.head = None if value == "(initial)" else value
    elif key == "branch.head":
        env.detached = value == "(detached)"
        env.branch = None if env.detached else value
    elif key == "branch.upstream":
        upstream.update(name=value, ahead=0, behind=0)
    elif key == "branch.ab":
        ahead, behind = value.split()
        upstream.update(ahead=int(ahead.lstrip("+")), behind=int(behind.lstrip("-")))


# --- the state branch against its remote -----------------------------------------------------------


def state_branch(repo: gateway.Repo, ref: str, *, remote: str) -> dict[str, Any]:
    """Events on ``ref`` not yet pushed, events fetched but not merged, and the quarantine
    holding the remote's state when the last fetch refused it."""
    short = ref.removeprefix("refs/heads/")
    tracking = f"refs/remotes/{remote}/{short}"
    result: dict[str, Any] = {"ref": ref, "remote": remote, "tracking": None,
                              "unpushed": 0, "unmerged": 0, "quarantined": None}
    if gateway.has_ref(repo, tracking) is False:  # never fetched or pushed: no git process
        return result
    proc = gateway.run(repo.cwd, "rev-list", "--left-right", "--count", f"{ref}...{tracking}",
                   check=False)
    if proc.returncode != 0:  # no remote-tracking branch (never pushed or fetched), or no ledger
        return result
    result["tracking"] = tracking
    result["quarantined"] = _quarantined(repo, remote, tracking)
    if result["quarantined"]:
        return result  # what was fetched was refused: nothing of it is "not merged yet"
    ahead, behind = (int(n) for n in proc.stdout.split())
    if ahead or behind:
        base = gateway.out(repo.cwd, "merge-base", ref, tracking, check=False) or None
        result["unpushed"] = _events_between(repo, base, ref) if ahead else 0
        result["unmerged"] = _events_between(repo, base, tracking) if behind else 0
    return result


def _quarantined(repo: gateway.Repo, remote: str, tracking: str) -> Optional[str]:
    """The quarantine ref of the remote's state as last fetched, if that state was refused
    (sync points the remote-tracking ref at what it fetched, checked or not)."""
    out = gateway.out(repo.cwd, "for-each-ref", "--format=%(objectname) %(refname)",
                      f"refs/loopx/quarantine/{remote}/", tracking)
    rows = [line.split(" ", 1) for line in out.splitlines() if line]
    tip = next((oid for oid, name in rows if name == tracking), None)
    return next((name for oid, name in rows if oid == tip and name != tracking), None)


def _events_between(repo: gateway.Repo, base: Optional[str], tip: str) -> int:
    args = ("diff-tree", "-r", "--name-only", "--diff-filter=A", "--no-commit-id", "-z")
    if base is None:
        raw = gateway.run(repo.cwd, "ls-tree", "-r", "--name-only", "-z", tip).stdout
    else:
        raw = gateway.run(repo.cwd, *args, base, tip).stdout
    return sum(1 for name in raw.split(b"\0") if name.startswith(b"events/"))


# --- evidence freshness ----------------------------------------------------------------------------
# Evidence vouches for the tree it ran on, forever: a rewrite moves its commit pointer (remaps),
# never the tree. It is fresh while no path in its scope differs between that tree and the tree
# being judged (HEAD's, or the work tree's when it has changes). docs/recovery.md has the rules.


def _evidence_in_play(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """Evidence of goals still in play (closed goals' evidence is history, not checked)."""
    live = {g["id"] for g in snapshot.get("goals", []) if g["state"] in ("active", "paused")}
    return [e for e in snapshot.get("evidence", []) if e.get("goal") in live or e.get("goal") is None]


def follow(remaps: Mapping[str, str], commit: str) -> str:
    """The commit that ``commit`` became after amends and rebases (chains followed)."""
    seen = {commit}
    while commit in remaps and remaps[commit] not in seen:
        commit = remaps[commit]
        seen.add(commit)
    return commit


def work_tree_tree(repo: gateway.Repo, scratch: Optional[str] = None) -> Optional[str]:
    """The tree of the work tree as it is now: changes to tracked files and untracked files
    that are not ignored included. Written through a copy of the index (``git add -A`` with
    ``GIT_INDEX_FILE`` pointing at it), so the user's index is never touched; None without a
    work tree. With ``scratch`` (see :func:`scratch_env`) the new blobs and trees go to that
    object directory, not the repository's: a read leaves nothing behind."""
    if repo.work_tree is None:
        return None
    # Imported here: only a dirty work tree needs a scratch index (a clean `status` starts
    # without them).
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="loopx-index-") as tmp:
        index = os.path.join(tmp, "index")
        try:  # a copy keeps git's stat cache: only changed files are hashed again
            shutil.copyfile(repo.git_dir / "index", index)
        except FileNotFoundError:
            pass  # no index yet: everything is added
        env = {"GIT_INDEX_FILE": index, **scratch_env(repo, scratch)}
        # A split index would write a new shared index into the user's git dir. A file that
        # cannot be read keeps its indexed content (--ignore-errors) rather than failing a run.
        added = gateway.run(repo.work_tree, "-c", "core.splitIndex=false", "add", "-A",
                            "--ignore-errors", env=env, check=False)
        if added.returncode not in (0, 1):  # 1: some files could not be read; 128: fatal
            raise GitError(["add", "-A"], added.returncode,
                           added.stderr.decode("utf-8", "replace"))
        return gateway.out(repo.work_tree, "write-tree", env=env)


def scratch_env(repo: gateway.Repo, scratch: Optional[str]) -> dict[str, str]:
    """The environment that makes git write new objects to ``scratch`` and read the
    repository's objects as an alternate (none without ``scratch``)."""
    if scratch is None:
        return {}
    return {"GIT_OBJECT_DIRECTORY": scratch,
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(repo.common_dir / "objects")}


def judged_tree(repo: gateway.Repo, env: Environment, scratch: Optional[str] = None
                ) -> Optional[str]:
    """The tree evidence is judged against: HEAD's when the work tree is clean, else the work
    tree's (its changes and untracked files included, written to ``scratch`` when given)."""
    if env.dirty or env.untracked or (env.tree is None and repo.work_tree is not None):
        return work_tree_tree(repo, scratch)
    return env.tree


def scope(evidence_paths: list[str], criterion_paths: list[str],
          ignore: list[str], default: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """(include, exclude) globs a verdict is judged on: the evidence's own paths, else its
    criterion's, else the ledger's ``evidence_scope`` (``default``; none: the whole tree) less
    its ``evidence_ignore``."""
    include = list(evidence_paths or criterion_paths)
    return (include, []) if include else (list(default), list(ignore))


@dataclass
class Freshness:
    """How one piece of evidence compares with the code being judged."""

    state: str  # fresh | stale | unknown | unbound (not tied to code)
    commit: Optional[str] = None  # the commit it vouches for, after following remaps
    changed: list[str] = field(default_factory=list)  # files in its scope that differ
    reason: Optional[str] = None
    tree: Optional[str] = None  # the tree it vouches for (what it ran on)
    paths: list[str] = field(default_factory=list)  # the scope it was judged on ([]: all)
    ignored: list[str] = field(default_factory=list)  # globs left out of that scope
    outside_scope: int = 0  # files that differ outside its scope (they do not count)


class Judge:
    """Judges evidence against one tree; reads each object once and runs one ``diff-tree``
    per distinct pair of trees, however many pieces of evidence and criteria share them."""

    def __init__(self, repo: gateway.Repo, env: Environment, remaps: Mapping[str, str], *,
                 reader: Optional[gateway.ObjectReader] = None,
                 ignore: Optional[list[str]] = None,
                 default_scope: Optional[list[str]] = None) -> None:
        self.repo, self.env, self.remaps, self.reader = repo, env, remaps, reader
        self.ignore = list(ignore or [])
        self.default_scope = list(default_scope or [])
        self._judged: Optional[str] = None
        self._scratch: Optional[str] = None
        self._looked = False
        self._trees: dict[str, Optional[str]] = {}  # commit -> its tree (None: missing)
        self._diffs: dict[str, Optional[list[str]]] = {}  # tree -> changed files (None: missing)

    def judged(self) -> Optional[str]:
        if not self._looked:
            self._looked = True
            # A dirty work tree's blobs and trees go to a scratch object directory, removed
            # with the judge: judging evidence (every `status`) adds nothing to the repository,
            # where unreachable objects would pile up until gc complained.
            if self.env.dirty or self.env.untracked or self.env.tree is None:
                import shutil
                import tempfile
                import weakref

                self._scratch = tempfile.mkdtemp(prefix="loopx-objects-")
                weakref.finalize(self, shutil.rmtree, self._scratch, True)
            try:
                self._judged = judged_tree(self.repo, self.env, self._scratch)
            except LoopxError:  # an unreadable file, a broken filter: judge nothing, say so
                self._judged = None
            self.env.judged_tree = self._judged
        return self._judged

    def prefetch(self, evidence: Iterable[dict[str, Any]]) -> None:
        """Read, in one batch, the commits whose trees the evidence needs."""
        wanted = sorted({e["commit"] for e in evidence if e.get("commit")
                         and (not e.get("tree") or e.get("dirty"))} - set(self._trees))
        found = _read_objects(self.repo, wanted, self.reader) if wanted else {}
        for name in wanted:
            obj = found.get(name)
            self._trees[name] = _commit_tree(obj[1]) if obj and obj[0] == "commit" else None

    def evidence(self, ev: dict[str, Any], *, criterion_paths: Optional[list[str]] = None
                 ) -> Freshness:
        """How ``ev`` stands, judged on its scope (or its criterion's)."""
        if ev.get("kind") == "note" or not (ev.get("commit") or ev.get("tree")):
            return Freshness("unbound")
        include, exclude = scope(ev.get("paths") or [], criterion_paths or [], self.ignore,
                                 self.default_scope)
        commit = follow(self.remaps, ev["commit"]) if ev.get("commit") else None
        found = Freshness("unknown", commit, paths=include, ignored=exclude)
        self.prefetch([ev])
        of_commit = self._trees.get(ev["commit"]) if ev.get("commit") else None
        found.tree = ev.get("tree") or of_commit
        if found.tree is None:
            found.reason = f"commit {(ev.get('commit') or '?')[:12]} is not in this repository"
            return found
        judged = self.judged()
        if judged is None:
            found.reason = "no code to compare with (no commit, or the work tree could not be read)"
            return found
        changed = self.changed(found.tree, judged)
        if changed is None:
            found.reason = (f"the tree it ran on ({found.tree[:12]}) is not in this repository "
                            "(uncommitted changes never committed here)")
            return found
        counted = globs.in_scope(changed, include=include, exclude=exclude)
        found.changed, found.outside_scope = counted[:MAX_LISTED], len(changed) - len(counted)
        if ev.get("dirty") and of_commit == ev.get("tree"):
            # Recorded by a loopx that bound dirty runs to HEAD's tree: what it ran on is lost.
            found.state, found.reason = "stale", "recorded on uncommitted changes it did not keep"
        elif counted:
            found.state = "stale"
            found.reason = f"{plural.counted(len(counted), 'file')} in its scope changed since"
        else:
            found.state = "fresh"
        return found

    def changed(self, tree: str, judged: str) -> Optional[list[str]]:
        """Files that differ between ``tree`` and ``judged`` (None when ``tree`` is missing)."""
        if tree == judged:
            return []
        if tree not in self._diffs:
            proc = gateway.run(self.repo.cwd, "diff-tree", "-r", "--name-only", "-z",
                               "--no-renames", tree, judged, check=False,
                               env=scratch_env(self.repo, self._scratch))
            self._diffs[tree] = None if proc.returncode else [
                n.decode("utf-8", "surrogateescape") for n in proc.stdout.split(b"\0") if n]
        return self._diffs[tree]


def freshness(
    repo: gateway.Repo, evidence: Iterable[dict[str, Any]], env: Environment, remaps: Mapping[str, str],
    *, reader: Optional[gateway.ObjectReader] = None, ignore: Optional[list[str]] = None,
    judge: Optional[Judge] = None, default_scope: Optional[list[str]] = None,
) -> dict[str, Freshness]:
    """How each piece of evidence compares with the code being judged, on its own scope."""
    judge = judge or Judge(repo, env, remaps, reader=reader, ignore=ignore,
                           default_scope=default_scope)
    items = list(evidence)
    judge.prefetch(items)
    return {e["id"]: judge.evidence(e) for e in items if e.get("kind") != "note"}


def _commit_tree(body: bytes) -> Optional[str]:
    first = body.split(b"\n", 1)[0]
    return first[5:].decode() if first.startswith(b"tree ") else None


def _read_objects(repo: gateway.Repo, names: list[str],
                  reader: Optional[gateway.ObjectReader]) -> dict[str, tuple[str, bytes]]:
    own = reader is None
    reader = reader or gateway.ObjectReader(repo.cwd)
    try:
        return {n: obj for n, obj in zip(names, reader.read_many(names)) if obj is not None}
    finally:
        if own:
            reader.close()


# --- acceptance criteria -------------------------------------------------------------------------


def criteria(snapshot: dict[str, Any], env: Environment, judge: Judge, *,
             ci_criteria: Optional[dict[str, list[str]]] = None) -> dict[str, dict[str, Any]]:
    """``GOAL:CRITERION`` -> how each criterion in force of the goals in play stands now: its
    latest verdict (from the ledger, or a finished CI check mapped to it and not recorded yet,
    which is newer than anything recorded) judged on the criterion's scope."""
    evidence = {e["id"]: e for e in snapshot.get("evidence", [])}
    from_ci = _ci_verdicts(snapshot, env, ci_criteria or {})
    result = {}
    for goal in snapshot.get("goals", []):
        if goal["state"] not in ("active", "paused"):
            continue
        for crit in goal["acceptance"]:
            key = f"{goal['id']}:{crit['id']}"
            paths = crit.get("paths") or []
            if key in from_ci:
                result[key] = _judge_ci(from_ci[key], env, judge, paths)
            else:
                result[key] = _judge_latest(crit, evidence.get(crit.get("latest") or ""), judge)
    return result


def _judge_latest(crit: dict[str, Any], ev: Optional[dict[str, Any]], judge: Judge
                  ) -> dict[str, Any]:
    found: dict[str, Any] = {"state": "unmet", "evidence": crit.get("latest"),
                             "verdict": crit.get("verdict"), "source": "ledger", "changed": [],
                             "reason": None}
    if ev is None:
        if crit.get("latest"):  # not in the document (narrowed by --goal): taken as recorded
            found["state"] = "fresh" if crit.get("verdict") == "pass" else "unmet"
        else:
            found["reason"] = "no evidence recorded for it yet"
        return found
    fresh = judge.evidence(ev, criterion_paths=crit.get("paths") or [])
    found.update(changed=fresh.changed, reason=fresh.reason, evidence_state=fresh.state,
                 scope=fresh.paths)
    if crit.get("verdict") == "pass":
        found["state"] = "fresh" if fresh.state in ("fresh", "unbound") else fresh.state
    else:
        code = ev.get("exit_code")
        found["reason"] = f"{ev['id']} failed" + (f" (exit {code})" if code else "") + (
            f"; {fresh.reason}" if fresh.state == "stale" else "")
    return found


def _ci_verdicts(snapshot: dict[str, Any], env: Environment,
                 mapping: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """``GOAL:CRITERION`` -> the finished CI checks for HEAD mapped to it that the ledger does
    not hold yet: {verdict, checks[{name, state, url}]}. Pending checks make no verdict."""
    checks = {c.get("name"): c for c in (env.ci or {}).get("checks", []) if c.get("name")}
    if not mapping or not checks or env.head is None:
        return {}
    recorded = {(e.get("check"), e.get("goal"), e.get("exit_code") in (None, 0))
                for e in snapshot.get("evidence", [])
                if e.get("kind") == "ci" and e.get("commit") == env.head}
    per: dict[str, list[dict[str, Any]]] = {}
    for name, targets in mapping.items():
        if name in checks:
            for target in targets:
                per.setdefault(target, []).append(checks[name])
    found = {}
    for target, mapped in per.items():
        states = [c.get("state") for c in mapped]
        if "failure" in states:
            verdict = "fail"
        elif all(s == "success" for s in states):
            verdict = "pass"
        else:
            continue  # still running (or unknown): no verdict yet
        goal = target.partition(":")[0]
        new = [c for c in mapped if (c.get("name"), goal, c.get("state") == "success")
               not in recorded]
        if new:
            found[target] = {"verdict": verdict, "checks": [
                {"name": c.get("name"), "state": c.get("state"), "url": c.get("url")}
                for c in mapped]}
    return found


def _judge_ci(found: dict[str, Any], env: Environment, judge: Judge,
              paths: list[str]) -> dict[str, Any]:
    """A CI verdict for HEAD, judged like evidence that ran on HEAD's tree."""
    head_run = {"id": "ci", "kind": "ci", "commit": env.head, "tree": env.tree}
    fresh = judge.evidence(head_run, criterion_paths=paths)
    first = found["checks"][0]
    state = "unmet" if found["verdict"] == "fail" else (
        "fresh" if fresh.state == "fresh" else fresh.state)
    names = ", ".join(c["name"] for c in found["checks"])
    return {"state": state, "evidence": None, "verdict": found["verdict"], "source": "ci",
            "checks": found["checks"], "url": first.get("url"), "changed": fresh.changed,
            "evidence_state": fresh.state,
            "reason": f"CI ({names}) {'passed' if found['verdict'] == 'pass' else 'failed'} "
                      f"for HEAD {str(env.head)[:12]}; not recorded yet (git loopx ci record)"}


# --- CI -----------------------------------------------------------------------------------------


def _ci(repo: gateway.Repo, env: Environment, snapshot: dict[str, Any], config: dict[str, str],
        *, enabled: bool, offline: bool) -> dict[str, Any]:
    provider = config.get("loopx.ci.provider")
    if not provider or not enabled or env.head is None:
        detail = None if provider else "no CI provider configured (git config loopx.ci.provider)"
        return {"provider": provider, "state": "unknown", "checks": [],
                "detail": detail if enabled else "CI not checked (--no-ci)"}
    return ci_status(repo, env.head, config=config, snapshot=snapshot, offline=offline)


def ci_status(repo: gateway.Repo, commit: str, *, config: dict[str, str],
              snapshot: dict[str, Any], offline: bool = False) -> dict[str, Any]:
    """CI for ``commit`` through the configured provider: {provider, state, checks, detail}."""
    from loopx.recovery import ci  # a provider is loaded only when one is configured

    status = ci.check(commit, provider=config.get("loopx.ci.provider") or "", repo=repo,
                      config=config, snapshot=snapshot, offline=offline)
    return status.as_dict()

