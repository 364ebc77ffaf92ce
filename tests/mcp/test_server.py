"""`git loopx mcp` driven by the MCP SDK's own client over stdio, as an agent's tool would:
tools are listed with schemas from their argument models, calls run the same operations as
the CLI, errors come back as tool errors with the CLI's message and kind, and a write by
another process is seen by the next call."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from conftest import git, invoke, run_loopx

pytestmark = pytest.mark.anyio
AGENT = "agent:claude@laptop"
ALICE = "human:alice@example.com"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def project(repo: Path) -> Path:
    for args in (["init"], ["config", "set", "--role", f"maintainer={ALICE}"],
                 ["goal", "add", "Add --format json", "--id", "json", "--accept", "JSON works"],
                 ["todo", "add", "json", "Output layer", "--id", "output", "--criterion", "a1"],
                 ["todo", "add", "json", "Docs", "--id", "docs", "--after", "output"]):
        assert invoke(repo, *args, actor=ALICE).code == 0
    return repo


def _params(repo: Path, *global_args: str) -> StdioServerParameters:
    # The client passes the child only a few variables by default: give it the sealed test
    # environment (HOME, git config, PATH with the test's git-loopx).
    return StdioServerParameters(command="git", args=["loopx", "-C", str(repo), *global_args,
                                                      "mcp"], env=dict(os.environ))


@pytest.fixture
async def session(project: Path) -> AsyncIterator[ClientSession]:
    params = _params(project)
    params.args.extend(["--actor", AGENT])  # git loopx -C REPO mcp --actor AGENT
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            yield client


async def _call(client: ClientSession, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content  # type: ignore[return-value]


async def test_an_agent_turn_list_status_claim_evidence_done(session: ClientSession,
                                                             project: Path) -> None:
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert {"status", "next", "todo_add", "todo_claim", "todo_renew", "todo_release",
            "todo_done", "evidence_run", "evidence_add", "evidence_rerun", "gate_open", "gate_answer",
            "gate_show", "note_add", "session_open", "session_progress", "session_respond",
            "session_send", "session_inbox", "session_ack", "session_checkpoint", "wake_set",
            "wake_clear", "quota_spend", "prime"} <= set(tools)
    claim = tools["todo_claim"].input_schema
    assert claim["required"] == ["todo"] and claim["additionalProperties"] is False
    assert tools["status"].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert "$ref" not in json.dumps(tools["gate_open"].input_schema)

    doc = await _call(session, "status", ci=False)
    cli = run_loopx(project, "status", "--format", "json", "--no-ci", actor=AGENT).json()
    assert doc["frontier"] == cli["frontier"] == ["output"]  # type: ignore[index]
    assert [a["kind"] for a in doc["actions"]] == [a["kind"] for a in cli["actions"]]  # type: ignore[index]

    claimed = await _call(session, "todo_claim", todo="out", ttl="30m")
    assert (claimed["type"], claimed["actor"], claimed["data"]["id"]) == (
        "todo.claimed", AGENT, "output")
    ran = await _call(session, "evidence_run", argv=[sys.executable, "-c", "print('3 passed')"],
                      criterion=["a1"])
    assert ran["exit_code"] == 0 and "3 passed" in ran["output_tail"]
    evidence_id = ran["event"]["data"]["id"]
    assert ran["event"]["data"]["todo"] == "output"  # the one todo the agent holds
    done = await _call(session, "todo_done", todo="output", evidence=[evidence_id])
    assert done["type"] == "todo.done"

    shown = run_loopx(project, "todo", "show", "output", "--json").json()
    assert shown["state"] == "done" and shown["evidence"] == [evidence_id]  # type: ignore[index]
    nxt = await _call(session, "next", claim=True, ci=False)
    assert nxt["claimed"]["data"]["id"] == "docs" and nxt["action"]["kind"] == "continue"


async def test_errors_are_tool_errors_with_the_clis_message_and_kind(session: ClientSession,
                                                                     project: Path) -> None:
    result = await session.call_tool("todo_claim", {"todo": "docs"})
    cli = run_loopx(project, "todo", "claim", "docs", "--format", "json", actor=AGENT)
    assert result.is_error and cli.code == 1
    assert result.structured_content == {"error": cli.json()["error"]}  # type: ignore[index]
    assert result.content[0].text == "todo docs is not ready: waits for todo output"  # type: ignore[union-attr]
    assert result.structured_content["error"]["kind"] == "TransitionError"  # type: ignore[index]

    bad = await session.call_tool("todo_claim", {"todo": "output", "ttl": "soon", "x": 1})
    assert bad.is_error and bad.structured_content["error"]["kind"] == "UsageError"  # type: ignore[index]
    assert "x: Extra inputs are not permitted" in bad.content[0].text  # type: ignore[union-attr]
    bad = await session.call_tool("todo_claim", {"todo": "output", "ttl": "soon"})
    assert bad.is_error and "not a duration: 'soon'" in bad.content[0].text  # type: ignore[union-attr]
    with pytest.raises(MCPError, match="unknown tool 'nope'"):
        await session.call_tool("nope", {})
    huge = "x" * 100_000  # an error quoting what it was given stays one short line
    long = await session.call_tool("todo_show", {"todo": huge})
    assert long.is_error and len(long.content[0].text) <= 1200  # type: ignore[union-attr]
    assert len(long.structured_content["error"]["message"]) <= 1200  # type: ignore[index]
    with pytest.raises(MCPError) as caught:
        await session.call_tool(huge, {})
    assert len(str(caught.value)) <= 1300
    assert (await _call(session, "todo_show", todo="output"))["state"] == "open"  # still serving


async def test_a_write_by_another_process_is_seen_by_the_next_call(session: ClientSession,
                                                                   project: Path) -> None:
    before = await _call(session, "status", ci=False)
    assert run_loopx(project, "todo", "add", "json", "Urgent fix", "--id", "fix",
                     "--priority", "0", actor=ALICE).code == 0
    after = await _call(session, "status", ci=False)
    assert after["frontier"] == ["fix", "output"] != before["frontier"]
    assert after["ledger"]["events"] == before["ledger"]["events"] + 1
    assert (await _call(session, "todo_claim", todo="fix"))["data"]["id"] == "fix"


async def test_the_server_acts_as_its_principal_or_a_sub_identity_under_it(
        session: ClientSession, project: Path) -> None:
    opened = await _call(session, "gate_open", goal="json", question="Ship it?",
                         authority=["role:maintainer"], id="ship")
    assert opened["actor"] == AGENT
    refused = await session.call_tool("gate_answer", {"gate": "ship", "approve": True})
    assert refused.is_error and "answered by role:maintainer (" in refused.content[0].text  # type: ignore[union-attr]
    # Naming the maintainer (or any other principal) in a call is refused, reads included,
    # and nothing is written.
    for tool, arguments in (("gate_answer", {"gate": "ship", "approve": True}),
                            ("note_add", {"text": "hi"}), ("status", {"ci": False})):
        # ... and so is a name under it that is no identity, or no name at all (the schema
        # does not carry the pattern: it is checked here, once, reads included).
        for other in (ALICE, "agent:claude@laptopX", "agent:claude@laptop.evil/x", f"{AGENT}/",
                      f"{AGENT}/a b", f"{AGENT}/{'w' * 300}", "", 5, [AGENT]):
            named = await session.call_tool(tool, {**arguments, "actor": other})
            assert named.is_error, (tool, other)
            assert named.structured_content["error"]["kind"] == "UsageError"  # type: ignore[index]
            shown = other if isinstance(other, str) and other else repr(other)
            assert named.content[0].text == (  # type: ignore[union-attr]
                f"this server acts as {AGENT}; a call may name {AGENT} or a sub-identity "
                f"{AGENT}/NAME, not {shown}")
    assert (await _call(session, "gate_show", gate="ship"))["state"] == "open"
    worker = await _call(session, "note_add", text="from a worker", actor=f"{AGENT}/worker-2")
    assert worker["actor"] == f"{AGENT}/worker-2"
    assert (await _call(session, "note_add", text="plain"))["actor"] == AGENT
    # The maintainer answers from their own process.
    assert run_loopx(project, "gate", "answer", "ship", "--approve", actor=ALICE).code == 0
    assert (await _call(session, "gate_show", gate="ship"))["answered_by"] == ALICE


async def test_sessions_notes_wakes_and_quota_through_tools(session: ClientSession,
                                                          project: Path) -> None:
    opened = await _call(session, "session_open", task="Keep the changelog", id="s-log")
    assert opened["data"]["workspace"]["path"]
    await _call(session, "session_progress", session="s-log", text="halfway")
    await _call(session, "session_respond", session="s-log", text="done for now")
    assert run_loopx(project, "session", "send", "s-log", "one more thing", actor=ALICE).code == 0
    inbox = await _call(session, "session_inbox", session="s-log", ack=True)
    assert [m["message"] for m in inbox["messages"]] == ["one more thing"]
    assert await _call(session, "session_ack", session="s-log") == {"acked": []}
    point = await _call(session, "session_checkpoint", session="s-log", transcript="é" * 10,
                        summary="so far")
    assert point["data"]["transcript"]["bytes"] == 20
    assert (await _call(session, "note_add", text="hello", todo="output"))["type"] == "note.added"
    wake = await _call(session, "wake_set", **{"in": "1h", "every": "30m", "reason": "poll"})
    assert wake["data"]["every"] == 1800
    assert (await _call(session, "wake_clear", wake=wake["data"]["id"]))["type"] == "wake.cleared"
    spent = await _call(session, "quota_spend", goal="json", tokens=1200, turns=1)
    assert spent["data"]["tokens"] == 1200
    primer = await _call(session, "prime", ci=False)
    assert primer["markdown"].startswith(f"# loopx primer for `{AGENT}`")


async def test_resources_the_brief_the_primer_and_one_goal(session: ClientSession) -> None:
    listed = [str(r.uri) for r in (await session.list_resources()).resources]
    assert listed == ["loopx://brief", "loopx://prime", "loopx://goal/json"]
    templates = (await session.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["loopx://goal/{id}"]
    brief = (await session.read_resource("loopx://brief")).contents[0]
    assert brief.text.startswith("# loopx brief") and brief.mime_type == "text/markdown"  # type: ignore[union-attr]
    goal = json.loads((await session.read_resource("loopx://goal/js")).contents[0].text)  # type: ignore[union-attr]
    assert goal["id"] == "json" and [t["id"] for t in goal["todos"]] == ["output", "docs"]
    with pytest.raises(MCPError, match="no goal matches 'nope'"):
        await session.read_resource("loopx://goal/nope")


def test_without_an_identity_the_server_refuses_to_start(project: Path) -> None:
    """git's user.email is set here, and still the server does not act as that human."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "LOOPX_ACTOR"}
    for argv in (["git", "loopx", "mcp"], [sys.executable, "-m", "loopx.mcp"],
                 ["git", "loopx", "mcp", "--actor", "claude"]):
        done = subprocess.run(argv, cwd=project, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 1 and done.stdout == ""
        lines = done.stderr.splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0] == ("error: --actor 'claude' is not an identity: give KIND:NAME, e.g. "
                            "agent:claude@laptop" if "--actor" in argv else
                            "error: the MCP server acts as one identity and none was named: "
                            "start it as `git loopx --actor agent:NAME@HOST mcp` (or set "
                            "LOOPX_ACTOR)")
    env["LOOPX_ACTOR"] = AGENT  # the environment names it as well as --actor does
    started = subprocess.run(["git", "loopx", "mcp"], cwd=project, env=env, input="",
                             capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr


def test_without_the_sdk_mcp_says_how_to_install_it(project: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if not installed: find_spec finds nothing
    result = invoke(project, "mcp", "--format", "json")
    assert result.code == 1
    assert result.err.strip() == ("error: the MCP server needs the MCP SDK: "
                                  "pip install 'mcp>=2.3,<3' (the [mcp] extra of git-loopx)")
    assert json.loads(result.out)["error"]["kind"] == "LoopxError"


def test_stdout_carries_only_the_protocol(project: Path) -> None:
    """Raw JSON-RPC over a pipe: every line the server writes is a JSON-RPC message, even
    when a tool runs a command that prints."""
    import subprocess

    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "evidence_run", "arguments": {
                "argv": ["sh", "-c", "echo to-stdout; echo to-stderr >&2"], "goal": "json"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "status", "arguments": {"ci": False}}},
    ]
    proc = subprocess.Popen(["git", "loopx", "--actor", AGENT, "mcp"], cwd=project,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
    proc.stdin.flush()
    answers = [json.loads(proc.stdout.readline()) for _ in range(3)]  # fails on anything else
    proc.stdin.close()
    rest = proc.stdout.read()
    assert proc.wait(timeout=30) == 0 and rest.strip() == ""
    assert [a["id"] for a in answers] == [1, 2, 3]
    ran = answers[1]["result"]["structuredContent"]
    assert ran["exit_code"] == 0 and "to-stdout" in ran["output_tail"]


async def test_evidence_rerun_runs_stale_evidence_again(session: ClientSession,
                                                        project: Path) -> None:
    await _call(session, "todo_claim", todo="output")
    ran = await _call(session, "evidence_run", argv=[sys.executable, "-c", "print('ok')"],
                      criterion=["a1"])
    assert ran["exit_code"] == 0
    (project / "README").write_text("changed\n")
    git(project, "commit", "-q", "-am", "change the code")
    planned = await _call(session, "evidence_rerun", dry_run=True)
    assert [r["evidence"] for r in planned["reruns"]] == [[ran["event"]["data"]["id"]]]
    assert planned["reruns"][0]["recorded"] is None
    rerun = await _call(session, "evidence_rerun", stale=True)
    (item,) = rerun["reruns"]
    assert item["exit_code"] == 0 and item["recorded"]["type"] == "evidence.recorded"


async def test_a_commit_recorded_in_the_background_is_seen_by_the_next_call(
        session: ClientSession, project: Path) -> None:
    """post-commit queues the record and a detached drain writes it; like every command, the
    server applies the queue (or waits for the drain) before it answers. Here the drain lock
    is held through the commit, so no drain starts: only the server can record it."""
    import fcntl
    import subprocess

    assert run_loopx(project, "hooks", "install").code == 0
    await _call(session, "todo_claim", todo="output")
    (project / "out.py").write_text("print('json')\n")
    git(project, "add", "out.py")
    spool = project / ".git" / "loopx" / "spool"
    spool.mkdir(parents=True, exist_ok=True)
    fd = os.open(spool / ".drain.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        proc = subprocess.run(["git", "commit", "-q", "-m", "output layer"], cwd=project,
                              env=dict(os.environ, LOOPX_ACTOR=AGENT), capture_output=True,
                              text=True, check=True)
    finally:
        os.close(fd)
    assert "in the background" in proc.stderr and list(spool.glob("*.json"))
    head = git(project, "rev-parse", "HEAD")
    found = await _call(session, "status", ci=False, detail=True)
    assert [e["todo"] for e in found["evidence"] if e["commit"] == head] == ["output"]


async def test_every_agent_operation_is_a_tool_with_the_commands_parameters(
        session: ClientSession) -> None:
    from loopx.ops import catalog

    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert {"goal_add", "goal_update", "goal_close", "todo_block", "todo_reopen", "quota_show",
            "log", "diff", "validate", "batch", "sync", "fetch", "push"} <= set(tools)
    declared = catalog.tools()
    assert set(tools) == set(declared)
    for name, op in declared.items():
        schema = tools[name].input_schema
        assert set(schema["properties"]) == {p.name for p in op.params if p.mcp} | {"actor"}
        assert set(schema.get("required", [])) == {p.name for p in op.params if p.required}
        # A write says nothing: readOnlyHint is false unless said.
        hint = tools[name].annotations
        assert (hint is not None and hint.read_only_hint is True) is (not op.writes), name
    priority = tools["todo_add"].input_schema["properties"]["priority"]
    assert (priority["minimum"], priority["maximum"]) == (0, 4)  # the event model's bounds
    # No "title" annotation repeats a name (the list goes into a context); a property so named stays.
    listed = json.dumps([t.input_schema for t in tools.values()])
    assert '"title": "' not in listed and "title" in tools["todo_add"].input_schema["properties"]


async def test_the_list_of_tools_fits_an_agents_context(session: ClientSession) -> None:
    """tools/list goes into the agent's context at the start of every session: it has a
    budget in bytes (benchmarks/bench_tools.py shows where they go)."""
    from loopx.mcp import tools as declared

    listed = await session.list_tools()
    wire = listed.model_dump_json(by_alias=True, exclude_none=True)
    assert len(wire.encode()) <= declared.BUDGET, len(wire.encode())
    for tool in listed.tools:
        entry = tool.model_dump_json(by_alias=True, exclude_none=True)
        assert len(entry.encode()) <= declared.BUDGET // 25, tool.name  # no tool takes a lot
        assert tool.output_schema is None, tool.name  # status's was a quarter of the list
        actor = json.dumps(tool.input_schema["properties"]["actor"], separators=(",", ":"))
        assert len(actor) <= 100, actor  # it is on every tool
    # Nothing that tells an agent nothing: a title repeating a name, a null default, a
    # flag's default false, the patterns said once in the instructions.
    assert '"title":"' not in wire and '"default":null' not in wire
    assert '"default":false' not in wire and declared.SAID in str(session.instructions)
    for pattern in declared.SAID_ONCE:
        assert json.dumps(pattern) not in wire


async def test_goals_todos_and_review_through_tools(session: ClientSession) -> None:
    goal = await _call(session, "goal_add", title="Docs", id="docs-goal", accept=["written"])
    assert goal["type"] == "goal.created"
    await _call(session, "todo_add", goal="docs-goal", title="Write", id="w", priority=1)
    assert (await _call(session, "todo_block", todo="w", reason="waits"))["type"] == "todo.blocked"
    assert (await _call(session, "todo_reopen", todo="w"))["type"] == "todo.reopened"
    bad = await session.call_tool("todo_add", {"goal": "docs-goal", "title": "T", "priority": 7})
    assert bad.is_error and "priority: Input should be less than or equal to 4" in (
        bad.content[0].text)  # type: ignore[union-attr]
    closed = await _call(session, "goal_close", goal="docs-goal", outcome="abandoned",
                         reason="not needed")
    assert closed["data"]["outcome"] == "abandoned"
    log = await _call(session, "log", max_count=2)
    assert len(log["commits"]) == 2 and log["commits"][0]["events"]
    assert (await _call(session, "validate"))["ok"] is True
    await _call(session, "quota_set", goal="json", turns=5)
    assert (await _call(session, "quota_show"))["json"]["turns"] == 5


async def test_a_batch_tool_writes_its_lines_in_one_commit_as_the_server(
        session: ClientSession, project: Path) -> None:
    before = int(git(project, "rev-list", "--count", "loopx/state"))
    done = await _call(session, "batch", lines=[["todo", "add", "json", "A", "--id", "a"],
                                                ["note", "add", "planned", "--todo", "a"]],
                       message="plan")
    assert [r["type"] for r in done["results"]] == ["todo.added", "note.added"]
    assert {r["actor"] for r in done["results"]} == {AGENT}
    assert int(git(project, "rev-list", "--count", "loopx/state")) == before + 1
    bad = await session.call_tool("batch", {"lines": [["note", "add", "x"],
                                                      ["todo", "claim", "ghost"]]})
    assert bad.is_error and "line 2: no todo matches 'ghost'" in bad.content[0].text  # type: ignore[union-attr]
    named = await session.call_tool("batch", {"lines": [["note", "add", "x"]], "actor": ALICE})
    assert named.is_error and "this server acts as" in named.content[0].text  # type: ignore[union-attr]
    assert int(git(project, "rev-list", "--count", "loopx/state")) == before + 1


async def test_next_with_claim_syncs_first_when_sync_stands_before_new_work(
        session: ClientSession, project: Path, tmp_path: Path) -> None:
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    git(project, "remote", "add", "origin", str(hub))
    assert run_loopx(project, "sync", actor=ALICE).code == 0
    assert run_loopx(project, "note", "add", "a local write", actor=ALICE).code == 0
    cli = run_loopx(project, "next", "--format", "json", "--no-ci", actor=AGENT).json()
    assert cli["action"]["kind"] == "sync"  # what stands before new work
    nxt = await _call(session, "next", claim=True, ci=False)
    assert nxt["claimed"]["data"]["id"] == "output"
    # The local write reached the hub first; the claim came after it.
    assert git(hub, "rev-parse", "loopx/state") == git(project, "rev-parse", "loopx/state~1")
    pushed = await _call(session, "push")
    assert pushed["remote"] == "origin"
    synced = await _call(session, "sync")
    assert synced["local_after"] == git(project, "rev-parse", "loopx/state")
    assert git(hub, "rev-parse", "loopx/state") == git(project, "rev-parse", "loopx/state")


async def test_evidence_run_adds_the_calls_env_and_records_none_of_it(
        session: ClientSession, project: Path) -> None:
    """The client strips variables the agent's shell has (PYTHONPATH, ...): the call passes
    them, the command runs with them, and their values reach neither the ledger nor the answer."""
    await _call(session, "todo_claim", todo="output")
    value = "/opt/agent-shell/site-packages"
    probe = "import os, sys; print('got', os.environ['AGENT_SHELL_PATH']); sys.exit(0)"
    ran = await _call(session, "evidence_run", argv=[sys.executable, "-c", probe],
                      env={"AGENT_SHELL_PATH": value})
    assert ran["exit_code"] == 0 and "got [REDACTED:AGENT_SHELL_PATH]" in ran["output_tail"]
    assert value not in json.dumps(ran)
    import subprocess

    found = subprocess.run(["git", "grep", "-F", value, "loopx/state"], cwd=project,
                           capture_output=True, text=True)
    assert found.returncode == 1 and found.stdout == "", found.stdout  # in no event file
    server_env = await _call(session, "evidence_run", argv=[sys.executable, "-c", (
        "import os, sys; sys.exit(0 if 'AGENT_SHELL_PATH' not in os.environ and "
        "os.environ.get('HOME') else 3)")])
    assert server_env["exit_code"] == 0  # the server's environment; the last call's env gone


async def test_a_command_that_cannot_start_is_an_error_not_evidence(
        session: ClientSession, project: Path) -> None:
    before = len((await _call(session, "status", ci=False))["evidence"])
    for argv, said in ((["no-such-command-xyz"], "No such file or directory"),
                       (["sh", "-c", "no-such-command-xyz"], "not found"),
                       ([str(project / "README")], "Permission denied")):
        result = await session.call_tool("evidence_run", {"argv": argv, "goal": "json"})
        assert result.is_error, argv
        text = result.content[0].text  # type: ignore[union-attr]
        assert result.structured_content["error"]["kind"] == "UsageError"  # type: ignore[index]
        assert "could not start" in text and said in text and "nothing recorded" in text, text
    assert len((await _call(session, "status", ci=False))["evidence"]) == before


async def test_a_session_owner_is_told_to_read_its_inbox_and_cannot_respond_past_a_correction(
        session: ClientSession, project: Path) -> None:
    opened = await _call(session, "session_open", task="Monthly report", id="s-1", goal="json")
    assert opened["data"]["keep_open"] is True
    assert run_loopx(project, "session", "send", "s-1", "use EUR", actor=ALICE).code == 0
    nxt = await _call(session, "next", ci=False)
    assert nxt["action"]["kind"] == "read_inbox"
    assert nxt["action"]["command"] == "git loopx session inbox s-1 --ack"
    refused = await session.call_tool("session_respond", {"session": "s-1", "text": "in USD"})
    assert refused.is_error
    assert refused.structured_content["error"]["kind"] == "TransitionError"  # type: ignore[index]
    assert "1 unread correction" in refused.content[0].text  # type: ignore[union-attr]
    read = await _call(session, "session_inbox", session="s-1", ack=True)
    assert [m["message"] for m in read["messages"]] == ["use EUR"]
    await _call(session, "session_respond", session="s-1", text="in EUR")
    doc = await _call(session, "status", ci=False)
    (s1,) = doc["sessions"]
    assert s1["ends"].startswith("never on its own") and s1["state"] == "awaiting_input"
    assert not [a for a in doc["actions"] if a.get("session") == "s-1"]  # not to message itself


async def test_assign_handoff_and_labels_through_tools(session: ClientSession,
                                                       project: Path) -> None:
    """The same parameters as `todo add --label`, `todo list --label`, `todo assign`,
    `todo handoff --to` and `next --label`, over the SDK's client."""
    codex = "agent:codex@devbox"
    await _call(session, "todo_add", goal="json", title="CLI flags", id="flags",
                label=["area:cli"])
    listed = await _call(session, "todo_list", label=["area:cli"])
    assert [t["id"] for t in listed["todos"]] == ["flags"]
    assert listed["todos"][0]["labels"] == ["area:cli"]
    assigned = await _call(session, "todo_assign", todo="output", who=codex)
    assert assigned["type"] == "todo.assigned" and assigned["data"]["to"] == codex
    offered = await _call(session, "next", label=["area:cli"])
    assert offered["action"]["todo"] == "flags"  # output is codex's; the label narrows too
    await _call(session, "todo_claim", todo="flags")
    handed = await _call(session, "todo_handoff", todo="flags", to=codex, note="yours now")
    assert handed["type"] == "todo.handed_off" and handed["actor"] == AGENT
    shown = json.loads(invoke(project, "todo", "show", "flags", "--format", "json",
                              actor=ALICE).out)
    assert shown["claimed_by"] == codex and shown["assignee"] == codex
    again = await session.call_tool("todo_handoff", {"todo": "flags", "to": ALICE})
    assert again.is_error  # the lease is codex's now: this agent cannot hand it on


async def test_a_state_file_named_in_bytes_not_utf8_is_a_problem_the_server_can_send(
        project: Path) -> None:
    """A hand-made state commit with a file whose name is not UTF-8 (git's bytes, held as
    surrogates): status stopped the whole server (its JSON could not be encoded)."""
    from statekit import commit_files

    from loopx.model import codec, ids
    from loopx.model.paths import file_path

    event_id = ids.new_event_id()
    doc = {"id": event_id, "type": "note.added", "v": 1, "at": "2026-01-01T00:00:00Z",
           "clock": 9, "actor": "agent:m@e", "data": {"id": "n-1", "text": "hi"}}
    name = file_path(event_id, "note.added").replace(".yaml", "\udcff.yaml")
    commit_files(project, "refs/heads/loopx/state", {name: codec.dump(doc)})
    params = _params(project)
    params.args.extend(["--actor", AGENT])
    with anyio.fail_after(60):  # (a server that stopped left the client waiting)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            doc = await _call(client, "status", ci=False)
            assert [p["event"] for p in doc["problems"]] == [name.replace("\udcff", "\ufffd")]
            for uri in ("loopx://brief", "loopx://prime"):
                assert (await client.read_resource(uri)).contents
