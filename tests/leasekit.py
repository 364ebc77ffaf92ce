"""The ``leased`` fixture: a ledger whose todo t1 is claimed on main by the committer, with the
hooks installed, so a plain `git commit` records evidence (tests/hooks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import invoke


@pytest.fixture
def leased(repo: Path) -> Path:
    """A ledger, todo t1 claimed on main by the committer, the hooks installed (post-commit
    in the background)."""
    for args in (("init",), ("goal", "add", "G", "--id", "g1", "--accept", "works"),
                 ("todo", "add", "g1", "T", "--id", "t1"), ("todo", "claim", "t1"),
                 ("hooks", "install")):
        result = invoke(repo, *args)
        assert result.code == 0, result.err
    return repo
