"""The entry point of `git loopx`: answers what needs no command tree (``--version``, ``-h``)
from constants and a generated file, and hands everything else to the click group.

Kept free of click, pydantic and the rest of loopx at import time: those cost tens of
milliseconds that ``git loopx --version`` and ``git loopx -h`` need not pay (figures in
docs/benchmarks.md). The help text is generated from the click tree with the man page
(``python -m loopx.cli.manpage``), and checked by CI, so it cannot drift.
"""

from __future__ import annotations

import os
import sys

from loopx.version import __version__

HELP_FILE = "help.txt"  # in loopx/data/, written by loopx.cli.manpage


def main(argv: list[str] | None = None) -> None:
    """Console entry point (``git-loopx``, ``loopx``, ``python -m loopx``)."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        print(f"git-loopx, version {__version__}")
        return
    if args == ["-h"]:
        path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", HELP_FILE)
        with open(path, encoding="utf-8") as text:  # os.path, not pathlib: start-up time
            sys.stdout.write(text.read())
        return
    # pydantic looks for plugins in every installed package's metadata on first use (tens of
    # milliseconds); loopx uses none. A user's own setting is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from loopx.cli import root  # the command tree: only when there is a command to run

    root.main(argv)
