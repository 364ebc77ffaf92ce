"""Opening and creating a ledger: what every interface does before anything else."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from loopx.errors import (CheckedOut, LockTimeout, LoopxError, Quarantined, RefRaceError,
                          SyncError, UsageError)
from loopx.ledger import layout, progress
from loopx.ledger.book import Ledger
from loopx.model import inert
from loopx.model.limits import ACTOR_PATTERN
from loopx.storage import gateway, settings
from loopx.storage.store import STATE_REF

if TYPE_CHECKING:
    from loopx.hooks.unrecorded import Missed
    from loopx.hooks.spool import Drained
    from loopx.model.events import Event


def state_ref(name: Optional[str]) -> str:
    """The full ref of a state branch name (``loopx/state`` -> ``refs/heads/loopx/state``)."""
    ref = name or STATE_REF
    return ref if ref.startswith("refs/") else f"refs/heads/{ref}"


# How long a command waits for a drain of the hook queue under way (the detached one
# post-commit starts usually takes a fraction of a second) before it reads without it.
READ_WAIT_S = 10.0
ADOPTING = "adopting origin/loopx/state"  # what a bar says while a fresh clone replays it


def open_ledger(path: Path | str = ".", *, ref: Optional[str] = None,
                adopt: bool = True, wait: float = READ_WAIT_S,
                report: Optional[progress.Report] = None) -> Ledger:
    """The ledger of the repository at ``path``, redacting secrets in every text it writes
    (:func:`loopx.redaction.redact.scrub`); in a fresh clone it adopts ``origin``'s state
    branch (after the incoming check), so handing work over is a ``git clone``. Work the git
    hooks queued is applied first (:func:`apply_spool`, waiting up to ``wait`` seconds).
    ``report`` hears how far long work got (:mod:`loopx.ledger.progress`)."""
    if ref is not None:
        check_state_ref(path, ref)
    ledger = Ledger.open(path, ref=state_ref(ref), scrub=scrub)
    ledger.progress.report = report
    # The ref's file says "there is a ledger" without a git process; whether its commit is
    # there is for the first read to find (Ledger.tip raises DamagedLedger when it is not).
    if adopt and not ledger.store.has_ref(ledger.ref) and ledger.tip() is None:
        # (a proposal's tip falls back to loopx/state's)
        from loopx.remote import sync  # only a clone without state adopts: start-up time

        with ledger.progress.doing(ADOPTING):
            sync.adopt(ledger=ledger)
    done = apply_spool(ledger, wait=wait)
    if done is not None and done.found:
        ledger.notices.append(found_line(done))
    return ledger


def check_state_ref(path: Path | str, ref: str, *, damaged: bool = False) -> None:
    """UsageError unless the ref given (``--state-ref``, ``$LOOPX_STATE_REF``) is one git can
    have and is a state branch or none yet: `--state-ref 'a..b'` was git's update-ref failing
    (exit 3) after the events were built, and `--state-ref feature`, a branch of code, got a
    ledger commit on top of its code; a symbolic ref read as damage doctor would "repair"; a
    name git reads as a tag or a commit (`v1`, `HEAD`, `3f2a9c1`) made a new branch beside
    it. A state branch has an events/ folder and nothing outside the state layout; with
    ``damaged`` (doctor, which repairs them) it need only have had events/ at some point.
    Asked of git (up to four processes), only for a ref given."""
    full = state_ref(ref)
    if gateway.run(path, "check-ref-format", full, check=False).returncode != 0:
        raise UsageError(f"--state-ref: {ref!r} is not a valid ref name (see `git help "
                         "check-ref-format`), e.g. proposal/x")
    if full == STATE_REF:
        return
    if not full.startswith("refs/heads/"):  # a tag, a remote-tracking ref, refs/notes/...
        raise UsageError(f"--state-ref: {full} is not a branch (a tag never moves, a "
                         "remote-tracking ref is its remote's: a ledger write there is moved or "
                         "lost); nothing was read or written: name a branch, e.g. proposal/x")
    pointed = gateway.run(path, "symbolic-ref", "-q", "--no-recurse", full, check=False)
    if pointed.returncode == 0:
        target = pointed.stdout.decode("utf-8", "replace").strip()
        raise UsageError(f"--state-ref: {full} is a symbolic ref (to {inert.line(target)}); "
                         "nothing was read or written: name the branch itself")
    if ref != full:  # a short name: what git itself takes it for
        meant = gateway.run(path, "rev-parse", "-q", "--verify", "--symbolic-full-name",
                            "--end-of-options", ref, check=False)  # (`--all` is a name here)
        said = meant.stdout.decode("utf-8", "replace").strip()
        if meant.returncode == 0 and said != full:
            what = inert.line(said) if said else "an object id"
            raise UsageError(f"--state-ref: git reads {ref!r} as {what}, not the branch {full}; "
                             f"nothing was read or written: name a branch, e.g. proposal/x "
                             f"(or give {full} in full)")
    why = _not_a_state_branch(path, full, damaged)
    if why:
        raise UsageError(f"--state-ref: {full} is not a state branch ({inert.line(why)}); "
                         "nothing was read or written: name a new branch, e.g. proposal/x")


def _not_a_state_branch(path: Path | str, full: str, damaged: bool) -> Optional[str]:
    """Why the branch ``full`` is not a state branch (:func:`check_state_ref`), or None: it
    is one, or there is no such branch yet."""
    listed = gateway.run(path, "ls-tree", "-z", full, "--", check=False)
    if listed.returncode != 0:
        return None  # no such ref yet (a proposal starts at loopx/state's tip), or not a repository
    kinds: dict[str, str] = {}  # name -> object type, of each entry at the top
    for line in listed.stdout.decode("utf-8", "replace").split("\0"):
        head, tab, name = line.partition("\t")
        if tab and len(head.split()) == 3:
            kinds[name] = head.split()[1]
    if damaged and (kinds.get("events") == "tree" or gateway.run(
            path, "rev-list", "-1", full, "--", "events/", check=False).stdout.strip()):
        return None  # a state branch, whatever became of it: doctor's to say
    foreign = [name for name in kinds if name not in layout.AREAS]
    files_ = [name for name, kind in kinds.items() if name in layout.AREAS and kind != "tree"]
    return (f"it holds {', '.join(foreign[:3]) + (', ...' if len(foreign) > 3 else '')}" if foreign
            else f"its {files_[0]} is no folder" if files_
            else "it has no events/ folder" if "events" not in kinds else None)


def found_line(done: Drained) -> str:
    """What to say about commits found with no record (their post-commit hook was killed)."""
    failed = f"; {len(done.failed)} set aside (`git loopx hooks queue`)" if done.failed else ""
    kept = "; some still queued (the state branch is busy)" if done.kept or done.busy else ""
    known = [sha for sha in done.found if sha not in done.unknown and sha not in done.bare]
    said = "their evidence is recorded now" if known else "nothing was recorded"
    if done.bare:
        said = (f"{said}; nothing to record for {_shas(done.bare)} (no lease of "
                f"{'its maker' if len(done.bare) == 1 else 'their makers'} covers it now)")
    if done.unknown:
        said = (f"{said}; {_shas(done.unknown)} recorded for no one: who made "
                f"{'it' if len(done.unknown) == 1 else 'them'} is not known (no mark of "
                "its hook, and not one lease holder on the branch)")
    return (f"found {len(done.found)} commit(s) whose post-commit hook did not finish "
            f"({_shas(done.found)}): {said}{failed}{kept}")


def _shas(shas: list[str]) -> str:
    return ", ".join(sha[:9] for sha in shas[:5]) + (" ..." if len(shas) > 5 else "")


def scrub(text: str) -> str:
    """Secret redaction (:func:`loopx.redaction.redact.scrub`), the ledgers' ``scrub``."""
    # Imported on the first text written: reads (a warm status) never compile its patterns.
    from loopx.redaction import redact

    return redact.scrub(text)


