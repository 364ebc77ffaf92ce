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
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from loopx.storage import gateway

# Files git leaves in the (per-worktree) git dir while an operation waits for the user.
_IN_PROGRESS = (
    ("rebase-merge", "rebase"), ("rebase-apply", "rebase"), ("MERGE_HEAD", "merge"),
    ("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert"), ("BISECT_LOG", "bisect"),
)
MAX_LISTED = 200  # dirty/untracked/changed files listed; the counts stay exact


@dataclass
class Freshness:
    """How one piece of evidence compares with HEAD."""

    state: str  # fresh | stale | unknown | unbound (not tied to code)
    commit: Optional[str] = None  # the commit it vouches for, after following remaps
    changed: list[str] = field(default_factory=list)  # files that differ from HEAD
    reason: Optional[str] = None


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
    evidence: dict[str, Freshness] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        # Shallow by hand: dataclasses.asdict deep-copies every list, which is slow here.
        doc = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        doc["evidence"] = {k: vars(v).copy() for k, v in self.evidence.items()}
        return doc


def inspect(
    repo: gateway.Repo, *, state_ref: str, snapshot: dict[str, Any], remaps: Mapping[str, str],
    config: Optional[dict[str, str]] = None, ci: bool = True, offline: bool = False,
    reader: Optional[gateway.ObjectReader] = None,
) -> Environment:
    """Look at the working tree, the state branch, CI and evidence freshness, right now."""
    config = read_config(repo) if config is None else config
    env = Environment(host=local_host(),
                      worktree=str(repo.work_tree) if repo.work_tree else None)
    if repo.work_tree is not None:
        _read_worktree(repo, env)
    else:
        env.head = _rev(repo, "HEAD")
    env.state = state_branch(repo, state_ref, remote=config.get("loopx.remote", "origin"))
    if env.head:
        env.tree = _head_tree(repo, env.head, reader)
    env.evidence = freshness(repo, _evidence_in_play(snapshot), env, remaps, reader=reader)
    env.ci = _ci(repo, env, snapshot, config, enabled=ci, offline=offline)
    return env


def local_host() -> str:
    """This machine's name, as sessions record it and status compares it
    (``$LOOPX_HOST`` overrides, for tests)."""
    return os.environ.get("LOOPX_HOST") or os.uname().nodename or "localhost"


def read_config(repo: gateway.Repo) -> dict[str, str]:
    """Every ``loopx.*`` git config value in one process (keys lower-cased by git)."""
    proc = gateway.run(repo.cwd, "config", "-z", "--get-regexp", r"^loopx\.", check=False)
    values: dict[str, str] = {}
    for item in proc.stdout.decode("utf-8", "replace").split("\0"):
        key, _, value = item.partition("\n")
        if key:
            values[key] = value
    return values


