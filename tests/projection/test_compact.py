"""Answers that fit a context: with 100 open todos (and goals, gates, evidence) the default
status and todo list answers stay within 8 KB, own work always among them, the rest counted;
--detail and paging give everything, each todo exactly once."""

from __future__ import annotations

import json
import re
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
    assert size <= BUDGET and isinstance(listed, dict)
    shown = len(listed["todos"])
    assert 0 < shown < TODOS and (listed["total"], listed["next_offset"]) == (TODOS, shown)
    text = invoke(busy, "todo", "list").out
    assert text.endswith(f"(1-{shown} of {TODOS}; {TODOS - shown} more: --offset {shown})\n")


def test_paging_returns_every_todo_exactly_once(busy: Path) -> None:
    seen: list[str] = []
    offset: object = 0
    while offset is not None:
        page, _ = _json(busy, "todo", "list", "--limit", "7", "--offset", str(offset))
        assert isinstance(page, dict) and page["total"] == TODOS
        seen += [t["id"] for t in page["todos"]]
        offset = page["next_offset"]
    assert sorted(seen) == sorted(set(seen)) and len(seen) == TODOS
    with Ledger.open(busy) as led:
        paged = tools.call(led, AGENT, "todo_list", {"limit": 40, "offset": 80})
        assert [t["id"] for t in paged["todos"]] == seen[80:]
        assert (paged["total"], paged["next_offset"]) == (TODOS, None)


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


NOTES, PIECES = 40, 20


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ledger with 40 notes ("note 00: ..." oldest) and 20 pieces of evidence (e-00 oldest,
    "review 00: ...")."""
    from loopx.ops import evidence, notes

    repo = tmp_path_factory.mktemp("logged")
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty",
         "-m", "initial")

    def log(txn: object) -> None:
        goals.add(txn, "A goal", id="g", accept=["it works"])  # type: ignore[arg-type]
        for i in range(NOTES):
            notes.add(txn, f"note {i:02d}: " + "words " * 20, goal="g")  # type: ignore[arg-type]
        for i in range(PIECES):
            evidence.add(txn, "review", bound=None, goal="g", id=f"e-{i:02d}",  # type: ignore[arg-type]
                         summary=f"review {i:02d}: " + "words " * 10)

    with Ledger.open(repo) as led:
        led.init(actor=ALICE)
        led.write(log, actor=ALICE)
    return repo


@pytest.mark.parametrize("command, key, field, total, word", [
    ("note", "notes", "text", NOTES, "note"), ("evidence", "evidence", "summary", PIECES, "review")])
def test_note_and_evidence_lists_page_newest_first(logged: Path, command: str, key: str,
                                                   field: str, total: int, word: str) -> None:
    def which(page: object) -> list[str]:
        assert isinstance(page, dict) and page["total"] == total
        return [x[field].split(":")[0] for x in page[key]]

    first, size = _json(logged, command, "list")
    assert size <= BUDGET
    newest = [f"{word} {i:02d}" for i in reversed(range(total))]
    assert which(first) == newest[:15]
    assert isinstance(first, dict) and first["next_offset"] == 15
    text = invoke(logged, command, "list").out
    assert text.endswith(f"(1-15 of {total}; {total - 15} more: --offset 15)\n")
    assert len(re.findall(rf"{word} \d\d:", text)) == 15 and text.index(newest[0]) < text.index(newest[14])
    seen: list[str] = []
    offset: object = 0
    while offset is not None:
        page, _ = _json(logged, command, "list", "--limit", "6", "--offset", str(offset))
        seen += which(page)
        offset = page["next_offset"]  # type: ignore[index]
    assert seen == newest
    last = invoke(logged, command, "list", "--offset", str(total - 2)).out
    assert "more" not in last and len(re.findall(rf"{word} \d\d:", last)) == 2
    past = invoke(logged, command, "list", "--offset", str(total))
    assert past.code == 0 and past.out.strip().endswith(f"from --offset {total} ({total} in all)")
    with Ledger.open(logged) as led:
        tool = tools.call(led, AGENT, f"{command}_list", {"limit": 4, "offset": total - 3})
    assert (which(tool), tool["next_offset"]) == (newest[-3:], None)


@pytest.mark.parametrize("command", ["note", "evidence", "todo"])
@pytest.mark.parametrize("bad", [["--limit", "0"], ["--offset", "-1"], ["--limit", "x"]])
def test_a_bad_page_is_refused_in_one_line(logged: Path, command: str, bad: list[str]) -> None:
    found = invoke(logged, command, "list", *bad)
    assert found.code == 2 and found.out == ""
    assert "--limit" in found.err or "--offset" in found.err
