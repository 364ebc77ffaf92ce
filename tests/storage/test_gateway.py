"""gateway.stream: a long git listing read in blocks of whole records, never held whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git
from loopx.errors import GitError
from loopx.storage import gateway


def test_stream_yields_whole_records_that_add_up_to_the_listing(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    for i in range(200):
        (tmp_path / f"file-{i:03d}-{'x' * (i % 37)}.txt").write_text(f"{i}\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "files")
    whole = gateway.run(tmp_path, "ls-tree", "-r", "-z", "-l", "HEAD").stdout
    blocks = list(gateway.stream(tmp_path, "ls-tree", "-r", "-z", "-l", "HEAD", block=100))
    assert len(blocks) > 10 and b"".join(blocks) == whole
    assert all(block.endswith(b"\0") for block in blocks)  # no record cut in two


def test_stream_raises_when_git_fails(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    with pytest.raises(GitError, match="ls-tree"):
        list(gateway.stream(tmp_path, "ls-tree", "-r", "no-such-rev"))
