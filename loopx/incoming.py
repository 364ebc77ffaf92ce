"""The incoming check: is a state tip from elsewhere safe to merge? And quarantine when not.

A tip passes when, relative to the merge base with our tip, it only *adds* files (event files
are never modified or deleted), every added file sits at a path the layout allows, with a
plain file mode and under the size cap, and every event file parses and validates. An event
of a type this loopx does not know (a newer version wrote it) is accepted and reported.

Files outside ``events/`` are refused unless they live in an area listed in :data:`AREAS`;
today that is only the session transcript chunks (``model.SESSION_FILE_RE``,
``sessions/<id>/transcript-<n>/<nnnn>.txt``, at most ``model.TRANSCRIPT_CHUNK_BYTES``).

A tip that fails is kept under ``refs/loopx/quarantine/<remote>/<stamp>`` with a text report
in ``<common git dir>/loopx/quarantine/<remote>/<stamp>.txt``; local state is not touched.
See docs/sync.md. This module sits beside the ledger (it reads through the store only), so
the ledger can check a remote state before adopting it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from loopx import codec, git
from loopx.errors import CodecError, SchemaError
from loopx.git import Oid
from loopx.model import PATH_RE, SESSION_FILE_RE, TRANSCRIPT_CHUNK_BYTES, event_path, parse_event
from loopx.store import BLOB_MODE, QUARANTINE_PREFIX, Entry, Store

# Top-level areas of the state tree: path pattern and size cap of the files each may hold.
AREAS: dict[str, tuple[re.Pattern[str], int]] = {
    "events": (PATH_RE, codec.MAX_BYTES),
    "sessions": (SESSION_FILE_RE, TRANSCRIPT_CHUNK_BYTES),  # transcript chunks (docs/sessions.md)
}
_MODES = {"120000": "a symlink", "160000": "a gitlink (submodule)", "100755": "executable"}


@dataclass(frozen=True)
class Finding:
    """One reason a tip is refused: the file (or ``<history>``) and why."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class Verdict:
    """What the check found about ``theirs`` relative to ``ours``."""

    theirs: Oid
    ours: Optional[Oid]
    base: Optional[Oid]
    new_files: dict[str, Oid] = field(default_factory=dict)  # not yet in ours
    findings: list[Finding] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # accepted events of unknown types

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def new_events(self) -> int:
        return sum(1 for path in self.new_files if path.startswith("events/"))

    def report(self) -> str:
        lines = [f"tip {self.theirs} refused (base {self.base or 'none'}, ours {self.ours or 'none'}):"]
        lines += [f"  {finding}" for finding in self.findings]
        return "\n".join(lines)


def check(store: Store, *, theirs: str, ours: Optional[str], previous: Optional[str] = None) -> Verdict:
    """Judge the tip ``theirs`` before merging it into ``ours`` (None: we have no state yet).

    ``previous`` is the remote tip we accepted last time; a ``theirs`` that no longer contains
    it means the remote's history was rewritten.
    """
    tip = store.resolve(theirs)
    if tip is None:
        return Verdict(Oid(theirs), None, None, findings=[Finding("<tip>", "is not a commit")])
    mine = store.resolve(ours) if ours else None
    base = store.merge_base(mine, tip) if mine else None
    verdict = Verdict(tip, mine, base)
    if previous and store.resolve(previous) and not store.is_ancestor(previous, tip):
        verdict.findings.append(Finding(
            "<history>", f"rewritten: the remote no longer contains {previous[:12]}, "
            "which we fetched and merged before (someone force-pushed loopx/state)"))
    if base == tip:
        return verdict  # nothing new on their side
    added = _changes(store, base, tip, verdict)
    ours_dirs = _OurDirs(store, mine)
    for entry in added:
        _check_entry(entry, ours_dirs, verdict)
    _check_case(ours_dirs, added, verdict)
    _check_contents(store, [e for e in added if e.path in verdict.new_files], verdict)
    return verdict


def _changes(store: Store, base: Optional[str], tip: str, verdict: Verdict) -> list[Entry]:
    """The files ``tip`` added since ``base``; anything else becomes a finding."""
    start = base or store.hash_tree(b"")  # the empty tree: everything in tip is an addition
    added = []
    for status, _, entry in store.added_files(start, tip):
        if status == "A":
            added.append(entry)
        elif status == "D":
            verdict.findings.append(Finding(entry.path, "deleted (event files are never deleted)"))
        else:
            verdict.findings.append(Finding(entry.path, "modified (event files are never modified)"))
    return added


def path_problem(path: str, mode: str) -> Optional[str]:
    """Why ``path`` (with git file ``mode``) may not be on the state branch, or None."""
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return "not a normal relative path (absolute, empty or '..' component)"
    if any(p.lower().rstrip(". ") in (".git", "git~1") for p in parts):
        return "names .git"
    if mode in _MODES:
        return f"is {_MODES[mode]}; only plain files (mode {BLOB_MODE}) are allowed"
    if mode != BLOB_MODE:
        return f"has mode {mode}; only plain files (mode {BLOB_MODE}) are allowed"
    area = AREAS.get(parts[0])
    if area is None:
        return f"is outside the state layout (allowed: {', '.join(f'{a}/' for a in AREAS)})"
    if not area[0].match(path):
        return ("is not an event path (events/YYYY/MM/DD/<ulid>.<type>.yaml)" if parts[0] == "events"
                else f"is not a valid {parts[0]}/ path")
    return None


