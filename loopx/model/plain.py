"""Events read for display without the event models: ``git loopx log`` on a warm cache must not
load pydantic. Pure: bytes in, values out.

A :class:`PlainEvent` has the shape :func:`loopx.projection.history.describe` reads (``type``,
``known``, ``env``, ``data`` with attribute access and the payload's defaults), from a
generated table of each type's version and defaults (``loopx/data/payloads.json``, written by
``git loopx schema export`` from the models and checked by ``schema check``). It is NOT
validated: whether an event applied, or was refused, or its file is broken, comes from the
fold (the cache), which validated it when it was replayed.
"""

from __future__ import annotations

import functools
import json
import os
from types import SimpleNamespace
from typing import Any

from loopx.errors import SchemaError
from loopx.model import codec
from loopx.model.paths import PATH_RE


class Fields(dict[str, Any]):
    """A payload (or a part of one): a dict whose keys read as attributes; a missing optional
    field reads as its default, any other missing one as None."""

    def __init__(self, values: dict[str, Any], defaults: dict[str, Any] | None = None) -> None:
        super().__init__(values)
        self._defaults = defaults or {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self:
            return _wrap(self[name])
        return _wrap(self._defaults.get(name))


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return Fields(value)
    if isinstance(value, list):
        return [_wrap(item) for item in value]
    return value


class PlainEvent:
    """An event file's envelope and payload, as read (see the module docstring)."""

    __slots__ = ("env", "data", "known")

    def __init__(self, env: SimpleNamespace, data: Fields, known: bool) -> None:
        self.env, self.data, self.known = env, data, known

    @property
    def id(self) -> str:
        return str(self.env.id)

    @property
    def type(self) -> str:
        return str(self.env.type)


@functools.lru_cache(maxsize=1)
def _payloads() -> dict[str, Any]:
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "payloads.json")
    with open(path, encoding="utf-8") as handle:
        table: dict[str, Any] = json.load(handle)
    return table


def read(path: str, data: bytes | None) -> PlainEvent:
    """The event in file ``path``, read for display; raises SchemaError when it is not even
    an event document at its path (its own validation is the fold's)."""
    match = PATH_RE.fullmatch(path)
    if match is None or data is None:
        raise SchemaError(f"{path}: not an event file")
    doc = codec.load(data, path)
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), dict):
        raise SchemaError(f"{path}: not an event document")
    if (doc.get("id"), doc.get("type")) != (match.group(4), match.group(5)):
        raise SchemaError(f"{path}: file name does not match its id or type")
    known = _payloads().get(str(doc["type"]))
    version = doc.get("v")
    is_known = known is not None and isinstance(version, int) and version <= known["v"]
    env = SimpleNamespace(id=doc["id"], type=doc["type"], v=version, at=doc.get("at"),
                          clock=doc.get("clock"), actor=doc.get("actor"), goal=doc.get("goal"))
    defaults = known["defaults"] if known is not None and is_known else {}
    return PlainEvent(env, Fields(doc["data"], defaults), is_known)
