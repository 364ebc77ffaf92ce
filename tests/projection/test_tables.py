"""A fold's table over a source of stored values: reads through it, keeps every change to
itself (the source is never written), and answers as a dict holding the same would."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from loopx.projection import tables


class Stored:
    """A source of values held in a dict (what the ledger's rows answer, without SQLite)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values, self.reads = dict(values), 0

    def get(self, key: str) -> Optional[Any]:
        self.reads += 1
        return self.values.get(key)

    def ids(self) -> list[str]:
        return list(self.values)

    def count(self) -> int:
        return len(self.values)

    def with_prefix(self, prefix: str, *, limit: int) -> list[str]:
        return sorted(k for k in self.values if k.startswith(prefix))[:limit]

    def items(self) -> list[tuple[str, Any]]:
        return list(self.values.items())

    def all(self) -> list[Any]:
        return list(self.values.values())


def test_a_table_reads_through_its_source_and_keeps_changes_to_itself() -> None:
    source = Stored({"t-1": {"s": "open"}, "t-2": {"s": "done"}})
    table = tables.Table(source)
    table["t-1"]["s"] = "claimed"  # an applier changes an entity in place
    table["t-3"] = {"s": "open"}
    del table["t-2"]
    assert source.values == {"t-1": {"s": "claimed"}, "t-2": {"s": "done"}}  # (same object)
    assert list(table) == ["t-1", "t-3"] and len(table) == 2
    assert table.added == ["t-3"] and table.gone == {"t-2"}
    assert set(table.touched) == {"t-1", "t-3"}
    assert "t-2" not in table and table.with_prefix("t-", limit=5) == ["t-1", "t-3"]
    with pytest.raises(KeyError):
        table["t-2"]


def test_a_table_answers_as_a_dict_would() -> None:
    table, plain = tables.Table(Stored({"a": 1, "b": 2})), {"a": 1, "b": 2}
    for t in (table, plain):
        t["c"] = 3
        del t["a"]
        t["a"] = 4
    assert dict(table.items()) == plain and sorted(table) == sorted(plain)
    assert len(list(table)) == len(table) == 3  # "a", deleted and set again, is listed once


def test_an_appended_list_only_grows() -> None:
    listed = tables.Appended(Stored({"0": "p1"}), "problems")
    listed.append("p2")
    assert list(listed) == ["p1", "p2"] and listed.new == ["p2"]
    with pytest.raises(TypeError):
        listed[0] = "x"
    with pytest.raises(TypeError):
        listed.insert(0, "x")
