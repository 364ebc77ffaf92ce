"""The CLI end to end: `git loopx` as a real subprocess for the contract, in-process for the
many small cases (same entry point, same exit codes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import git, invoke, run_loopx

AGENT = "agent:codex@devbox"
MAINT = "human:maint@example.com"


@pytest.fixture
def project(repo: Path) -> Path:
    for args in (["init"], ["config", "set", "--role", f"maintainer={MAINT}"],
                 ["goal", "add", "Add --format json", "--id", "json", "--accept", "text unchanged",
                  "--accept", "json validates"],
                 ["todo", "add", "json", "Output layer", "--id", "output"],
                 ["todo", "add", "json", "Tests", "--id", "tests", "--after", "output"],
                 ["gate", "open", "json", "Names stable?", "--id", "names", "--authority",
                  "role:maintainer", "--blocks", "tests"]):
        result = invoke(repo, *args)
        assert result.code == 0, result.err
    return repo


def test_status_json_is_the_documented_contract(project: Path) -> None:
    import jsonschema

    schema = json.loads((Path(__file__).parents[2] / ".loopx-schema/status.schema.json").read_text())
    compact = run_loopx(project, "status", "--format", "json")
    assert compact.code == 0, compact.err
    jsonschema.validate(compact.json(), schema)
    result = run_loopx(project, "status", "--format", "json", "--detail")
    assert result.code == 0, result.err
    status = result.json()
    jsonschema.validate(status, schema)
    assert "omitted" not in status
    brief = compact.json()
    assert brief["omitted"]["todos"] == len(status["todos"]) - len(brief["todos"])  # type: ignore[index]
    assert status["frontier"] == ["output"]
    tests = next(t for t in status["todos"] if t["id"] == "tests")
    assert tests["ready"] is False and tests["blockers"] == [
        "waits for todo output", "waits for gate names (asks role:maintainer)"]
    assert tests["why_not_ready"] == "; ".join(tests["blockers"])
    assert status["gates"][0]["authority"] == ["role:maintainer"]
    assert [c["met"] for c in status["goals"][0]["acceptance"]] == [False, False]
    text = run_loopx(project, "status", "--no-ci").out
    assert "(waits for todo output; waits for gate names (asks role:maintainer))" in text


def test_a_criterion_that_passed_is_not_met_while_work_serving_it_is_open(project: Path) -> None:
    assert invoke(project, "todo", "add", "json", "Schema", "--id", "schema",
                  "--criterion", "a2").code == 0
    assert run_loopx(project, "run", "--goal", "json", "--criterion", "a2", "--", "true").code == 0
    status = run_loopx(project, "status", "--format", "json", "--no-ci").json()
    a2 = status["goals"][0]["acceptance"][1]  # type: ignore[index]
    assert (a2["verdict"], a2["met"], a2["open_work"]) == ("pass", False, ["schema"])
    text = run_loopx(project, "status", "--no-ci").out
    assert "0/2 criteria met" in text and "a2  json validates  (passed, work open: schema)" in text
    assert invoke(project, "todo", "claim", "schema").code == 0
    assert invoke(project, "todo", "done", "schema", "--reason", "the schema is checked in").code == 0
    a2 = run_loopx(project, "status", "--format", "json", "--no-ci").json()["goals"][0][  # type: ignore[index]
        "acceptance"][1]
    assert (a2["met"], a2["open_work"]) == (True, [])


def test_a_criterion_with_work_open_reads_the_same_in_status_brief_and_web(project: Path) -> None:
    from loopx.web import page

    for criterion in ("a1", "a2"):  # a1: work open, no evidence; a2: work open, a fresh pass
        assert invoke(project, "todo", "add", "json", f"Serve {criterion}", "--id", f"s{criterion}",
                      "--criterion", criterion).code == 0
    assert run_loopx(project, "run", "--goal", "json", "--criterion", "a2", "--", "true").code == 0
    text = run_loopx(project, "status", "--no-ci").out
    assert "[ ] a1  text unchanged  (work open: sa1)\n" in text  # nothing passed for a1
    assert "[ ] a2  json validates  (passed, work open: sa2)\n" in text
    brief = run_loopx(project, "brief", "--no-ci").out
    assert "- [ ] **a1** text unchanged — unmet (work open: sa1)\n" in brief
    assert "- [ ] **a2** json validates — fresh (work open: sa2)\n" in brief  # not [x]: unmet
    snap = run_loopx(project, "status", "--format", "json", "--no-ci").json()
    html = page.main(snap, actor=AGENT, token="t")  # type: ignore[arg-type]
    assert "work open: sa1" in html and "work open: sa2" in html


def test_json_alias_and_write_commands_print_the_event(project: Path) -> None:
    result = invoke(project, "note", "add", "hello", "--json", actor=AGENT)
    doc = json.loads(result.out)
    assert (doc["type"], doc["actor"], doc["data"]["text"]) == ("note.added", AGENT, "hello")


@pytest.mark.parametrize("where", ["before", "after"])
def test_json_goes_before_or_after_the_command(project: Path, where: str) -> None:
    args = ["todo", "list"]
    result = run_loopx(project, *(["--json", *args] if where == "before" else [*args, "--json"]))
    assert result.code == 0, result.err
    assert isinstance(json.loads(result.out)["todos"], list)
    text = run_loopx(project, "--format", "text", *args)
    assert text.code == 0 and not text.out.lstrip().startswith("{")


def test_init_is_idempotent(project: Path) -> None:
    before = git(project, "rev-parse", "loopx/state")
    assert "already exists" in invoke(project, "init").out
    assert git(project, "rev-parse", "loopx/state") == before


def test_a_unique_prefix_resolves_like_git(project: Path) -> None:
    assert invoke(project, "todo", "claim", "out", actor=AGENT).code == 0
    assert invoke(project, "todo", "add", "json", "Tidy", "--id", "tidy").code == 0
    ambiguous = invoke(project, "todo", "show", "t")
    assert ambiguous.code == 1 and "matches several todos" in ambiguous.err


@pytest.mark.parametrize("args,actor,message", [
    (["todo", "claim", "nope"], AGENT, "no todo matches 'nope'"),
    (["todo", "claim", "tests"], AGENT, "waits for todo output"),
    (["gate", "answer", "names", "--approve"], AGENT, "answered by role:maintainer (human:maint@example.com) only; you are agent:codex@devbox"),
    (["todo", "add", "json", "X", "--after", "ghost"], MAINT, "no todo matches 'ghost'"),
    (["todo", "depend", "output", "--on", "tests"], MAINT, "would make a cycle"),
    (["goal", "close", "json", "--achieved"], MAINT, "criteria without passing evidence"),
    (["goal", "add", "Dup", "--id", "json"], MAINT, "goal json already exists"),
    # an empty text, said so (not pydantic's "String should have at least 1 character")
    (["todo", "add", "json", ""], MAINT, "data.title is empty"),
    (["goal", "add", "G", "--accept", ""], MAINT, "data.acceptance.0.text is empty"),
    (["note", "add", ""], MAINT, "data.text is empty"),
    (["batch"], MAINT, "line 1: invalid arguments for todo add: title is empty"),
    # a state ref git cannot have: not git's update-ref failing (exit 3)
    (["--state-ref", "bad..ref", "note", "add", "x"], MAINT, "--state-ref: 'bad..ref' is not a valid ref name"),
    (["note", "add", "x", "--state-ref", "x.lock"], MAINT, "--state-ref: 'x.lock' is not a valid ref name"),
])
def test_invalid_writes_are_refused_with_one_clear_line_and_exit_1(
        project: Path, args: list[str], actor: str, message: str) -> None:
    before = git(project, "rev-parse", "loopx/state")
    line = '["todo", "add", "json", ""]\n' if args == ["batch"] else None
    result = invoke(project, *args, actor=actor, input=line)
    assert result.code == 1
    assert message in result.err and result.err.count("\n") == 1
    assert git(project, "rev-parse", "loopx/state") == before


def test_a_branch_of_code_is_no_state_ref_and_gets_no_ledger_commit(project: Path) -> None:
    git(project, "branch", "feature")
    before = git(project, "rev-parse", "feature")
    for args in (["--state-ref", "feature", "note", "add", "x"], ["status", "--state-ref", "feature"]):
        refused = invoke(project, *args, actor=MAINT)
        assert refused.code == 1 and refused.err == (
            "error: --state-ref: refs/heads/feature is not a state branch (it holds README); "
            "nothing was read or written: name a new branch, e.g. proposal/x\n"), refused.err
    assert git(project, "rev-parse", "feature") == before
    proposal = invoke(project, "--state-ref", "proposal/x", "note", "add", "x", actor=MAINT)
    assert proposal.code == 0, proposal.err  # a new one starts at loopx/state's tip
    assert invoke(project, "--state-ref", "proposal/x", "note", "add", "y", actor=MAINT).code == 0


@pytest.mark.parametrize("ref", ["refs/tags/light", "refs/tags/annotated",
                                 "refs/remotes/origin/loopx/state", "refs/notes/x"])
def test_a_ref_that_is_no_branch_is_no_state_ref(project: Path, ref: str) -> None:
    """A state ref is a branch: a note written with --state-ref refs/tags/T moved the tag, one
    on a remote-tracking ref was lost at the next fetch, and an annotated tag read as damage
    that `git loopx doctor` offered to repair."""
    assert invoke(project, "note", "add", "first", actor=MAINT).code == 0
    git(project, "tag", "light", "loopx/state")
    git(project, "tag", "-a", "-m", "t", "annotated", "loopx/state")
    git(project, "update-ref", "refs/remotes/origin/loopx/state", "loopx/state")
    git(project, "update-ref", "refs/notes/x", "loopx/state")
    before = git(project, "rev-parse", ref)
    for args in (["--state-ref", ref, "note", "add", "x"], ["status", "--state-ref", ref]):
        refused = invoke(project, *args, actor=MAINT)
        assert refused.code == 1 and refused.err == (
            f"error: --state-ref: {ref} is not a branch (a tag never moves, a remote-tracking "
            "ref is its remote's: a ledger write there is moved or lost); nothing was read or "
            "written: name a branch, e.g. proposal/x\n"), refused.err
    assert git(project, "rev-parse", ref) == before


@pytest.mark.parametrize("target", ["refs/heads/loopx/state", "refs/heads/main",
                                    "refs/heads/nowhere"])
def test_a_symbolic_ref_is_no_state_ref(project: Path, target: str) -> None:
    """A symbolic ref given as --state-ref is refused as one, before anything is read: it was
    "not a ref to a commit ... `git loopx doctor` offers the repair", of a ref that is not
    the ledger's to repair, and a write would have gone to the branch it points at."""
    assert invoke(project, "note", "add", "first", actor=MAINT).code == 0
    git(project, "symbolic-ref", "refs/heads/alias", target)
    state, code = git(project, "rev-parse", "loopx/state"), git(project, "rev-parse", "main")
    for args in (["--state-ref", "alias", "note", "add", "x"], ["status", "--state-ref", "alias"]):
        refused = invoke(project, *args, actor=MAINT)
        assert refused.code == 1 and refused.err == (
            f"error: --state-ref: refs/heads/alias is a symbolic ref (to {target}); nothing "
            "was read or written: name the branch itself\n"), refused.err
    assert (git(project, "rev-parse", "loopx/state"), git(project, "rev-parse", "main")) == (
        state, code)
    assert git(project, "symbolic-ref", "refs/heads/alias") == target