def apply_spool(ledger: Ledger, *, wait: Optional[float] = None,
                sweep: bool = True) -> Optional[Drained]:
    """Apply the work git hooks queued (docs/hooks.md): post-commit's evidence, or what a hook
    could not write while the state branch was busy. Waits for a drain under way in another
    process (the detached one post-commit starts), so that what a commit recorded is there
    for the command that follows it; waits no longer than ``wait`` (a hook's limit by
    default) for it and for the state branch. What cannot be applied now stays queued, what
    can never be is set aside for `status` and `doctor`. Then the commits of watched branches
    that have no record (their hook was killed) are queued and applied too (``found``), unless
    not ``sweep``: a hook and the drain it starts run beside the user's next commits, and a
    commit whose post-commit has not finished yet would look like one whose hook was killed
    (git writes the reflog before it runs the hook). None when nothing was queued."""
    done = _drain(ledger, wait)
    found, unknown = _queue_unrecorded(ledger) if sweep else ([], [])
    if not found:
        return done
    from loopx.hooks import spool
    from loopx.projection.appliers import ANY_EVIDENCE

    again = _drain(ledger, wait) or spool.Drained()
    done = done or spool.Drained()
    done.applied += again.applied
    done.kept += again.kept
    done.failed.update(again.failed)
    done.busy = again.busy
    done.found, done.unknown = found, unknown
    if not (done.kept or done.busy):  # what their makers' records came to
        fold = ledger.fold()
        done.bare = [sha for sha in found if sha not in unknown and not any(
            i != ANY_EVIDENCE for i in fold.by_commit.get(sha) or [])]
    return done


