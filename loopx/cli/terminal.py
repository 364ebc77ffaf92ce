"""The one place where text meets the terminal: everything the CLI prints goes through here.

Titles, questions, notes, answers and file names can come from another clone, so a text may
carry terminal control sequences: OSC (set the title, write the clipboard, hyperlinks), CSI
(move the cursor and overwrite lines), DCS and other strings, C0 and C1 controls, and bidi
overrides that make text read differently from what it is. :func:`safe` removes them all and
keeps only the colour and bold codes the renderers add themselves (``click.style``); tabs and
newlines stay. JSON stays exact: :func:`json_text` writes the same values, with the
characters a terminal would act on written as ``\\uXXXX`` escapes.
"""

from __future__ import annotations

import os
import re
import sys
import time
from typing import Any, Optional

from loopx.model import inert
from loopx.model.inert import SEQUENCE  # CSI, OSC, DCS and other escapes

# The SGR codes click.style emits for what the renderers use: reset, bold, dim, colours.
_STYLE = r"\x1b\[(?:0|1|2|22|3[0-7]|39|9[0-7])m"
# C0 controls but tab and newline, DEL, C1 controls (U+009B is CSI on 8-bit terminals),
# bidi embeddings, overrides, isolates and marks, and the Unicode line separators.
_CONTROL = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
_UNSAFE = re.compile(f"({_STYLE})|{SEQUENCE}|{_CONTROL}")


def safe(text: str) -> str:
    """``text`` without control sequences or control characters (our own colours stay); every
    other character that is not shown as itself (zero-width and format characters, and lone
    surrogates, from a forged file name not in UTF-8, which no output stream can encode) as a
    ``\\uXXXX`` escape (:func:`inert.escaped`), and a lookalike name's letters too
    (:func:`inert.unmixed`), wherever a renderer put it."""
    return inert.escaped(inert.unmixed(_UNSAFE.sub(lambda m: m.group(1) or "", text)))


def json_text(data: Any, **options: Any) -> str:
    """``data`` as JSON, exact, with every character a terminal acts on escaped."""
    return inert.json_text(data, **options)


def echo(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """Print ``text`` made :func:`safe`."""
    # Imported here, a measured start-up decision: the post-commit hook's fast path
    # (loopx.cli.launch) prints through safe() without loading click; every command has
    # loaded it already by the time it echoes.
    import click

    click.echo(safe(text), err=err, nl=nl)


class Bar:
    """A progress bar on stderr for a ledger's long work (the report of
    :class:`loopx.ledger.progress.Progress`), drawn by tqdm once a task has taken
    :attr:`DELAY_S`, so quick ones stay silent; cleared when the task ends, so what the command
    prints after is all that stays on the screen. The CLI sets one only on a terminal."""

    DELAY_S = 1.0

    def __init__(self) -> None:
        self._task: Optional[str] = None
        self._started = 0.0
        self._done = 0
        self._bar: Any = None

    def __call__(self, task: str, done: int, total: int) -> None:
        now = time.monotonic()
        if task != self._task or done < self._done:  # another task, or a pass starting over
            self.close()
            self._task, self._started = task, now
        self._done = done
        if done >= total:
            self.close()
            self._task = None
            return
        if self._bar is None:
            if now - self._started < self.DELAY_S:
                return
            # Imported here, a measured start-up decision: only a command whose work has
            # already taken a second loads tqdm (about 50 ms); every other start stays as it was.
            import tqdm

            # A terminal that reports no size (a bare pty: 0x0) gets 80x24; tqdm would draw
            # nothing there.
            sized = _columns() > 0
            self._bar = tqdm.tqdm(total=total, desc=f"loopx: {safe(task)}", unit="file",
                                  file=sys.stderr, leave=False, dynamic_ncols=sized,
                                  ncols=None if sized else 80, nrows=None if sized else 24)
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _columns() -> int:
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError):
        return 0
