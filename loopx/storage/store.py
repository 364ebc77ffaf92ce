"""The only module that writes git objects and moves refs.

Plumbing only: blobs (``hash-object``), trees (``mktree``), commits (``commit-tree``) and
compare-and-swap ref updates (``update-ref <ref> <new> <old>``). The user's index, working
tree, HEAD and current branch are never touched. Reads are batched: one ``ls-tree -r`` a
listing, cat-file for contents (no object over :data:`MAX_FILE_BYTES` is returned).

One clone's writers are serialised by :meth:`Store.lock`, an ``flock`` on a file in the common
git dir: the kernel drops it when its holder dies, so a killed writer never leaves a lock that
needs a manual unlock. The CAS on the ref keeps us safe against every other writer.

``git gc --prune=now`` may delete objects that no ref reaches yet, and a write's objects are
unreachable until its CAS. So a write keeps a journal of the objects it made (kind and
bytes, :meth:`Store.journal`), and after the CAS :meth:`Store.settle` checks that each is
present, rewrites any that went missing (same bytes, same ids) and only then lets the write
be acknowledged. Packs are written with ``index-pack --keep`` (what git's own fetch does) and
kept until then. See docs/reliability.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from loopx.errors import (DamagedLedger, DamagedRef, GitError, LockTimeout, LoopxError,
                          RefRaceError)
from loopx.storage import gateway, locks, packfile, refdamage, repacking, trees, worktrees
from loopx.storage.batches import Oversize
from loopx.storage.gateway import Oid, RefName

STATE_REF = RefName("refs/heads/loopx/state")
QUARANTINE_PREFIX = "refs/loopx/quarantine/"
_FULL_OID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # an object name, never a ref's
LOCK_TIMEOUT_S = 60.0
# How long a write waits, after its CAS, for a `git gc` that began before it to end.
GC_WAIT_S = 60.0
GC_PID_STALE_S = 12 * 3600  # git's own: an older gc.pid was left by a gc that died
# git's own ref lock (<ref>.lock) is held for milliseconds; one older than this was left by
# a killed process, and is removed while we hold our clone lock.
STALE_REF_LOCK_S = 2.0

# The largest file the state branch may hold (ledger.layout.AREAS: an event <= 256 KiB, a
# transcript chunk 192 KiB), refused from its header, never read; trees are capped far above.
MAX_FILE_BYTES = 256 * 1024
MAX_TREE_BYTES = 64 * 1024 * 1024

# A batch at least this big is written as one pack rather than as loose objects.
PACK_MIN_BLOBS = 16

# git's words for an object a command cannot find, and for an object directory that
# `git prune` removed (as empty) while git wrote into it.
_MISSING_OBJECT = re.compile(r"not a valid object|nonexistent object|bad object|"
                             r"unable to read|missing (?:blob|tree|commit)|is not a valid")
_GC_RACE = re.compile(r"unable to (?:write|create)|No such file or directory")
# ... and git's words for a write the machine refused: retrying cannot help.
_REFUSED = re.compile(r"No space left|Disk quota|File too large|Read-only file system|"
                      r"Permission denied|Operation not permitted")


class Entry(NamedTuple):
    """One file of a tree listing (a tuple: a ledger's listing builds a hundred thousand)."""

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
        # Objects written since journal(): oid -> (kind, bytes); and the packs kept meanwhile.
        self._journal: dict[Oid, tuple[str, bytes]] | None = None
        self._keeps: list[Path] = []
        # When set, no wait of this store lasts longer, in seconds: for the clone lock, a
        # ref's .lock or a running gc. A git hook sets it, so loopx never stalls git.
        self.wait_limit: float | None = None
        # (ancestor, descendant) commits found related: a sync asks the same ones again.
        self._ancestry: set[tuple[str, str]] = set()

    def max_wait(self, default: float) -> float:
        """How long to wait for something that usually takes ``default`` at most."""
        return default if self.wait_limit is None else min(default, self.wait_limit)

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
        if _FULL_OID.fullmatch(rev):  # an object name: asked of the long-lived cat-file
            found = self.reader.read_capped([f"{rev}^{{commit}}"], -1)[0]
            return Oid(found.oid) if isinstance(found, Oversize) and found.kind == "commit" else None
        proc = gateway.run(self.cwd, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}", check=False)
        if proc.returncode != 0:
            return None
        oid = Oid(proc.stdout.decode().strip())
        if self._hash_len is None:  # an oid's length tells the object format for free
            self._hash_len = len(oid)
        return oid

    def tip(self, ref: str = STATE_REF) -> Oid | None:
        """The commit ``ref`` points at; None when it does not exist and never did.

        Raises DamagedRef when it cannot be read, points at something other than a commit
        (a tree, a blob, a tag, a missing object: after refdamage.patiently looked again), or
        is gone while its reflog says it was there: damage to name, never "no ledger"."""
        return refdamage.patiently(lambda: self._tip(ref))

    def _tip(self, ref: str) -> Oid | None:
        loose = self._loose_tip(ref)
        if loose is not None:
            return loose
        proc = gateway.run(self.cwd, "for-each-ref",
                           "--format=%(refname)%00%(objectname)%00%(objecttype)%00%(symref)",
                           ref, check=False)
        if proc.returncode == 0:
            for line in proc.stdout.split(b"\n"):
                name, _, rest = line.partition(b"\0")
                if name.decode("utf-8", "surrogateescape") == ref:
                    oid, kind, symref = rest.decode().split("\0")
                    return self._commit_of(ref, Oid(oid), kind, symref)
        damage = refdamage.why(self, ref, proc.stderr.decode("utf-8", "replace"))
        if damage is not None:
            raise damage
        return None

    def _loose_tip(self, ref: str) -> Oid | None:
        """The commit ``ref``'s loose file names, its type from the loose object or cat-file
        (no git started for either file when loose); else None: git reads it, naming damage."""
        held = gateway.loose_ref(self.repo, ref)
        kind = (gateway.loose_object(self.repo, held, head_only=True) or ("",))[0] if held else ""
        found = self.reader.read_capped([held], -1)[0] if held and kind != "commit" else None
        if kind != "commit" and (not isinstance(found, Oversize) or found.kind != "commit"):
            return None
        return self._commit_of(ref, Oid(held or ""), "commit", "")

    def _commit_of(self, ref: str, oid: Oid, kind: str, symref: str) -> Oid:
        repair = "; nothing was changed. `git loopx doctor` offers the repair"
        if symref:
            raise DamagedRef(f"{ref} is a symbolic ref to {symref}, not a ref to a commit"
                             f"{repair}", kind="type")
        if kind != "commit":
            raise DamagedRef(f"{ref} points at a {kind} ({oid[:12]}), not a commit{repair}",
                             kind="type")
        if self._hash_len is None:  # an oid's length tells the object format for free
            self._hash_len = len(oid)
        return oid

    def checked_out(self, ref: str) -> list[str]:
        """The work trees that have branch ``ref`` checked out (see worktrees.checked_out)."""
        return worktrees.checked_out(self.repo, ref)

    def has_ref(self, ref: str) -> bool | None:
        """Whether ``ref`` exists, without starting git (see gateway.has_ref)."""
        return gateway.has_ref(self.repo, ref)

    def ref_target(self, ref: str) -> Oid | None:
        """What ``ref`` holds, whether or not that object exists (None: no such ref)."""
        proc = gateway.run(self.cwd, "rev-parse", "--verify", "-q", ref, check=False)
        return Oid(proc.stdout.decode().strip()) if proc.returncode == 0 else None

    def list_files(self, commit: str) -> list[Entry]:
        """Every file in ``commit``'s tree, recursively (one ``ls-tree`` process)."""
        text = gateway.run(self.cwd, "ls-tree", "-r", "-z", "--full-tree",
                           commit).stdout.decode("utf-8", "surrogateescape")
        one: dict[str, str] = {}  # each mode and type one string: 11 MB less at 100k files
        found = [Entry._make((p, one.setdefault(m, m), one.setdefault(k, k), o))
                 for m, k, o, p in _LS_TREE.findall(text)]
        if len(found) != text.count("\0"):
            raise LoopxError(f"git ls-tree printed a record not <mode> <type> <id>\t<path> ({commit})")
        return found

    def added_files(self, old: str, new: str) -> list[tuple[str, str, Entry]]:
        return list(self.changed_files(old, new))

    def changed_files(self, old: str, new: str) -> Iterator[tuple[str, str, Entry]]:
        """(status, old_oid, entry) for each file that differs between two commits' trees,
        read a block at a time (a caller may stop early: a tip refused many times over)."""
        for status, src_oid, path, mode, oid in trees.changed(self.cwd, old, new):
            yield status, src_oid, Entry(path, mode, "blob", Oid(oid))

    def read_blobs(self, oids: list[str], *,
                   max_size: int = MAX_FILE_BYTES) -> list[bytes | Oversize | None]:
        """Contents of many blobs (one cat-file): None if missing, Oversize over ``max_size``."""
        return [item if isinstance(item, Oversize) else item[1] if item else None
                for item in self.reader.read_capped(oids, max_size)]

    def read_tree(self, rev: str) -> dict[str, tuple[str, str]]:
        """name -> (mode, oid) of the tree ``rev`` names (empty when it is not a tree)."""
        found = self.reader.read_capped([rev], MAX_TREE_BYTES)[0]
        if isinstance(found, Oversize) and found.kind == "tree":
            raise LoopxError(f"tree {rev} is {found.size} bytes, over the "
                             f"{MAX_TREE_BYTES // 2**20} MiB loopx reads; it was not read")
        if found is None or isinstance(found, Oversize) or found[0] != "tree":
            return {}
        return trees.parse_tree(found[1], self.hash_len // 2)

    def read_trees(self, oids: list[str]) -> list[dict[str, tuple[str, str]] | None]:
        """name -> (mode, oid) of each tree, or None where that tree object is missing."""
        return [trees.parse_tree(found[1], self.hash_len // 2)
                if found is not None and not isinstance(found, Oversize) and found[0] == "tree"
                else None for found in self.reader.read_capped(oids, MAX_TREE_BYTES)]

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        pair = (ancestor, descendant)
        if pair in self._ancestry:  # two commits found related stay related
            return True
        proc = gateway.run(self.cwd, "merge-base", "--is-ancestor", ancestor, descendant, check=False)
        if proc.returncode == 0 and all(_FULL_OID.fullmatch(rev) for rev in pair):
            self._ancestry.add(pair)  # (not a ref name: that may move)
        return proc.returncode == 0

    def merge_base(self, a: str, b: str) -> Oid | None:
        proc = gateway.run(self.cwd, "merge-base", a, b, check=False)
        return Oid(proc.stdout.decode().strip()) if proc.returncode == 0 else None

    # --- writes -----------------------------------------------------------------------------

    def write_blobs(self, contents: list[bytes]) -> list[Oid]:
        """Write blobs with one git process; returns their oids."""
        if len(contents) >= PACK_MIN_BLOBS:
            return self._write_pack(contents)
        return self.write_objects("blob", contents)

    def write_objects(self, kind: str, contents: list[bytes]) -> list[Oid]:
        """Write objects of one kind with one ``hash-object -w`` process; returns their oids."""
        oids = self._hash_objects(kind, contents)
        self._record(kind, oids, contents)
        return oids

    def _hash_objects(self, kind: str, contents: list[bytes]) -> list[Oid]:
        if not contents:
            return []
        if len(contents) == 1:  # the common single object: no scratch files
            args = ["hash-object", "-t", kind, "-w", "--no-filters", "--stdin"]
            proc = self._retrying(lambda: gateway.run(self.cwd, *args, input=contents[0],
                                                      check=False))
            if proc.returncode != 0:
                raise GitError(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
            return [Oid(o) for o in proc.stdout.decode().split()]
        scratch = self.repo.loopx_dir / "tmp" / f"{os.getpid()}-{time.monotonic_ns()}"
        scratch.mkdir(parents=True)
        paths = [str(scratch / str(index)) for index in range(len(contents))]
        try:
            for path, data in zip(paths, contents):
                with open(path, "wb") as handle:
                    handle.write(data)
            args = ["hash-object", "-t", kind, "-w", "--no-filters", "--stdin-paths"]
            proc = self._retrying(lambda: gateway.run(
                self.cwd, *args, input="\n".join(paths).encode() + b"\n", check=False))
            if proc.returncode != 0:
                raise GitError(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
            out = proc.stdout
        finally:
            for path in paths:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            scratch.rmdir()
        return [Oid(o) for o in out.decode().split()]

    def _write_pack(self, contents: list[bytes]) -> list[Oid]:
        # One pack file and one fsync for the whole batch, instead of one loose object each.
        # mktree later refuses any entry whose blob is missing, so a wrong oid cannot slip by.
        # --keep: a concurrent `git repack -a -d` must not drop the pack before the ref reaches
        # its objects (git's own fetch does the same); settle() removes the .keep.
        algo = hashlib.sha256 if self.hash_len == 64 else hashlib.sha1
        data = packfile.blobs(contents, algo)
        out = gateway.out(self.cwd, "index-pack", "--stdin", f"--keep=loopx {os.getpid()}",
                          input=data)
        name = data[-self.hash_len // 2 :].hex()
        if out.split()[-1:] != [name]:
            raise GitError(["index-pack"], 1, f"unexpected index-pack output: {out!r}")
        self._keeps.append(self._objects_dir() / "pack" / f"pack-{name}.keep")
        oids = [Oid(packfile.object_id(blob, algo)) for blob in contents]
        self._record("blob", oids, contents)
        return oids

    def write_tree(self, base_commit: str | None, additions: dict[str, Oid]) -> Oid:
        """The tree of ``base_commit`` plus ``additions`` (path -> existing blob oid).

        Adding a path that exists with the same blob is a no-op; with another blob it is a
        ConflictError: event files are never modified. No additions give the base's own tree
        (a merge of a remote tip that brings nothing new still needs a commit)."""
        if not additions:
            return self.tree_of(base_commit)
        dirs = trees.TreeBuilder(self, base_commit)
        for path, oid in additions.items():
            dirs.add(path, oid)
        return dirs.write()

    def tree_of(self, commit: str | None) -> Oid:
        """The tree of ``commit`` (read through the long-lived cat-file)."""
        if commit is None:
            return self.hash_tree(b"")  # git knows the empty tree without it being written
        found = self.reader.read(commit)
        if found is None or found[0] != "commit" or not found[1].startswith(b"tree "):
            raise DamagedLedger(f"commit {commit} is missing from this repository; nothing was "
                                "written: run `git loopx doctor`")
        return Oid(found[1][5 : 5 + self.hash_len].decode())

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
        proc = self._retrying(lambda: gateway.run(self.cwd, *args, input=message.encode(),
                                                  env=ident, check=False))
        if proc.returncode != 0:
            raise GitError(args, proc.returncode, proc.stderr.decode("utf-8", "replace"))
        commit = Oid(proc.stdout.decode().strip())
        if self._journal is not None:
            # Its bytes, to rewrite it should a concurrent prune delete it before settle().
            found = self.reader.read(commit)
            if found is None:
                raise GitError(["commit-tree"], 1, f"commit {commit} vanished as it was written")
            self._journal[commit] = found
        return commit

    # --- the journal of a write, settled after its CAS -------------------------------------

    def journal(self) -> None:
        """Record from now on every object this store writes (kind and bytes), for settle()."""
        self._journal, self._keeps = {}, []

    def _record(self, kind: str, oids: list[Oid], contents: list[bytes]) -> None:
        if self._journal is not None:
            for oid, data in zip(oids, contents):
                self._journal[oid] = (kind, data)

    def settle(self) -> list[Oid]:
        """After the CAS that made the journal's objects reachable: make sure every one of
        them is on disk, rewriting those a concurrent ``git gc --prune=now`` deleted while
        they were unreachable (same bytes, same ids). Returns the oids rewritten; raises
        GitError if any stays missing. Ends the journal.
        """
        written, keeps = self._journal or {}, self._keeps
        self._journal, self._keeps = None, []
        if written:
            self._outlast_gc(time.time())
        rewritten: list[Oid] = []
        for _ in range(3):
            missing = self._rewrite_missing(written)
            if not missing:
                break
            rewritten += missing
        else:
            if self.missing(list(written)):
                raise GitError(["cat-file"], 1, "objects of this write stay missing after "
                               "rewriting them; run `git loopx doctor`")
        for keep in keeps + self._orphan_keeps():
            keep.unlink(missing_ok=True)
        return rewritten

    def _orphan_keeps(self) -> list[Path]:
        """.keep files a loopx writer killed before settle() left (its packs' objects are
        reachable or garbage by now; the .keep would only stop gc from repacking them)."""
        found = []
        for keep in (self._objects_dir() / "pack").glob("pack-*.keep"):
            word, _, pid = worktrees.first_line(keep).partition(" ")
            if word == "loopx" and (holder := locks.pid_of(pid)) and not locks.alive(holder):
                found.append(keep)
        return found

    def _retrying(self, call: Callable[[], subprocess.CompletedProcess[bytes]],
                  ) -> subprocess.CompletedProcess[bytes]:
        """Run ``call`` again when a concurrent `git gc` got in its way: an object it needs was
        pruned before any ref reached it (rewritten from the journal first), or the object
        directory it was writing into was removed as empty."""
        for attempt in range(5):
            proc = call()
            stderr = proc.stderr.decode("utf-8", "replace")
            if proc.returncode == 0 or attempt == 4:
                return proc
            if _REFUSED.search(stderr) or proc.returncode < 0:
                return proc  # the machine refused the write (no room, no permission): say so
            if self._journal and _MISSING_OBJECT.search(stderr):
                self._await_gc(self._running_gc())  # (or it prunes what we rewrite again)
                if not self._rewrite_missing(self._journal):
                    return proc
            elif not _GC_RACE.search(stderr):
                return proc
            time.sleep(0.005 * (attempt + 1))
        return proc

    def _rewrite_missing(self, written: dict[Oid, tuple[str, bytes]]) -> list[Oid]:
        """Rewrite the journal's objects that are missing now; returns their oids."""
        missing = self.missing(list(written))
        for kind in sorted({written[o][0] for o in missing}):
            wanted = [o for o in missing if written[o][0] == kind]
            again = self._hash_objects(kind, [written[o][1] for o in wanted])
            if again != wanted:
                raise GitError(["hash-object"], 1, f"rewrote {wanted} as {again}")
        return missing

    def missing(self, oids: list[str]) -> list[Oid]:
        """Which of ``oids`` are not in the object database, asked of a fresh ``cat-file``
        (a long-lived one may still see a pack that gc has just deleted)."""
        if not oids:
            return []
        out = gateway.run(self.cwd, "cat-file", "--batch-check=%(objectname)",
                          input="".join(f"{o}\n" for o in oids).encode()).stdout.decode()
        return [Oid(line.split()[0]) for line in out.splitlines() if line.endswith(" missing")]

    def _outlast_gc(self, cas: float) -> None:
        """Wait for a `git gc --prune=now` that began before our CAS to end (at most
        GC_WAIT_S).

        Its prune may have found our objects unreachable before the CAS and delete them at
        any moment until it ends: git takes "now" as "no age limit", so even a second-old
        object goes. A gc that began after the CAS sees them reachable, and one with the
        default expiry (two weeks; `gc --auto` too) keeps objects as young as ours. Git names
        the running gc in gc.pid, written when it starts and removed when it ends.
        """
        first = self._running_gc()
        self._await_gc(first if first is not None and first[1] <= cas else None)

    def _await_gc(self, running: tuple[int, float, int | None] | None) -> None:
        """Wait for the ``running`` gc (:meth:`_running_gc`) to end, at most GC_WAIT_S, if
        it prunes unreachable objects whatever their age."""
        if running is None or not self._prunes_everything(running[2]):
            return
        deadline = time.monotonic() + self.max_wait(GC_WAIT_S)
        while time.monotonic() < deadline and self._running_gc() == running:
            time.sleep(0.02)

    def _running_gc(self) -> tuple[int, float, int | None] | None:
        """(inode and start time of its gc.pid, pid or None on another host) of the
        `git gc` running in this repository, or None."""
        path = self.repo.common_dir / "gc.pid"
        try:
            pid, _, host = path.read_text().partition(" ")
            info = path.stat()
        except (OSError, ValueError):
            return None
        # Imported here: only a write meets a running gc; reads skip socket (start-up time).
        import socket

        holder = locks.pid_of(pid)
        if holder is None or time.time() - info.st_mtime > GC_PID_STALE_S:
            return None  # one git itself takes for no gc: no pid, or older than 12 hours
        if host.strip() != socket.gethostname():
            return info.st_ino, info.st_mtime, None
        if not locks.alive(holder):
            return None  # a gc killed earlier left its gc.pid behind
        return info.st_ino, info.st_mtime, holder

    def _prunes_everything(self, pid: int | None) -> bool:
        """Whether gc ``pid`` prunes unreachable objects whatever their age (``--prune=now``
        or ``all``, or gc.pruneExpire set so). Unknown (another host, no /proc): yes."""
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, TypeError):
            return True
        if b"--no-prune" in args:
            return False
        given = [a.partition(b"=")[2] for a in args if a.startswith(b"--prune=")]
        if given:
            return given[-1] in (b"now", b"all")
        expire = gateway.out(self.cwd, "config", "gc.pruneExpire", check=False)
        return expire in ("now", "all")

    def _objects_dir(self) -> Path:
        return self.repo.common_dir / "objects"

    def update_ref_if(self, ref: str, new: str, *, expected: str | None, reason: str) -> None:
        """Move ``ref`` to ``new`` only if it is still at ``expected`` (None: must not exist).

        Raises RefRaceError when someone else moved it first; the caller re-reads and retries."""
        old = expected or "0" * self.hash_len
        deadline = time.monotonic() + self.max_wait(LOCK_TIMEOUT_S)
        while True:
            proc = self._retrying(lambda: gateway.run(
                self.cwd, "update-ref", "--create-reflog", "-m", reason, ref, new, old,
                check=False,
            ))
            if proc.returncode == 0:
                return
            stderr = proc.stderr.decode("utf-8", "replace")
            if "File exists" in stderr and time.monotonic() < deadline:
                self._clear_stale_ref_lock(ref)
                time.sleep(0.02)
                continue
            if "File exists" in stderr:
                raise LockTimeout(f"{ref}.lock has been held by another process for over "
                                  f"{self.max_wait(LOCK_TIMEOUT_S):.0f}s; try again")
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
        """Pack loose objects in the background once there are enough (:mod:`repacking`)."""
        repacking.maintain(self.repo)

    def maintenance(self) -> tuple[str, ...]:
        """The git command that packs this repository's objects, safe beside writers."""
        return repacking.command(self.repo)

    # --- the clone lock ---------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
        """Serialise loopx writers of this clone (all worktrees share it)."""
        self.repo.loopx_dir.mkdir(parents=True, exist_ok=True)
        path = self.repo.loopx_dir / "write.lock"
        fd = locks.open_file(path)
        try:
            locks.acquire(fd, path, self.max_wait(timeout), patient=self.wait_limit is None)
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
                locks.flock(fd, blocking=False)
            except BlockingIOError:
                text = locks.read_holder(path)
                return -1 if (holder := locks.pid_of(text)) is None else holder
            return None
        finally:
            os.close(fd)


# One record of ``git ls-tree -z``, from a record's start (never inside a path): see list_files.
_LS_TREE = re.compile("(?:^|(?<=\0))([0-7]{6}) ([a-z]+) ([0-9a-f]{40}|[0-9a-f]{64})\t([^\0]*)\0")
