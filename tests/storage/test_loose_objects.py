"""gateway.loose_object: an object read from its loose file without starting git gives what
`git cat-file` gives, and anything it cannot vouch for is left to git (None)."""

from __future__ import annotations

import json
import os
import subprocess
import zlib
from pathlib import Path

import pytest

from conftest import git
from loopx.storage import gateway


def _cat(repo: Path, oid: str) -> tuple[str, bytes]:
    kind = git(repo, "cat-file", "-t", oid)
    return kind, subprocess.run(["git", "cat-file", kind, oid], cwd=repo, capture_output=True,
                                check=True).stdout


def _loose(repo: Path, oid: str) -> Path:
    return repo / ".git" / "objects" / oid[:2] / oid[2:]


@pytest.fixture
def objects(repo: Path) -> dict[str, str]:
    (repo / "f").write_text("hello\n")
    git(repo, "add", "f")
    git(repo, "commit", "-q", "-m", "one")
    git(repo, "tag", "-a", "-m", "a tag", "v1")
    return {"commit": git(repo, "rev-parse", "HEAD"), "tree": git(repo, "rev-parse", "HEAD^{tree}"),
            "blob": git(repo, "rev-parse", "HEAD:f"), "tag": git(repo, "rev-parse", "v1")}


@pytest.mark.parametrize("kind", ["commit", "tree", "blob", "tag"])
def test_a_loose_object_reads_as_cat_file_reads_it(repo: Path, objects: dict[str, str],
                                                   kind: str) -> None:
    found = gateway.loose_object(gateway.discover(repo), objects[kind])
    assert found == _cat(repo, objects[kind]) and found[0] == kind
    assert gateway.loose_object(gateway.discover(repo), objects[kind], head_only=True) == (
        kind, b"")


