"""The only module that writes git objects and moves refs.

Plumbing only: blobs (``hash-object``), trees (``mktree``), commits (``commit-tree``) and
compare-and-swap ref updates (``update-ref <ref> <new> <old>``). The user's index, working
tree, HEAD and current branch are never touched. Reads are batched: one ``ls-tree -r`` per
tree listing and one long-lived ``cat-file --batch`` for contents.

One clone's writers are serialised by :meth:`Store.lock`, an ``flock`` on a file in the common
git dir: the kernel drops it when its holder dies, so a killed writer never leaves a lock that
needs a manual unlock. The CAS on the ref keeps us safe against every other writer.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from loopx.storage import gateway
from loopx.storage import packfile
from loopx.errors import ConflictError, GitError, LockTimeout, RefRaceError
from loopx.storage.gateway import Oid, RefName

STATE_REF = RefName("refs/heads/loopx/state")
QUARANTINE_PREFIX = "refs/loopx/quarantine/"
LOCK_TIMEOUT_S = 60.0
# git's own ref lock (<ref>.lock) is held for milliseconds; one older than this was left by a
# killed process and is removed while we hold our clone lock.
STALE_REF_LOCK_S = 2.0

# git's own default for gc.auto: about this many loose objects make `git gc --auto` pack them.
GC_AUTO_LOOSE = 6700

# A batch at least this big is written as one pack rather than as loose objects.
PACK_MIN_BLOBS = 16

BLOB_MODE = "100644"
TREE_MODE = "40000"


@dataclass(frozen=True, slots=True)  # slots: a tree listing of a long ledger holds many
class Entry:
    """One file of a tree listing."""

    path: str
    mode: str
    type: str
    oid: Oid


class Store:
    """Git object and ref access for one repository."""

    def __init__(self, repo: gateway.Repo) -> None:
        self.repo = repo
        self.cwd = repo.cwd
        self._reader: gateway.ObjectReader | None = None
        self._hash_len: int | None = None

    # --- reads ------------------------------------------------------------------------------

    @property
    def reader(self) -> gateway.ObjectReader:
        if self._reader is None:
            self._reader = gateway.ObjectReader(self.cwd)
        return self._reader

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def resolve(self, rev: str) -> Oid | None:
        """The commit a ref or revision names, or None when it does not exist."""
        proc = gateway.run(self.cwd, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}", check=False)
        if proc.returncode != 0:
            return None
        oid = Oid(proc.stdout.decode().strip())
        if self._hash_len is None:  # an oid's length tells the object format for free
            self._hash_len = len(oid)
        return oid

    def tip(self, ref: str = STATE_REF) -> Oid | None:
        return self.resolve(ref)

    def list_files(self, commit: str) -> list[Entry]:
        """Every file in ``commit``'s tree, recursively (one ``ls-tree`` process)."""
        raw = gateway.run(self.cwd, "ls-tree", "-r", "-z", "--full-tree", commit).stdout
        return [_parse_ls_tree(item) for item in raw.split(b"\0") if item]

    def added_files(self, old: str, new: str) -> list[tuple[str, str, Entry]]:
        """(status, old_oid, entry) for each file that differs between two commits' trees."""
        raw = gateway.run(
            self.cwd, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", old, new
        ).stdout.split(b"\0")
        changes = []
        for meta, path in zip(raw[0::2], raw[1::2]):
            if not meta:
                continue
            src_mode, dst_mode, src_oid, dst_oid, status = meta.decode().lstrip(":").split(" ")
            entry = Entry(path.decode("utf-8", "surrogateescape"), dst_mode, "blob", Oid(dst_oid))
            changes.append((status, src_oid, entry))
        return changes

    def read_blobs(self, oids: list[str]) -> list[bytes | None]:
        """Contents of many blobs through the one cat-file process (None if missing)."""
        return [item[1] if item else None for item in self.reader.read_many(oids)]

    def read_tree(self, rev: str) -> dict[str, tuple[str, str]]:
        """name -> (mode, oid) of the tree ``rev`` names (empty when it is not a tree)."""
        found = self.reader.read(rev)
        if found is None or found[0] != "tree":
            return {}
        return _parse_tree(found[1], self.hash_len // 2)

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        proc = gateway.run(self.cwd, "merge-base", "--is-ancestor", ancestor, descendant, check=False)
        return proc.returncode == 0

    def merge_base(self, a: str, b: str) -> Oid | None:
        proc = gateway.run(self.cwd, "merge-base", a, b, check=False)
        return Oid(proc.stdout.decode().strip()) if proc.returncode == 0 else None

    # --- writes -----------------------------------------------------------------------------

    def write_blobs(self, contents: list[bytes]) -> list[Oid]:
        """Write blobs with one git process; returns their oids."""
        if len(contents) >= PACK_MIN_BLOBS:
            return self._write_pack(contents)
        return self._write_objects("blob", contents)

    def _write_objects(self, kind: str, contents: list[bytes]) -> list[Oid]:
        """Write objects of one kind with one ``hash-object -w`` process; returns their oids."""
        if not contents:
            return []
        if len(contents) == 1:  # the common single object: no scratch files
            out = gateway.run(self.cwd, "hash-object", "-t", kind, "-w", "--no-filters", "--stdin",
                          input=contents[0]).stdout
            return [Oid(o) for o in out.decode().split()]
        scratch = self.repo.loopx_dir / "tmp" / f"{os.getpid()}-{time.monotonic_ns()}"
        scratch.mkdir(parents=True)
        paths = [str(scratch / str(index)) for index in range(len(contents))]
        try:
            for path, data in zip(paths, contents):
                with open(path, "wb") as handle:
                    handle.write(data)
            out = gateway.run(
                self.cwd, "hash-object", "-t", kind, "-w", "--no-filters", "--stdin-paths",
                input="\n".join(paths).encode() + b"\n",
            ).stdout
        finally:
            for path in paths:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            scratch.rmdir()
        return [Oid(o) for o in out.decode().split()]

    def _write_pack(self, contents: list[bytes]) -> list[Oid]:
        # One pack file and one fsync for the whole batch, instead of one loose object each.
        # mktree later refuses any entry whose blob is missing, so a wrong oid cannot slip by.
        algo = hashlib.sha256 if self.hash_len == 64 else hashlib.sha1
        data = packfile.blobs(contents, algo)
        out = gateway.out(self.cwd, "index-pack", "--stdin", input=data)
        if out.split()[-1:] != [data[-self.hash_len // 2 :].hex()]:
            raise GitError(["index-pack"], 1, f"unexpected index-pack output: {out!r}")
        return [Oid(packfile.object_id(blob, algo)) for blob in contents]

    def write_tree(self, base_commit: str | None, additions: dict[str, Oid]) -> Oid:
        """The tree of ``base_commit`` plus ``additions`` (path -> existing blob oid).

        Adding a path that exists with the same blob is a no-op; with another blob it is a
        ConflictError: event files are never modified.
        """
        dirs = _TreeBuilder(self, base_commit)
        for path, oid in additions.items():
            dirs.add(path, oid)
        return dirs.write()

    def commit_tree(
        self, tree: str, parents: list[str], message: str, *, author: tuple[str, str],
        sign: bool = False,
    ) -> Oid:
        name, email = author
        ident = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
                 "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        if sign:
            args.append("-S")
        proc = gateway.run(self.cwd, *args, input=message.encode(), env=ident)
        return Oid(proc.stdout.decode().strip())

    def update_ref_if(self, ref: str, new: str, *, expected: str | None, reason: str) -> None:
        """Move ``ref`` to ``new`` only if it is still at ``expected`` (None: must not exist).

        Raises RefRaceError when someone else moved it first; the caller re-reads and retries.
        """
        old = expected or "0" * self.hash_len
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            proc = gateway.run(
                self.cwd, "update-ref", "--create-reflog", "-m", reason, ref, new, old,
                check=False,
            )
            if proc.returncode == 0:
                return
            stderr = proc.stderr.decode("utf-8", "replace")
            if "File exists" in stderr and time.monotonic() < deadline:
                self._clear_stale_ref_lock(ref)
                time.sleep(0.02)
                continue
            if "but expected" in stderr or "already exists" in stderr or "reference already" in stderr:
                raise RefRaceError(f"{ref} moved while we were writing; retry from its new tip")
            raise GitError(["update-ref", ref], proc.returncode, stderr)

    def delete_ref_if(self, ref: str, *, expected: str) -> None:
        gateway.run(self.cwd, "update-ref", "-d", ref, expected)

    def clear_stale_ref_lock(self, ref: str) -> None:
        """Remove git's ``<ref>.lock`` if a killed process left it (older than a few seconds)."""
        self._clear_stale_ref_lock(ref)

    def _clear_stale_ref_lock(self, ref: str) -> None:
        lock = self.repo.common_dir / f"{ref}.lock"
        with contextlib.suppress(FileNotFoundError):
            if time.time() - lock.stat().st_mtime > STALE_REF_LOCK_S:
                lock.unlink()

    @property
    def hash_len(self) -> int:
        if self._hash_len is None:
            fmt = gateway.out(self.cwd, "rev-parse", "--show-object-format", check=False)
            self._hash_len = 64 if fmt.strip() == "sha256" else 40
        return self._hash_len

    def hash_tree(self, content: bytes) -> Oid:
        algo = hashlib.sha256 if self.hash_len == 64 else hashlib.sha1
        return Oid(algo(b"tree %d\0" % len(content) + content).hexdigest())

    def reflog(self, ref: str = STATE_REF) -> list[tuple[Oid, Oid, str]]:
        """(old, new, message) for each reflog entry of ``ref``, newest first."""
        path = self.repo.common_dir / "logs" / ref
        try:
            lines = path.read_text("utf-8", "replace").splitlines()
        except FileNotFoundError:
            return []
        entries = []
        for line in reversed(lines):
            head, _, message = line.partition("\t")
            parts = head.split(" ")
            if len(parts) >= 2:
                entries.append((Oid(parts[0]), Oid(parts[1]), message))
        return entries

    def maintain(self) -> None:
        """Let git pack loose objects once there are enough of them, as `git gc --auto` would
        after a porcelain command: single appends leave a blob, a few trees and a commit each.

        Counts the files of one object directory, as git does to estimate (``objects/17``:
        1/256 of them); only past the threshold does it start ``git gc --auto`` in the
        background, which honours ``gc.auto`` (0 turns it off) and prunes nothing younger
        than ``gc.pruneExpire`` (two weeks): safe beside writers.
        """
        try:
            loose = len(os.listdir(self.repo.common_dir / "objects" / "17"))
        except OSError:
            return
        if loose * 256 > GC_AUTO_LOOSE:
            gateway.spawn(self.cwd, "gc", "--auto", "--quiet")

    # --- the clone lock ---------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
        """Serialise loopx writers of this clone (all worktrees share it)."""
        self.repo.loopx_dir.mkdir(parents=True, exist_ok=True)
        path = self.repo.loopx_dir / "write.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _acquire(fd, path, timeout)
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    def lock_holder(self) -> int | None:
        """The pid holding the clone lock right now, or None when it is free."""
        path = self.repo.loopx_dir / "write.lock"
        if not path.exists():
            return None
        fd = os.open(path, os.O_RDWR)
        try:
            try:
                _flock(fd, blocking=False)
            except BlockingIOError:
                text = _read_holder(path)
                return int(text) if text.isdigit() else -1
            return None
        finally:
            os.close(fd)


def _flock(fd: int, *, blocking: bool) -> None:
    fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))


def _acquire(fd: int, path: Path, timeout: float) -> None:
    """Wait for the lock. Only one holder keeping it past ``timeout`` is an error: under heavy
    contention the lock changes hands constantly and waiting longer is progress, not a hang."""
    holder, deadline = None, time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            _flock(fd, blocking=False)
            return
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
        current = _read_holder(path)
        if current != holder:
            holder, deadline = current, time.monotonic() + timeout
        elif time.monotonic() > deadline:
            raise LockTimeout(
                f"another loopx writer (pid {holder or 'unknown'}) has held {path} for over "
                f"{timeout:.0f}s; it is released automatically when that process exits"
            )
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 0.01)


