"""An event to append, as an operation builds it: plain values, no validation yet.

Kept apart from :mod:`loopx.ledger.txn` (which validates with the event models) so that an
operations module that also answers reads does not load pydantic just to name this type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


@dataclass
class Draft:
    """An event to append, before the ledger gives it an id, a clock and a time."""

    type: str
    data: dict[str, Any]
    goal: Optional[str] = None
    event_id: Optional[str] = None