@pytest.mark.parametrize("when", ["9999-12-31T23:59:59Z", "5000-01-01T00:00:00Z",
                                  "1899-12-31T23:59:59Z", "0001-01-01T00:00:00Z"])
def test_a_pinned_clock_past_the_times_loopx_holds_is_refused(project: Path, when: str) -> None:
    """--now beyond 1900..5000 was recorded as the bound it is held to: a note made "at 9999"
    said 5000-01-01 and no word of it."""
    before = git(project, "rev-parse", "loopx/state")
    refused = invoke(project, "--now", when, "note", "add", "x", actor=MAINT)
    assert refused.code == 2 and f"'{when}' must be after 1900-01-01T00:00:00Z and before " \
        "5000-01-01T00:00:00Z" in refused.err, refused.err
    assert git(project, "rev-parse", "loopx/state") == before
    kept = invoke(project, "--now", "4999-12-31T23:59:59Z", "note", "add", "x", actor=MAINT)
    assert kept.code == 0, kept.err


def test_claiming_a_done_todo_is_refused(project: Path) -> None:
    invoke(project, "todo", "claim", "output", actor=AGENT)
    assert invoke(project, "todo", "done", "output", "--reason", "tracked elsewhere",
                  actor=AGENT).code == 0
    result = invoke(project, "todo", "claim", "output", actor=AGENT)
    assert result.code == 1 and "todo output is done" in result.err


