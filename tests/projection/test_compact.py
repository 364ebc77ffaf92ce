"""Answers that fit a context: with 100 open todos (and goals, gates, evidence) the default
status and todo list answers stay within 8 KB, own work always among them, the rest counted;
--detail and paging give everything, each todo exactly once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import invoke
from loopx.ledger.book import Ledger
from loopx.mcp import tools
from loopx.model import inert
from loopx.ops import gates, goals, todos

ALICE = "human:alice@example.com"
AGENT = "agent:codex@devbox"
OTHER = "agent:claude@laptop"
BUDGET = 8192
TODOS = 100


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ledger with 100 open todos over three goals, gates, evidence and leases."""
    repo = tmp_path_factory.mktemp("busy")
    _git(repo, "init", "-q")
    (repo / "README").write_text("hello\n")
    _git(repo, "add", "README")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "initial")

    def plan(txn: object) -> None:
        for g in range(3):
            goals.add(txn, f"Goal {g}: ship the thing, whole and tested", id=f"g{g}",  # type: ignore[arg-type]
                      accept=["the whole suite passes", "the docs say how"])
            gates.open_(txn, f"g{g}", f"May goal {g} ship on Friday?", id=f"q{g}",  # type: ignore[arg-type]
                        authority=[ALICE])
        for i in range(TODOS):
            todos.add(txn, f"g{i % 3}", f"Todo {i}: a title about as long as real ones are",  # type: ignore[arg-type]
                      id=f"t-{i:03d}", after=[f"t-{i - 1:03d}"] if i % 4 == 3 else [],
                      gates=[f"q{i % 3}"] if i % 10 == 9 else [], priority=i % 5)

    with Ledger.open(repo) as led:
        led.init(actor=ALICE)
        led.write(plan, actor=ALICE)
        for tid, who in (("t-000", AGENT), ("t-050", AGENT), ("t-001", OTHER)):
            led.run(todos.claim, tid, actor=who)
    for tid in ("t-000", "t-001", "t-002"):
        assert invoke(repo, "run", "--todo", tid, "--criterion", "a1", "--", "true",
                      actor=AGENT if tid != "t-001" else OTHER).code == 0
    return repo


def _git(repo: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _json(repo: Path, *args: str, actor: str = AGENT) -> tuple[object, int]:
    found = invoke(repo, *args, "--format", "json", actor=actor)
    assert found.code == 0, found.err
    return json.loads(found.out), len(found.out.encode())


def test_the_default_status_fits_8kb_with_own_work_and_the_top_of_the_frontier(busy: Path) -> None:
    doc, size = _json(busy, "status", "--no-ci")
    assert size <= BUDGET
    assert isinstance(doc, dict)
    held = [t["id"] for t in doc["todos"] if t["claimed_by"] == AGENT]
    assert held == ["t-000", "t-050"]
    assert len(doc["frontier"]) == 10
    omitted = doc["omitted"]
    assert omitted["frontier"] > 0 and omitted["todos"] + len(doc["todos"]) == TODOS
    assert omitted["waiting"] > 0 and "--detail" in omitted["more"]


def test_detail_is_the_whole_document_without_omitted(busy: Path) -> None:
    doc, size = _json(busy, "status", "--no-ci", "--detail")
    assert isinstance(doc, dict)
    assert len(doc["todos"]) == TODOS and "omitted" not in doc and size > BUDGET


def test_the_status_tool_answers_within_8kb(busy: Path) -> None:
    with Ledger.open(busy) as led:
        doc = tools.call(led, AGENT, "status", {"ci": False})
        assert "t-050" in {t["id"] for t in doc["todos"]}
        assert len(json.dumps(doc, separators=(",", ":")).encode()) <= BUDGET
        assert len(inert.json_text(doc, separators=(",", ":")).encode()) <= BUDGET
        whole = tools.call(led, AGENT, "status", {"ci": False, "detail": True})
        assert len(whole["todos"]) == TODOS
        primer = tools.call(led, AGENT, "prime", {"ci": False})
        assert len(json.dumps(primer).encode()) <= BUDGET


def test_the_default_todo_list_fits_8kb(busy: Path) -> None:
    listed, size = _json(busy, "todo", "list")
    assert size <= BUDGET and isinstance(listed, list) and 0 < len(listed) < TODOS
    text = invoke(busy, "todo", "list").out
    assert f"of {TODOS}; --offset {len(listed)} for more" in text


def test_paging_returns_every_todo_exactly_once(busy: Path) -> None:
    seen: list[str] = []
    offset = 0
    while True:
        page, _ = _json(busy, "todo", "list", "--limit", "7", "--offset", str(offset))
        assert isinstance(page, list)
        seen += [t["id"] for t in page]
        if len(page) < 7:
            break
        offset += 7
    assert sorted(seen) == sorted(set(seen)) and len(seen) == TODOS
    with Ledger.open(busy) as led:
        paged = tools.call(led, AGENT, "todo_list", {"limit": 40, "offset": 80})
        assert [t["id"] for t in paged["todos"]] == seen[80:]


def test_a_smaller_frontier_top_is_asked_with_limit(busy: Path) -> None:
    doc, _ = _json(busy, "status", "--no-ci", "--limit", "3")
    assert isinstance(doc, dict) and len(doc["frontier"]) == 3
    assert "t-000" in {t["id"] for t in doc["todos"]}


def test_a_page_knows_where_the_next_one_starts() -> None:
    from loopx.projection import compact

    items = list(range(10))
    first = compact.page(items, limit=4)
    assert (list(first), first.next_offset, first.total) == ([0, 1, 2, 3], 4, 10)
    last = compact.page(items, limit=4, offset=8)
    assert (list(last), last.next_offset) == ([8, 9], None)
