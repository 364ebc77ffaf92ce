"""One repository, one `.git/loopx` (issue 22): a loopx folder shared by two repositories (a
symlink) is refused in one line before anything is read or queued, so neither drains the
other's hook queue; a copied or moved repository takes its own copy over; linked worktrees
share their repository's folder as before. Real repositories, a real symlink.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import git, invoke, run_loopx
from loopx.hooks import spool


def _repo(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    git(tmp_path, "init", "-q", str(path))
    git(path, "commit", "-q", "--allow-empty", "-m", "initial")
    assert invoke(path, "init").code == 0 and invoke(path, "note", "add", f"in {name}").code == 0
    return path


def _listing(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.suffix not in (".sqlite-shm", ".sqlite-wal")}


def test_a_loopx_folder_shared_through_a_symlink_is_refused(tmp_path: Path) -> None:
    a, b = _repo(tmp_path, "a"), _repo(tmp_path, "b")
    queued = spool.append(a / ".git" / "loopx", hook="post-commit", actor="human:a@x",
                          inputs={"commit": git(a, "rev-parse", "HEAD"), "branch": "main",
                                  "amended": False})
    shutil.rmtree(b / ".git" / "loopx")
    (b / ".git" / "loopx").symlink_to(a / ".git" / "loopx")
    before = _listing(a / ".git" / "loopx")
    for args in (("status",), ("note", "add", "x"), ("hooks", "drain"), ("hooks", "queue")):
        result = invoke(b, *args)
        assert result.code == 1, (args, result.out, result.err)
        assert len(result.err.strip().splitlines()) == 1, result.err
        assert "is the loopx folder of another repository" in result.err
        assert str(a / ".git") in result.err
    assert queued.path.exists()  # b drained nothing of a's
    assert _listing(a / ".git" / "loopx") == before
    assert invoke(a, "status").code == 0
    (b / ".git" / "loopx").unlink()
    assert invoke(b, "note", "add", "its own again").code == 0
    assert "in a" not in invoke(b, "note", "list").out


def test_a_copied_repository_takes_its_own_folder_over(tmp_path: Path) -> None:
    a = _repo(tmp_path, "a")
    copy = tmp_path / "copy"
    shutil.copytree(a, copy, symlinks=True)
    assert invoke(copy, "note", "add", "in the copy").code == 0
    assert str(copy / ".git") in (copy / ".git" / "loopx" / "owner").read_text()
    assert invoke(a, "note", "add", "in the original").code == 0
    assert "in the copy" not in invoke(a, "note", "list").out


def test_a_moved_repository_keeps_its_folder(tmp_path: Path) -> None:
    a = _repo(tmp_path, "a")
    moved = tmp_path / "moved"
    a.rename(moved)
    assert invoke(moved, "note", "add", "after the move").code == 0
    assert "in a" in invoke(moved, "note", "list").out


def test_linked_worktrees_share_their_repositorys_folder(tmp_path: Path) -> None:
    a = _repo(tmp_path, "a")
    git(a, "worktree", "add", "-q", str(tmp_path / "wt"))
    assert invoke(tmp_path / "wt", "note", "add", "from the worktree").code == 0
    assert "from the worktree" in invoke(a, "note", "list").out


def test_an_owner_file_of_garbage_bytes_is_taken_over(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 in `owner` were exit 3 (UnicodeDecodeError) for every
    command; such a file names no repository, so the folder is this one's."""
    a = _repo(tmp_path, "a")
    owner = a / ".git" / "loopx" / "owner"
    owner.write_bytes(b"\x00\xff garbage")
    written = run_loopx(a, "note", "add", "after")  # a new process: it checks the folder
    assert written.code == 0, written.err
    assert "in a" in run_loopx(a, "note", "list").out
    assert owner.read_text().startswith("loopx-owner v1\n")
