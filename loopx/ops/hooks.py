"""The git hooks: installing the shims, and what each shim's ``git loopx hook NAME`` does.

post-commit records commit evidence, post-rewrite remaps it after an amend or rebase, and
pre-push sends the state branch along. A hook fails open: a loopx problem is one line on
stderr and git goes on, unless ``loopx.hooks.strict=true`` (see docs/hooks.md).

A hook never stalls git. post-commit queues the record of a commit on a held lease in the
spool (:mod:`loopx.hooks.spool`) and hands it to a detached ``git loopx hooks drain``
(``loopx.hooks.background``, true by default): the commit returns before the event model is
even loaded, and every loopx command applies the queue first (waiting for a drain under
way), so nothing recorded is missing from what it reads. Any hook waits at most
``spool.WAIT_S`` for the state branch, then leaves its work in the spool too, and starts a
detached drain for it unless one is running; that drain outwaits a busy state branch (up to
``DRAIN_PATIENCE_S``), so no entry waits for a later command while no drain runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

from loopx.errors import CheckedOut, LockTimeout, LoopxError, RefRaceError, refused_write
from loopx.hooks import capture, shims, spool, unrecorded
from loopx.ledger import cache
from loopx.ledger.book import Ledger
from loopx.model import plural, typed
from loopx.ops import ledgers
from loopx.projection import environment
from loopx.storage import files, gateway, owner, settings

HOOKS = shims.HOOK_NAMES
# Tests set this to a hook name (or "all") to make that hook's handler fail on purpose, to
# check that a loopx failure never blocks the git command (see docs/hooks.md).
FAIL_ENV = "LOOPX_HOOK_TEST_FAIL"
# Set on the detached drain a hook starts: it then keeps trying while the state branch is busy
# (another loopx writing, a ref's .lock, the branch checked out), for up to DRAIN_PATIENCE_S,
# rather than leave what it could not apply yet for a later command.
BACKGROUND_ENV = "LOOPX_HOOK_DRAIN"
DRAIN_PATIENCE_S = 300.0


@dataclass(frozen=True)
class Hook:
    """One call of a hook: where, who, which state branch, git's arguments and stdin."""

    name: str
    cwd: str
    actor: Optional[str]
    state_ref: Optional[str] = None
    args: tuple[str, ...] = ()
    stdin: str = ""
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    no_actor: Optional[str] = None  # why ``actor`` is None (an identity refused), if known

    @property
    def ref(self) -> str:
        return ledgers.state_ref(self.state_ref)

    def who(self) -> str:
        """The actor, needed once there is something to record."""
        if not self.actor:
            raise LoopxError(self.no_actor or
                             "who is acting? set LOOPX_ACTOR or `git config user.email`")
        return self.actor


@dataclass
class HookResult:
    """What a hook says (one line each) and, when it failed, why and whether git must stop."""

    lines: list[str] = field(default_factory=list)
    failed: Optional[str] = None
    strict: bool = False

    @property
    def exit_code(self) -> int:
        return 1 if self.failed and self.strict else 0


