"""The agent CLIs `git loopx watch --host NAME` can start headless for a turn, one module
each: how to call it (an argv template), what to add to its environment, and how to tell it
finished its turn (docs/agents.md, "A turn driver")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class Adapter:
    """One agent CLI's headless mode. ``argv(prompt, extra)`` is the command for one turn
    (``extra``: what followed ``--`` on the watch's command line); the prompt goes on stdin
    when ``stdin`` says so; ``finished(code)`` tells a turn that ended as it should."""

    name: str
    argv: Callable[[str, Sequence[str]], list[str]]
    env: dict[str, str] = field(default_factory=dict)
    stdin: bool = False
    finished: Callable[[int], bool] = lambda code: code == 0
    doc: str = ""


def names() -> list[str]:
    """The hosts there are adapters for."""
    return sorted(_registry())


def get(name: str) -> Optional[Adapter]:
    """The adapter for ``name`` (None: there is none)."""
    return _registry().get(name)


def _registry() -> dict[str, Adapter]:
    from loopx.agents.hosts import claude, codex, custom, gemini  # circular: they import Adapter

    return {a.name: a for a in (claude.ADAPTER, codex.ADAPTER, gemini.ADAPTER, custom.ADAPTER)}
