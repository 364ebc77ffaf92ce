"""A pattern shared with pydantic is a whole match in Python too. pydantic's regex engine
takes ``$`` as the end of the text; Python's ``re.match`` takes it before a last line break
as well, so each check made with it let "<value>\\n" through: an evidence remap's commit ids,
the identity the MCP server, `signer add` or `setup` acts as, a label."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from conftest import invoke
from loopx.agents import setup
from loopx.errors import UsageError
from loopx.mcp.__main__ import main as mcp_main
from loopx.model.payloads.evidence_events import EvidenceRemapped

SHA = "a" * 40


@pytest.mark.parametrize("old, new", [(SHA + "\n", SHA), (SHA, SHA + "\n"), (SHA, "b" * 41)])
def test_an_evidence_remap_takes_only_whole_commit_ids(old: str, new: str) -> None:
    with pytest.raises(ValidationError, match="each mapping is"):
        EvidenceRemapped.model_validate({"mappings": [{"old": old, "new": new}]})
    assert EvidenceRemapped.model_validate({"mappings": [{"old": SHA, "new": "b" * 40}]})


def test_an_identity_ending_in_a_line_break_is_none(repo: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert mcp_main(["-C", str(repo), "--actor", "agent:x@host\n"]) == 1
    assert "agent:x@host" in capsys.readouterr().err
    with pytest.raises(UsageError, match="is not an identity"):
        setup.plan("claude", cwd=repo, actor="agent:claude@host\n")


def test_a_label_ending_in_a_line_break_is_refused(repo: Path) -> None:
    for args in (("init",), ("goal", "add", "G", "--id", "g1")):
        assert invoke(repo, *args).code == 0
    result = invoke(repo, "todo", "add", "g1", "T", "--label", "ready\n")
    assert result.code == 1 and "--label" in result.err and "unexpected" not in result.err
    assert invoke(repo, "todo", "add", "g1", "T", "--label", "ready").code == 0


def test_no_shared_pattern_is_used_as_a_prefix_match() -> None:
    """The class, not the cases: a pattern named *_PATTERN or *_RE (the declarations pydantic
    shares, or their compiled forms) is never applied with ``match`` (a prefix test)."""
    import re

    import loopx

    prefix = re.compile(r"re\.match\([\w.]*PATTERN|\b[A-Z_]+_RE\.match\(")
    found = [f"{path.name}:{n}" for path in Path(loopx.__file__).parent.rglob("*.py")
             for n, line in enumerate(path.read_text("utf-8").splitlines(), 1)
             if prefix.search(line)]
    assert found == []
