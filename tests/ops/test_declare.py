"""One declaration per operation: the CLI's options, MCP's schemas and batch's lines are derived
from it, so they take the same parameters, with the bounds the event models enforce."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import annotated_types
import click
import pytest

from conftest import git, invoke
from loopx.cli.root import cli
from loopx.errors import UsageError
from loopx.ledger.book import Ledger
from loopx.mcp import tools
from loopx.model import typed
from loopx.model.events import EVENT_TYPES
from loopx.ops import batch, catalog, declare, goals

ACTOR = "human:test@example.com"

CLI_ONLY = {"fmt", "as_json", "state_ref_"}  # --format, --json, --state-ref: how it prints


def _command(name: str) -> click.Command:
    ctx = click.Context(cli)
    found: Any = cli
    for word in name.split():
        found = found.get_command(ctx, word)
        assert found is not None, name
    return found  # type: ignore[no-any-return]


@pytest.mark.parametrize("op", catalog.operations(), ids=lambda op: op.name)
def test_the_command_line_and_batch_take_the_declared_parameters(op: declare.Operation) -> None:
    command = _command(op.name)
    params = [p for p in command.params if p.name not in CLI_ONLY]
    # A batch's lines are stdin on the command line, a list in MCP; a run's env is the shell's
    # own environment there: no click parameter.
    assert {p.name for p in params} == {p.key for p in op.params if p.kind not in declare.NO_FLAGS}
    spelled = {o for p in params for o in (*p.opts, *p.secondary_opts) if o.startswith("-")}
    assert spelled == {f for p in op.params for f in p.flags}
    positional = [p.name for p in params if isinstance(p, click.Argument)]
    assert positional == [p.key for p in op.params if p.positional]
    for p in op.params:
        for flag in p.flags:  # batch knows every spelling the command line has
            words = [flag] + (["a", "b"] if p.kind == "pair" else [] if p.kind in (
                "bool", "switch") else [__file__] if p.kind == "file" else ["1"])
            pos = ["x"] * sum(1 for q in op.params if q.positional and q.required)
            assert p.name in declare.parse(op, pos + words), (op.name, flag)


@pytest.mark.parametrize("op", catalog.operations(), ids=lambda op: op.name)
def test_mcp_and_batch_validate_with_the_declared_parameters(op: declare.Operation) -> None:
    schema = declare.model(op).model_json_schema()
    assert set(schema.get("properties", {})) == {p.name for p in op.params if p.mcp}
    required = {p.name for p in op.params if p.mcp and p.required}
    assert set(schema.get("required", [])) == required


def test_an_argument_only_a_flag_turns_off_says_what_false_does() -> None:
    # `--no-ci` says "Do not ask CI about HEAD."; the argument is `ci`, true unless given, and
    # its help read as the flag's said the opposite of what ci=true does.
    ops = {op.name: op for op in catalog.operations()}
    ci = declare.model(ops["status"]).model_json_schema()["properties"]["ci"]
    assert (ci["default"], ci["description"]) == (True, "False: do not ask CI about HEAD.")
    for op in catalog.operations():
        for p in op.params:
            if p.kind == "bool" and p.off and not p.flag and p.mcp:
                said = declare.model(op).model_json_schema()["properties"][p.name]
                assert said["description"].startswith("False: "), (op.name, p.name)


def _unwrapped(prop: dict[str, Any]) -> dict[str, Any]:
    """A property's own schema: not its ``anyOf`` with null (optional), nor its array."""
    found = next((p for p in prop.get("anyOf", []) if p.get("type") != "null"), prop)
    return found.get("items", found) if found.get("type") == "array" else found


@pytest.mark.parametrize("op", catalog.operations(), ids=lambda op: op.name)
def test_the_command_line_and_mcp_take_each_parameter_with_the_same_type_bounds_and_default(
        op: declare.Operation) -> None:
    props = declare.model(op).model_json_schema().get("properties", {})
    command = _command(op.name)
    ctx = click.Context(command)
    for p in op.params:
        if not p.mcp or p.kind in declare.NO_FLAGS:
            continue
        prop, own = props[p.name], _unwrapped(props[p.name])
        clicked = [q for q in command.params if q.name == p.key]  # a switch: one per value
        assert clicked, (op.name, p.name)
        given, default = clicked[0], clicked[0].get_default(ctx)
        many = given.multiple or given.nargs == -1
        assert many == (prop.get("type") == "array" or "items" in prop), (op.name, p.name)
        if p.kind in ("int", "float"):
            kind = given.type
            assert (getattr(kind, "min", None), getattr(kind, "max", None)) == (
                own.get("minimum"), own.get("maximum")), (op.name, p.name)
            assert own["type"] == ("integer" if p.kind == "int" else "number")
        if p.kind == "choice":
            assert sorted(given.type.choices) == own["enum"], (op.name, p.name)  # type: ignore[attr-defined]
        if p.kind == "switch":
            values = [q.flag_value for q in clicked]  # type: ignore[attr-defined]
            assert sorted(values) == own["enum"], (op.name, p.name)
        if p.kind == "bool":
            assert own["type"] == "boolean" and given.is_flag, (op.name, p.name)  # type: ignore[attr-defined]
            assert default == prop["default"], (op.name, p.name)
        elif p.default is not None and not many:
            assert default == prop["default"], (op.name, p.name)
        if p.positional:
            assert given.required == (p.name in declare.model(op).model_json_schema().get(
                "required", [])), (op.name, p.name)


