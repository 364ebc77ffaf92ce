"""Why git does not list a ref that exists or existed: the damage :meth:`Store.tip` names
(docs/reliability.md, "The ledger is read as written")."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, TypeVar

from loopx.errors import DamagedRef
from loopx.storage import gateway, worktrees

if TYPE_CHECKING:
    from loopx.storage.store import Store

T = TypeVar("T")
MISSING_TIP_WAIT_S = 5.0  # how long a missing tip may be a writer settling beside gc


def patiently(read: Callable[[], T]) -> T:
    """``read()``, looked at again for up to MISSING_TIP_WAIT_S while it names a missing tip:
    a writer whose new commit a concurrent ``git gc --prune=now`` deleted before its swap
    made it reachable rewrites it in Store.settle(), so a missing tip may be only that."""
    deadline, pause = time.monotonic() + MISSING_TIP_WAIT_S, 0.05
    while True:
        try:
            return read()
        except DamagedRef as exc:
            if exc.kind != "missing" or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.5)


def why(store: Store, ref: str, stderr: str) -> DamagedRef | None:
    """Why git does not list ``ref`` although it exists or existed (None: it never did).
    Reads files only when there is no such ref: a clone without a ledger pays no git."""
    common = store.repo.common_dir
    repair = "; nothing was changed. `git loopx doctor` offers the repair"
    said = [line.removeprefix("fatal: ") for line in stderr.splitlines()
            if line.startswith("fatal: ")]
    if "missing object" in stderr:
        target = store.ref_target(ref) or "an object"
        return DamagedRef(
            f"{ref} points at {target[:12]}, which is missing from this repository (pruned "
            "by `git gc`?); nothing was changed. `git loopx doctor` says which events are "
            "lost, `git loopx doctor --repair` goes on with every other event", kind="missing")
    if said:
        return DamagedRef(f"git cannot read {ref}: {said[-1]}{repair}", kind="unreadable")
    loose = common / ref
    if loose.is_file():
        held = worktrees.first_line(loose)[:60]
        return DamagedRef(f"{ref} cannot be read: its file {loose} holds {held!r}, not a "
                          f"commit id{repair}", kind="unreadable")
    if gateway.has_ref(store.repo, ref):
        return DamagedRef(f"{ref} cannot be read: its line in {common / 'packed-refs'} is "
                          f"damaged{repair}", kind="unreadable")
    logged = [new for _, new, _ in store.reflog(ref) if set(new) != {"0"}]
    if logged:
        return DamagedRef(f"{ref} is gone, but its reflog says it pointed at {logged[0][:12]}"
                          f" (deleted by hand, or lost from packed-refs?){repair}",
                          kind="gone")
    return None
