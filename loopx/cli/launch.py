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
    if args == ["hook", "post-commit"] and not os.environ.get("LOOPX_DEBUG"):
        _post_commit()
        return
    # pydantic looks for plugins in every installed package's metadata on first use (tens of
    # milliseconds); loopx uses none. A user's own setting is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from loopx.cli import root  # the command tree: only when there is a command to run

    root.main(argv)


def _post_commit() -> None:
    """``git loopx hook post-commit`` as the shim calls it, without the click tree: the
    same operation and lines as ``loopx.cli.hooks.hook`` (click and the command modules
    cost a recording commit tens of milliseconds; docs/benchmarks.md)."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from loopx.cli.terminal import safe
    from loopx.errors import LoopxError
    from loopx.ops import hooks, ledgers

    try:
        actor: str | None = ledgers.actor(".", os.environ.get("LOOPX_ACTOR") or None)
    except (LoopxError, OSError):  # no identity yet: the hook says so if it needs one
        actor = None
    result = hooks.run(hooks.Hook("post-commit", ".", actor,
                                  os.environ.get("LOOPX_STATE_REF") or None))
    for line in result.lines:
        sys.stderr.write(safe(f"loopx: {line}") + "\n")
    if result.failed:
        hint = "" if result.strict else (" (git goes on; set loopx.hooks.strict=true to stop "
                                         "instead)")
        sys.stderr.write(safe(f"loopx: post-commit hook failed: {result.failed}{hint}") + "\n")
    sys.exit(result.exit_code)
