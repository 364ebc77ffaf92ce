"""The path and mode rules of the incoming check (no git needed)."""

from __future__ import annotations

import pytest

from loopx.remote.incoming import path_problem

GOOD_EVENT = "events/2026/11/29/01M8K3MXAN9EWHH14FR0421701.note.added.yaml"


@pytest.mark.parametrize("path, mode, expected", [
    (GOOD_EVENT, "100644", None),
    ("sessions/s-1/transcript-1/0000.txt", "100644", None),
    (GOOD_EVENT, "100755", "executable"),
    (GOOD_EVENT, "120000", "symlink"),
    (GOOD_EVENT, "160000", "gitlink"),
    ("../x", "100644", "'..'"),
    ("events/../x", "100644", "'..'"),
    ("/etc/passwd", "100644", "absolute"),
    (".git/config", "100644", ".git"),
    ("events/.GIT/x", "100644", ".git"),
    ("README.md", "100644", "outside the state layout"),
    ("events/2026/11/29/not-a-ulid.note.added.yaml", "100644", "not an event path"),
    ("sessions/s-1/notes.txt", "100644", "not a valid sessions/ path"),
])
def test_path_rules(path: str, mode: str, expected: str | None) -> None:
    found = path_problem(path, mode)
    if expected is None:
        assert found is None
    else:
        assert found is not None and expected in found