def _drain(ledger: Ledger, wait: Optional[float]) -> Optional[Drained]:
    # The queue's folder (spool.folder) exists once a hook queued work: only then is the queue
    # loaded, and capture (the event model) only when an entry waits: start-up time.
    if not (ledger.repo.loopx_dir / "spool").is_dir():
        return None
    from loopx.hooks import spool

    if not spool.has_pending(ledger.repo.loopx_dir) or ledger.tip() is None:
        return None
    from loopx.hooks import capture

    def apply(entry: spool.Entry) -> None:
        try:
            capture.SPOOLED[entry.hook](ledger, entry)
        except (LockTimeout, RefRaceError, CheckedOut) as exc:
            raise spool.Later(str(exc)) from exc

    wait = spool.WAIT_S if wait is None else wait
    limit, ledger.store.wait_limit = ledger.store.wait_limit, wait
    try:
        return spool.drain(ledger.repo.loopx_dir, dict.fromkeys(capture.SPOOLED, apply),
                           state_ref=ledger.ref, wait=wait)
    finally:
        ledger.store.wait_limit = limit


def _queue_unrecorded(ledger: Ledger) -> tuple[list[str], list[str]]:
    """Queue, as post-commit would have, the commits of watched branches (where a lease was
    taken) that have no commit record and are not queued: a hook killed before it queued
    anything (loopx.hooks.unrecorded). While no watched reflog grew this is one small
    file and a stat per branch; after, only the new reflog lines are read."""
    loopx_dir = ledger.repo.loopx_dir
    if not (loopx_dir / "commits-watch.json").is_file():  # unrecorded.WATCH: start-up time
        return [], []
    from loopx.hooks import unrecorded

    if not unrecorded.grown(loopx_dir) or ledger.tip() is None:
        return [], []
    swept, offsets, spent = unrecorded.sweep(loopx_dir)
    found = _queue_missed(ledger, [m for m in swept
                                   if any(ref == ledger.ref for _, ref in m.holders)])
    unrecorded.mark_read(loopx_dir, offsets, spent)  # only once queued (a kill: again)
    return found


def _queue_missed(ledger: Ledger, missed: list[Missed]) -> tuple[list[str], list[str]]:
    """Queue the commits of ``missed`` that have no record, are not queued and whose hook did
    not finish, for who made them; their shas, and those of the commits whose maker is not
    known (queued for no one)."""
    if not missed:
        return [], []
    from loopx.hooks import shims, spool, unrecorded
    from loopx.projection.appliers import ANY_EVIDENCE

    loopx_dir = ledger.repo.loopx_dir
    _unwatch_ended(ledger, {(m.branch, h) for m in missed for h in m.holders})
    finished = unrecorded.done(loopx_dir)
    missed = [m for m in missed if m.sha not in finished]
    # Without loopx's post-commit shim no commit is recorded on its own, so none is missing.
    if not missed or not shims.records_commits(cwd=ledger.repo.cwd):
        return [], []
    fold = ledger.fold()
    queued = {e.inputs.get("commit") for e in spool.pending(loopx_dir)}
    found: list[str] = []
    unknown: list[str] = []
    for m in missed:
        records = [i for i in fold.by_commit.get(m.sha) or [] if i != ANY_EVIDENCE]
        if records or m.sha in queued:
            continue
        # Credited to who made it, never to whoever runs this sweep, nor to every holder:
        # a commit whose maker is not known is recorded for no one (found_line names it).
        maker = m.maker(ledger.ref)
        if maker is not None:
            spool.append(loopx_dir, hook="post-commit", actor=maker, state_ref=ledger.ref,
                         inputs={"commit": m.sha, "branch": m.branch, "amended": None},
                         at=datetime.fromtimestamp(m.at, timezone.utc))
        queued.add(m.sha)
        found.append(m.sha)
        if maker is None:
            unknown.append(m.sha)
    return found, unknown


