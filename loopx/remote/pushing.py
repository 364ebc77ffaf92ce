"""What a push of loopx/state may send, how a remote that cannot be reached is named, and
the ref lock a killed push leaves in a path remote (for :mod:`loopx.remote.sync`)."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Optional

from loopx import errors
from loopx.errors import LoopxError, SyncError
from loopx.ledger import layout
from loopx.storage import gateway
from loopx.storage.store import Store


def refuse_unsendable(store: Store, remote: str, theirs: Optional[str],
                       ours: Optional[str]) -> None:
    """No local commit we are about to push may leave an event file deleted or changed, or
    a file outside the state layout, at our tip (an ordinary commit on a checked-out
    loopx/state does both; `doctor --repair` puts events back). ``theirs`` is the remote
    state as we last saw it; one ``git log`` of what we would send, newest change first."""
    if not ours or theirs == ours:
        return
    raw = gateway.run(store.cwd, "log", "-m", "--raw", "--no-renames", "--no-abbrev", "-z",
                      "--format=", *([f"{theirs}..{ours}"] if theirs else [ours])).stdout
    newest: dict[str, tuple[str, str]] = {}  # path -> (status, mode) of its latest change
    items = iter(raw.split(b"\0"))
    for item in items:  # ":<mode> <mode> <oid> <oid> <status>" then the path
        fields = item.decode("utf-8", "replace").strip().lstrip(":").split(" ")
        if len(fields) == 5:
            path = next(items, b"").decode("utf-8", "surrogateescape")
            newest.setdefault(path, (fields[4], fields[1]))
    wrong = sorted(
        f"{path} ({'deleted' if status == 'D' else 'changed'})" if status != "A"
        else f"{path} (outside the state layout)"
        for path, (status, mode) in newest.items()
        if (status != "A" and path.split("/")[0] in layout.AREAS)
        or (status == "A" and layout.path_rule(path, mode) is not None))
    if wrong:
        shown = ", ".join(wrong[:5]) + (f" and {len(wrong) - 5} more" if len(wrong) > 5 else "")
        raise SyncError(
            f"local loopx/state has commits {remote} must not get: {shown}; nothing was "
            "pushed. `git loopx doctor` names them, `git loopx doctor --repair` puts deleted "
            "events back")


def clear_remote_lock(store: Store, remote: str, ref: str) -> None:
    """A push killed inside a local remote's receive-pack leaves that remote's ref lock behind.

    git has no way to clear it from the client; for a remote that is a path on this machine
    we remove it like our own stale locks (only when older than a few seconds). A server's
    receive-pack is not killed with us, so this is only needed for path remotes.
    """
    url = gateway.out(store.cwd, "remote", "get-url", remote, check=False)
    path = url.removeprefix("file://")
    if "://" in path or (":" in path.split("/")[0] and not path.startswith("/")):
        return  # ssh, git://, https: not ours to touch
    with contextlib.suppress(LoopxError, OSError):
        Store(gateway.discover(store.cwd / Path(path))).clear_stale_ref_lock(ref)


# What git adds after the cause of a failed fetch or push over any transport: it says nothing
# about what went wrong (and "and the repository exists." reads like the opposite).
_BOILERPLATE = ("Could not read from remote repository.",
                "Please make sure you have the correct access rights",
                "and the repository exists.")


def unreachable(store: Store, remote: str, stderr: bytes, doing: str) -> str:
    """One line saying that ``remote`` could not be reached to ``doing`` loopx/state, naming it
    (with its URL, credentials left out) and git's own cause; or, when a disk refused the
    write, which one and why (the remote was reached: "could not reach" would send the user
    to the network)."""
    url = gateway.out(store.cwd, "remote", "get-url", remote, check=False).strip()
    url = re.sub(r"//[^/@]*@", "//", url)  # https://user:token@host: never print the token
    refused = refusal(stderr, remote)
    if refused:
        return f"could not {doing} loopx/state ({remote}, {url or 'no URL'}): {refused}"
    return (f"could not reach {remote} ({url or 'no URL'}) to {doing} loopx/state: "
            f"{_cause(stderr.decode('utf-8', 'replace'))}")


def refusal(stderr: bytes, remote: str) -> Optional[str]:
    """Which side's disk refused a fetch or push, and why, when git's ``stderr`` says so
    (a line of the remote's own git starts ``remote:``); None otherwise."""
    for line in stderr.decode("utf-8", "replace").splitlines():
        meaning = errors.refusal(line)
        if meaning:
            side = f"{remote}'s side" if line.startswith("remote:") else "this clone"
            return f"{side}: {meaning}; nothing was changed"
    return None


def _cause(text: str) -> str:
    """The line of git's stderr that says what went wrong (a line ending in ':' is joined
    with the next: "unable to connect to host:" / "host[0: ...]: errno=Connection refused")."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    lines = [line.removeprefix("fatal: ").removeprefix("error: ") for line in lines
             if not line.startswith(_BOILERPLATE) and not line.startswith(("hint:", "warning:"))]
    if not lines:
        return "git gave no reason"
    first = lines[0]
    if first.endswith(":") and len(lines) > 1:
        first = f"{first} {lines[1]}"
    return first
