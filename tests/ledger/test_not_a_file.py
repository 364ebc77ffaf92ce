"""Something that is not a plain file where loopx keeps one of its own (a hostile run, session
35): a fifo, a link to an endless device, a link to itself. Opening a fifo to read waits for
a writer forever and reading /dev/zero never ends: `status` hung on a fifo or such a link in
place of the live file, the seen file, the cache's key, host.json or the owner file, every
command on the key and the owner; a fifo or a device as the clone's write lock was exit 3
(`ftruncate`: "unexpected OSError: Invalid argument"), a link to itself "Too many levels of
symbolic links", and a link to a file elsewhere had that file truncated. Real processes,
each under a timeout, so a hang fails instead of stalling the suite.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import git

# The files of <git common dir>/loopx that commands read (or lock) without being asked to.
READ = ["cache/{ref}.live", "cache/{ref}.seen", "cache/seal.key", "host.json", "owner",
        "commits-watch.json", "hooks.done", "hooks.state", "inbox-id"]
LOCKS = ["write.lock", "commits-watch.json.lock", "spool/.drain.lock"]
DAMAGE = ["a fifo", "a link to /dev/zero", "a link to itself"]


def _loopx(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, LOOPX_ACTOR="human:test@example.com")
    try:
        return subprocess.run(["git", "loopx", *args], cwd=repo, capture_output=True,
                              text=True, env=env, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`git loopx {' '.join(args)}` hung")


def _put(path: Path, damage: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    {"a fifo": lambda: os.mkfifo(path), "a link to /dev/zero": lambda: path.symlink_to("/dev/zero"),
     "a link to itself": lambda: path.symlink_to(path)}[damage]()


def _ledger(repo: Path) -> Path:
    """A ledger with a todo claimed under the hooks, every derived file written once."""
    for args in (("init",), ("goal", "add", "G", "--id", "g", "--accept", "ok"),
                 ("todo", "add", "g", "T", "--id", "t"), ("hooks", "install"),
                 ("todo", "claim", "t"), ("note", "add", "before"), ("status",)):
        done = _loopx(repo, *args)
        assert done.returncode == 0, (args, done.stderr)
    return repo / ".git" / "loopx"


def _ref_key(loopx_dir: Path) -> str:
    (live,) = (loopx_dir / "cache").glob("*.live")
    return live.stem


def _no_crash(result: subprocess.CompletedProcess[str]) -> None:
    assert "unexpected" not in result.stderr and "Traceback" not in result.stderr, result.stderr


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("name", READ)
def test_a_derived_file_that_is_not_a_file_is_done_without(repo: Path, name: str,
                                                           damage: str) -> None:
    loopx_dir = _ledger(repo)
    _put(loopx_dir / name.format(ref=_ref_key(loopx_dir)), damage)
    for args in (("status",), ("note", "add", "after"), ("todo", "list"), ("doctor",)):
        result = _loopx(repo, *args)
        _no_crash(result)
        assert result.returncode == 0, (args, result.stderr)
    assert "after" in _loopx(repo, "note", "list").stdout


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("name", LOCKS)
def test_a_lock_file_that_is_not_a_file_is_named_and_never_written_through(
        repo: Path, name: str, damage: str) -> None:
    loopx_dir = _ledger(repo)
    _put(loopx_dir / name, damage)
    tip = git(repo, "rev-parse", "refs/heads/loopx/state")
    for args in (("status",), ("note", "add", "after"), ("todo", "list")):
        result = _loopx(repo, *args)
        _no_crash(result)
        if result.returncode:  # only the lock a write needs refuses, in one line
            errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
            assert result.returncode == 1 and len(errors) == 1, result.stderr
            assert "not a plain file" in errors[0] and "nothing was changed" in errors[0]
            assert git(repo, "rev-parse", "refs/heads/loopx/state") == tip
    assert _loopx(repo, "status").returncode == 0


def test_a_lock_file_linked_elsewhere_truncates_nothing(repo: Path, tmp_path: Path) -> None:
    loopx_dir = _ledger(repo)
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    (loopx_dir / "write.lock").unlink()
    (loopx_dir / "write.lock").symlink_to(precious)
    result = _loopx(repo, "note", "add", "after")
    _no_crash(result)
    assert result.returncode == 1 and "not a plain file" in result.stderr, result.stderr
    assert precious.read_text() == "keep me\n"


@pytest.mark.parametrize("damage", DAMAGE)
def test_an_inbox_id_that_is_not_a_file_stops_sync_in_one_line(repo: Path, tmp_path: Path,
                                                               damage: str) -> None:
    """sync reads this clone's inbox id (.git/loopx/inbox-id): a fifo there hung it for good,
    a link to /dev/zero grew it until killed."""
    loopx_dir = _ledger(repo)
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    git(repo, "remote", "add", "origin", str(hub))
    _put(loopx_dir / "inbox-id", damage)
    result = _loopx(repo, "sync")
    _no_crash(result)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 1 and len(errors) == 1 and "not a plain file" in errors[0], result
    (loopx_dir / "inbox-id").unlink()
    assert _loopx(repo, "sync").returncode == 0


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_log_that_is_not_a_file_is_not_written(tmp_path: Path, damage: str) -> None:
    """The detached drain's and the server's logs were opened with open(path, "ab"): a fifo
    there waited for a reader forever (the post-commit hook starting a drain, and its commit
    with it), and a link was written through. Now such a log is the null device."""
    from loopx.storage import files

    log = tmp_path / "hooks.log"
    _put(log, damage)
    target = tmp_path / "elsewhere"
    target.write_bytes(b"kept")
    if damage == "a link to itself":
        log.unlink()
        log.symlink_to(target)
    with files.log(log) as handle:  # would block on the fifo
        handle.write(b"a line\n")
    assert target.read_bytes() == b"kept"
    plain = tmp_path / "plain.log"
    for line in (b"one\n", b"two\n"):
        with files.log(plain) as handle:
            handle.write(line)
    assert plain.read_bytes() == b"one\ntwo\n"
