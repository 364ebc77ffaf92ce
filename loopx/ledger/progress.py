"""How long work says how far it got: the one progress hook of a ledger.

The layers that do long work (replay, the incoming check of a fetch, validate over a range)
call the ledger's :class:`Progress` as ``progress(done, total)``; the operation that started
the work names it (:meth:`Progress.doing`). Nothing here draws: an interface that wants a bar
sets :attr:`Progress.report` (the CLI does, on a terminal: ``loopx.cli.terminal.Bar``), and
without one a report costs a function call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Callable, Optional, TypeVar

T = TypeVar("T")
# Called as report(task, done, total): ``task`` says what is being done ("replaying the
# ledger"), ``done`` of ``total`` items. A pass that starts over reports a smaller ``done``.
Report = Callable[[str, int, int], None]
REPLAY = "replaying the ledger"
MIN_ITEMS = 2000  # work on fewer items ends before a bar would help


class Progress:
    """Where the lower layers report long work; ``report`` receives it (None: nobody)."""

    def __init__(self, report: Optional[Report] = None) -> None:
        self.report = report
        self.task = REPLAY
        self._open = False  # reported and not finished

    def __call__(self, done: int, total: int) -> None:
        if self.report is not None:
            self._open = done < total
            self.report(self.task, done, total)

    @contextlib.contextmanager
    def doing(self, task: str) -> Iterator[None]:
        """Report what runs inside as ``task``; a bar left open inside is closed after."""
        before, self.task = self.task, task
        try:
            yield
        finally:
            if self._open and self.report is not None:
                self._open = False
                self.report(task, 1, 1)  # finished, however far the count got
            self.task = before

    def chunks(self, items: Sequence[T], size: int = 1000) -> Iterator[Sequence[T]]:
        """``items`` a chunk of ``size`` at a time, reporting after each when there are at
        least :data:`MIN_ITEMS` of them."""
        for start in range(0, len(items), size):
            yield items[start : start + size]
            if len(items) >= MIN_ITEMS:
                self(min(start + size, len(items)), len(items))
