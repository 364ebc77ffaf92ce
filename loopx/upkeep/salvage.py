"""Salvage: what a damaged state branch still holds, and a way on that keeps every event it can.

A state branch can lose objects (a `git gc --prune=now` beside a writer that did not settle
its objects, a disk fault) or events (a commit made on a checked-out loopx/state from a
stale index deletes the files added since). :func:`scan` names exactly what is missing or
deleted; :func:`repair` first fetches missing objects back from the remotes (nothing lost
when one has them), then writes a new state commit holding every event file that is still
readable anywhere at hand, on top of the newest whole commit, and lists what is lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from loopx.errors import GitError, NotFound
from loopx.model.paths import PATH_RE
from loopx.storage import gateway
from loopx.storage.gateway import Oid
from loopx.ledger import layout
from loopx.storage.store import Store
from loopx.storage.trees import BLOB_MODE, TREE_MODE

MAX_SOURCES = 20  # reflog entries and ancestors tried as a base or a copy of lost files


@dataclass
class Scan:
    """What the commit a state ref holds still has, and what it lacks."""

    ref: str
    tip: str
    commit_missing: bool = False
    missing_trees: list[str] = field(default_factory=list)  # directory paths ("" is the root)
    lost: dict[str, str] = field(default_factory=dict)  # path -> oid of a missing blob
    readable: dict[str, str] = field(default_factory=dict)  # path -> oid of a present blob
    deleted: dict[str, str] = field(default_factory=dict)  # path -> oid an ancestor added
    modified: list[str] = field(default_factory=list)

    @property
    def whole(self) -> bool:
        return not (self.commit_missing or self.missing_trees or self.lost)

    @property
    def ok(self) -> bool:
        return self.whole and not self.deleted and not self.modified

    def problems(self) -> list[str]:
        """One line per thing wrong, naming the events."""
        if self.commit_missing:
            return [f"{self.ref} points at {self.tip[:12]}, which is missing: the events of its "
                    "commits that no other copy holds are lost (`git loopx doctor --repair`)"]
        lines = [f"directory {p or '(root)'} of {self.tip[:12]} is missing: the event files in "
                 "it are lost unless another copy has them" for p in self.missing_trees]
        lines += [f"event {_name(p)} is lost: its file {p} ({oid[:12]}) is missing"
                  for p, oid in sorted(self.lost.items())]
        lines += [f"event {_name(p)} was deleted from {self.ref} after an earlier commit added "
                  "it (`git loopx doctor --repair` puts it back)" for p in sorted(self.deleted)]
        lines += [f"{p} was changed after an earlier commit added it (event files are never "
                  "changed; see `git loopx validate`)" for p in self.modified]
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {"tip_missing": self.commit_missing, "missing_trees": self.missing_trees,
                "lost_events": [_event(p, oid) for p, oid in sorted(self.lost.items())],
                "deleted_events": [_event(p, oid) for p, oid in sorted(self.deleted.items())],
                "modified": self.modified}


def _name(path: str) -> str:
    match = PATH_RE.fullmatch(path)
    return f"{match.group(4)} ({match.group(5)})" if match else path


def _event(path: str, oid: str) -> dict[str, Any]:
    match = PATH_RE.fullmatch(path)
    return {"path": path, "oid": oid, "id": match.group(4) if match else None,
            "type": match.group(5) if match else None}


def scan(store: Store, ref: str, tip: str) -> Scan:
    """What commit ``tip`` of ``ref`` holds, lacks, and lost to deletions in its history."""
    found = Scan(ref, tip)
    root = _root_tree(store, tip)
    if root is None:
        found.commit_missing = True
        return found
    files = _walk(store, root, found.missing_trees)
    absent = set(store.missing(list(files.values())))
    for path, oid in files.items():
        (found.lost if oid in absent else found.readable)[path] = oid
    if found.whole:
        _history(store, tip, files, found)
    return found


def _root_tree(store: Store, commit: str) -> Optional[str]:
    found = store.reader.read(commit)
    if found is None or found[0] != "commit" or not found[1].startswith(b"tree "):
        return None
    return found[1][5:].split(b"\n", 1)[0].decode()


def _walk(store: Store, root: str, missing: list[str]) -> dict[str, str]:
    """path -> blob oid of every file under tree ``root`` that can be listed, one batch of
    tree reads per level; directories whose tree is gone go into ``missing``."""
    files: dict[str, str] = {}
    level = [("", root)]
    while level:
        following = []
        for (path, _), entries in zip(level, store.read_trees([oid for _, oid in level])):
            if entries is None:
                missing.append(path)
                continue
            for name, (mode, child) in entries.items():
                where = f"{path}/{name}" if path else name
                if mode == TREE_MODE:
                    following.append((where, child))
                else:
                    files[where] = child
        level = following
    return files


def _history(store: Store, tip: str, files: dict[str, str], found: Scan) -> None:
    """Files an earlier commit added that the tip lacks or holds with other content."""
    try:
        raw = gateway.run(store.cwd, "log", "-m", "--raw", "--no-renames", "--no-abbrev", "-z",
                          "--format=", tip, "--", "events", "sessions").stdout
    except GitError:
        return  # history with missing objects: the damage is reported already
    first: dict[str, str] = {}
    items = iter(raw.split(b"\0"))
    for item in items:  # ":<mode> <mode> <oid> <oid> <status>" then the path, per change
        fields = item.decode("utf-8", "replace").strip().lstrip(":").split(" ")
        if len(fields) != 5:
            continue
        name = next(items, b"").decode("utf-8", "surrogateescape")
        if fields[4] == "A":
            first[name] = fields[3]  # newest first: the oldest addition wins
    for path, oid in first.items():
        if path not in files:
            found.deleted[path] = oid
        elif files[path] != oid:
            found.modified.append(path)
    gone = set(store.missing(list(found.deleted.values())))
    found.lost.update({p: o for p, o in found.deleted.items() if o in gone})
    found.deleted = {p: o for p, o in found.deleted.items() if o not in gone}
    found.modified.sort()


def repair(store: Store, ref: str) -> dict[str, Any]:
    """Make ``ref`` whole again, keeping every event file still at hand (under the clone lock,
    by compare-and-swap). Returns what was done and what is lost."""
    target = store.ref_target(ref)
    if target is None:
        raise NotFound(f"{ref} does not exist; nothing to repair")
    found = scan(store, ref, target)
    if found.ok:
        return {"repaired": False, "tip": target, "reason": f"{ref} is whole; nothing to repair"}
    fetched: list[str] = []
    if not found.whole:
        fetched = _refetch(store, ref)
        found = scan(store, ref, target) if fetched else found
        if found.ok:
            _drop_scratch(store, fetched)
            return {"repaired": True, "how": "restored", "tip": target, "from": fetched,
                    "lost": []}
    try:
        return _rebuild(store, ref, target, found, fetched)
    finally:
        _drop_scratch(store, fetched)


def _drop_scratch(store: Store, fetched: list[str]) -> None:
    """The refs the refetch used: what it brought that we need is reachable from ref now."""
    for remote in fetched:
        scratch = f"refs/loopx/restore/{remote}"
        oid = store.ref_target(scratch)
        if oid:
            store.delete_ref_if(scratch, expected=oid)


def _refetch(store: Store, ref: str) -> list[str]:
    """Fetch every object of each remote's ``ref`` (no negotiation: ours may be broken); the
    remotes that answered."""
    answered = []
    for remote in gateway.out(store.cwd, "remote").split():
        scratch = f"refs/loopx/restore/{remote}"
        proc = gateway.run(store.cwd, "fetch", "--refetch", "--no-tags", "--no-write-fetch-head",
                           "--quiet", remote, f"+{ref}:{scratch}", check=False)
        if proc.returncode == 0:
            answered.append(remote)
    return answered


def _rebuild(store: Store, ref: str, target: str, found: Scan,
             fetched: list[str]) -> dict[str, Any]:
    """A new commit holding every event file still readable (deleted ones put back, files
    outside the state layout left out), on the newest whole commit."""
    files = dict(found.readable)
    files.update(found.deleted)
    copies = _sources(store, ref, target, fetched)
    if not found.whole:  # files whose directory or blob is gone here may be readable there
        for commit in copies:
            other = scan(store, ref, commit) if commit != target else None
            for path, oid in (other.readable.items() if other else ()):
                files.setdefault(path, oid)
    files = {p: o for p, o in files.items() if layout.path_rule(p, BLOB_MODE) is None}
    base = target if found.whole else next(
        (c for c in copies if c != target and _whole(store, c)), None)
    before = _files(store, base)
    store.journal()
    tree = store.write_tree(None, {p: Oid(o) for p, o in files.items()})
    put_back = sorted(set(files) - before)
    message = f"loopx: doctor --repair ({len(put_back)} files put back on {base or 'nothing'})\n"
    commit = store.commit_tree(tree, [base] if base else [], message,
                               author=("loopx doctor", "doctor@loopx.invalid"))
    store.update_ref_if(ref, commit, expected=target, reason="loopx: doctor --repair")
    store.settle()
    # Reflog entries that still name the broken commits would make every `git gc` fail
    # ("unable to read"): drop those, and only those.
    gateway.run(store.cwd, "reflog", "expire", "--stale-fix", "--expire=never",
                "--expire-unreachable=never", ref, check=False)
    lost = {p: o for p, o in found.lost.items() if p not in files}
    unknown = [p for p in found.missing_trees if not any(f.startswith(f"{p}/") for f in put_back)]
    return {"repaired": True, "how": "rebuilt", "from": target, "to": commit, "base": base,
            "fetched_from": fetched, "put_back": put_back,
            "removed": sorted(before - set(files)),
            "lost": [_event(p, o) for p, o in sorted(lost.items())],
            "unknown": ([f"the tip commit {target[:12]} itself: events only it held"]
                        if found.commit_missing else [])
            + [f"files under {p or '(root)'}" for p in unknown]}


def _sources(store: Store, ref: str, target: str, fetched: list[str]) -> list[str]:
    """Commits that may still hold the ref's events, newest first: the tip's ancestors, the
    ref's reflog, and what the remotes hold."""
    found: list[str] = []
    ancestors = gateway.run(store.cwd, "rev-list", "--first-parent", f"--max-count={MAX_SOURCES}",
                            target, check=False).stdout.decode().split()
    logged = [new for _, new, _ in store.reflog(ref)][:MAX_SOURCES]
    remotes = [store.ref_target(f"refs/loopx/restore/{r}") for r in fetched]
    for commit in [*ancestors, *logged, *remotes]:
        if commit and commit not in found and store.resolve(commit):
            found.append(commit)
    return found


def _whole(store: Store, commit: str) -> bool:
    proc = gateway.run(store.cwd, "fsck", "--connectivity-only", "--no-dangling", "--no-progress",
                       commit, check=False)
    return proc.returncode == 0


def _files(store: Store, commit: Optional[str]) -> set[str]:
    if commit is None:
        return set()
    return {e.path for e in store.list_files(commit)}
