"""Git tree objects as loopx writes them: parsed, formatted, and a base tree with files added.

Pure formatting plus :class:`TreeBuilder`, which rewrites only the directories on the paths
of the files it adds, reading them from and writing them through the :class:`Store`; and
:func:`changed`, the files two commits' trees differ in.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from loopx.errors import ConflictError, DamagedLedger, GitError
from loopx.storage import gateway
from loopx.storage.gateway import Oid

if TYPE_CHECKING:
    from loopx.storage.store import Store

BLOB_MODE = "100644"
TREE_MODE = "40000"


class TreeBuilder:
    """Adds files to an existing tree, rewriting only the directories on their paths."""

    def __init__(self, store: Store, base_commit: str | None) -> None:
        self.store = store
        self.base_commit = base_commit
        # directory path ("" for root) -> {name: (mode, oid)}
        self.dirs: dict[str, dict[str, tuple[str, str]]] = {}

    def _load(self, path: str) -> dict[str, tuple[str, str]]:
        """The entries of directory ``path`` of the base: empty when the base has none, an
        error when its tree object is missing (writing on would drop every file in it)."""
        if path in self.dirs:
            return self.dirs[path]
        entries: dict[str, tuple[str, str]] = {}
        oid = self._tree_oid(path) if self.base_commit is not None else None
        if oid is not None:
            found = self.store.read_trees([oid])[0]  # capped: sized from its header first
            if found is None:
                raise DamagedLedger(
                    f"tree {oid} ({path or 'the root'} of {self.base_commit}) is missing from "
                    "this repository (or not a readable tree); nothing was written: run "
                    "`git loopx doctor`")
            entries = found
        self.dirs[path] = entries
        return entries

    def _tree_oid(self, path: str) -> str | None:
        if not path:
            return self.store.tree_of(self.base_commit)
        parent, _, name = path.rpartition("/")
        mode, oid = self._load(parent).get(name, ("", ""))
        return oid if mode == TREE_MODE else None

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
            content = format_tree(self.dirs[path])
            oid = self.store.hash_tree(content)
            if path:
                parent, _, name = path.rpartition("/")
                self.dirs[parent][name] = (TREE_MODE, oid)
            contents.append(content)
            oids.append(oid)
        # hash-object rather than mktree: mktree takes ~50 ms per 4,000 entries (git 2.39),
        # and a busy day's directory holds that many events.
        written = self.store.write_objects("tree", contents)
        if written != oids:
            raise GitError(["hash-object"], 1,
                           f"tree oid mismatch: git {written[-1:]}, ours {oids[-1:]}")
        return oids[-1]


def parse_tree(data: bytes, raw_len: int) -> dict[str, tuple[str, str]]:
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


def format_tree(entries: dict[str, tuple[str, str]]) -> bytes:
    return b"".join(
        mode.encode() + b" " + name.encode("utf-8", "surrogateescape") + b"\0" + bytes.fromhex(oid)
        for name, (mode, oid) in sorted(entries.items(), key=_tree_sort_key)
    )


def changed(cwd: Path | str, old: str, new: str) -> Iterator[tuple[str, str, str, str, str]]:
    """(status, old oid, path, mode, new oid) of each file ``git diff-tree -r`` lists between
    two commits, read a block at a time: a listing of millions is never held whole."""
    meta = b""
    for block in gateway.stream(cwd, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id",
                                old, new):
        for token in block.removesuffix(b"\0").split(b"\0"):
            if not meta:
                meta = token
                continue
            _, mode, src_oid, oid, status = meta.decode().lstrip(":").split(" ")
            meta = b""
            yield status, src_oid, token.decode("utf-8", "surrogateescape"), mode, oid