def run(hook: Hook) -> HookResult:
    """Run loopx's part of ``hook``; never raises (fails open unless strict)."""
    try:
        if hook.environ.get(FAIL_ENV) in (hook.name, "all"):
            raise RuntimeError(f"forced failure ({FAIL_ENV}={hook.environ[FAIL_ENV]})")
        return HookResult(_HANDLERS[hook.name](hook))
    except Exception as exc:  # noqa: BLE001 - fail open is the point
        # A write the machine refused is named as every command names it ("[Errno 28] No
        # space left on device" said neither which file nor that nothing was changed).
        message = refused_write(exc) or (
            str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        return HookResult(failed=message, strict=_config_true(hook.cwd, "loopx.hooks.strict"))


def _post_commit(hook: Hook) -> list[str]:
    found = _ledger_tip(hook)
    if found is None:
        spool.pause_point("start", hook.environ)
        return []
    # A sweep beside it waits; killed, its mark names who made the commit.
    with unrecorded.running(found.loopx_dir, hook.actor) as noted:
        spool.pause_point("start", hook.environ)
        return _post_commit_in(hook, found, noted)


def _post_commit_in(hook: Hook, found: "_Found", noted: Callable[[str], None]) -> list[str]:
    if _rebasing(found.git_dir):
        return []
    branch = _head_ref(hook.cwd, found.git_dir)
    if branch == hook.ref:
        return [f"this commit is on {hook.ref.removeprefix('refs/heads/')} itself, which loopx "
                "writes: a commit there from a stale index deletes events. `git loopx doctor` "
                "checks; keep the state branch out of work trees (git switch --detach)"]
    if _internal(branch, hook.ref):
        return []  # a proposal or another loopx branch is not work on a todo
    info = capture.read_commit(hook.cwd, "HEAD")
    noted(info.sha)
    lines = _post_commit_of(hook, found, branch, info)
    unrecorded.mark_done(found.loopx_dir, info.sha)  # recorded, queued, or nothing to record
    return lines


def _post_commit_of(hook: Hook, found: "_Found", branch: Optional[str],
                    info: capture.CommitInfo) -> list[str]:
    doubt = _hooks_state_doubt(found.loopx_dir, found.tip) if hook.ref == ledgers.state_ref(None) else []
    held = capture.cached_leases(loopx_dir=found.loopx_dir, ref=hook.ref, tip=found.tip,
                                 actor=hook.actor or "", branch=branch)
    # Work on a held lease is recorded off git's path; a commit that names todos or goals
    # (trailers) in the foreground, so that a wrong id is reported at once; and every commit
    # under loopx.hooks.strict, whose failure must reach the commit.
    queue_it = not (_config_false(hook.cwd, "loopx.hooks.background")
                    or _config_true(hook.cwd, "loopx.hooks.strict"))
    if not info.todos and not info.goals and (held == [] or not info.leased):  # nothing to
        if queue_it:                           # record, known without loading the model
            _drain_in_background(hook, found.loopx_dir)  # what a dead drainer left
            return doubt
        return doubt + _apply_spooled(hook, found)
    background = queue_it and not info.todos and not info.goals
    notes = [] if background else _apply_spooled(hook, found)
    inputs = {"commit": info.sha, "branch": branch, "amended": _amended(hook.cwd, info.sha)}
    if background:
        entry = spool.append(found.loopx_dir, hook=hook.name, inputs=inputs, actor=hook.who(),
                             state_ref=hook.ref)
        spool.pause_point("queued", hook.environ)
        _drain_in_background(hook, found.loopx_dir)
        return doubt + [f"recording this commit's evidence{_for(info, held)} in the background "
                f"({entry.path.name}; `git loopx hooks queue` shows what waits)"]
    with Ledger(gateway.discover(hook.cwd), ref=hook.ref, scrub=ledgers.scrub) as ledger:
        ledger.store.wait_limit = spool.WAIT_S
        try:
            result = capture.record_commit(ledger=ledger, actor=hook.who(), info=info,
                                           branch=branch, amended=inputs["amended"])
        except BUSY as exc:
            return doubt + notes + [_queued(hook, found.loopx_dir, inputs, exc,
                                            "the commit's evidence")]
    return doubt + notes + result.notes + [_recorded_line(e) for e in result.events]


def _hooks_state_doubt(loopx_dir: Path, tip: str) -> list[str]:
    """The line that says the shim's file was not believed (damaged, cut short, of another
    format) although it names this tip; loopx decided instead and rewrites it."""
    path = cache.hooks_state_path(loopx_dir)
    why = cache.hooks_state_trouble(path, tip)
    return [f"{path} was not believed ({why}); loopx decided this commit and rewrites it"
            ] if why else []


def _for(info: capture.CommitInfo, held: Optional[list[str]]) -> str:
    named = [*info.todos, *(held or []), *info.goals]
    return f" for {', '.join(dict.fromkeys(named))}" if named else ""


# The state branch cannot take the hook's write now, but will later: queue it.
BUSY = (LockTimeout, RefRaceError, CheckedOut)


def _queued(hook: Hook, loopx_dir: Path, inputs: dict[str, Any], why: Exception,
            what: str) -> str:
    """Leave the hook's work in the spool; the line that says so."""
    entry = spool.append(loopx_dir, hook=hook.name, inputs=inputs, actor=hook.who(),
                         state_ref=hook.ref)
    _drain_in_background(hook, loopx_dir)  # it outwaits the branch: no later command needed
    reason = str(why).strip().splitlines()[0] if str(why).strip() else type(why).__name__
    return (f"{what} is queued ({entry.path.name}) and recorded in the background once the "
            f"state branch is free: {reason}")


def _apply_spooled(hook: Hook, found: "_Found") -> list[str]:
    """Apply what earlier hooks queued (the common case, nothing queued, costs one listing)."""
    if not spool.has_pending(found.loopx_dir):
        return []
    with Ledger(gateway.discover(hook.cwd), ref=hook.ref, scrub=ledgers.scrub) as ledger:
        done = ledgers.apply_spool(ledger, sweep=False)  # (a hook: see apply_spool)
    if done is None:
        return []
    if done.kept:  # the branch is busy: a drain that outwaits it takes them
        _drain_in_background(hook, found.loopx_dir)
    lines = [f"recorded {len(done.applied)} queued hook entries"] if done.applied else []
    return lines + [f"queued entry {i} set aside: {why}" for i, why in done.failed.items()]


def _head_ref(cwd: str, git_dir: str) -> Optional[str]:
    """The branch HEAD points at (``refs/...``), None when detached. Read from the HEAD file:
    no process on the path every commit takes."""
    try:
        with open(os.path.join(git_dir, "HEAD"), encoding="utf-8") as fh:
            head = fh.read().strip()
    except OSError:
        head = ""
    if head.startswith("ref: ") and head != "ref: refs/heads/.invalid":
        return head[5:]
    if head and not head.startswith("ref: "):
        return None  # a detached HEAD holds the commit itself
    # Unreadable, or the reftable backend's placeholder: ask git.
    return gateway.out(cwd, "symbolic-ref", "-q", "HEAD", check=False) or None


def _internal(branch: Optional[str], state_ref: str) -> bool:
    """The state branch, another loopx branch or a proposal: never a todo's work."""
    return branch is not None and (branch == state_ref or branch.startswith(
        ("refs/heads/loopx/", "refs/loopx/")))


def _amended(cwd: str, sha: str) -> Optional[str]:
    """The commit an amend replaced, when ``sha`` was just made by `git commit --amend` (its
    HEAD reflog entry says so), else None."""
    proc = gateway.run(cwd, "log", "-g", "-1", "--format=%H%x1f%gs", "HEAD", check=False)
    entry = proc.stdout.decode("utf-8", "replace").rstrip("\n").split("\x1f", 1)
    if proc.returncode != 0 or entry[0] != sha or not entry[-1].startswith("commit (amend)"):
        return None
    # HEAD@{1}: the value before the amend, also when an expired reflog (`git gc`, a clock
    # ahead of gc.reflogExpire) holds only the amend's line, as the shim reads it
    old = gateway.run(cwd, "rev-parse", "-q", "--verify", "HEAD@{1}", check=False)
    return old.stdout.decode().strip() or None if old.returncode == 0 else None


def _recorded_line(event: Any) -> str:
    data = event.data
    target = f"todo {data.todo}" if data.todo else f"goal {event.env.goal}"
    return f"recorded commit evidence {data.id} for {target}"


def _config_true(cwd: str, key: str) -> bool:
    return settings.get_bool(cwd, key) is True


def _config_false(cwd: str, key: str) -> bool:
    return settings.get_bool(cwd, key) is False


def _drain_in_background(hook: Hook, loopx_dir: Path) -> None:
    """Start a detached ``git loopx hooks drain`` for what is queued, unless one is running
    (it takes what was queued after it started too), so that `git commit` returns now. Its
    messages go to <git common dir>/loopx/hooks.log."""
    if not spool.has_pending(loopx_dir) or spool.drain_running(loopx_dir):
        return
    log_path = loopx_dir / "hooks.log"
    env = dict(hook.environ)  # each entry names its own actor
    env[BACKGROUND_ENV] = "1"
    if hook.state_ref:
        env["LOOPX_STATE_REF"] = hook.state_ref
    with files.log(log_path) as log:
        subprocess.Popen([sys.executable, "-m", "loopx", "hooks", "drain", "--quiet"],
                         cwd=hook.cwd, env=env,
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         start_new_session=True)


def drain(cwd: str, *, state_ref: Optional[str] = None, retry: bool = False,
          wait: Optional[float] = None, patience: Optional[float] = None) -> "spool.Drained":
    """Apply the hook queue now (``git loopx hooks drain``): with ``retry``, the entries set
    aside are queued again first. Off git's path, it waits longer than a hook for the state
    branch and for another drain (``wait``, default ``ledgers.READ_WAIT_S``). While entries
    must wait for a busy branch it tries again for up to ``patience`` seconds (default: none,
    or ``DRAIN_PATIENCE_S`` in the detached drain a hook starts, see BACKGROUND_ENV)."""
    found = gateway.discover(cwd)
    if state_ref is not None:
        ledgers.check_state_ref(cwd, state_ref)
    if retry:
        spool.retry(found.loopx_dir)
    background = bool(os.environ.get(BACKGROUND_ENV))  # the drain a hook started
    if patience is None:
        patience = DRAIN_PATIENCE_S if background else 0.0
    deadline = time.monotonic() + patience
    total, pause = spool.Drained(), 1.0
    while True:
        with Ledger(found, ref=ledgers.state_ref(state_ref), scrub=ledgers.scrub) as ledger:
            done = ledgers.apply_spool(ledger, wait=ledgers.READ_WAIT_S if wait is None else wait,
                                       sweep=not background)
        if done is None:
            return total
        total.applied += done.applied
        total.failed.update(done.failed)
        total.found += done.found
        total.unknown += done.unknown
        total.bare += done.bare
        total.kept, total.busy = done.kept, done.busy
        if not done.kept or time.monotonic() >= deadline:
            return total
        time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
        pause = min(pause * 2, 30.0)  # a branch checked out for long is not polled hot


@dataclass(frozen=True)
class Waiting:
    """An entry of the hook queue waiting to be applied."""

    entry: str
    hook: str
    at: str
    actor: str
    commit: Optional[str]
    state_ref: Optional[str]


@dataclass(frozen=True)
class Queue:
    """The hook queue: how many entries wait and which, and those set aside with the reason."""

    queued: int
    set_aside: list[environment.SetAside]
    waiting: list[Waiting]


def queue(cwd: str) -> Queue:
    """The hook queue (``git loopx hooks queue``): how many entries wait and which (not one
    a drain is applying right now), and those set aside with the reason."""
    loopx_dir = gateway.discover(cwd).loopx_dir
    found = spool.summary(loopx_dir)
    found["waiting"] = [{"entry": e.path.name, "hook": e.hook, "at": e.at, "actor": e.actor,
                         "commit": e.inputs.get("commit"), "state_ref": e.state_ref}
                        for e in spool.pending(loopx_dir)] if found["queued"] else []
    return typed.build(Queue, found)


def _rebasing(git_dir: str) -> bool:
    # The sequencer runs post-commit for every commit a rebase picks (git >= 2.24); post-rewrite
    # remaps their evidence once it is done, so per-pick records would repeat it (and cost time).
    return any(os.path.isdir(os.path.join(git_dir, d)) for d in ("rebase-merge", "rebase-apply"))


class _Found(NamedTuple):
    git_dir: str  # this worktree's
    loopx_dir: Path  # loopx's files in the common git dir (as gateway.Repo.loopx_dir)
    tip: str


def _ledger_tip(hook: Hook) -> Optional[_Found]:
    """Where the repository is and its state tip, if it has a ledger (one git call; more
    for a state ref given: it must be one, or nothing is read as state)."""
    if hook.state_ref:
        ledgers.check_state_ref(hook.cwd, hook.state_ref)
    proc = gateway.run(hook.cwd, "rev-parse", "--absolute-git-dir", "--git-common-dir",
                       "--verify", "-q", f"{hook.ref}^{{commit}}", check=False)
    lines = proc.stdout.decode().splitlines()
    if proc.returncode != 0 and len(lines) == 2 and (Path(hook.cwd) / lines[1] / hook.ref).is_file():
        # The ref is there but its commit is not (pruned): say so, never act as if no ledger.
        with Ledger(gateway.discover(hook.cwd), ref=hook.ref) as ledger:
            ledger.tip()  # raises DamagedLedger, naming `git loopx doctor`
    if proc.returncode != 0 or len(lines) != 3:
        return None
    common = (Path(hook.cwd) / lines[1]).resolve()  # relative to the cwd, as discover reads it
    return _Found(lines[0], owner.checked(common / "loopx", common), lines[2])


def _post_rewrite(hook: Hook) -> list[str]:
    pairs = capture.parse_rewrites(hook.stdin.splitlines())
    if not hook.stdin and hook.environ.get("PRE_COMMIT_REWRITE_COMMAND") == "amend":
        pairs = _amend_from_reflog(hook.cwd)  # pre-commit passes no stdin: HEAD@{1} -> HEAD
    found = _ledger_tip(hook)
    if not pairs or found is None:
        return []
    with ledgers.open_ledger(hook.cwd, ref=hook.state_ref, wait=spool.WAIT_S) as ledger:
        ledger.store.wait_limit = spool.WAIT_S
        try:
            if spool.has_pending(found.loopx_dir):  # the amended commit's record, say: after it
                raise LockTimeout("earlier hook work is still being applied")
            result = capture.record_rewrite(ledger=ledger, actor=hook.who(), pairs=pairs)
        except BUSY as exc:
            return [_queued(hook, found.loopx_dir, {"pairs": pairs}, exc,
                            "the remap of the rewritten commits")]
    count = sum(len(e.data.mappings) for e in result.events)
    return [f"evidence follows {plural.counted(count, 'rewritten commit')}"] if count else []


def _amend_from_reflog(cwd: str) -> list[dict[str, str]]:
    proc = gateway.run(cwd, "rev-parse", "HEAD@{1}", "HEAD", check=False)
    old_new = proc.stdout.decode().split()
    if proc.returncode != 0 or len(old_new) != 2:
        return []
    return [{"old": old_new[0], "new": old_new[1]}]


def _pre_push(hook: Hook) -> list[str]:
    stdin, env = hook.stdin, hook.environ
    if not stdin and "PRE_COMMIT_REMOTE_BRANCH" in env:  # pre-commit ate stdin
        stdin = " ".join(env.get(k, "") or "-" for k in (
            "PRE_COMMIT_LOCAL_BRANCH", "PRE_COMMIT_TO_REF", "PRE_COMMIT_REMOTE_BRANCH",
            "PRE_COMMIT_FROM_REF"))
    remote = hook.args[0] if hook.args else env.get("PRE_COMMIT_REMOTE_NAME", "")
    if not remote or not pushes_code(stdin.splitlines(), hook.ref):
        return []
    if _config_false(hook.cwd, "loopx.pushState") or _ledger_tip(hook) is None:
        return []
    # Imported here, a measured start-up decision: sync (and what it pulls in) costs every
    # post-commit tens of milliseconds, and only pre-push needs it (docs/benchmarks.md).
    from loopx.remote import sync

    with ledgers.open_ledger(hook.cwd, ref=hook.state_ref, wait=spool.WAIT_S) as ledger:
        ledger.store.wait_limit = spool.WAIT_S
        try:
            line = sync.push_along(ledger=ledger, remote=remote)
        except BUSY as exc:
            reason = str(exc).strip().splitlines()[0]
            return [f"state not pushed ({reason}); `git loopx sync` sends it later"]
    return [line] if line else []


def pushes_code(updates: list[str], state_ref: str) -> bool:
    """Whether pre-push's stdin lines update some ref other than the state branch."""
    for line in updates:
        parts = line.split()
        if len(parts) != 4:
            continue
        _, local_sha, remote_ref, _ = parts
        if remote_ref == state_ref:
            return False  # the state branch itself is being pushed: nothing to add
        if local_sha.strip("0"):
            return True
    return False


_HANDLERS: dict[str, Callable[[Hook], list[str]]] = {
    "post-commit": _post_commit, "post-rewrite": _post_rewrite, "pre-push": _pre_push,
}


def install(cwd: str, *, force: bool = False) -> tuple[Path, list[str]]:
    """Install the shims (chaining hooks already there) and the help viewer; the hooks
    folder and one line per hook saying what happened."""
    lines = shims.install(cwd=cwd, force=force)
    if shims.install_help_viewer(cwd=cwd):
        lines.append(HELP_VIEWER_LINE)
    return shims.hooks_dir(cwd), lines


def install_help_viewer(cwd: str, *, everywhere: bool = False) -> Optional[str]:
    """Make `git loopx --help` work here without man (local git config; ``everywhere``: the
    user's global config); a line saying so when it was set now."""
    if not shims.install_help_viewer(cwd=cwd, scope="--global" if everywhere else "--local"):
        return None
    return HELP_VIEWER_LINE.replace(" here ", " in every repository ") if everywhere else (
        HELP_VIEWER_LINE)


HELP_VIEWER_LINE = ("`git loopx --help` here shows the built-in help where man cannot "
                    "(git config man.viewer loopx)")


def uninstall(cwd: str) -> list[str]:
    """Remove the shims and put back exactly what was there before (and the help viewer)."""
    lines = shims.uninstall(cwd=cwd)
    if shims.uninstall_help_viewer(cwd=cwd):
        lines.append("removed the help viewer (git config man.viewer loopx)")
    return lines


def installed(cwd: str) -> list[shims.HookState]:
    """Which loopx hooks are installed, chained or missing."""
    return shims.status(cwd=cwd)
