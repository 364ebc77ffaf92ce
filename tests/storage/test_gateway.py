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


@pytest.mark.parametrize("name", ["a b", "a\tb", "a\nb", "two  spaces missing",
                                  b"bad-\xff".decode("utf-8", "surrogateescape")])
def test_a_path_name_of_any_bytes_is_read_or_missing_never_an_error(repo: Path,
                                                                    name: str) -> None:
    """``<rev>:<path>`` names from a forged tree: git echoes a missing name as asked, spaces
    and tabs included (it was split as "<oid> <type> <size>"), a line break would be two
    requests, and a name that is not UTF-8 is its own bytes."""
    raw = name.encode("utf-8", "surrogateescape")
    blob = gateway.run(repo, "hash-object", "-w", "--stdin", input=b"x\n").stdout.decode().strip()
    tree = gateway.run(repo, "mktree", "-z", input=b"100644 blob " + blob.encode() + b"\t" + raw
                       + b"\0").stdout.decode().strip()
    with gateway.ObjectReader(repo) as objects:
        found = objects.read_capped([f"{tree}:{name}", f"{tree}:dir/{name}", tree + ":x"], 100)
    assert found[1:] == [None, None]
    assert found[0] == (None if "\n" in name else ("blob", b"x\n"))
