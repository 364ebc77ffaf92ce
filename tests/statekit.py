"""Helpers for tests that craft state commits by hand, the way a person (or an attacker)
could with plain git: event files written with the real model and codec, committed with
real git plumbing on any ref, signed or not."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Optional

from loopx.model import codec
from loopx.model import ids
from loopx.model.events import EVENT_TYPES, Event, event_path, make_event, parse_event


def run(
    cwd: Path, *args: str, input: bytes | None = None, env: dict[str, str] | None = None
) -> str:
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        env=dict(os.environ, **(env or {})),
    )
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr.decode()}")
    return proc.stdout.decode().strip()


def event(
    type: str,
    data: dict[str, Any],
    *,
    clock: int,
    actor: str = "human:alice@example.com",
    goal: Optional[str] = None,
    at: str = "2026-11-29T12:00:00Z",
) -> Event:
    return make_event(
        type=type,
        data=data,
        event_id=ids.new_event_id(),
        at=at,
        clock=clock,
        actor=actor,
        goal=goal,
    )


def foreign_event(type: str, data: dict[str, Any], **envelope: Any) -> Event:
    """An event as another clone (an older loopx, another tool, a hand-written file) may have
    it: held to the rules of reading only, not to what `git loopx` refuses to write (a line
    break in a title). ``envelope``: clock, actor, goal, at."""
    doc = {"id": ids.new_event_id(), "type": type, "v": EVENT_TYPES.version(type),
           "at": "2026-11-29T12:00:00Z", "actor": "human:alice@example.com", "data": data,
           **envelope}
    return parse_event(doc)


def file_of(ev: Event) -> tuple[str, bytes]:
    return event_path(ev), codec.dump(ev.to_dict())


def commit_files(
    repo: Path,
    ref: str,
    files: dict[str, Optional[bytes]],
    *,
    parent: Optional[str] = None,
    message: str = "state change",
    sign_key: Optional[Path] = None,
    mode: str = "100644",
) -> str:
    """Commit ``files`` (path -> bytes; None deletes) on top of ``parent`` (default: ``ref``'s
    tip, else loopx/state's) and move ``ref`` there. Returns the new commit."""
    parent = parent or _tip(repo, ref) or _tip(repo, "refs/heads/loopx/state")
    with tempfile.TemporaryDirectory() as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        if parent:
            run(repo, "read-tree", parent, env=env)
        for path, data in files.items():
            if data is None:
                run(repo, "update-index", "--remove", "--force-remove", path, env=env)
                continue
            blob = run(repo, "hash-object", "-w", "--stdin", input=data)
            run(repo, "update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", env=env)
        tree = run(repo, "write-tree", env=env)
    args = ["commit-tree", tree, *(["-p", parent] if parent else []), "-m", message]
    if sign_key is not None:
        args = ["-c", "gpg.format=ssh", "-c", f"user.signingkey={sign_key}", *args, "-S"]
    commit = run(repo, *args)
    run(repo, "update-ref", ref, commit)
    return commit


def _tip(repo: Path, ref: str) -> Optional[str]:
    proc = subprocess.run(
        ["git", "rev-parse", "-q", "--verify", ref], cwd=repo, capture_output=True
    )
    return proc.stdout.decode().strip() or None


def ssh_key(where: Path, name: str) -> tuple[Path, str]:
    """A fresh ed25519 key: (private key path, "type base64" public part)."""
    key = where / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)],
        check=True,
        capture_output=True,
    )
    return key, " ".join(Path(f"{key}.pub").read_text().split()[:2])
