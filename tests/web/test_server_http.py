"""`git loopx web` over plain HTTP: the token, the status document, answering a gate, text
from the ledger shown as text. (The page in a real browser: test_browser.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_loopx
from webkit import HOSTILE, plan, serve

pytest.importorskip("starlette", reason="the [web] extra is not installed")
pytest.importorskip("uvicorn", reason="the [web] extra is not installed")


def test_every_request_without_the_token_is_refused(repo: Path) -> None:
    plan(repo)
    with serve(repo) as page:
        for path in ("/", "/status.json", "/graph.svg", "/events", "/nowhere"):
            assert page.get(path, token=None)[0] == 403, path
            assert page.get(path, token="not-the-token")[0] == 403, path
        code, _ = page.post("/gate/answer", {"gate": "q-1", "decision": "approve"})
        assert code == 403
        code, _ = page.post("/gate/answer", {"gate": "q-1", "decision": "approve",
                                             "token": "wrong"})
        assert code == 403
        assert page.get("/")[0] == 200
    shown = run_loopx(repo, "gate", "show", "q-1", "--format", "json").json()
    assert shown["state"] == "open"  # nothing was written


def test_status_json_is_the_status_command_answer(repo: Path) -> None:
    plan(repo)
    with serve(repo) as page:
        code, text = page.get("/status.json")
    assert code == 200
    served = json.loads(text)
    cli = run_loopx(repo, "status", "--format", "json").json()
    assert isinstance(cli, dict)
    # The same document; only what is read off the clock (or the disk: another process may
    # be writing) at the moment of asking may differ.
    for doc in (served, cli):
        doc["environment"].pop("now", None)
        for probe in ("probed_at", "cached", "disk_free_mb"):  # one call probed the host
            (doc["environment"].get("capabilities") or {}).pop(probe, None)
        for session in doc["sessions"]:
            session.pop("idle_seconds")
    assert served == cli


def test_answering_a_gate_is_the_gate_answer_operation(repo: Path) -> None:
    plan(repo)
    with serve(repo) as page:
        code, there = page.post("/gate/answer", {"gate": "q-1", "decision": "approve",
                                                 "comment": "go", "token": page.token})
        assert code == 303 and there.startswith("/?token=")
        _, html = page.get(there, token=None)
        assert "answered gate q-1: approve" in html
        again = json.loads(page.get("/status.json")[1])
    gate = run_loopx(repo, "gate", "show", "q-1", "--format", "json").json()
    assert isinstance(gate, dict)
    assert (gate["state"], gate["decision"], gate["answered_by"], gate["comment"]) == (
        "answered", "approve", "human:test@example.com", "go")
    assert "t-1" in again["frontier"]


def test_a_refused_answer_is_shown_and_writes_nothing(repo: Path) -> None:
    plan(repo)
    assert run_loopx(repo, "gate", "open", "g-1", "Not yours", "--authority",
                     "human:bob@example.com", "--id", "q-2").code == 0
    with serve(repo) as page:
        _, there = page.post("/gate/answer", {"gate": "q-2", "decision": "approve",
                                              "token": page.token})
        _, html = page.get(there, token=None)
    assert 'class="flash error"' in html and "q-2" in html
    assert run_loopx(repo, "gate", "show", "q-2", "--format", "json").json()["state"] == "open"


def test_text_from_the_ledger_is_escaped(repo: Path) -> None:
    plan(repo)
    with serve(repo) as page:
        _, html = page.get("/")
        _, svg = page.get("/graph.svg")
    assert "<script>alert" not in html and "<script>alert" not in svg
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot;" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in svg
    assert HOSTILE not in html


def test_the_page_lists_goals_gates_and_the_graph(repo: Path) -> None:
    plan(repo)
    with serve(repo) as page:
        _, html = page.get("/")
    assert 'data-goal="g-1"' in html and "tests pass" in html
    assert 'data-gate="q-1"' in html and "Waiting on you (1)" in html
    assert html.count('class="node ') == 4  # three todos and the gate
    assert 'class="node waiting" data-id="t-1"' in html


def test_web_without_a_ledger_says_so(repo: Path) -> None:
    result = run_loopx(repo, "web")
    assert result.code == 1
    assert result.err.count("\n") == 1 and "git loopx init" in result.err


def test_a_port_in_use_is_one_line(repo: Path) -> None:
    """A second page on the first one's port: uvicorn's start-up failure was a traceback of
    its own SystemExit, exit 3."""
    plan(repo)
    with serve(repo) as first:
        port = first.base.rsplit(":", 1)[1].rstrip("/")
        second = run_loopx(repo, "web", "--port", port, actor="human:test@example.com")
        assert second.code == 1 and second.out == "", second.err
        assert second.err == (f"error: port {port} on 127.0.0.1 is in use (Address already in "
                              "use): give another --port, or none for a free one\n")
        assert first.get("/")[0] == 200  # the first page still serves


def test_no_other_command_loads_the_web_stack(repo: Path) -> None:
    plan(repo)
    argv = [sys.executable, "-X", "importtime", "-m", "loopx", "--help"]  # loads every command
    for args in ([], ["status", "--format", "json", "--no-ci"], ["brief", "--no-ci"]):
        run = subprocess.run(argv[:-1] + args if args else argv, cwd=repo, capture_output=True,
                             env=dict(os.environ, LOOPX_ACTOR="human:test@example.com"),
                             check=True)
        imported = {line.split("|")[-1].strip() for line in run.stderr.decode().splitlines()}
        assert not {n for n in imported if n.split(".")[0] in ("starlette", "uvicorn")}, args
        assert "loopx.web" not in imported


def test_a_state_file_named_in_bytes_not_utf8_is_shown_as_a_problem(repo: Path) -> None:
    """A hand-made state commit with a file whose name is not UTF-8 (held as surrogates): the
    page and status.json could not be encoded (a 500); the name is shown with U+FFFD."""
    from statekit import commit_files

    from loopx.model import codec, ids
    from loopx.model.paths import file_path

    plan(repo)
    event_id = ids.new_event_id()
    doc = {"id": event_id, "type": "note.added", "v": 1, "at": "2026-01-01T00:00:00Z",
           "clock": 90, "actor": "agent:m@e", "data": {"id": "n-1", "text": "hi"}}
    name = file_path(event_id, "note.added").replace(".yaml", "\udcff.yaml")
    commit_files(repo, "refs/heads/loopx/state", {name: codec.dump(doc)})
    with serve(repo) as page:
        code, text = page.get("/status.json")
        assert code == 200
        assert name.replace("\udcff", "\ufffd") in [p["event"] for p in json.loads(text)["problems"]]
        code, html = page.get("/")
        assert code == 200