def test_usage_errors_exit_2(project: Path) -> None:
    assert run_loopx(project, "todo", "claim").code == 2
    assert run_loopx(project, "no-such-command").code == 2


def test_outside_a_repository_is_a_user_error(tmp_path: Path) -> None:
    result = run_loopx(tmp_path, "status")
    assert result.code == 1 and "not inside a git repository" in result.err


def test_without_a_ledger_status_says_how_to_start(repo: Path) -> None:
    result = run_loopx(repo, "status")
    assert result.code == 1 and "git loopx init" in result.err


def test_identity_defaults_to_the_git_email(project: Path) -> None:
    result = run_loopx(project, "note", "add", "hi", "--json", actor=None)
    assert result.json()["actor"] == "human:test@example.com"


def test_the_whole_flow_through_gates_and_evidence(project: Path) -> None:
    assert invoke(project, "todo", "claim", "output", "--ttl", "10m", actor=AGENT).code == 0
    evidence = invoke(project, "evidence", "add", "--kind", "test", "--todo", "output",
                      "--criterion", "a2", "--command", "pytest", "--exit-code", "0", "--id", "ev1",
                      "--json", actor=AGENT)
    doc = json.loads(evidence.out)
    assert doc["data"]["commit"] == git(project, "rev-parse", "HEAD")
    assert doc["data"]["tree"] == git(project, "rev-parse", "HEAD^{tree}")
    shown = json.loads(invoke(project, "todo", "show", "output", "--json").out)
    assert shown["evidence"] == ["ev1"]  # recorded for the todo: listed before it is done
    assert invoke(project, "todo", "done", "output", "--evidence", "ev1", actor=AGENT).code == 0
    assert invoke(project, "gate", "answer", "names", "--approve", "--comment", "ok", actor=MAINT).code == 0
    status = json.loads(invoke(project, "status", "--json").out)
    assert status["frontier"] == ["tests"]
    assert [c["met"] for c in status["goals"][0]["acceptance"]] == [False, True]


