"""What a todo needs of its host: parsed, normalised, and judged against what was probed."""

from __future__ import annotations

import pytest

from loopx.model import needs


def test_needs_split_on_commas_lower_case_and_keep_each_once() -> None:
    assert needs.split(["Python>=3.11,docker", "docker", " git "]) == ["python>=3.11", "docker", "git"]


@pytest.mark.parametrize("bad", ["rm -rf", "python>3", ">=3", "a" * 41, "py;thon"])
def test_anything_but_tool_or_tool_at_least_version_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="is not a need"):
        needs.parse(bad)


def test_a_tool_missing_or_too_old_is_named_with_why() -> None:
    tools = {"python": {"found": True, "version": "3.10.4"}, "git": {"found": True, "version": "2.43.0"},
             "docker": {"found": False, "version": None}}
    assert needs.lacking(["python>=3.11", "git>=2.38", "docker", "jq"], tools) == [
        "python 3.10.4 is older than 3.11", "docker is not on PATH", "jq is not on PATH"]


def test_versions_compare_as_numbers_not_text() -> None:
    tools = {"node": {"found": True, "version": "20.1.0"}, "gcc": {"found": True, "version": "12"}}
    assert needs.lacking(["node>=9.2", "gcc>=12.0.0"], tools) == []
    assert needs.lacking(["node>=20.10"], tools) == ["node 20.1.0 is older than 20.10"]


def test_a_version_that_could_not_be_read_does_not_meet_a_least_version() -> None:
    tools = {"tool": {"found": True, "version": None}}
    assert needs.lacking(["tool"], tools) == []
    assert needs.lacking(["tool>=1"], tools) == ["tool's version is unknown (needs 1 or later)"]