def _rev(repo: gateway.Repo, rev: str) -> Optional[str]:
    proc = gateway.run(repo.cwd, "rev-parse", "--verify", "-q", rev, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def _head_tree(repo: gateway.Repo, head: str, reader: Optional[gateway.ObjectReader]) -> Optional[str]:
    """HEAD's tree, through the caller's cat-file process when there is one."""
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
    """Events on ``ref`` not yet pushed, and events fetched but not merged."""
    short = ref.removeprefix("refs/heads/")
    tracking = f"refs/remotes/{remote}/{short}"
    result: dict[str, Any] = {"ref": ref, "remote": remote, "tracking": None,
                              "unpushed": 0, "unmerged": 0}
    proc = gateway.run(repo.cwd, "rev-list", "--left-right", "--count", f"{ref}...{tracking}",
                   check=False)
    if proc.returncode != 0:  # no remote-tracking branch (never pushed or fetched), or no ledger
        return result
    result["tracking"] = tracking
    ahead, behind = (int(n) for n in proc.stdout.split())
    if ahead or behind:
        base = gateway.out(repo.cwd, "merge-base", ref, tracking, check=False) or None
        result["unpushed"] = _events_between(repo, base, ref) if ahead else 0
        result["unmerged"] = _events_between(repo, base, tracking) if behind else 0
    return result


def _events_between(repo: gateway.Repo, base: Optional[str], tip: str) -> int:
    args = ("diff-tree", "-r", "--name-only", "--diff-filter=A", "--no-commit-id", "-z")
    if base is None:
        raw = gateway.run(repo.cwd, "ls-tree", "-r", "--name-only", "-z", tip).stdout
    else:
        raw = gateway.run(repo.cwd, *args, base, tip).stdout
    return sum(1 for name in raw.split(b"\0") if name.startswith(b"events/"))


# --- evidence freshness ----------------------------------------------------------------------------


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


def freshness(
    repo: gateway.Repo, evidence: Iterable[dict[str, Any]], env: Environment, remaps: Mapping[str, str],
    *, reader: Optional[gateway.ObjectReader] = None,
) -> dict[str, Freshness]:
    """Compare each evidence's commit and tree with HEAD (one diff per distinct tree)."""
    items = [e for e in evidence if e.get("kind") != "note"]
    bound = [e for e in items if e.get("commit") or e.get("tree")]
    result = {e["id"]: Freshness("unbound") for e in items if e not in bound}
    if not bound:
        return result
    trees = _evidence_trees(repo, bound, remaps, reader)
    diffs = _diffs(repo, {t for t, _ in trees.values() if t and t != env.tree}, env.tree)
    for ev in bound:
        tree, commit = trees[ev["id"]]
        result[ev["id"]] = _judge(ev, tree, commit, env, diffs)
    return result


def _judge(ev: dict[str, Any], tree: Optional[str], commit: Optional[str], env: Environment,
           diffs: dict[str, list[str]]) -> Freshness:
    if tree is None:
        return Freshness("unknown", commit, reason=f"commit {(commit or '?')[:12]} is not in this repository")
    if env.tree is None:
        return Freshness("unknown", commit, reason="no HEAD to compare with")
    changed = sorted(set(diffs.get(tree, [])) | set(env.dirty))
    if ev.get("dirty"):
        return Freshness("stale", commit, changed[:MAX_LISTED],
                         reason="recorded on a work tree with uncommitted changes")
    if tree == env.tree and not env.dirty:
        return Freshness("fresh", commit)
    what = "uncommitted changes" if tree == env.tree else f"{len(changed)} file(s) changed since"
    return Freshness("stale", commit, changed[:MAX_LISTED], reason=what)


def _evidence_trees(
    repo: gateway.Repo, bound: list[dict[str, Any]], remaps: Mapping[str, str],
    reader: Optional[gateway.ObjectReader],
) -> dict[str, tuple[Optional[str], Optional[str]]]:
    """evidence id -> (tree it vouches for if present here, commit after remaps)."""
    wanted: dict[str, str] = {}  # object name to look up -> kind
    plan: dict[str, tuple[Optional[str], str, str]] = {}
    for ev in bound:
        commit = follow(remaps, ev["commit"]) if ev.get("commit") else None
        moved = commit is not None and commit != ev["commit"]
        # After a rebase the recorded tree is the old one: the new commit's tree is what counts.
        name = commit if (moved or not ev.get("tree")) else ev["tree"]
        assert name is not None  # bound evidence has a commit or a tree
        wanted[name] = "commit" if name == commit else "tree"
        plan[ev["id"]] = (commit, name, wanted[name])
    found = _read_objects(repo, list(wanted), reader)
    out: dict[str, tuple[Optional[str], Optional[str]]] = {}
    for ev_id, (commit, name, kind) in plan.items():
        obj = found.get(name)
        tree = None
        if obj is not None:
            tree = _commit_tree(obj[1]) if obj[0] == "commit" else (name if obj[0] == "tree" else None)
        out[ev_id] = (tree, commit)
    return out


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


def _diffs(repo: gateway.Repo, trees: set[str], head_tree: Optional[str]) -> dict[str, list[str]]:
    """tree -> files that differ from HEAD's tree: one ``diff-tree`` per distinct tree."""
    if not head_tree:
        return {}
    result = {}
    for tree in sorted(trees):
        raw = gateway.run(repo.cwd, "diff-tree", "-r", "--name-only", "-z", "--no-renames",
                      tree, head_tree, check=False).stdout
        result[tree] = [n.decode("utf-8", "surrogateescape") for n in raw.split(b"\0") if n]
    return result


# --- CI -----------------------------------------------------------------------------------------


def _ci(repo: gateway.Repo, env: Environment, snapshot: dict[str, Any], config: dict[str, str],
        *, enabled: bool, offline: bool) -> dict[str, Any]:
    provider = config.get("loopx.ci.provider")
    if not provider or not enabled or env.head is None:
        detail = None if provider else "no CI provider configured (git config loopx.ci.provider)"
        return {"provider": provider, "state": "unknown", "checks": [],
                "detail": detail if enabled else "CI not checked (--no-ci)"}
    from loopx.features import ci

    status = ci.check(env.head, provider=provider, repo=repo, config=config,
                      snapshot=snapshot, offline=offline)
    return status.as_dict()