def test_batch_applies_every_line_in_one_commit(project: Path) -> None:
    before = int(git(project, "rev-list", "--count", "loopx/state"))
    lines = "\n".join(json.dumps(x) for x in [
        ["todo", "add", "json", "Docs", "--id", "docs"],
        ["todo", "add", "json", "Release", "--id", "release", "--after", "docs"],
        ["note", "add", "planned the release"],
    ])
    result = run_loopx(project, "batch", "--json", input=lines, actor=MAINT)
    assert result.code == 0, result.err
    assert [e["type"] for e in result.json()] == ["todo.added", "todo.added", "note.added"]
    assert int(git(project, "rev-list", "--count", "loopx/state")) == before + 1


def test_batch_is_all_or_nothing_and_names_the_bad_line(project: Path) -> None:
    before = git(project, "rev-parse", "loopx/state")
    lines = '["note", "add", "fine"]\n["todo", "claim", "ghost"]\n'
    result = run_loopx(project, "batch", input=lines, actor=MAINT)
    assert result.code == 1 and "line 2: no todo matches 'ghost'" in result.err
    assert git(project, "rev-parse", "loopx/state") == before


def test_a_retried_write_with_the_same_event_id_records_nothing_new(project: Path) -> None:
    eid = "01JD5Z3Q1T8E0000000000RTRY"
    first = invoke(project, "todo", "claim", "output", "--event-id", eid, "--json", actor=AGENT)
    tip = git(project, "rev-parse", "loopx/state")
    again = invoke(project, "todo", "claim", "output", "--event-id", eid, "--json", actor=AGENT)
    assert again.code == 0 and json.loads(again.out)["id"] == json.loads(first.out)["id"]
    assert git(project, "rev-parse", "loopx/state") == tip
    clash = invoke(project, "note", "add", "other", "--event-id", eid, actor=AGENT)
    assert clash.code == 1 and "already exists with different content" in clash.err


