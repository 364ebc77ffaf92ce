"""loopx: a git-native control plane for long-running agent work.

``from loopx import Ledger`` is the library entry point; it does not import click.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loopx.version import SCHEMA_VERSION, __version__

__all__ = ["Ledger", "LoopxError", "__version__"]

if TYPE_CHECKING:
    from loopx.errors import LoopxError
    from loopx.ledger.book import Ledger


def __getattr__(name: str) -> Any:
    # Lazy so that `import loopx` (done by every CLI start) stays cheap.
    if name == "Ledger":
        from loopx.ledger.book import Ledger

        return Ledger
    if name == "LoopxError":
        from loopx.errors import LoopxError

        return LoopxError
    raise AttributeError(name)
