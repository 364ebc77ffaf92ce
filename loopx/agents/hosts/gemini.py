"""Gemini CLI, headless: ``gemini -p PROMPT [EXTRA...]`` (non-interactive: one turn, then
exit). Tool approval is the user's EXTRA, e.g. ``--yolo``."""

from __future__ import annotations

from collections.abc import Sequence

from loopx.agents.hosts import Adapter


def argv(prompt: str, extra: Sequence[str]) -> list[str]:
    return ["gemini", "-p", prompt, *extra]


ADAPTER = Adapter("gemini", argv, doc="gemini -p PROMPT [EXTRA...]")
