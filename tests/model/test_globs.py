"""The scope globs of evidence: one small pure matcher, tested as a table."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopx.model import globs

CASES = [
    ("docs/**", "docs/index.md", True),
    ("docs/**", "docs/a/b/c.txt", True),
    ("docs/**", "docsx/index.md", False),
    ("docs/**", "src/docs/index.md", False),
    ("docs", "docs/index.md", True),  # a directory covers what is below it
    ("docs/", "docs/a/b.md", True),
    ("docs", "docs", True),
    ("*.md", "README.md", True),
    ("*.md", "docs/README.md", False),  # no implicit any-depth, unlike .gitignore
    ("**/*.md", "README.md", True),
    ("**/*.md", "docs/deep/README.md", True),
    ("**/*.md", "README.mdx", False),
    ("src/**/test_*.py", "src/test_a.py", True),
    ("src/**/test_*.py", "src/x/y/test_a.py", True),
    ("src/**/test_*.py", "src/x/y/a_test.py", False),
    ("src/*.py", "src/a.py", True),
    ("src/*.py", "src/sub/a.py", False),
    ("src/?.py", "src/a.py", True),
    ("src/?.py", "src/ab.py", False),
    ("src/[ab].py", "src/b.py", True),
    ("src/[!ab].py", "src/b.py", False),
    ("src/[!ab].py", "src/c.py", True),
    ("src/[a-c]x", "src/bx", True),
    ("src/[z-a]x", "src/[z-a]x", True),  # a broken class is taken literally
    ("a+b(c)", "a+b(c)", True),  # regex characters are literal
    ("a+b(c)", "aab(c)", False),
    ("**", "anything/at/all", True),
    ("/src", "src/main.py", True),
    ("src/[", "src/[", True),
]


@pytest.mark.parametrize("glob, path, expected", CASES, ids=[f"{g} {p}" for g, p, _ in CASES])
def test_glob_matches(glob: str, path: str, expected: bool) -> None:
    assert globs.matches(path, glob) is expected


def test_in_scope_includes_then_excludes() -> None:
    paths = ["src/a.py", "docs/x.md", "README.md", "src/docs/y.md"]
    assert globs.in_scope(paths) == paths
    assert globs.in_scope(paths, include=["src/**"]) == ["src/a.py", "src/docs/y.md"]
    assert globs.in_scope(paths, exclude=["docs/**", "*.md"]) == ["src/a.py", "src/docs/y.md"]
    assert globs.in_scope(paths, include=["src"], exclude=["**/*.md"]) == ["src/a.py"]


segment = st.text(alphabet="abc.-_", min_size=1, max_size=5).filter(lambda s: s not in (".", ".."))


@given(st.lists(segment, min_size=1, max_size=5))
def test_a_path_matches_itself_its_directories_and_double_star(parts: list[str]) -> None:
    path = "/".join(parts)
    assert globs.matches(path, path)
    assert globs.matches(path, "**")
    assert globs.matches(path, parts[0])
    assert globs.matches(path, parts[0] + "/**") is (len(parts) > 1)
