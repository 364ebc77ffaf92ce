"""Hypothesis strategies that build valid payloads for every event type from the pydantic
models themselves, so a new event type is covered without touching the tests."""

from __future__ import annotations

import typing
from typing import Any

from hypothesis import strategies as st
from pydantic import BaseModel

from loopx.model import clock
from loopx.model.ids import new_event_id

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)


def _constraints(metadata: list[Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in metadata:
        for name in ("pattern", "min_length", "max_length", "ge", "le"):
            value = getattr(item, name, None)
            if value is not None:
                found[name] = value
    return found


def for_annotation(annotation: Any, metadata: list[Any]) -> st.SearchStrategy[Any]:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    limits = _constraints(metadata)
    if origin is typing.Annotated:  # e.g. list[Annotated[str, Field(pattern=...)]]
        extra = [m for item in annotation.__metadata__ for m in getattr(item, "metadata", [item])]
        return for_annotation(args[0], [*metadata, *extra])
    if origin is typing.Union:
        inner = [a for a in args if a is not type(None)]
        return st.one_of(*(for_annotation(a, metadata) for a in inner))
    if origin is typing.Literal:
        return st.sampled_from(args)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return for_model(annotation)
    if origin is list:
        item = for_annotation(args[0], [])
        return st.lists(item, min_size=limits.get("min_length", 0), max_size=3)
    if origin is dict:
        return st.dictionaries(st.from_regex(r"\A[a-z]{1,8}\Z"), for_annotation(args[1], []), max_size=3)
    if annotation is str:
        if "pattern" in limits:
            return st.from_regex(limits["pattern"], fullmatch=True).filter(lambda s: "\n" not in s)
        return TEXT
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return st.integers(min_value=limits.get("ge", -1000), max_value=limits.get("le", 10**9))
    if annotation is float:
        return st.floats(min_value=limits.get("ge", -1e9), max_value=min(limits.get("le", 1e9), 1e9),
                         allow_nan=False)
    raise NotImplementedError(f"no strategy for {annotation!r}")


REMAP = st.lists(st.fixed_dictionaries({"old": st.from_regex(r"\A[0-9a-f]{40}\Z"),
                                        "new": st.from_regex(r"\A[0-9a-f]{40}\Z")}),
                 min_size=1, max_size=3)


def for_model(model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    required, optional = {}, {}
    for name, info in model.model_fields.items():
        if model.__name__ == "EvidenceRemapped" and name == "mappings":
            strategy = REMAP
        else:
            strategy = for_annotation(info.annotation, info.metadata)
        (required if info.is_required() else optional)[name] = strategy
    return st.fixed_dictionaries(required, optional=optional)


@st.composite
def envelopes(draw: st.DrawFn, type_name: str, model: type[BaseModel], version: int) -> dict[str, Any]:
    doc = {
        "id": new_event_id(),
        "type": type_name,
        "v": version,
        "at": clock.format_ts(clock.now()),
        "clock": draw(st.integers(min_value=1, max_value=10**6)),
        "actor": draw(st.sampled_from(["human:a@example.com", "agent:codex@devbox", "ci:github"])),
        "data": draw(for_model(model)),
    }
    if draw(st.booleans()):
        doc["goal"] = draw(st.from_regex(r"\Ag-[a-z0-9]{6}\Z"))
    return doc
