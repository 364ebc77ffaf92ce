"""The hot write path: repository discovery, how objects are written, how many git calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git, run_loopx
from loopx.storage import gateway
from loopx.errors import NotFound
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.ledger.txn import Txn
from loopx.storage.store import PACK_MIN_BLOBS


def test_discover_from_the_work_tree_root_finds_the_real_common_dir(repo: Path) -> None:
    found = gateway.discover(repo)
    assert found.common_dir == (repo / ".git").resolve()
    assert found.work_tree == repo.resolve()


def test_discover_agrees_from_a_subdirectory_a_worktree_and_inside_git_dir(repo: Path) -> None:
    (repo / "sub").mkdir()
    git(repo, "worktree", "add", "-q", "--detach", str(repo.parent / "wt"))
    common = (repo / ".git").resolve()
    assert gateway.discover(repo / "sub").common_dir == common
    other = gateway.discover(repo.parent / "wt")
    assert other.common_dir == common and other.work_tree == (repo.parent / "wt").resolve()
    inside = gateway.discover(repo / ".git")
    assert inside.common_dir == common and inside.work_tree is None


def test_discover_a_bare_repository_has_no_work_tree(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--bare", "remote.git")
    found = gateway.discover(tmp_path / "remote.git")
    assert found.work_tree is None
    assert found.common_dir == (tmp_path / "remote.git").resolve()


def test_discover_outside_a_repository_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        gateway.discover(tmp_path)


def _notes(ledger: Ledger, count: int) -> None:
    def build(txn: Txn) -> None:
        for i in range(count):
            txn.add(Draft("note.added", {"id": f"n-{i}", "text": f"note {i}"}))

    ledger.write(build, actor="agent:test")


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_a_big_batch_is_written_as_one_pack_that_reads_back(tmp_path: Path,
                                                           object_format: str) -> None:
    repo = tmp_path / object_format
    repo.mkdir()
    git(repo, "init", "-q", f"--object-format={object_format}")
    git(repo, "commit", "-q", "--allow-empty", "-m", "initial")
    with Ledger.open(repo) as ledger:
        ledger.init(actor="agent:test")
        _notes(ledger, PACK_MIN_BLOBS + 4)
        assert ledger.fold().notes == PACK_MIN_BLOBS + 4
    packs = list((repo / ".git" / "objects" / "pack").glob("*.pack"))
    assert len(packs) == 1
    files = git(repo, "ls-tree", "-r", "--name-only", "refs/heads/loopx/state").split()
    assert len(files) == PACK_MIN_BLOBS + 5
    git(repo, "fsck", "--strict", "--no-dangling")
    with Ledger.open(repo) as fresh:  # a cold read parses every file back
        problems: list[object] = []
        events = fresh.read_events(fresh.tip(), problems)  # type: ignore[arg-type]
    assert not problems and len(events) == PACK_MIN_BLOBS + 5


def test_small_writes_stay_loose_objects_and_trees_are_valid(ledger: Ledger, repo: Path) -> None:
    _notes(ledger, 3)
    ledger.append("note.added", {"id": "n-x", "text": "one more"}, actor="agent:test")
    assert not list((repo / ".git" / "objects" / "pack").glob("*.pack"))
    git(repo, "fsck", "--strict", "--no-dangling")  # rejects badly sorted or malformed trees
    assert len(git(repo, "ls-tree", "-r", "--name-only", "refs/heads/loopx/state").split()) == 5


def test_one_note_add_needs_few_git_processes(repo: Path) -> None:
    # Each git process costs milliseconds; the append budget of issue 2 depends on this count.
    assert run_loopx(repo, "init").code == 0
    run_loopx(repo, "note", "add", "warm the cache")
    result = run_loopx(repo, "--debug", "note", "add", "counted")
    assert result.code == 0, result.err
    calls = [line for line in result.err.splitlines() if line.startswith("loopx: git ")]
    assert not [c for c in calls if "show-object-format" in c or " mktree" in c], calls
    # discover, tip at open, tip under the lock, blob, trees, commit-tree, update-ref, and the
    # check after the CAS that every object is on disk (docs/reliability.md)
    assert len(calls) <= 8, calls


def test_a_batch_of_many_events_is_one_commit_with_constant_git_calls(repo: Path) -> None:
    assert run_loopx(repo, "init").code == 0
    lines = "".join(f'["note", "add", "batched {i}"]\n' for i in range(40))
    result = run_loopx(repo, "--debug", "batch", input=lines)
    assert result.code == 0, result.err
    calls = [line for line in result.err.splitlines() if line.startswith("loopx: git ")]
    assert len(calls) <= 8, calls  # as one note (above): the batch is one write
    assert git(repo, "rev-list", "--count", "refs/heads/loopx/state") == "2"
    assert len(git(repo, "ls-tree", "-r", "--name-only", "refs/heads/loopx/state").split()) == 41
