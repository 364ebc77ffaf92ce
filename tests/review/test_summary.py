"""The state change of a pull request in Markdown (`effect comment --state-diff`): validate's
verdict, the diff in state terms, who wrote the events, and the graph of the todos it touches;
text from events inert, the document bounded. Real git: a state branch written with the CLI,
and a proposal on top of it as another clone may have written it (statekit's plumbing)."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import cmarkgfm

from conftest import ROOT, git, invoke
from loopx.ledger.book import Ledger
from loopx.ops import review
from markdownkit import ATTACKS, structure
from statekit import commit_files, file_of, foreign_event

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)
PROPOSAL = "refs/heads/proposal/x"
SPAN = "loopx/state..proposal/x"
# What a hostile title tries: close a block, end a comment, ping a team, break out of a label.
HOSTILE = ["</details> end", "x --> <!-- y", "cc @org/team and @alice", 'a"]-->x["b',
           "<b>bold</b> [l](https://evil.example) ```", "`]-->n0{{x}}`\n# heading"]
BOB = "agent:bob@devbox"


def _ok(repo: Path, *args: str, input: str | None = None) -> None:
    result = invoke(repo, *args, input=input)
    assert result.code == 0, result.err


def _repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q")
    git(path, "commit", "-q", "--allow-empty", "-m", "initial")
    return path


def _base(repo: Path) -> int:
    """loopx/state with goal g-1 and todos t-1, t-2 (after t-1), t-9; its highest clock."""
    _ok(repo, "init")
    _ok(repo, "goal", "add", "Ship", "--id", "g-1")
    _ok(repo, "todo", "add", "g-1", "Build", "--id", "t-1")
    _ok(repo, "todo", "add", "g-1", "Test", "--id", "t-2", "--after", "t-1")
    _ok(repo, "todo", "add", "g-1", "far away", "--id", "t-9")
    with Ledger.open(repo) as led:
        return led.fold().max_clock


def _propose(repo: Path, clock: int, *events: tuple[str, dict[str, Any], str]) -> None:
    """One commit on the proposal branch with ``events`` (type, data, actor), as another
    clone wrote them: held to the rules of reading only."""
    made = [foreign_event(t, d, clock=clock + n, actor=a, goal="g-1")
            for n, (t, d, a) in enumerate(events, 1)]
    commit_files(repo, PROPOSAL, dict(file_of(e) for e in made))


def _story(repo: Path, titles: list[str]) -> str:
    """A proposal that claims t-1, adds t-3 and t-4 after it and asks gate q-1 before t-3, its
    texts ``titles``; the proposal's Markdown."""
    _propose(repo, _base(repo),
             ("todo.claimed", {"id": "t-1", "until": "2099-01-01T00:00:00Z"}, BOB),
             ("todo.added", {"id": "t-3", "goal": "g-1", "title": titles[0],
                             "depends_on": ["t-1"]}, BOB),
             ("todo.added", {"id": "t-4", "goal": "g-1", "title": titles[1],
                             "depends_on": ["t-3"]}, BOB),
             ("gate.opened", {"id": "q-1", "goal": "g-1", "question": titles[2],
                              "authority": ["human:test@example.com"], "blocks": ["t-3"]},
              BOB),
             ("goal.updated", {"id": "g-1", "title": titles[3]}, "human:test@example.com"))
    return _markdown(repo)


def _markdown(repo: Path) -> str:
    with Ledger.open(repo) as led:
        return review.markdown(led, SPAN, now=NOW)


def _mermaid(document: str) -> list[str]:
    return document.split("```mermaid\n", 1)[1].split("\n```", 1)[0].splitlines()