def _read_holder(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _parse_ls_tree(item: bytes) -> Entry:
    meta, _, path = item.partition(b"\t")
    mode, kind, oid = meta.decode().split(" ")
    return Entry(path.decode("utf-8", "surrogateescape"), mode, kind, Oid(oid))


class _TreeBuilder:
    """Adds files to an existing tree, rewriting only the directories on their paths."""

    def __init__(self, store: Store, base_commit: str | None) -> None:
        self.store = store
        self.base_commit = base_commit
        # directory path ("" for root) -> {name: (mode, oid)}
        self.dirs: dict[str, dict[str, tuple[str, str]]] = {}

    def _load(self, path: str) -> dict[str, tuple[str, str]]:
        if path in self.dirs:
            return self.dirs[path]
        entries: dict[str, tuple[str, str]] = {}
        if self.base_commit is not None:
            entries = self.store.read_tree(f"{self.base_commit}^{{tree}}:{path}" if path
                                           else f"{self.base_commit}^{{tree}}")
        self.dirs[path] = entries
        return entries

    def add(self, path: str, oid: Oid) -> None:
        parent, _, name = path.rpartition("/")
        ancestors = parent.split("/") if parent else []
        for depth in range(len(ancestors) + 1):
            self._load("/".join(ancestors[:depth]))
        entries = self._load(parent)
        existing = entries.get(name)
        if existing is not None and existing != (BLOB_MODE, oid):
            raise ConflictError(f"{path} already exists with different content")
        entries[name] = (BLOB_MODE, oid)

    def write(self) -> Oid:
        # Deepest directories first, so each parent can refer to its children's new oids.
        contents: list[bytes] = []
        oids: list[Oid] = []
        for path in sorted(self.dirs, key=lambda p: (-p.count("/") - bool(p), p)):
            content = _format_tree(self.dirs[path])
            oid = self.store.hash_tree(content)
            if path:
                parent, _, name = path.rpartition("/")
                self.dirs[parent][name] = (TREE_MODE, oid)
            contents.append(content)
            oids.append(oid)
        # hash-object rather than mktree: mktree takes ~50 ms per 4,000 entries (git 2.39),
        # and a busy day's directory holds that many events.
        written = self.store._write_objects("tree", contents)
        if written != oids:
            raise GitError(["hash-object"], 1,
                           f"tree oid mismatch: git {written[-1:]}, ours {oids[-1:]}")
        return oids[-1]


def _parse_tree(data: bytes, raw_len: int) -> dict[str, tuple[str, str]]:
    entries: dict[str, tuple[str, str]] = {}
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        mode = data[pos:space].decode()
        name = data[space + 1 : nul].decode("utf-8", "surrogateescape")
        oid = data[nul + 1 : nul + 1 + raw_len].hex()
        entries[name] = (mode, oid)
        pos = nul + 1 + raw_len
    return entries


def _tree_sort_key(item: tuple[str, tuple[str, str]]) -> bytes:
    name, (mode, _) = item
    raw = name.encode("utf-8", "surrogateescape")
    return raw + b"/" if mode == TREE_MODE else raw


def _format_tree(entries: dict[str, tuple[str, str]]) -> bytes:
    return b"".join(
        mode.encode() + b" " + name.encode("utf-8", "surrogateescape") + b"\0" + bytes.fromhex(oid)
        for name, (mode, oid) in sorted(entries.items(), key=_tree_sort_key)
    )
