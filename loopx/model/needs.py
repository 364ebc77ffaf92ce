"""What a todo needs of the host that works on it (``todo add --needs python>=3.11,docker``):
tools on PATH, at least at a version. Pure: parsing and judging; the probing is
:mod:`loopx.recovery.host`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

NEED_PATTERN = r"^[a-z0-9][a-z0-9._+-]{0,39}(>=[0-9][0-9a-z.]{0,19})?$"
_NEED_RE = re.compile(NEED_PATTERN)
_VERSION_RE = re.compile(r"\d+(?:\.\d+)*")


@dataclass(frozen=True)
class Need:
    """One tool a todo needs, and the least version it takes (None: any)."""

    tool: str
    least: Optional[str] = None

    def __str__(self) -> str:
        return f"{self.tool}>={self.least}" if self.least else self.tool


def parse(text: str) -> Need:
    """``docker`` or ``python>=3.11``; raises ValueError on anything else."""
    word = text.strip().lower()
    if not _NEED_RE.fullmatch(word):
        raise ValueError(f"{text!r} is not a need: write TOOL or TOOL>=VERSION "
                         "(e.g. docker, python>=3.11)")
    tool, _, least = word.partition(">=")
    return Need(tool, least or None)


def split(values: list[str]) -> list[str]:
    """``["python>=3.11,docker", "git"]`` as normalised needs, each once, in order given."""
    found: list[str] = []
    for value in values:
        for part in value.split(","):
            if part.strip():
                need = str(parse(part))
                if need not in found:
                    found.append(need)
    return found


def version_key(text: str) -> tuple[int, ...]:
    """The leading dotted number of ``text`` as a tuple (``3.11.2rc1`` -> (3, 11, 2))."""
    found = _VERSION_RE.search(text)
    return tuple(int(p) for p in found.group(0).split(".")) if found else ()


def lacking(needs: list[str], tools: Mapping[str, Any]) -> list[str]:
    """Why each need that ``tools`` (tool -> {found, version}, as probed) does not meet is
    unmet, e.g. ``docker is not on PATH``, ``python 3.10.4 is older than 3.11``."""
    why = []
    for text in needs:
        need = parse(text)
        seen = tools.get(need.tool) or {}
        if not seen.get("found"):
            why.append(f"{need.tool} is not on PATH")
        elif need.least and seen.get("version") is None:
            why.append(f"{need.tool}'s version is unknown (needs {need.least} or later)")
        elif need.least and _older(str(seen["version"]), need.least):
            why.append(f"{need.tool} {seen['version']} is older than {need.least}")
    return why


def _older(version: str, least: str) -> bool:
    have, want = version_key(version), version_key(least)
    width = max(len(have), len(want))
    return have + (0,) * (width - len(have)) < want + (0,) * (width - len(want))
