"""Inboxes: a ref per clone on a shared remote, ``refs/loopx/inbox/<clone>``, where a sync
that lost the race for loopx/state parks its tip until some clone's push of loopx/state holds
it (docs/sync.md, "A fleet through one hub"). Only its owner writes or deletes it, so pushing
there is never contended; :mod:`loopx.remote.sync` fetches every inbox, checks and merges
the tips it lacks.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
from pathlib import Path
from typing import Optional

from loopx.errors import RefRaceError
from loopx.model import ids
from loopx.storage import files, gateway
from loopx.storage.gateway import Oid
from loopx.storage.store import Store

PREFIX = "refs/loopx/inbox/"  # on the remote: <clone> -> a tip that clone parked there
_ID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


def name(repo: gateway.Repo) -> str:
    """This clone's inbox on every remote, ``refs/loopx/inbox/<id>``: an id made once per
    clone (worktrees share it) and kept in loopx's private directory."""
    path = repo.loopx_dir / "inbox-id"
    with contextlib.suppress(FileNotFoundError):
        made = _read(path)
        if _ID.fullmatch(made):
            return PREFIX + made
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = path.with_name(f"inbox-id.{ids.new_event_id()}")
    fresh.write_text(ids.new_event_id() + "\n", "ascii")
    with contextlib.suppress(FileExistsError):
        os.link(fresh, path)  # the first of two racing creators wins; both read its id
    fresh.unlink()
    return PREFIX + _read(path)


def _read(path: Path) -> str:
    # Read as loopx's other files are: a fifo there hung sync for good, and a link to
    # /dev/zero grew it until killed; now NotAFile, one line.
    return files.read(path, 4096).decode("ascii", "replace").strip()


def tracking(remote: str) -> str:
    """Where a fetch keeps ``remote``'s inbox refs (outside ``refs/remotes/``, which a
    user's ``git fetch --prune`` would empty)."""
    return f"refs/loopx/inboxes/{remote}/"


def pending(store: Store, remote: str, ours: Optional[str]) -> list[tuple[Oid, str]]:
    """(tip, owner) of each fetched inbox tip ``ours`` lacks and no other of them holds (a
    tip parked after merging others' holds theirs: it is checked alone), leaving out the
    tips already quarantined; in random order."""
    if ours is None:
        return []
    listed = gateway.out(store.cwd, "for-each-ref", "--format=%(objectname) %(refname)",
                         f"--no-merged={ours}", tracking(remote))
    found = dict(line.split(" ", 1) for line in listed.splitlines() if line)
    refused = {store.tip(ref) for ref in gateway.out(
        store.cwd, "for-each-ref", "--format=%(refname)", "refs/loopx/quarantine/").split()}
    tips = [t for t in found if t not in refused]
    if len(tips) > 1:
        tips = gateway.out(store.cwd, "merge-base", "--independent", *tips).split()
    random.shuffle(tips)  # a caller that folds only some takes a fair few
    return [(Oid(t), found[t].removeprefix(tracking(remote))) for t in tips]


def park(repo: gateway.Repo, remote: str, tip: Oid) -> Optional[str]:
    """Push ``tip`` to our inbox on ``remote`` (never forced: our own tips only grow); the
    inbox ref when the remote holds it there, else None."""
    inbox = name(repo)
    proc = gateway.run(repo.cwd, "push", "--porcelain", "--no-verify", remote,
                       f"{tip}:{inbox}", check=False)
    return inbox if pushed_ok(proc.stdout, inbox) else None


def tidy(store: Store, repo: gateway.Repo, remote: str, *, parked: Optional[Oid],
         state: Optional[str]) -> None:
    """Delete our inbox on ``remote`` once its loopx/state (``state``) holds the tip there
    (``parked`` by this sync, else what the last fetch saw): a delete that names the tip it
    expects, so a newer tip parked meanwhile by another sync of this clone stays."""
    inbox = name(repo)
    seen = tracking(remote) + inbox.removeprefix(PREFIX)
    if parked is None and store.has_ref(seen) is False:
        return  # nothing of ours waits there (known without starting git)
    waiting = parked or store.tip(seen)
    if not waiting or not state or not store.is_ancestor(waiting, state):
        return
    proc = gateway.run(store.cwd, "push", "--porcelain", "--no-verify",
                       f"--force-with-lease={inbox}:{waiting}", remote, f":{inbox}",
                       check=False)
    if pushed_ok(proc.stdout, inbox) and store.tip(seen) is not None:
        with contextlib.suppress(RefRaceError):
            store.delete_ref_if(seen, expected=store.tip(seen) or "")


def pushed_ok(stdout: bytes, ref: str) -> bool:
    """Whether ``git push --porcelain`` says ``ref`` now holds what we pushed (or is gone,
    for a delete)."""
    for line in stdout.decode("utf-8", "replace").splitlines():
        flag, _, rest = line.partition("\t")
        if rest.split("\t")[0].endswith(f":{ref}"):
            return flag in (" ", "*", "=", "-")
    return False
