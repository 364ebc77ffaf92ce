"""JSON Schemas generated from the event model, plus the status contract. Checked in under
``.loopx-schema/`` by ``git loopx schema export`` and verified by ``git loopx schema check``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loopx.state.decide import PRIORITY
from loopx.model.events import EVENT_TYPES, Envelope

SCHEMA_DIR = ".loopx-schema"
BASE_URI = "https://loopx.dev/schema/"


def _event_schema(type_name: str) -> dict[str, Any]:
    model, version = EVENT_TYPES[type_name]
    envelope = Envelope.model_json_schema()
    payload = model.model_json_schema(ref_template="#/$defs/{model}")
    defs = {**envelope.pop("$defs", {}), **payload.pop("$defs", {})}
    envelope["properties"]["type"] = {"const": type_name, "title": "Type"}
    envelope["properties"]["v"] = ({"const": version, "title": "V"} if version == 1 else
                                   {"enum": list(range(1, version + 1)), "title": "V"})
    envelope["properties"]["data"] = {"$ref": f"#/$defs/{model.__name__}"}
    defs[model.__name__] = payload
    envelope["$defs"] = defs
    envelope["$id"] = f"{BASE_URI}events/{type_name}.schema.json"
    envelope["title"] = type_name
    envelope["description"] = (model.__doc__ or f"The {type_name} event.").strip().splitlines()[0]
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **envelope}


def _nullable(kind: str | list[str]) -> dict[str, Any]:
    kinds = [kind] if isinstance(kind, str) else kind
    return {"type": [*kinds, "null"]}


_STR_LIST = {"type": "array", "items": {"type": "string"}}

STATUS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": f"{BASE_URI}status.schema.json",
    "title": "git loopx status --format json",
    "description": "The status contract read by other tools; see docs/status.md.",
    "type": "object",
    "required": ["ledger", "goals", "todos", "frontier", "gates", "evidence", "problems"],
    "properties": {
        "ledger": {"type": "object", "required": ["events", "clock"]},
        "goals": {"type": "array", "items": {
            "type": "object", "required": ["id", "title", "state", "acceptance"],
            "properties": {
                "id": {"type": "string"}, "title": {"type": "string"},
                "state": {"enum": ["active", "paused", "achieved", "abandoned"]},
                "acceptance": {"type": "array", "items": {
                    "type": "object", "required": ["id", "text", "met"],
                    "properties": {"id": {"type": "string"}, "text": {"type": "string"},
                                   "met": {"type": "boolean"}, "evidence": _STR_LIST},
                }},
            },
        }},
        "todos": {"type": "array", "items": {
            "type": "object",
            "required": ["id", "goal", "title", "state", "depends_on", "claimed_by",
                         "lease_expires", "ready", "why_not_ready"],
            "properties": {
                "id": {"type": "string"}, "goal": {"type": "string"}, "title": {"type": "string"},
                "state": {"enum": ["open", "claimed", "done", "blocked", "cancelled"]},
                "depends_on": _STR_LIST, "gates": _STR_LIST,
                "claimed_by": _nullable("string"), "lease_expires": _nullable("string"),
                "ready": {"type": "boolean"}, "why_not_ready": _nullable("string"),
            },
        }},
        "frontier": _STR_LIST,
        "gates": {"type": "array", "items": {
            "type": "object", "required": ["id", "goal", "state", "authority", "decision"],
            "properties": {
                "id": {"type": "string"}, "goal": {"type": "string"},
                "state": {"enum": ["open", "answered", "withdrawn", "conflicted"]},
                "authority": _STR_LIST,
                "decision": {"enum": ["approve", "reject", "answer", None]},
            },
        }},
        "evidence": {"type": "array", "items": {
            "type": "object", "required": ["id", "kind", "commit", "todo", "criteria"],
            "properties": {
                "id": {"type": "string"},
                "kind": {"enum": ["test", "ci", "commit", "review", "receipt", "note"]},
                "commit": _nullable("string"), "todo": _nullable("string"), "criteria": _STR_LIST,
            },
        }},
        "problems": {"type": "array", "items": {
            "type": "object", "required": ["event", "reason"],
            "properties": {"event": {"type": "string"}, "reason": {"type": "string"},
                           "dismissed": {"type": "boolean"}},
        }},
        "sessions": {"type": "array", "items": {
            "type": "object",
            "required": ["id", "state", "owner", "task", "goal", "todo", "workspace",
                         "idle_seconds", "inbox", "keep_open", "closed_reason", "last_response"],
            "properties": {
                "id": {"type": "string"},
                "state": {"enum": ["running", "awaiting_input", "closed"]},
                "owner": {"type": "string"}, "task": {"type": "string"},
                "goal": _nullable("string"), "todo": _nullable("string"),
                "workspace": {"type": "object", "required": ["host", "path"], "properties": {
                    "host": {"type": "string"}, "path": {"type": "string"}}},
                "idle_seconds": _nullable("integer"),
                "inbox": {"type": "array", "items": {
                    "type": "object", "required": ["event", "seq", "from", "at", "kind", "message"],
                    "properties": {"event": {"type": "string"}, "seq": {"type": "integer"},
                                   "from": {"type": "string"}, "at": {"type": "string"},
                                   "kind": {"enum": ["correction", "follow_up"]},
                                   "message": {"type": "string"}},
                }},
                "keep_open": {"type": "boolean"}, "keep_open_reason": _nullable("string"),
                "closed_reason": {"enum": ["done", "stopped", "expired", "abandoned", None]},
                "last_response": _nullable("string"), "last_progress": _nullable("string"),
                "checkpoints": {"type": "integer"},
            },
        }},
        "unknown_events": {"type": "array"},
        "wakes": {"type": "array"},
        "effects": {"type": "array"},
        "quota": {"type": "object"},
        "ref": {"type": "string"},
        "environment": {"$ref": "#/$defs/environment"},
        "actions": {"type": "array", "items": {"$ref": "#/$defs/action"}},
        "next_wake": _nullable("string"),
    },
    "$defs": {},  # filled in below (readback and decide parts)
}

_FRESHNESS = {"enum": ["fresh", "stale", "unknown", "unbound"]}

STATUS_SCHEMA["$defs"] = {
    "environment": {
        "type": "object",
        "description": "The world as readback inspected it for this status (docs/recovery.md).",
        "required": ["head", "tree", "branch", "detached", "dirty", "untracked", "in_progress",
                     "upstream", "state", "ci", "host", "evidence"],
        "properties": {
            "head": _nullable("string"), "tree": _nullable("string"),
            "branch": _nullable("string"), "detached": {"type": "boolean"},
            "dirty": _STR_LIST, "untracked": _STR_LIST,
            "in_progress": {"enum": ["merge", "rebase", "cherry-pick", "revert", "bisect", None]},
            "upstream": {"oneOf": [{"type": "null"}, {
                "type": "object", "required": ["name", "ahead", "behind"],
                "properties": {"name": {"type": "string"}, "ahead": {"type": "integer"},
                               "behind": {"type": "integer"}}}]},
            "state": {"type": "object", "required": ["ref", "remote", "tracking", "unpushed", "unmerged"],
                      "properties": {"ref": {"type": "string"}, "remote": {"type": "string"},
                                     "tracking": _nullable("string"),
                                     "unpushed": {"type": "integer"}, "unmerged": {"type": "integer"}}},
            "ci": {"type": "object", "required": ["provider", "state", "checks"],
                   "properties": {
                       "provider": _nullable("string"),
                       "state": {"enum": ["success", "failure", "pending", "unknown"]},
                       "checks": {"type": "array", "items": {
                           "type": "object", "required": ["name", "state"],
                           "properties": {"name": {"type": "string"}, "state": {"type": "string"}}}},
                       "detail": _nullable("string")}},
            "host": {"type": "string"}, "worktree": _nullable("string"),
            "evidence": {"type": "object", "additionalProperties": {
                "type": "object", "required": ["state", "commit", "changed"],
                "properties": {"state": _FRESHNESS, "commit": _nullable("string"),
                               "changed": _STR_LIST, "reason": _nullable("string")}}},
        },
    },
    "action": {
        "type": "object", "required": ["kind", "priority", "reason", "command"],
        "properties": {
            "kind": {"enum": sorted(PRIORITY, key=PRIORITY.__getitem__)},
            "priority": {"type": "integer"}, "reason": {"type": "string"},
            "command": _nullable("string"),
            "todo": {"type": "string"}, "gate": {"type": "string"}, "goal": {"type": "string"},
            "effect": {"type": "string"}, "session": {"type": "string"},
            "evidence": {"type": "string"}, "wake": {"type": "string"},
        },
    },
}
STATUS_SCHEMA["required"] += ["environment", "actions", "next_wake"]
_criterion = STATUS_SCHEMA["properties"]["goals"]["items"]["properties"]["acceptance"]["items"]
_criterion["properties"].update(freshness={"enum": ["fresh", "stale", "unknown", "unmet"]},
                                needs_rerun={"type": "boolean"})
STATUS_SCHEMA["properties"]["evidence"]["items"]["properties"]["freshness"] = {
    "enum": [*_FRESHNESS["enum"], None]}
STATUS_SCHEMA["properties"]["todos"]["items"]["properties"].update(
    priority={"type": "integer", "minimum": 0, "maximum": 4},
    discovered_from=_nullable("string"))

# Added by issue 11 (evidence you can trust): the latest verdict per criterion, scopes, CI
# results as verdicts, done-without-evidence reasons. Keys only ever added (docs/status.md).
_CHECKS = {"type": "array", "items": {"type": "object", "required": ["name", "state"],
                                      "properties": {"name": {"type": "string"},
                                                     "state": {"type": "string"},
                                                     "url": _nullable("string")}}}
_criterion["properties"].update(
    latest=_nullable("string"), verdict={"enum": ["pass", "fail", None]}, paths=_STR_LIST,
    revision={"type": "integer"}, changed=_STR_LIST, why=_nullable("string"),
    ci={"oneOf": [{"type": "null"}, {
        "type": "object", "required": ["verdict", "checks", "recorded"],
        "properties": {"verdict": {"enum": ["pass", "fail"]}, "checks": _CHECKS,
                       "recorded": {"type": "boolean"}}}]})
STATUS_SCHEMA["properties"]["goals"]["items"]["properties"].update(
    retired={"type": "array", "items": {"type": "object", "required": ["id", "text"]}},
    override={"type": "boolean"})
STATUS_SCHEMA["properties"]["todos"]["items"]["properties"]["no_evidence_reason"] = _nullable(
    "string")
STATUS_SCHEMA["properties"]["evidence"]["items"]["properties"].update(
    url=_nullable("string"), paths=_STR_LIST, check=_nullable("string"))
_environment = STATUS_SCHEMA["$defs"]["environment"]["properties"]
_environment["evidence"]["additionalProperties"]["properties"].update(
    tree=_nullable("string"), paths=_STR_LIST, ignored=_STR_LIST,
    outside_scope={"type": "integer"})
_environment["judged_tree"] = _nullable("string")
_environment["criteria"] = {"type": "object", "additionalProperties": {
    "type": "object", "required": ["state", "evidence", "verdict", "source", "changed"],
    "properties": {"state": {"enum": ["fresh", "stale", "unknown", "unmet"]},
                   "evidence": _nullable("string"), "verdict": {"enum": ["pass", "fail", None]},
                   "source": {"enum": ["ledger", "ci"]}, "changed": _STR_LIST,
                   "reason": _nullable("string"), "evidence_state": _FRESHNESS,
                   "checks": _CHECKS, "url": _nullable("string")}}}
# Added by issue 14 (post-commit queues its work): the hook queue as this status found it.
_environment["hooks"] = {"type": "object", "required": ["queued", "set_aside"], "properties": {
    "queued": {"type": "integer", "minimum": 0},
    "set_aside": {"type": "array", "items": {"type": "object", "required": ["entry", "reason"],
                                             "properties": {"entry": {"type": "string"},
                                                            "reason": {"type": "string"}}}}}}

# Added by issue 20 (clocks that disagree): writers whose events are dated in this clock's future.
STATUS_SCHEMA["properties"]["ledger"]["properties"] = {"clocks_ahead": {"type": "array", "items": {
    "type": "object", "required": ["actor", "event", "at", "ahead_seconds"],
    "properties": {"actor": {"type": "string"}, "event": {"type": "string"},
                   "at": {"type": "string"}, "ahead_seconds": {"type": "integer"}}}}}


def render() -> dict[str, str]:
    """Every schema file: relative path -> exact text."""
    def dump(doc: Any) -> str:
        return json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False) + "\n"

    envelope = Envelope.model_json_schema()
    envelope.update({"$schema": "https://json-schema.org/draft/2020-12/schema",
                     "$id": f"{BASE_URI}envelope.schema.json"})
    files = {"envelope.schema.json": dump(envelope), "status.schema.json": dump(STATUS_SCHEMA)}
    index: dict[str, Any] = {"envelope": "envelope.schema.json", "status": "status.schema.json",
                             "events": {}}
    for type_name in sorted(EVENT_TYPES):
        path = f"events/{type_name}.schema.json"
        files[path] = dump(_event_schema(type_name))
        index["events"][type_name] = {"v": EVENT_TYPES[type_name][1], "schema": path}
    files["index.json"] = dump(index)
    return files


PAYLOADS = "loopx/data/payloads.json"  # for reading events without the models (loopx.model.plain)


def payloads() -> str:
    """Each event type's version and the defaults of its payload's optional fields, for
    :mod:`loopx.model.plain`, which reads events for display without loading pydantic."""
    table = {}
    for type_name, (model, version) in sorted(EVENT_TYPES.items()):
        defaults = {name: field.get_default(call_default_factory=True)
                    for name, field in model.model_fields.items() if not field.is_required()}
        table[type_name] = {"v": version, "defaults": defaults}
    return json.dumps(table, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _outputs() -> dict[str, str]:
    """Every generated file, relative to the project root."""
    files = {f"{SCHEMA_DIR}/{rel}": text for rel, text in render().items()}
    files[PAYLOADS] = payloads()
    return files


def export(root: Path) -> list[str]:
    """Write the schema files under ``root/.loopx-schema`` (and the payload table the package
    reads); returns the paths written."""
    written = []
    for rel, text in _outputs().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text("utf-8") != text:
            path.write_text(text, "utf-8")
            written.append(str(path))
    return written


def stale(root: Path) -> list[str]:
    """Generated files that are missing, different or no longer generated."""
    target = root / SCHEMA_DIR
    expected = _outputs()
    problems = []
    for rel, text in expected.items():
        path = root / rel
        if not path.exists():
            problems.append(f"missing {rel}")
        elif path.read_text("utf-8") != text:
            problems.append(f"stale {rel}")
    if target.exists():
        for path in sorted(target.rglob("*.json")):
            rel = path.relative_to(root).as_posix()
            if rel not in expected:
                problems.append(f"extra {rel}")
    return problems
