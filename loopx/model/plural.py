"""Counted nouns for messages: ``1 event``, ``3 events``, ``1 entry``, ``2 entries``."""

from __future__ import annotations

from typing import Optional


def counted(count: int, noun: str, many: Optional[str] = None) -> str:
    """``count`` and ``noun``, in the plural unless ``count`` is 1 (``many`` when the plural
    is not ``noun`` + s)."""
    return f"{count} {noun if count == 1 else (many or noun + 's')}"
