"""The tools' input schemas (loopx.mcp.tools, no MCP SDK needed): what tools/list says of each
argument is what its model checks, less only what goes without saying, so a client that
validates against the schema refuses and accepts what the server does."""

from __future__ import annotations

import itertools
from typing import Any

import jsonschema
import pytest

from loopx.mcp import tools

ULID = "01J9ZQ3X8Y5V2W7T6S4R3Q2P1N"
# Values of every JSON type, near the bounds the declarations use (ids, titles, priorities,
# list lengths, identities, durations, links).
SCALARS: list[Any] = [
    None, True, False, 0, -1, 1, 4, 5, 3.5, 10**12, "", "x", "t-1", "a" * 64, "a" * 65,
    "a" * 600, "has space", "agent:x@y", "human:alice@example.com", ULID, ULID.lower(), "30m",
    "github:o/r#1", "github:o/r", "http:https://x", "-rf", "main..HEAD", {}, {"A": "b"}]
VALUES: list[Any] = [*SCALARS, [], ["t-1"], ["a b"], [1], ["t-1"] * 201, [["a", "b"]],
                     [ULID], ["agent:x@y"]]


def _said_once(node: Any) -> bool:
    """Whether a schema holds a pattern the server's instructions say once."""
    if isinstance(node, dict):
        return node.get("pattern") in tools.SAID_ONCE or any(map(_said_once, node.values()))
    return isinstance(node, list) and any(map(_said_once, node))


@pytest.mark.parametrize("name", sorted(tools.TOOLS))
def test_each_argument_accepts_and_refuses_what_its_model_does(name: str) -> None:
    tool = tools.TOOLS[name]
    full = tool.args.model_json_schema()
    advertised = tool.input_schema
    assert set(advertised["properties"]) == set(full["properties"])
    assert advertised.get("required", []) == full.get("required", [])
    assert advertised["additionalProperties"] is False
    for prop, said in advertised["properties"].items():
        model = {"$defs": full.get("$defs", {}), **full["properties"][prop]}
        for value in VALUES:
            checked = jsonschema.Draft202012Validator(model).is_valid(value)
            shown = jsonschema.Draft202012Validator(said).is_valid(value)
            if checked == shown:
                continue
            # The two ways they may differ, each on purpose: null for an optional argument
            # (leaving it out is the same), and a pattern said once (the server checks it).
            assert value is None or (not checked and _said_once(model)), (prop, value, said)


def test_the_schemas_leave_out_titles_null_defaults_and_patterns_said_once() -> None:
    listed = [t.input_schema for t in tools.TOOLS.values()]
    nodes = list(itertools.chain.from_iterable(_nodes(s) for s in listed))
    assert not [n for n in nodes if "title" in n and not isinstance(n["title"], dict)]
    assert not [n for n in nodes if "default" in n and (n["default"] is None
                                                        or n["default"] is False)]
    assert not [n for n in nodes if n.get("pattern") in tools.SAID_ONCE]
    assert not [n for n in nodes if n.get("description") in tools.SAID_HELP]
    assert tools.TOOLS["note_add"].input_schema["properties"]["event_id"] == {"type": "string"}
    # A property may be named title, and a default that says something stays.
    assert "title" in tools.TOOLS["todo_add"].input_schema["properties"]
    assert tools.TOOLS["status"].input_schema["properties"]["ci"]["default"] is True
    for said in (*tools.SAID_ONCE, *tools.SAID_HELP):
        assert said in tools.SAID


def _nodes(node: Any) -> list[dict[str, Any]]:
    """Every schema node under ``node`` (a properties map is not one, its values are)."""
    if isinstance(node, list):
        return [n for v in node for n in _nodes(v)]
    if not isinstance(node, dict):
        return []
    found = [node]
    for key, value in node.items():
        found += _nodes(list(value.values()) if key == "properties" else value)
    return found
