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

import re
from typing import Any

from loopx.model import inert
from loopx.model.inert import SEQUENCE  # CSI, OSC, DCS and other escapes

# The SGR codes click.style emits for what the renderers use: reset, bold, dim, colours.
_STYLE = r"\x1b\[(?:0|1|2|22|3[0-7]|39|9[0-7])m"
# C0 controls but tab and newline, DEL, C1 controls (U+009B is CSI on 8-bit terminals),
# bidi embeddings, overrides, isolates and marks, and the Unicode line separators.
_CONTROL = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
_UNSAFE = re.compile(f"({_STYLE})|{SEQUENCE}|{_CONTROL}")


def safe(text: str) -> str:
    """``text`` without control sequences or control characters (our own colours stay)."""
    return _UNSAFE.sub(lambda m: m.group(1) or "", text)


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
