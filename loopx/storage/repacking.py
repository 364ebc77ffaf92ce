"""loopx's own maintenance of the object store: pack the loose objects appends leave behind,
in the background, whatever the repository's ``gc.auto`` says, and never prune
(docs/reliability.md, "Maintenance")."""

from __future__ import annotations

import os
import time

from loopx.storage import gateway

# git's own default for gc.auto: about this many loose objects make loopx pack them (whatever
# the repository's gc.auto says: it may be 0, off).
GC_AUTO_LOOSE = 6700
# git's own default for gc.autoPackLimit: past this many packs, maintenance packs them into one.
PACK_LIMIT = 50
# One maintenance at a time, give or take: none starts within this long of the last start.
MAINTENANCE_EVERY_S = 30.0


def maintain(repo: gateway.Repo) -> None:
    """Pack loose objects once there are enough of them: single appends leave a blob, a
    few trees and a commit each, and packed, the trees an append rewrote are deltas of
    the ones before (a few dozen bytes each; docs/reliability.md, "Maintenance").

    Counts the files of one object directory, as git does to estimate (``objects/17``:
    1/256 of them); only past the threshold does it start :func:`command` in the
    background (detached: the write has returned). loopx's own, so it does not depend on
    the repository's ``gc.auto`` (which may be 0).
    """
    try:
        loose = len(os.listdir(repo.common_dir / "objects" / "17"))
    except OSError:
        return
    if loose * 256 <= GC_AUTO_LOOSE or not _due(repo):
        return
    gateway.spawn(repo.cwd, *command(repo))

def _due(repo: gateway.Repo) -> bool:
    """Whether no maintenance started in the last MAINTENANCE_EVERY_S (and say one has)."""
    stamp = repo.loopx_dir / "maintenance.stamp"
    try:
        if time.time() - stamp.stat().st_mtime < MAINTENANCE_EVERY_S:
            return False
    except OSError:
        pass
    try:
        repo.loopx_dir.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    except OSError:
        return False
    return True

def command(repo: gateway.Repo) -> tuple[str, ...]:
    """The git command that packs this repository's objects, safe beside writers.

    ``repack -d`` packs the loose objects reachable from refs and reflogs into a new pack
    and removes the loose copies now in a pack (``prune-packed``): an object that is in
    no pack is never deleted, so a writer's objects that no ref reaches yet stay. Past
    PACK_LIMIT packs, ``-A`` packs everything into one; the unreachable objects of old
    packs become loose again (git's own `gc` does the same), never deleted; packs with a
    ``.keep`` (a batch being written) are left alone. Never a prune.
    """
    try:
        packs = sum(1 for name in os.listdir(repo.common_dir / "objects" / "pack")
                    if name.endswith(".pack"))
    except OSError:
        packs = 0
    return ("repack", "-A", "-d", "-q", "-l") if packs > PACK_LIMIT else (
        "repack", "-d", "-q", "-l")