class _OurDirs:
    """The directories of our tip that incoming files land in, read one tree at a time.

    Only touched directories are read (through the long-lived cat-file), so the check costs
    what arrived, not the size of the ledger.
    """

    def __init__(self, store: Store, tip: Optional[str]) -> None:
        self.store, self.tip = store, tip
        self.dirs: dict[str, dict[str, tuple[str, str]]] = {}

    def entries(self, directory: str) -> dict[str, tuple[str, str]]:
        """name -> (mode, oid) in ``directory`` of our tip ("" is the root)."""
        if directory not in self.dirs:
            rev = f"{self.tip}:{directory}" if directory else f"{self.tip}^{{tree}}"
            self.dirs[directory] = self.store.read_tree(rev) if self.tip else {}
        return self.dirs[directory]


def _check_entry(entry: Entry, ours: _OurDirs, verdict: Verdict) -> None:
    why = path_problem(entry.path, entry.mode)
    if why is not None:
        verdict.findings.append(Finding(entry.path, why))
        return
    directory, _, name = entry.path.rpartition("/")
    mine = ours.entries(directory).get(name)
    if mine is None:
        verdict.new_files[entry.path] = entry.oid
    elif mine[1] != entry.oid:
        verdict.findings.append(Finding(entry.path, "differs from our copy of the same file"))


def _check_case(ours: _OurDirs, added: list[Entry], verdict: Verdict) -> None:
    """Two names equal under casefold would collide on macOS and Windows checkouts."""
    names: dict[str, set[str]] = {}  # directory -> names in it (ours and theirs)
    for entry in added:
        parts = entry.path.split("/")
        for depth in range(len(parts)):
            directory = "/".join(parts[:depth])
            if directory not in names:
                names[directory] = set(ours.entries(directory))
            names[directory].add(parts[depth])
    for directory, found in names.items():
        seen: dict[str, str] = {}
        for name in sorted(found):
            other = seen.setdefault(name.casefold(), name)
            if other != name:
                where = f"{directory}/" if directory else ""
                verdict.findings.append(Finding(f"{where}{name}",
                                                f"collides with {where}{other} on case-insensitive disks"))


def _check_contents(store: Store, entries: list[Entry], verdict: Verdict) -> None:
    """Size caps first (from object headers), then parse and validate every event file."""
    sizes = _blob_sizes(store, [e.oid for e in entries])
    readable = []
    for entry in entries:
        size, cap = sizes.get(entry.oid), AREAS[entry.path.split("/")[0]][1]
        if size is None:
            verdict.findings.append(Finding(entry.path, "blob is missing or not a blob"))
        elif size > cap:
            verdict.findings.append(Finding(entry.path, f"{size} bytes is over the {cap // 1024} KiB cap"))
        elif entry.path.startswith("events/"):
            readable.append(entry)
    for entry, data in zip(readable, store.read_blobs([e.oid for e in readable])):
        _check_event(entry.path, data, verdict)


def _blob_sizes(store: Store, oids: list[str]) -> dict[str, int]:
    """oid -> size of each blob, from one ``cat-file --batch-check`` (contents are not read)."""
    if not oids:
        return {}
    raw = git.run(store.cwd, "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)",
                  input="".join(f"{o}\n" for o in oids).encode()).stdout.decode()
    sizes = {}
    for line in raw.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "blob":
            sizes[parts[0]] = int(parts[2])
    return sizes


def _check_event(path: str, data: Optional[bytes], verdict: Verdict) -> None:
    try:
        event = parse_event(codec.load(data or b"", path), path)
    except (CodecError, SchemaError) as exc:
        verdict.findings.append(Finding(path, str(exc).removeprefix(f"{path}: ")))
        return
    if event_path(event) != path:
        verdict.findings.append(Finding(path, "file name does not match its id, type or date"))
    elif not event.known:
        verdict.unknown.append(path)


# --- quarantine -------------------------------------------------------------------------------


def quarantine(store: Store, *, remote: str, verdict: Verdict) -> str:
    """Keep a refused tip under ``refs/loopx/quarantine/<remote>/<stamp>`` with its report.

    The same tip quarantined again reuses its ref. Returns the ref name.
    """
    for ref in quarantined(store):
        if store.tip(ref) == verdict.theirs:
            return ref
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-{verdict.theirs[:12]}"
    ref = f"{QUARANTINE_PREFIX}{remote}/{stamp}"
    report = report_path(store, ref)
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(verdict.report() + "\n", "utf-8")
    store.update_ref_if(ref, verdict.theirs, expected=None, reason=f"loopx: quarantine {remote}")
    return ref


def quarantined(store: Store) -> list[str]:
    """Every quarantine ref, oldest name first."""
    out = git.out(store.cwd, "for-each-ref", "--format=%(refname)", QUARANTINE_PREFIX)
    return sorted(line for line in out.splitlines() if line)


def report_path(store: Store, ref: str) -> Path:
    """Where the text report of quarantine ``ref`` lives."""
    return store.repo.loopx_dir / "quarantine" / (ref.removeprefix(QUARANTINE_PREFIX) + ".txt")
