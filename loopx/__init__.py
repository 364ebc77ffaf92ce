"""loopx: a git-native control plane for long-running agent work.

``from loopx import Ledger`` is the library entry point (with :mod:`loopx.ops`, the
operations every interface calls); it does not import click.
"""

from __future__ import annotations

from loopx.version import SCHEMA_VERSION, __version__

# typing.TYPE_CHECKING without importing typing: every `git loopx` imports this package, and
# `--version` should not pay for more than it prints (type checkers know the name).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopx.errors import LoopxError
    from loopx.ledger.book import Ledger

__all__ = ["Ledger", "LoopxError", "SCHEMA_VERSION", "__version__"]


def __getattr__(name: str) -> object:
    # Lazy, so that `import loopx` (done by every CLI start) stays cheap.
    if name == "Ledger":
        from loopx.ledger.book import Ledger

        return Ledger
    if name == "LoopxError":
        from loopx.errors import LoopxError

        return LoopxError
    raise AttributeError(name)
