"""The incoming check: is a state tip from elsewhere safe to merge? And quarantine when not.

A tip passes when, relative to the merge base with our tip, it only *adds* files (event files
are never modified or deleted), every added file sits at a path the layout allows, with a
plain file mode and under the size cap, and every event file parses and validates. An event
of a type this loopx does not know (a newer version wrote it) is accepted and reported.

The per-file rules are :mod:`loopx.rules`, the same ones ``git loopx validate`` applies to a
pull request. Files outside ``events/`` are refused unless they live in an area listed in
:data:`loopx.rules.AREAS`; today that is only the session transcript chunks
(``model.SESSION_FILE_RE``, ``sessions/<id>/transcript-<n>/<nnnn>.txt``, at most
``model.TRANSCRIPT_CHUNK_BYTES``). Only sync checks a tip's history (no force-push) and that an
added file equals our copy of the same path.

A tip that fails is kept under ``refs/loopx/quarantine/<remote>/<stamp>`` with a text report
in ``<common git dir>/loopx/quarantine/<remote>/<stamp>.txt``; local state is not touched.
See docs/sync.md. This module sits beside the ledger (it reads through the store only), so
the ledger can check a remote state before adopting it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from loopx.storage import gateway
from loopx.ledger import layout, signatures
from loopx.storage.gateway import Oid
from loopx.ledger.progress import Progress
from loopx.ledger.layout import AREAS, Broken  # noqa: F401  (AREAS: re-exported, the layout's areas)
from loopx.model import inert, plural
from loopx.model.paths import PATH_RE, event_dirs
from loopx.projection import authority, folding
from loopx.projection.entities import Fold
from loopx.storage.store import QUARANTINE_PREFIX, Entry, Store

if TYPE_CHECKING:
    from loopx.model.events import Event


# A refusal shows this many findings, each at most this long; the report holds them all.
SHOWN_FINDINGS, FINDING_CHARS = 3, 300


@dataclass(frozen=True)
class Finding:
    """One reason a tip is refused: the file (or ``<history>``), why, and the rule broken
    (a name from :mod:`loopx.rules`, or ``history``, ``not-a-commit``, ``differs``,
    ``missing``, ``clock`` for what only sync checks)."""

    path: str
    reason: str
    rule: str = ""

    @classmethod
    def of(cls, path: str, broken: Broken) -> "Finding":
        return cls(path, broken.message, broken.rule)

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
    clocks: list[tuple[str, int]] = field(default_factory=list)  # (path, clock) to judge
    counted: int = 0  # new event files when the whole tip was judged (we had no state)
    # The events of the new files, by (path, blob): what the check parsed, handed to the
    # ledger's reader after the merge so that no file that arrives is parsed twice.
    parsed: dict[tuple[str, str], Event] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def new_events(self) -> int:
        return self.counted + sum(1 for path in self.new_files if path.startswith("events/"))

    def refusal(self, remote: str, ref: str, report: Path) -> str:
        """Why sync refuses this tip, bounded however many files the remote broke: how many
        findings, the first :data:`SHOWN_FINDINGS` (each clipped: their paths came from the
        remote) and the report that lists them all."""
        shown = "\n".join(f"  {inert.clip(str(finding), FINDING_CHARS)}"
                          for finding in self.findings[:SHOWN_FINDINGS])
        more = len(self.findings) - SHOWN_FINDINGS
        found = plural.counted(len(self.findings), "finding")
        if self.findings[-1].rule == "many":  # (the check stopped counting)
            found = f"at least {MAX_FINDINGS} findings"
        return (f"{remote}'s loopx/state ({self.theirs[:12]}) failed the incoming check "
                f"({found}) and was quarantined as "
                f"{ref}; local state is unchanged:\n{shown}"
                + (f"\n  ... and {more} more" if more > 0 else "") + f"\nreport: {report}")

    def report(self) -> str:
        lines = [f"tip {self.theirs} refused (base {self.base or 'none'}, ours {self.ours or 'none'}):"]
        lines += [f"  {finding}" for finding in self.findings]
        return "\n".join(lines)


def check(store: Store, *, theirs: str, ours: Optional[str], previous: Optional[str] = None,
          parse: bool = True, known_events: int = 0,
          progress: Optional[Progress] = None, ours_fold: Optional[Fold] = None) -> Verdict:
    """Judge the tip ``theirs`` before merging it into ``ours`` (None: we have no state yet).

    ``previous`` is the remote tip we accepted last time; a ``theirs`` that no longer contains
    it means the remote's history was rewritten. Without ``parse`` the event files are judged
    by path, mode and size only: adopting a clone's origin replays every file anyway and
    refuses the ones that do not parse (:func:`loopx.remote.sync.adopt`), so reading each
    twice would double the first command's cost. ``known_events`` is how many events ``ours``
    holds: no event that arrives may have a clock far ahead of all the events together.
    ``progress`` hears how far reading the new event files got. ``ours_fold``, the fold of
    ``ours`` when the caller has it, spares reading our signing policy when it signs nothing
    or nothing arrives dated before our clock.
    """
    tip = store.resolve(theirs)
    if tip is None:
        return Verdict(Oid(theirs), None, None,
                       findings=[Finding("<tip>", "is not a commit", "not-a-commit")])
    mine = store.resolve(ours) if ours else None
    if mine is None:
        verdict = _check_whole(store, tip, parse)
        _check_commits(store, None, tip, verdict)
        _check_clocks(verdict, known_events + verdict.counted)
        return verdict
    base = store.merge_base(mine, tip)
    verdict = Verdict(tip, mine, base)
    if previous and store.resolve(previous) and not store.is_ancestor(previous, tip):
        verdict.findings.append(Finding(
            "<history>", f"rewritten: the remote no longer contains {previous[:12]}, "
            "which we fetched and merged before (someone force-pushed loopx/state)", "history"))
    if base == tip:
        return verdict  # nothing new on their side
    _check_commits(store, base, tip, verdict)
    added = []
    ours_dirs = TreeDirs(store, mine)
    for entry in _changes(store, base, tip, verdict):
        _check_entry(entry, ours_dirs, verdict)
        added.append(entry)
        if _enough(verdict):
            return verdict
    if _enough(verdict):
        return verdict
    _check_case(ours_dirs, added, verdict)
    _check_once(ours_dirs, added, verdict)
    _check_contents(store, [e for e in added if e.path in verdict.new_files], verdict, parse,
                    progress)
    if _enough(verdict):
        return verdict
    _check_clocks(verdict, known_events + verdict.new_events)
    _check_unsigned_past(store, mine, verdict, ours_fold)
    return verdict


def _check_unsigned_past(store: Store, mine: str, verdict: Verdict,
                         fold: Optional[Fold]) -> None:
    """Refuse an authority act (or a change to roles or signing) that arrives dated before the
    config that turned our signing on, where signing was off: it would count unsigned, and a
    signer config there would take the key trusted on first use over
    (:func:`signatures.unsigned_past`). One written before the key was trusted and synced
    late (a clone offline meanwhile) is refused too: let its writer act again, signed. What
    decides nothing (a todo with no gate finished, a note) still merges."""
    if fold is not None and not authority.signing_on(fold.config):
        return  # (no stretch ends in a key now: our policy signs nothing)
    acts = [(path, event) for (path, _), event in verdict.parsed.items()
            if event.type in signatures.SIGNED_TYPES and event.known
            and (fold is None or event.env.clock <= fold.max_clock)  # (else after all ours)
            and authority.could_decide(fold, event)]
    if not acts:
        return
    stretches = signatures.unsigned_past(store, mine)
    for path, event in acts:
        key = event.sort_key()
        for start, end in stretches:
            if start < key < end:
                verdict.findings.append(Finding(path, (
                    f"{event.type} dated before {end[1]}, the config that turned signing on "
                    "here, where it would count unsigned: an authority act written into the "
                    "past"), "unsigned-past"))
                break


# A state commit is a few hundred bytes (a signed one about a kilobyte); a far bigger one
# carries a message or identity that `log` and `validate` would have to read.
MAX_COMMIT_BYTES = 64 * 1024


def _check_commits(store: Store, base: Optional[str], tip: str, verdict: Verdict) -> None:
    """Every commit ``tip`` brings is of a sane size (from its object header)."""
    listed = gateway.out(store.cwd, "rev-list", *([tip, "--not", base] if base else [tip]))
    commits = [line for line in listed.splitlines() if line]
    if not commits:
        return
    raw = gateway.run(store.cwd, "cat-file", "--batch-check=%(objectname) %(objectsize)",
                      input="".join(f"{c}\n" for c in commits).encode()).stdout.decode()
    for line in raw.splitlines():
        oid, _, size = line.partition(" ")
        if size.isdigit() and int(size) > MAX_COMMIT_BYTES:
            verdict.findings.append(Finding(
                "<history>", f"commit {oid[:12]} is {size} bytes, over the "
                f"{MAX_COMMIT_BYTES // 1024} KiB a state commit may be", "too-big"))


# A line of `ls-tree -r -z -l` that needs no closer look: a plain file of the usual kind,
# at a path of the strict shape. Uppercase ULIDs, lowercase types and hex commit ids cannot
# collide under casefold, so such names need no collision check either.
_PLAIN = re.compile(
    rb"100644 blob ([0-9a-f]{40}(?:[0-9a-f]{24})?) +([0-9]{1,7})\t(?:"
    rb"(events/[0-9]{4}/[0-9]{2}/[0-9]{2}/[0-7][0-9A-HJKMNP-TV-Z]{25}"
    rb"\.[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*\.yaml)"
    rb"|(checkpoints/(?:[0-9a-f]{40}|[0-9a-f]{64})/(?:manifest\.json|rows-[0-9]{4}\.tsv)))\0")


_BULK_AREAS = (b"events", b"checkpoints")


def _check_whole(store: Store, tip: Oid, parse: bool, *, bulk: bool = True) -> Verdict:
    """Judge every file of ``tip`` (we have no state of our own to compare with): one
    ``ls-tree -l`` gives path, mode and size of each file, read a block at a time (a listing
    of a long ledger is never held whole). With ``bulk``, lines of the usual shape are judged
    by one pattern (a fresh clone of a long ledger is mostly these) and the others get every
    rule, one directory's names held at a time; when such another line lies under
    ``events/`` or ``checkpoints/`` (whose names the pattern did not keep) the whole tip is
    judged again line by line, so case collisions with it are found too."""
    verdict = Verdict(tip, None, None)
    caps = {b"e": layout.AREAS["events"][1], b"c": layout.AREAS["checkpoints"][1]}
    chunk: list[Entry] = []
    names: dict[str, dict[str, str]] = {}  # directory on the current path -> casefold -> name
    # (-l reads every blob's header: git's delta cache capped, as the object reader's is.)
    for listing in gateway.stream(store.cwd, *gateway.ObjectReader.DELTA_CACHE, "ls-tree", "-r",
                                  "-z", "-l", "--full-tree", tip):
        pos, end = 0, len(listing)
        while pos < end:
            plain = _PLAIN.match(listing, pos) if bulk else None
            if plain is not None and int(plain[2]) <= caps[(plain[3] or plain[4])[:1]]:
                pos = plain.end()
                if plain[3] is not None:
                    verdict.counted += 1
                    if parse:
                        chunk.append(Entry(plain[3].decode(), "100644", "blob",
                                           Oid(plain[1].decode())))
            else:
                stop = listing.find(b"\0", pos)
                stop = end if stop < 0 else stop
                line = listing[pos:stop]
                if bulk and line.partition(b"\t")[2].split(b"/", 1)[0].lower() in _BULK_AREAS:
                    return _check_whole(store, tip, parse, bulk=False)
                _check_line(line, names, chunk, verdict, parse)
                pos = stop + 1
                if _enough(verdict):
                    return verdict
            if len(chunk) >= 1000:
                _parse_events(store, chunk, verdict)
                chunk = []
                if _enough(verdict):
                    return verdict
    _parse_events(store, chunk, verdict)
    _enough(verdict)
    return verdict


def _check_line(item: bytes, names: dict[str, dict[str, str]], chunk: list[Entry],
                verdict: Verdict, parse: bool) -> None:
    """Every rule for one line of the listing."""
    if not item:
        return
    meta, _, raw_path = item.partition(b"\t")
    mode, kind, oid, size = meta.decode().split()
    path = raw_path.decode("utf-8", "surrogateescape")
    _check_names(names, path, verdict)
    broken = layout.path_rule(path, mode) or (
        layout.size_rule(path, int(size)) if size.isdigit() else None)
    if broken is not None:
        verdict.findings.append(Finding.of(path, broken))
    elif kind != "blob":
        verdict.findings.append(Finding(path, "blob is missing or not a blob", "missing"))
    elif layout.is_event(path):
        verdict.counted += 1
        if parse:
            chunk.append(Entry(path, mode, kind, Oid(oid)))


def _check_names(names: dict[str, dict[str, str]], path: str, verdict: Verdict) -> None:
    """Names equal under casefold in one directory (they collide on macOS and Windows
    checkouts). A recursive tree listing visits each directory's files together, so only the
    directories on the way to ``path`` need their names kept."""
    parts = path.split("/")
    dirs = ["/".join(parts[:depth]) for depth in range(len(parts))]
    for left in [d for d in names if d not in dirs]:  # never visited again
        del names[left]
    for directory, name in zip(dirs, parts):
        other = names.setdefault(directory, {}).setdefault(name.casefold(), name)
        if other != name:
            where = f"{directory}/" if directory else ""
            verdict.findings.append(Finding.of(f"{where}{name}", Broken(
                "bad-path", f"collides with {where}{other} on case-insensitive disks")))


def _parse_events(store: Store, entries: Sequence[Entry], verdict: Verdict, *,
                  keep: bool = False) -> None:
    """Parse and validate each event file; with ``keep``, hold its event in the verdict
    (the files a merge brings: not the whole tip of a clone, which would be every event)."""
    for entry, data in zip(entries, store.read_blobs([e.oid for e in entries])):
        event, broken = layout.event_rule(entry.path, data)
        if broken is not None:
            verdict.findings.append(Finding.of(entry.path, broken))
            continue
        if keep and event is not None:
            verdict.parsed[(entry.path, entry.oid)] = event
        if event is not None and event.env.clock > folding.MAX_CLOCK_LEAD:
            verdict.clocks.append((entry.path, event.env.clock))  # judged once all are counted
        if event is not None and not event.known:
            verdict.unknown.append(entry.path)


def _changes(store: Store, base: Optional[str], tip: str, verdict: Verdict) -> Iterator[Entry]:
    """The files ``tip`` added since ``base``, one at a time; anything else becomes a finding
    (and stops the listing once there are enough of them to refuse the tip)."""
    start = base or store.hash_tree(b"")  # the empty tree: everything in tip is an addition
    for status, _, entry in store.changed_files(start, tip):
        broken = layout.change_rule(status)
        if broken is None:
            yield entry
        else:
            verdict.findings.append(Finding.of(entry.path, broken))
            if len(verdict.findings) >= MAX_FINDINGS:
                return


# A tip refused this many times over is refused: judging (and reporting) the rest of a tip of
# a million junk files took a minute, 300 MB and a 27 MB report per clone for 300,000.
MAX_FINDINGS = 100


def _enough(verdict: Verdict) -> bool:
    """Whether the check has found enough to refuse the tip and stops; says so once."""
    if len(verdict.findings) < MAX_FINDINGS:
        return False
    if verdict.findings[-1].rule != "many":  # (a chunk of files judged at once may add more)
        del verdict.findings[MAX_FINDINGS:]
        verdict.findings.append(Finding(
            "<tip>", f"and perhaps more: the check stops at {MAX_FINDINGS} findings", "many"))
    return True


def path_problem(path: str, mode: str) -> Optional[str]:
    """Why ``path`` (with git file ``mode``) may not be on the state branch, or None
    (:func:`loopx.rules.path_rule`'s message)."""
    broken = layout.path_rule(path, mode)
    return broken.message if broken else None


class TreeDirs:
    """The directories of a tip that changed files land in, read one tree at a time.

    Only touched directories are read (through the long-lived cat-file), so the check costs
    what arrived, not the size of the ledger.
    """

    def __init__(self, store: Store, tip: Optional[str]) -> None:
        self.store, self.tip = store, tip
        self.dirs: dict[str, dict[str, tuple[str, str]]] = {}

    def entries(self, directory: str) -> dict[str, tuple[str, str]]:
        """name -> (mode, oid) in ``directory`` of the tip ("" is the root)."""
        if directory not in self.dirs:
            rev = f"{self.tip}:{directory}" if directory else f"{self.tip}^{{tree}}"
            self.dirs[directory] = self.store.read_tree(rev) if self.tip else {}
        return self.dirs[directory]


def _check_entry(entry: Entry, ours: TreeDirs, verdict: Verdict) -> None:
    broken = layout.path_rule(entry.path, entry.mode)
    if broken is not None:
        verdict.findings.append(Finding.of(entry.path, broken))
        return
    directory, _, name = entry.path.rpartition("/")
    mine = ours.entries(directory).get(name)
    if mine is None:
        verdict.new_files[entry.path] = entry.oid
    elif mine[1] != entry.oid:
        verdict.findings.append(
            Finding(entry.path, "differs from our copy of the same file", "differs"))


def _check_case(ours: TreeDirs, added: list[Entry], verdict: Verdict) -> None:
    names = names_along(ours, [entry.path for entry in added])
    for path, broken in layout.case_collisions(names):
        verdict.findings.append(Finding.of(path, broken))


def _check_once(ours: TreeDirs, added: list[Entry], verdict: Verdict) -> None:
    """Refuse a second file of one event id: the same event at the fan-out path and at the
    one before it (both layouts are read), or under another type. Replay counts each id
    once; a copy beside it doubled a spend, a note count, an answer."""
    events = [(entry.path, match.group(4)) for entry in added
              if (match := PATH_RE.fullmatch(entry.path)) is not None]
    named: dict[str, str] = {}
    for path, event_id in events:
        named.setdefault(event_id, path)
    for path, event_id in events:
        others = [f"{directory}/{name}" for directory in event_dirs(event_id)
                  for name in ours.entries(directory) if name.startswith(event_id + ".")]
        if named[event_id] != path:
            others.append(named[event_id])
        others = [other for other in others if other != path]
        if others:
            verdict.findings.append(Finding(path, (
                f"event {event_id} is also {others[0]}: an event is one file"), "duplicate"))


def names_along(tree: TreeDirs, paths: list[str]) -> dict[str, set[str]]:
    """directory -> the names it will hold: ``tree``'s plus ``paths``', for every directory
    on the way to each of ``paths`` (what :func:`loopx.rules.case_collisions` judges)."""
    names: dict[str, set[str]] = {}
    for path in paths:
        parts = path.split("/")
        for depth in range(len(parts)):
            directory = "/".join(parts[:depth])
            if directory not in names:
                names[directory] = set(tree.entries(directory))
            names[directory].add(parts[depth])
    return names


def _check_contents(store: Store, entries: list[Entry], verdict: Verdict, parse: bool,
                    progress: Optional[Progress] = None) -> None:
    """Size caps first (from object headers), then parse and validate every event file."""
    sizes = blob_sizes(store, [e.oid for e in entries])
    readable = []
    for entry in entries:
        size = sizes.get(entry.oid)
        broken = None if size is None else layout.size_rule(entry.path, size)
        if size is None:
            verdict.findings.append(
                Finding(entry.path, "blob is missing or not a blob", "missing"))
        elif broken is not None:
            verdict.findings.append(Finding.of(entry.path, broken))
        elif layout.is_event(entry.path) and parse:
            readable.append(entry)
    for chunk in (progress or Progress()).chunks(readable):  # reported while a fetch is big
        _parse_events(store, chunk, verdict, keep=True)
        if _enough(verdict):
            return


def _check_clocks(verdict: Verdict, events: int) -> None:
    """Refuse clocks far ahead of the ``events`` there will be (:func:`folding.clock_ahead`):
    a Lamport clock grows by one per event, so no remote can raise everyone's floor."""
    for path, clock in verdict.clocks:
        ahead = folding.clock_ahead(events, clock)
        if ahead:
            verdict.findings.append(Finding(path, ahead, "clock"))


def blob_sizes(store: Store, oids: list[str]) -> dict[str, int]:
    """oid -> size of each blob, from one ``cat-file --batch-check`` (contents are not read)."""
    if not oids:
        return {}
    raw = gateway.run(store.cwd, "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)",
                  input="".join(f"{o}\n" for o in oids).encode()).stdout.decode()
    sizes = {}
    for line in raw.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "blob":
            sizes[parts[0]] = int(parts[2])
    return sizes


# --- quarantine -------------------------------------------------------------------------------


def quarantine(store: Store, *, remote: str, verdict: Verdict) -> str:
    """Keep a refused tip under ``refs/loopx/quarantine/<remote>/<stamp>`` with its report.

    The same tip quarantined again reuses its ref. Returns the ref name. The report holds
    at most :data:`MAX_FINDINGS` (the files a replay refused are added after the check).
    """
    _enough(verdict)
    for ref in quarantined(store):
        if store.tip(ref) == verdict.theirs:
            return ref
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-{verdict.theirs[:12]}"
    ref = f"{QUARANTINE_PREFIX}{remote}/{stamp}"
    report = report_path(store, ref)
    report.parent.mkdir(parents=True, exist_ok=True)
    # (a forged name that is not UTF-8 is held as surrogates: shown as its bytes' escapes)
    report.write_text(verdict.report() + "\n", "utf-8", "backslashreplace")
    store.update_ref_if(ref, verdict.theirs, expected=None, reason=f"loopx: quarantine {remote}")
    return ref


def quarantined(store: Store) -> list[str]:
    """Every quarantine ref, oldest name first."""
    out = gateway.out(store.cwd, "for-each-ref", "--format=%(refname)", QUARANTINE_PREFIX)
    return sorted(line for line in out.splitlines() if line)


def report_path(store: Store, ref: str) -> Path:
    """Where the text report of quarantine ``ref`` lives."""
    return store.repo.loopx_dir / "quarantine" / (ref.removeprefix(QUARANTINE_PREFIX) + ".txt")
