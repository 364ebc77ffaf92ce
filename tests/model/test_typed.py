"""Typed answers: a dataclass built from the plain values the rules compute, strictly (an
unknown or missing key is an error), and serialised back to exactly those values."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import pydantic
import pytest

from loopx.model import inert, typed


@dataclass(frozen=True)
class Inner:
    name: str
    url: Optional[str] = typed.optional()


@dataclass(frozen=True)
class Outer:
    id: str
    items: list[Inner]
    by_key: dict[str, Inner]
    one: Optional[Inner]
    from_: str = field(metadata={typed.KEY: "from"})
    note: Optional[str] = typed.optional()


DATA = {"id": "x", "items": [{"name": "a", "url": "u"}, {"name": "b"}],
        "by_key": {"k": {"name": "c"}}, "one": None, "from": "alice"}


def test_build_makes_nested_dataclasses_and_reads_a_keyword_key() -> None:
    built = typed.build(Outer, DATA)
    assert built.items[0] == Inner("a", "u") and built.items[1].url is None
    assert built.by_key["k"].name == "c" and built.one is None and built.from_ == "alice"


def test_the_json_is_the_input_again_optional_keys_left_out_while_none() -> None:
    built = typed.build(Outer, DATA)
    assert json.loads(json.dumps(built, default=typed.json_default)) == DATA
    assert typed.plain(built) == DATA
    assert "note" not in typed.fields_of(built)
    assert typed.fields_of(typed.build(Outer, {**DATA, "note": "n"}))["note"] == "n"


def test_a_key_the_type_does_not_declare_is_an_error() -> None:
    with pytest.raises(TypeError, match="Outer has no field for \\['extra'\\]"):
        typed.build(Outer, {**DATA, "extra": 1})
    with pytest.raises(TypeError, match="Inner has no field for \\['size'\\]"):
        typed.build(Outer, {**DATA, "items": [{"name": "a", "size": 3}]})


def test_a_required_key_missing_is_an_error() -> None:
    without = {k: v for k, v in DATA.items() if k != "from"}
    with pytest.raises(TypeError, match="Outer: no 'from'"):
        typed.build(Outer, without)


def test_json_default_leaves_other_values_as_strings() -> None:
    assert json.dumps({"p": Path("/a")}, default=typed.json_default) == '{"p": "/a"}'


class Kind(str, enum.Enum):
    TODO = "todo"


class Level(enum.IntEnum):
    HIGH = 1


class Shown(pydantic.BaseModel):
    at: datetime
    where: Path


class Report:
    def to_dict(self) -> dict[str, object]:
        return {"ok": True, "at": datetime(2026, 1, 2, tzinfo=timezone.utc)}


@dataclass(frozen=True)
class Answer:
    kinds: tuple[Kind, ...]
    level: Level
    shown: Shown
    report: Report
    by: dict[Kind, int]
    path: Path
    name: str


AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
ANSWER = Answer((Kind.TODO,), Level.HIGH, Shown(at=AT, where=Path("/a")), Report(),
                {Kind.TODO: 2}, Path("/b"), "x")
DOCUMENT = {"kinds": ["todo"], "level": 1, "shown": {"at": "2026-01-02T03:04:05Z", "where": "/a"},
            "report": {"ok": True, "at": "2026-01-02 00:00:00+00:00"}, "by": {"todo": 2},
            "path": "/b", "name": "x"}


def test_plain_makes_json_values_of_every_form_an_answer_takes() -> None:
    found = typed.plain(ANSWER)
    assert found == DOCUMENT
    assert type(found["kinds"][0]) is str and type(found["level"]) is int
    assert json.loads(json.dumps(found)) == found  # nothing json would write differently


def test_the_cli_s_json_is_the_document_plain_gives() -> None:
    # `--format json` hands the answer to json.dumps (typed.json_default for what it cannot
    # write); MCP and batch answer typed.plain's document: the same values.
    assert json.loads(inert.json_text(ANSWER)) == DOCUMENT
    assert json.loads(inert.json_text([ANSWER, {"n": None}])) == typed.plain([ANSWER, {"n": None}])
