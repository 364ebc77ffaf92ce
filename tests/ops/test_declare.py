"""One declaration per operation: the CLI's options, MCP's schemas and batch's lines are derived
from it, so they take the same parameters, with the bounds the event models enforce."""

from __future__ import annotations

from typing import Any

import annotated_types
import click
import pytest

from loopx.cli.root import cli
from loopx.errors import UsageError
from loopx.model.events import EVENT_TYPES
from loopx.ops import catalog, declare

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


def test_results_are_plain_json_whatever_their_form() -> None:
    from dataclasses import dataclass

    @dataclass
    class Shown:
        id: str
        tags: tuple[str, ...]

    assert declare.plain({"a": [Shown("x", ("t",))], "n": None}) == {
        "a": [{"id": "x", "tags": ["t"]}], "n": None}