def test_schema_check_passes_on_the_checked_in_files() -> None:
    root = Path(__file__).parents[2]
    result = run_loopx(root, "schema", "check", "--root", str(root))
    assert result.code == 0, result.out + result.err


def test_schema_check_fails_when_a_file_is_stale(tmp_path: Path) -> None:
    assert run_loopx(tmp_path, "schema", "export", "--root", str(tmp_path)).code == 0
    (tmp_path / ".loopx-schema/envelope.schema.json").write_text("{}\n")
    result = run_loopx(tmp_path, "schema", "check", "--root", str(tmp_path))
    assert result.code == 1 and "stale .loopx-schema/envelope.schema.json" in result.out


def test_help_works_three_ways(repo: Path) -> None:
    assert "Claim a todo" in run_loopx(repo, "todo", "-h").out
    assert "Claim a todo" in run_loopx(repo, "help", "todo").out
    assert "Usage: git loopx" in run_loopx(repo, "-h").out


def test_library_import_does_not_load_click() -> None:
    import subprocess
    import sys

    code = "import sys; from loopx import Ledger; Ledger; print('click' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


def test_closed_goals_leave_status_and_come_back_with_all(project: Path) -> None:
    assert invoke(project, "goal", "close", "json", "--abandoned", "--reason", "not needed").code == 0
    assert "Closed goals" not in invoke(project, "status").out
    shown = invoke(project, "status", "--all").out
    assert "json         abandoned Add --format json  (not needed)" in shown


def test_a_gate_answer_takes_exactly_one_decision(project: Path) -> None:
    both = invoke(project, "gate", "answer", "names", "--approve", "--reject", actor=MAINT)
    assert both.code == 2 and "exactly one of --approve, --reject or --answer" in both.err
    assert invoke(project, "gate", "answer", "names", actor=MAINT).code == 2
    free = invoke(project, "gate", "answer", "names", "--answer", "use snake_case", "--json", actor=MAINT)
    assert json.loads(free.out)["data"]["decision"] == "answer"


def test_a_missing_directory_is_a_user_error(tmp_path: Path) -> None:
    result = run_loopx(tmp_path, "-C", str(tmp_path / "nope"), "status")
    assert result.code == 1 and "no such directory" in result.err


@pytest.mark.parametrize("lines,message", [
    ('["--actor", "agent:q", "note", "add", "hi"]\n', "apply to the whole batch"),
    ('["status"]\n', "writes nothing; a batch takes write commands only"),
    ("", "nothing to apply"),
])
def test_batch_refuses_lines_it_cannot_honour(project: Path, lines: str, message: str) -> None:
    before = git(project, "rev-parse", "loopx/state")
    result = invoke(project, "batch", input=lines, actor=MAINT)
    assert result.code == 1 and message in result.err
    assert git(project, "rev-parse", "loopx/state") == before


