"""The state branch's commits as data: which commit added each file, and who signed it.

Everything here is one ``git log`` per question, never a process per commit: :func:`walk`
lists a range's commits with the files each one *introduced* (for a merge, only files that
are in none of its parents, i.e. an "evil merge"'s own additions; files a merge brings in
from one side are credited to the commit on that side), and :func:`signers` asks git to
verify the signatures of many commits against an ssh ``allowed_signers`` text in one go.
Pure reads through the git gateway; nothing is written.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from loopx.storage import gateway

# Fields of one commit's header; \x01 starts a record and \x02 ends its header, so the raw
# diff that git appends (whose separators vary between merges and other commits) is unambiguous.
_FORMAT = "%x01%H%x00%P%x00%an%x00%ae%x00%aI%x00%s%x02"


@dataclass(frozen=True)
class Change:
    """One file a commit touched: status letters (one per parent) and the new blob."""

    path: str
    status: str
    mode: str
    oid: str

    @property
    def added(self) -> bool:
        return set(self.status) == {"A"}


@dataclass
class Commit:
    """A commit of a state branch and the files it changed (relative to all its parents)."""

    oid: str
    parents: list[str]
    author: str
    email: str
    date: str
    subject: str
    changes: list[Change] = field(default_factory=list)

    @property
    def added(self) -> list[Change]:
        return [c for c in self.changes if c.added]


def walk(
    cwd: Path | str,
    revs: list[str],
    *,
    paths: Optional[list[str]] = None,
    max_count: Optional[int] = None,
    topo: bool = False,
) -> list[Commit]:
    """Commits of ``revs`` (git log syntax: ``tip`` or ``base..tip``), newest first.

    ``-c`` gives merges a combined diff: a file that a merge took unchanged from one parent
    is not listed, so every added file is credited to the commit that really introduced it.
    """
    # --root: the first commit's files count as added; --full-history: with paths, git
    # would otherwise follow only one side of a merge that is TREESAME to it.
    args = [
        "log",
        "-c",
        "--raw",
        "-z",
        "--root",
        "--no-renames",
        "--no-abbrev",
        f"--format={_FORMAT}",
    ]
    if paths:
        args.append("--full-history")
    if topo:
        args.append("--topo-order")  # children before parents, whatever the dates say
    if max_count is not None:
        args.append(f"--max-count={max_count}")
    args += [*revs, "--", *(paths or [])]
    raw = gateway.run(cwd, *args).stdout
    return [_parse_commit(record) for record in raw.split(b"\x01") if record.strip()]


def _parse_commit(record: bytes) -> Commit:
    header, _, diff = record.partition(b"\x02")
    oid, parents, name, email, date, subject = header.decode("utf-8", "replace").split("\0")
    commit = Commit(oid, parents.split(), name, email, date, subject)
    tokens = diff.lstrip(b"\0\n").split(b"\0")
    for meta, path in zip(tokens[0::2], tokens[1::2]):
        if meta.startswith(b":"):
            commit.changes.append(
                _parse_raw(meta.decode(), path.decode("utf-8", "surrogateescape"))
            )
    return commit


def _parse_raw(meta: str, path: str) -> Change:
    # ":old new oid_old oid_new S" or, combined, "::m1 m2 new o1 o2 new SS" (one per parent).
    parents = len(meta) - len(meta.lstrip(":"))
    fields = meta.lstrip(":").split()
    mode, oid = fields[parents], fields[2 * parents + 1]
    return Change(path, fields[-1], mode, oid)


def signers(cwd: Path | str, commits: list[str], allowed_signers: str) -> dict[str, Optional[str]]:
    """commit -> the principal whose key made its good signature, or None (unsigned, bad,
    unknown key). One ``git log --no-walk`` verifies them all against ``allowed_signers``."""
    if not commits:
        return {}
    with _allowed_signers_file(allowed_signers) as path:
        raw = gateway.run(
            cwd,
            "-c",
            "gpg.format=ssh",
            "-c",
            f"gpg.ssh.allowedSignersFile={path}",
            "log",
            "--no-walk=unsorted",
            "--format=%H%x00%G?%x00%GS%x01",
            *commits,
        ).stdout.decode("utf-8", "replace")
    found: dict[str, Optional[str]] = {}
    for record in raw.split("\x01"):
        parts = record.strip().split("\0")
        if len(parts) == 3:
            oid, status, principal = parts
            # G is the only verdict meaning "good signature by a key the file trusts".
            found[oid] = principal if status == "G" and principal else None
    return found


@contextlib.contextmanager
def _allowed_signers_file(text: str) -> Iterator[str]:
    """A private temp file holding the allowed_signers text (git reads it by path)."""
    fd, path = tempfile.mkstemp(prefix="loopx-signers-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text if text.endswith("\n") else text + "\n")
        yield path
    finally:
        os.unlink(path)