def _bounds(field: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for meta in field.metadata:
        if isinstance(meta, annotated_types.Ge):
            found["lo"] = meta.ge
        if isinstance(meta, annotated_types.Le):
            found["hi"] = meta.le
        if isinstance(meta, annotated_types.MaxLen):
            found["max_length"] = meta.max_length
    return found


def test_declared_bounds_are_the_bounds_of_the_event_fields_they_fill() -> None:
    checked = 0
    for op in catalog.operations():
        for p in op.params:
            if p.field is None:
                continue
            event_type, name = p.field.split(":")
            model = EVENT_TYPES[event_type][0]
            bounds = _bounds(model.model_fields[name])
            declared = {k: getattr(p, k) for k in ("lo", "hi", "max_length")
                        if getattr(p, k) is not None}
            assert declared == bounds, (op.name, p.name)
            checked += 1
    assert checked >= 10
    priority = catalog.find("todo add").param("priority")
    assert (priority.lo, priority.hi) == (0, 4)


def test_a_batch_line_parses_as_the_command_line_would() -> None:
    op = catalog.find("todo add")
    raw = declare.parse(op, ["g-1", "Write tests", "--after", "a", "--after=b", "--priority",
                             "1", "--id", "t-1"])
    assert raw == {"goal": "g-1", "title": "Write tests", "after": ["a", "b"],
                   "priority": "1", "id": "t-1"}
    values = declare.validate(op, raw)
    assert values.priority == 1 and values.gate == [] and values.event_id is None
    with pytest.raises(UsageError, match="priority: Input should be less than or equal to 4"):
        declare.validate(op, {**raw, "priority": "5"})
    with pytest.raises(UsageError, match="no such option: --nope"):
        declare.parse(op, ["g-1", "T", "--nope"])
    with pytest.raises(UsageError, match="missing argument TITLE"):
        declare.parse(op, ["g-1"])
    close = catalog.find("goal close")
    assert declare.parse(close, ["g", "--abandoned"]) == {"goal": "g", "outcome": "abandoned"}


def test_durations_need_a_unit_in_text_and_are_seconds_as_numbers() -> None:
    assert declare.seconds("45m") == 2700 and declare.seconds(90) == 90
    with pytest.raises(ValueError, match="'45' has no unit"):
        declare.seconds("45")
    values = declare.validate(catalog.find("todo claim"), {"todo": "t", "ttl": "1h"})
    assert values.ttl == 3600



@pytest.mark.parametrize("argv, flag, message", [
    (["config", "set", "--lease-ttl", "0s"], "--lease-ttl", "at least 10s, not 0s"),
    (["config", "set", "--lease-ttl", "31d"], "--lease-ttl", "at most 30d, not 31d"),
    (["config", "set", "--session-idle", "30s"], "--session-idle", "at least 1m, not 30s"),
    (["wake", "set", "--every", "400d"], "--every", "at most 366d, not 400d"),
    (["effect", "intend", "t:x", "--action", "a", "--grace", "8d"], "--grace", "at most 7d, not 8d"),
])
def test_a_duration_outside_its_fields_bounds_is_refused_in_its_own_units(
        repo: Path, argv: list[str], flag: str, message: str) -> None:
    """Not the event's "data.lease_ttl_seconds: Input should be greater than or equal to 10"."""
    assert invoke(repo, "init").code == 0
    before = git(repo, "rev-parse", "loopx/state")
    refused = invoke(repo, *argv)
    assert refused.code == 2 and f"Invalid value for '{flag}': {message}" in refused.err, refused.err
    op = catalog.find(" ".join(argv[:2]))
    with pytest.raises(UsageError, match=message):  # a batch line and an MCP call alike
        declare.validate(op, declare.parse(op, argv[2:]))
    assert git(repo, "rev-parse", "loopx/state") == before


EVENT_ID = "01J0000000000000000000000A"  # the same write, asked for three times


def test_cli_json_mcp_and_batch_give_the_same_document_for_the_same_answer(
        repo: Path, ledger: Ledger) -> None:
    ledger.run(goals.add, "G", id="g", actor=ACTOR)
    line = ["todo", "add", "g", "Write it", "--id", "t", "--priority", "1", "--label", "docs",
            "--event-id", EVENT_ID]
    cli = invoke(repo, *line, "--json", actor=ACTOR)
    assert cli.code == 0, cli.err
    mcp = tools.call(ledger, ACTOR, "todo_add", {
        "goal": "g", "title": "Write it", "id": "t", "priority": 1, "label": ["docs"],
        "event_id": EVENT_ID})
    # The library's batch answers each line typed: typed.plain of its answer is the document.
    lines = typed.plain(batch.apply(ledger, batch.parse([line]), actor=lambda: ACTOR))
    batched = tools.call(ledger, ACTOR, "batch", {"lines": [line]})
    piped: Any = invoke(repo, "batch", "--json", input=json.dumps(line) + "\n", actor=ACTOR).json()
    assert cli.json() == mcp == lines[0]["answer"] == batched["results"][0] == piped[0]
    assert mcp["id"] == EVENT_ID and mcp["data"]["labels"] == ["docs"]
    shown = invoke(repo, "todo", "show", "t", "--json", actor=ACTOR).json()
    assert shown == tools.call(ledger, ACTOR, "todo_show", {"todo": "t"})
    assert shown["id"] == "t" and shown["priority"] == 1  # type: ignore[index]