def test_what_it_cannot_vouch_for_is_left_to_git(repo: Path, objects: dict[str, str]) -> None:
    where = gateway.discover(repo)
    commit, blob = objects["commit"], objects["blob"]
    assert gateway.loose_object(where, "0" * 40) is None  # no such file
    assert gateway.loose_object(where, "HEAD") is None  # not an object name
    big = repo / "big"
    big.write_bytes(os.urandom(70_000))  # incompressible: a loose file over 64 KiB
    big_oid = git(repo, "hash-object", "-w", "big")
    assert gateway.loose_object(where, big_oid) is None
    assert gateway.loose_object(where, big_oid, head_only=True) == ("blob", b"")
    path = _loose(repo, blob)
    raw = path.read_bytes()
    path.chmod(0o644)
    path.write_bytes(raw[: len(raw) // 2])  # cut short
    assert gateway.loose_object(where, blob) is None
    path.write_bytes(zlib.compress(b"blob 99\0hello\n"))  # its size says otherwise
    assert gateway.loose_object(where, blob) is None
    path.write_bytes(zlib.compress(b"bogus 6\0hello\n"))  # no such type
    assert gateway.loose_object(where, blob, head_only=True) is None
    path.write_bytes(b"not zlib at all")
    assert gateway.loose_object(where, blob) is None
    path.write_bytes(raw)
    git(repo, "repack", "-adq")
    git(repo, "prune-packed")
    assert not _loose(repo, commit).exists()
    assert gateway.loose_object(where, commit) is None  # packed: git reads it


def test_the_state_tip_and_heads_tree_are_read_without_cat_file(repo: Path) -> None:
    """A warm `status` starts no cat-file while the tip and HEAD are loose, and the same
    answers come through cat-file once `git gc` packed them."""
    from conftest import run_loopx

    (repo / "f").write_text("x\n")
    git(repo, "add", "f")
    git(repo, "commit", "-q", "-m", "x")
    assert run_loopx(repo, "init").code == 0
    assert run_loopx(repo, "status", "--json", "--no-ci").code == 0  # the cache
    trace = repo.parent / "trace"
    env = dict(os.environ, GIT_TRACE=str(trace))
    loose = subprocess.run(["git", "loopx", "status", "--json", "--no-ci"], cwd=repo, env=env,
                           capture_output=True, text=True, check=True).stdout
    assert "cat-file" not in trace.read_text()
    git(repo, "gc", "-q")
    trace.unlink()
    packed = subprocess.run(["git", "loopx", "status", "--json", "--no-ci"], cwd=repo,
                            env=env, capture_output=True, text=True, check=True).stdout
    assert "cat-file" in trace.read_text()
    seen = [{k: v for k, v in json.loads(out).items() if k in ("ledger", "ref", "goals")} | {
        "env": {k: json.loads(out)["environment"][k] for k in ("head", "tree", "branch")}}
        for out in (loose, packed)]
    assert seen[0] == seen[1] and seen[0]["env"]["tree"] == git(repo, "rev-parse", "HEAD^{tree}")


def _hang_guard() -> None:
    import signal

    def fail(*_: object) -> None:
        raise AssertionError("a read hung")
    signal.signal(signal.SIGALRM, fail)
    signal.alarm(20)


def test_a_loose_file_that_is_no_regular_file_is_left_to_git(
        repo: Path, objects: dict[str, str]) -> None:
    """A fifo is not waited on (a reader would block for ever), a directory not read; a
    symlink is followed, as git follows it."""
    where = gateway.discover(repo)
    blob, commit = objects["blob"], objects["commit"]
    path = _loose(repo, blob)
    raw = path.read_bytes()
    path.unlink()
    _hang_guard()
    try:
        os.mkfifo(path)
        assert gateway.loose_object(where, blob) is None
        assert gateway.loose_object(where, blob, head_only=True) is None
        path.unlink()
        path.mkdir()
        assert gateway.loose_object(where, blob) is None
        path.rmdir()
        (repo / "elsewhere").write_bytes(raw)
        path.symlink_to(repo / "elsewhere")
        assert gateway.loose_object(where, blob) == _cat(repo, blob)
        ref = repo / ".git" / "refs" / "heads" / "fifo"
        os.mkfifo(ref)
        assert gateway.loose_ref(where, "refs/heads/fifo") is None
        ref.unlink()
        ref.write_text(commit + "\n")
        assert gateway.loose_ref(where, "refs/heads/fifo") == commit
    finally:
        import signal
        signal.alarm(0)


def test_a_zlib_bomb_is_left_to_git(repo: Path, objects: dict[str, str]) -> None:
    """A small file that inflates to 60 MiB is not inflated whole (at most 16 times 64 KiB)."""
    blob = objects["blob"]
    path = _loose(repo, blob)
    path.chmod(0o644)
    bomb = zlib.compress(b"blob 62914560\0" + bytes(60 << 20), 9)
    assert len(bomb) < 65536
    path.write_bytes(bomb)
    assert gateway.loose_object(gateway.discover(repo), blob) is None
    assert gateway.loose_object(gateway.discover(repo), blob, head_only=True) == ("blob", b"")


def test_a_replaced_object_reads_as_the_gateways_git_reads_it(
        repo: Path, objects: dict[str, str]) -> None:
    """The ledger is read as written: the gateway's git ignores refs/replace
    (GIT_NO_REPLACE_OBJECTS, docs/reliability.md), so the loose file is its answer too."""
    where = gateway.discover(repo)
    commit = objects["commit"]
    other = git(repo, "commit-tree", "-m", "other", git(repo, "mktree"))
    git(repo, "replace", commit, other)
    assert _cat(repo, commit) != (gateway.loose_object(where, commit) or ("", b""))  # plain git
    with gateway.ObjectReader(repo) as reader:
        assert gateway.loose_object(where, commit) == reader.read(commit)


def test_a_sha256_repository_reads_its_loose_objects(tmp_path: Path) -> None:
    repo = tmp_path / "s256"
    subprocess.run(["git", "init", "-q", "--object-format=sha256", str(repo)], check=True)
    (repo / "f").write_text("hello\n")
    git(repo, "add", "f")
    git(repo, "commit", "-q", "-m", "one")
    head = git(repo, "rev-parse", "HEAD")
    assert len(head) == 64
    where = gateway.discover(repo)
    assert gateway.loose_object(where, head) == _cat(repo, head)
    assert gateway.loose_ref(where, "refs/heads/" + git(repo, "branch", "--show-current")) == head