def test_the_summary_says_the_verdict_what_changes_who_wrote_it_and_draws_it(
        repo: Path) -> None:
    doc = _story(repo, ["Docs", "Publish", "Release on Friday?", "Ship it"])
    assert doc.startswith("### loopx state change: ✅ valid\n")
    assert "`loopx/state..proposal/x` · 1 commit · 5 → 10 events · " in doc
    changes = doc.split("**What changes**\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert changes == [
        "- goal g-1 changed: title 'Ship it'",
        "- todo t-3 new: `todo t-3 on g-1 'Docs' [open]`",
        "- todo t-4 new: `todo t-4 on g-1 'Publish' [open]`",
        "- todo t-1 changed: `open -> claimed; lease none -> agent:bob@devbox until "
        "2026-12-29 12:00Z`",
        "- gate q-1 new: `gate q-1 'Release on Friday?' asks human:test@example.com [open]`"]
    assert ("- `agent:bob@devbox`: 4 (2 todo.added, 1 gate.opened, 1 todo.claimed)"
            in doc)
    assert "- `human:test@example.com`: 1 (1 goal.updated)" in doc
    assert "**Frontier** (ready to claim): t-1, t-9 → t-9" in doc
    drawn = "\n".join(_mermaid(doc))
    for label in ("t-1: Build", "t-2: Test", "t-3: Docs", "t-4: Publish"):
        assert f'["{label}"]' in drawn
    assert '{{"q-1: Release on Friday?"}}' in drawn
    assert "far away" not in drawn  # t-9: neither touched nor a neighbour of what is
    shown = (doc.replace("`loopx/state..proposal/x`", "`origin/loopx/state..HEAD`")
             .replace("human:test@example.com", "human:alice@example.com"))
    assert f"````markdown\n{shown}\n<!-- loopx-effect: loopx-state-diff -->\n````" in (
        ROOT / "docs" / "review.md").read_text()  # the example there is this document


def test_a_failing_range_shows_its_problems_first(repo: Path) -> None:
    clock = _base(repo)
    _ok(repo, "gate", "open", "g-1", "Go?", "--id", "q-1", "--blocks", "t-1",
        "--authority", "human:alice@example.com")
    _propose(repo, clock + 1, ("gate.answered", {"id": "q-1", "decision": "approve"}, BOB))
    doc = _markdown(repo)
    assert doc.startswith("### loopx state change: ❌ 1 problem\n")
    problems = doc.split("**Problems**\n", 1)[1].split("\n\n", 1)[0]
    assert problems.startswith("- `unauthorised-answer` `gate.answered by agent:bob@devbox:")


# The lines a Mermaid block of loopx.projection.graph may hold: nodes, edges, classes.
_MERMAID_LINE = re.compile(r'flowchart LR|    n\d+\["[^"]*"\]|    n\d+\{\{"[^"]*"\}\}'
                           r"|    n\d+ (?:-->|-\.->\|[a-z]+\|) n\d+|    classDef [a-z]+ [^\s]+"
                           r"|    class n\d+(?:,n\d+)* [a-z]+")
_CODE = re.compile(r"<code>.*?</code>", re.S)


def test_text_from_events_is_inert_in_markdown_and_in_the_graph(tmp_path: Path) -> None:
    hostile = _story(_repo(tmp_path / "hostile"), HOSTILE)
    plain = _story(_repo(tmp_path / "plain"), ["Docs", "Publish", "Go", "Ship it"])
    assert structure(hostile) == structure(plain)  # the same blocks, links, tags: none added
    seen = _CODE.sub("", cmarkgfm.github_flavored_markdown_to_html(hostile))
    assert "@" not in seen.replace("agent:bob@devbox", "")  # no mention outside code
    assert "details" not in seen and "<b>" not in seen
    assert all(_MERMAID_LINE.fullmatch(ln) for ln in _mermaid(hostile)), _mermaid(hostile)
    assert not any(ln.lstrip().startswith("<!--") for ln in hostile.splitlines())


def test_every_attack_in_a_title_renders_as_text(tmp_path: Path) -> None:
    for n in range(0, len(ATTACKS), 4):
        part = (ATTACKS[n:n + 4] + ATTACKS[:4])[:4]
        hostile = _story(_repo(tmp_path / f"h{n}"), part)
        plain = _story(_repo(tmp_path / f"p{n}"), ["Docs", "Publish", "Go", "Ship it"])
        assert structure(hostile) == structure(plain), part


def test_the_document_stays_a_few_kb_whatever_the_range(repo: Path) -> None:
    clock = _base(repo)
    worst = "\u00a7<>\"[]{}|#;&`*" * 35  # every character a Mermaid entity code
    _propose(repo, clock, *[
        ("todo.added", {"id": f"t-{n}", "goal": "g-1", "title": worst,
                        "depends_on": [f"t-{n - 1}" if n > 10 else "t-1"]}, BOB)
        for n in range(10, 70)])
    doc = _markdown(repo)
    assert len(doc.encode()) < 16_000, len(doc.encode())
    assert "- and 48 more (`git loopx diff` lists them all)" in doc
    assert "and 46 more not drawn (`git loopx status` lists them)" in doc
    assert sum(1 for ln in _mermaid(doc) if '["' in ln) == 15
