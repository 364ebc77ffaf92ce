"""Why git does not list a ref that exists or existed: the damage :meth:`Store.tip` names
(docs/reliability.md, "The ledger is read as written")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopx.errors import DamagedRef
from loopx.storage import gateway, worktrees

if TYPE_CHECKING:
    from loopx.storage.store import Store


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
