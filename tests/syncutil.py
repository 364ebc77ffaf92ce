"""Helpers for the sync tests: bare remotes, clones, appends, invariants. Real git only."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from conftest import git

NOW = datetime(2030, 1, 1, tzinfo=timezone.utc)
ZERO = "0" * 40
STATE = "refs/heads/loopx/state"


def bare_remote(tmp_path: Path, name: str = "remote.git") -> Path:
    """A bare remote that keeps a reflog of every ref update, so we can prove fast-forwards."""
    path = tmp_path / name
    git(tmp_path, "init", "-q", "--bare", str(path))
    git(path, "config", "core.logAllRefUpdates", "always")
    return path


@contextlib.contextmanager
def git_daemon(served: Path) -> Iterator[str]:
    """`git daemon` on 127.0.0.1 serving (and taking pushes to) the repositories in ``served``;
    yields its base URL once it listens, and stops it by its pid. The caller allows the
    git protocol (GIT_ALLOW_PROTOCOL)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    daemon = subprocess.Popen(
        ["git", "daemon", "--listen=127.0.0.1", f"--port={port}", "--reuseaddr", "--export-all",
         "--enable=receive-pack", f"--base-path={served}", str(served)],
        stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"git://127.0.0.1:{port}"
    try:
        for _ in range(200):  # until it listens
            if subprocess.run(["git", "ls-remote", url + "/x"], capture_output=True,
                              text=True).stderr.find("Connection refused") < 0:
                break
            time.sleep(0.05)
        yield url
    finally:
        os.killpg(daemon.pid, 15)
        daemon.wait(timeout=10)


def clone(url: str | Path, path: Path) -> Path:
    git(path.parent, "clone", "-q", str(url), str(path))
    return path


def seeded(tmp_path: Path, clones: int) -> tuple[Path, list[Path]]:
    """A bare remote whose ledger was created by the first of ``clones`` clones."""
    remote = bare_remote(tmp_path)
    first = clone(remote, tmp_path / "c0")
    git(first, "commit", "-q", "--allow-empty", "-m", "initial")
    git(first, "push", "-q", "origin", "HEAD")
    with open_ledger(first) as led:
        led.init(actor="agent:c0")
    do_sync(first)
    return remote, [first] + [clone(remote, tmp_path / f"c{n}") for n in range(1, clones)]


def open_ledger(path: Path) -> Any:
    from loopx.ops import ledgers

    return ledgers.open_ledger(path)


def note(path: Path, actor: str, text: str, event_id: str | None = None) -> str:
    from loopx.model.ids import new_short_id

    with open_ledger(path) as led:
        return led.append("note.added", {"id": new_short_id("n", event_id), "text": text},
                          actor=actor, event_id=event_id).id  # type: ignore[no-any-return]


def do_sync(path: Path, **kwargs: Any) -> Any:
    from loopx.remote import sync

    with open_ledger(path) as led:
        return sync.sync(ledger=led, **kwargs)


def snapshot(path: Path) -> dict[str, Any]:
    with open_ledger(path) as led:
        return led.snapshot(NOW)  # type: ignore[no-any-return]


def state_files(path: Path, ref: str = STATE) -> dict[str, str]:
    out = git(path, "ls-tree", "-r", "--full-tree", ref)
    return {line.split("\t")[1]: line.split()[2] for line in out.splitlines()}


def tip(path: Path, ref: str = STATE) -> str | None:
    proc = subprocess.run(["git", "rev-parse", "-q", "--verify", ref], cwd=path,
                          capture_output=True, text=True)
    return proc.stdout.strip() or None


def assert_only_fast_forwarded(remote: Path, ref: str = STATE) -> int:
    """Every reflog entry of ``ref`` in the bare remote moved it forward; returns how many."""
    entries = (remote / "logs" / ref).read_text().splitlines()
    for line in entries:
        old, new = line.split()[:2]
        if old != ZERO:
            proc = subprocess.run(["git", "merge-base", "--is-ancestor", old, new], cwd=remote)
            assert proc.returncode == 0, f"remote {ref} was not fast-forwarded: {old} -> {new}"
    return len(entries)


def assert_fsck_clean(path: Path) -> None:
    proc = subprocess.run(["git", "fsck", "--no-dangling", "--no-progress"], cwd=path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def event_ids(path: Path) -> list[str]:
    """Event ids on the state branch (a list: duplicates would show twice)."""
    return [p.rsplit("/", 1)[1].split(".")[0] for p in state_files(path) if p.startswith("events/")]


def event_ids_at(path: Path, rev: str) -> list[str]:
    """Event ids in the state commit ``rev``."""
    return event_ids(path) if rev == STATE else [
        p.rsplit("/", 1)[1].split(".")[0] for p in state_files(path, rev) if p.startswith("events/")]


# --- forging state commits by hand (what a hostile or broken remote could push) ---


def blob(repo: Path, data: bytes) -> str:
    """Write ``data`` as a blob; its id."""
    proc = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=data,
                          capture_output=True, check=True)
    return proc.stdout.decode().strip()


def mktree(repo: Path, entries: dict[str, tuple[str, str, str]]) -> str:
    """Build nested trees with `git mktree` from path -> (mode, type, oid)."""
    here: dict[str, tuple[str, str, str]] = {}
    subdirs: dict[str, dict[str, tuple[str, str, str]]] = {}
    for path, entry in entries.items():
        head, sep, rest = path.partition("/")
        if sep:
            subdirs.setdefault(head, {})[rest] = entry
        else:
            here[head] = entry
    for name, sub in subdirs.items():
        here[name] = ("040000", "tree", mktree(repo, sub))
    lines = "".join(f"{mode} {kind} {oid}\t{name}\n" for name, (mode, kind, oid) in here.items())
    return git(repo, "mktree", input=lines)


def forge(repo: Path, base: str, *, add: dict[str, tuple[str, bytes]] | None = None,
          drop: tuple[str, ...] = (), parent: str | None = None) -> str:
    """A commit whose tree is ``base``'s files minus ``drop`` plus ``add`` (path -> (mode, data))."""
    files = {}
    for line in git(repo, "ls-tree", "-r", "--full-tree", base).splitlines():
        meta, path = line.split("\t")
        mode, kind, oid = meta.split()
        files[path] = (mode, kind, oid)
    for path in drop:
        del files[path]
    for path, (mode, data) in (add or {}).items():
        if mode == "160000":
            files[path] = (mode, "commit", data.decode())
        else:
            files[path] = (mode, "blob", blob(repo, data))
    tree = mktree(repo, files)
    return git(repo, "commit-tree", tree, "-p", parent or base, "-m", "forged")