def test_batch_text_output_shows_the_ids_it_made(project: Path) -> None:
    result = invoke(project, "batch", input='["todo", "add", "json", "Docs"]\n', actor=MAINT)
    assert result.code == 0 and "todo.added           t-" in result.out
    assert "applied 1 command in one commit" in result.out


def test_errors_are_json_on_stdout_when_json_was_asked_for(project: Path) -> None:
    result = run_loopx(project, "todo", "show", "nosuch", "--json")
    assert result.code == 1 and "no todo matches 'nosuch'" in result.err
    assert result.json() == {"error": {"message": "no todo matches 'nosuch' (see `git loopx todo list`)",
                                       "kind": "NotFound", "exit_code": 1}}
    usage = run_loopx(project, "todo", "claim", "--format", "json")
    assert usage.code == 2 and usage.json()["error"]["kind"] == "MissingParameter"


@pytest.mark.parametrize("args,message", [
    (["gate", "open", "json", "Q?", "--authority", "bob"], "--authority 'bob' is not an identity"),
    (["gate", "open", "json", "Q?", "--authority", "role:nobody"], "no one holds role:nobody"),
    (["config", "set", "--role", "reviewer=bob"], "--role reviewer=bob: 'bob' is not an identity"),
])
def test_authorities_must_be_identities_or_roles_someone_holds(
        project: Path, args: list[str], message: str) -> None:
    result = invoke(project, *args, actor=MAINT)
    assert result.code == 1 and message in result.err and result.err.count("\n") == 1


def test_config_show_lists_effective_settings_readably(project: Path) -> None:
    text = invoke(project, "config", "show").out
    assert "roles: maintainer = human:maint@example.com" in text
    assert "lease_ttl_seconds: 2700" in text and "{" not in text


def test_todo_update_renames_and_adds_a_gate(project: Path) -> None:
    assert invoke(project, "todo", "update", "output", "--title", "JSON layer", "--gate", "names").code == 0
    shown = json.loads(invoke(project, "todo", "show", "output", "--json").out)
    assert shown["title"] == "JSON layer" and shown["gates"] == ["names"]
    assert "waits for gate names" in shown["why_not_ready"]
    assert invoke(project, "todo", "update", "output").code == 2


def test_a_replay_shows_a_progress_bar_only_once_it_has_taken_a_second(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from loopx.cli import terminal

    quick = terminal.Bar()
    for done in range(1000, 5001, 1000):
        quick("replaying the ledger", done, 5000)
    assert capsys.readouterr().err == ""  # done within the second: silent
    monkeypatch.setattr(terminal.Bar, "DELAY_S", 0.0)
    slow = terminal.Bar()
    for done in range(1000, 5001, 1000):
        slow("replaying the ledger", done, 5000)
    assert "loopx: replaying the ledger" in capsys.readouterr().err  # tqdm's bar, drawn


def test_todo_done_citing_an_older_pass_is_refused_after_a_newer_failure(project: Path) -> None:
    assert invoke(project, "todo", "claim", "output").code == 0
    passed = run_loopx(project, "run", "--todo", "output", "--json", "--", "true")
    failed = run_loopx(project, "run", "--todo", "output", "--", "false")
    assert passed.code == 0 and failed.code == 1
    pass_id = passed.json()["data"]["id"]  # type: ignore[index]
    before = git(project, "rev-parse", "refs/heads/loopx/state")
    refused = invoke(project, "todo", "done", "output", "--evidence", pass_id)
    assert refused.code == 1 and f"evidence {pass_id} passed, but " in refused.err
    assert "failed later on the same code for todo output" in refused.err
    assert git(project, "rev-parse", "refs/heads/loopx/state") == before  # nothing written
    assert invoke(project, "todo", "done", "output").code == 1  # latest verdict: the failure
    assert run_loopx(project, "run", "--todo", "output", "--", "true").code == 0
    assert invoke(project, "todo", "done", "output", "--evidence", pass_id).code == 0