def _unwatch_ended(ledger: Ledger, watched: set[tuple[str, tuple[str, str]]]) -> None:
    """Stop watching a branch for a holder whose lease there has ended (after its commits
    were swept): the todos with a lease are in the live fold."""
    from loopx.hooks import unrecorded
    from loopx.model import clock

    now = clock.now()
    todos = ledger.live_fold().todos.values()
    held = {(t.branch, t.holder) for t in todos if t.state == "open" and t.holder and t.until
            and clock.parse_ts(t.until) > now}
    for branch, (actor, ref) in watched:
        if ref == ledger.ref and (branch, actor) not in held:
            unrecorded.unwatch(ledger.repo.loopx_dir, branch, actor, ref)


def init(ledger: Ledger, *, actor: str, name: Optional[str] = None,
         offline: bool = False) -> Optional[Event]:
    """Create the ledger if it does not exist yet (idempotent); returns the new event.

    A clone whose remote already has state adopts it instead of starting a second ledger: the
    remote (see :func:`remote`) is fetched first, unless ``offline``, so that a clone made
    before the remote had a ledger does not start a second root that `sync` would then merge
    into everyone's state. An unreachable remote is an error (``offline`` skips the look).
    """
    from loopx.remote import sync  # as in open_ledger

    with ledger.progress.doing(ADOPTING):
        sync.adopt(ledger=ledger)
    where = None if offline or ledger.exists() else remote(ledger)
    if where is not None:
        try:
            sync.fetch(ledger=ledger, remote=where)  # adopts the remote's state, once checked
        except Quarantined:
            raise
        except SyncError as exc:
            raise SyncError(f"{exc}; to start a ledger here without looking at {where}: "
                            "`git loopx init --offline`") from None
    return ledger.init(actor=actor, name=name)


def actor(cwd: Path | str, given: Optional[str] = None, *, named: str = "--actor") -> str:
    """Who is acting, the same for every interface: ``given`` (``--actor``, else
    ``$LOOPX_ACTOR``, which the interface reads and names in ``named``), else
    ``human:<git user.email>``. Checked here, where the one line can say where it came from
    (refused by the event's schema, it read "new event: actor: ...")."""
    if given:
        if not re.fullmatch(ACTOR_PATTERN, given):
            raise UsageError(f"{named} {given!r} is not an identity: give KIND:NAME, e.g. "
                             "agent:claude@laptop or human:alice@example.com")
        return given
    email = (settings.get(cwd, "user.email") or "").strip()
    if not email:
        raise LoopxError(
            "who is acting? pass --actor KIND:NAME, set LOOPX_ACTOR, or `git config user.email`")
    if not re.fullmatch(ACTOR_PATTERN, f"human:{email}"):
        raise UsageError(f"git config user.email {email!r} makes no identity (human:<email>, "
                         "one word): set your email there, or pass --actor KIND:NAME")
    return f"human:{email}"


def work_tree(path: Path | str = ".") -> Optional[Path]:
    """The work tree of the repository containing ``path`` (None in a bare one); raises
    NotFound outside a repository."""
    return gateway.discover(path).work_tree


def git_setting(cwd: Path | str, key: str) -> Optional[str]:
    """A git setting (``core.pager``) as git reads it in ``cwd``, or None when it is unset."""
    value = settings.get(cwd, key)
    return None if value is None else value.strip()


def within(principal: str, named: object) -> str:
    """Who acts for one call of a process that acts as ``principal`` (an MCP server): the
    principal itself, or a sub-identity under it that the call ``named``
    (``agent:claude@laptop/worker-2`` under ``agent:claude@laptop``); anyone else is refused,
    and so is a name that is not an identity (the tool's schema no longer carries the pattern:
    this is where it is checked, for reads too)."""
    if named is None or named == principal:
        return principal
    if (isinstance(named, str) and named.startswith(principal + "/")
            and named != principal + "/" and re.fullmatch(ACTOR_PATTERN, named)):
        return named
    shown = named if isinstance(named, str) and named else repr(named)  # (not '' as nothing)
    raise UsageError(f"this server acts as {principal}; a call may name {principal} or a "
                     f"sub-identity {principal}/NAME, not {shown}")


def remote(ledger: Ledger) -> Optional[str]:
    """The remote `sync` uses by default (the branch's upstream remote, else origin), if it
    is configured."""
    from loopx.remote import sync  # as in open_ledger

    name = sync.default_remote(ledger.repo)
    return name if name in gateway.out(ledger.repo.cwd, "remote").split() else None
