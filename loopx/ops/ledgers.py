"""Opening and creating a ledger: what every interface does before anything else."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from loopx.errors import (CheckedOut, LockTimeout, LoopxError, Quarantined, RefRaceError,
                          SyncError, UsageError)
from loopx.ledger.book import Ledger
from loopx.storage import gateway
from loopx.storage.store import STATE_REF

if TYPE_CHECKING:
    from loopx.features.spool import Drained
    from loopx.model.events import Event


def state_ref(name: Optional[str]) -> str:
    """The full ref of a state branch name (``loopx/state`` -> ``refs/heads/loopx/state``)."""
    ref = name or STATE_REF
    return ref if ref.startswith("refs/") else f"refs/heads/{ref}"


# How long a command waits for a drain of the hook queue under way (the detached one
# post-commit starts usually takes a fraction of a second) before it reads without it.
READ_WAIT_S = 10.0


def open_ledger(path: Path | str = ".", *, ref: Optional[str] = None,
                adopt: bool = True, wait: float = READ_WAIT_S) -> Ledger:
    """The ledger of the repository at ``path``, redacting secrets in every text it writes
    (:func:`loopx.features.redact.scrub`); in a fresh clone it adopts ``origin``'s state
    branch (after the incoming check), so handing work over is a ``git clone``. Work the git
    hooks queued is applied first (:func:`apply_spool`, waiting up to ``wait`` seconds)."""
    ledger = Ledger.open(path, ref=state_ref(ref), scrub=scrub)
    # The ref's file says "there is a ledger" without a git process; whether its commit is
    # there is for the first read to find (Ledger.tip raises DamagedLedger when it is not).
    if adopt and not ledger.store.has_ref(ledger.ref) and ledger.tip() is None:
        # (a proposal's tip falls back to loopx/state's)
        from loopx.features import sync  # only a clone without state adopts: start-up time

        sync.adopt(ledger=ledger)
    apply_spool(ledger, wait=wait)
    return ledger


def scrub(text: str) -> str:
    """Secret redaction (:func:`loopx.features.redact.scrub`), the ledgers' ``scrub``."""
    # Imported on the first text written: reads (a warm status) never compile its patterns.
    from loopx.features import redact

    return redact.scrub(text)


def apply_spool(ledger: Ledger, *, wait: Optional[float] = None) -> Optional[Drained]:
    """Apply the work git hooks queued (docs/hooks.md): post-commit's evidence, or what a hook
    could not write while the state branch was busy. Waits for a drain under way in another
    process (the detached one post-commit starts), so that what a commit recorded is there
    for the command that follows it; waits no longer than ``wait`` (a hook's limit by
    default) for it and for the state branch. What cannot be applied now stays queued, what
    can never be is set aside for `status` and `doctor`. None when nothing was queued."""
    # The queue's folder (spool.folder) exists once a hook queued work: only then is the queue
    # loaded, and capture (the event model) only when an entry waits: start-up time.
    if not (ledger.repo.loopx_dir / "spool").is_dir():
        return None
    from loopx.features import spool

    if not spool.has_pending(ledger.repo.loopx_dir) or ledger.tip() is None:
        return None
    from loopx.features import capture

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


def init(ledger: Ledger, *, actor: str, name: Optional[str] = None,
         offline: bool = False) -> Optional[Event]:
    """Create the ledger if it does not exist yet (idempotent); returns the new event.

    A clone whose remote already has state adopts it instead of starting a second ledger: the
    remote (see :func:`remote`) is fetched first, unless ``offline``, so that a clone made
    before the remote had a ledger does not start a second root that `sync` would then merge
    into everyone's state. An unreachable remote is an error (``offline`` skips the look).
    """
    from loopx.features import sync  # as in open_ledger

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


def actor(cwd: Path | str, given: Optional[str] = None) -> str:
    """Who is acting, the same for every interface: ``given`` (``--actor``, else
    ``$LOOPX_ACTOR``, which the interface reads), else ``human:<git user.email>``."""
    if given:
        return given
    email = gateway.out(cwd, "config", "user.email", check=False).strip()
    if not email:
        raise LoopxError(
            "who is acting? pass --actor KIND:NAME, set LOOPX_ACTOR, or `git config user.email`")
    return f"human:{email}"


def work_tree(path: Path | str = ".") -> Optional[Path]:
    """The work tree of the repository containing ``path`` (None in a bare one); raises
    NotFound outside a repository."""
    return gateway.discover(path).work_tree


def git_setting(cwd: Path | str, key: str) -> Optional[str]:
    """A git setting (``core.pager``) as git reads it in ``cwd``, or None when it is unset."""
    proc = gateway.run(cwd, "config", key, check=False)
    return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else None


def within(principal: str, named: Optional[str]) -> str:
    """Who acts for one call of a process that acts as ``principal`` (an MCP server): the
    principal itself, or a sub-identity under it that the call ``named``
    (``agent:claude@laptop/worker-2`` under ``agent:claude@laptop``); anyone else is refused."""
    if named is None or named == principal or named.startswith(principal + "/"):
        return named or principal
    raise UsageError(f"this server acts as {principal}; a call may name {principal} or a "
                     f"sub-identity {principal}/NAME, not {named}")


def remote(ledger: Ledger) -> Optional[str]:
    """The remote `sync` uses by default (the branch's upstream remote, else origin), if it
    is configured."""
    from loopx.features import sync  # as in open_ledger

    name = sync.default_remote(ledger.repo)
    return name if name in gateway.out(ledger.repo.cwd, "remote").split() else None
