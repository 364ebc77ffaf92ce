"""ruamel.yaml's parser events for a text, from its C parser driven by itself (the codec
builds its values from them: :mod:`loopx.model.codec`).

Not through ``YAML.parse``: that wraps the parser in a loader that refers to itself (a
reference cycle that holds the parser's copy of the text), and records each document on the
shared YAML object, in a list that only grows (24 MB a 100k documents in a long-lived
server). A replay pauses the cycle collector (:func:`loopx.ledger.replay.paused_gc`): there
each document read that way kept 3.5 times its size until the replay ended, and a 218 KiB
pack of 3,000 hostile 250 KiB files took a fresh clone's first command to 4.8 GB.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

_parser: Any = None  # the C parser's class; where ruamel.yaml.clib is missing, a pure YAML


def events(text: str) -> Iterator[Any]:
    """The parser's events for ``text``, in order."""
    global _parser
    if _parser is None:
        try:
            from ruamel.yaml.cyaml import CParser  # type: ignore[attr-defined]

            _parser = CParser
        except ImportError:  # pragma: no cover - clib missing or broken
            from ruamel.yaml import YAML

            _parser = YAML(typ="safe", pure=True)
    if not isinstance(_parser, type):  # pragma: no cover - the pure parser
        yield from _parser.parse(io.StringIO(text))
        return
    parser = _parser(io.StringIO(text))
    while parser.check_event():
        yield parser.get_event()
