"""Long text for people goes through a pager on a terminal, chosen as git chooses its own.

Order (git's): ``$GIT_PAGER``, ``core.pager``, ``$PAGER``, else ``less``; an empty value or
``cat`` means none. ``git --no-pager loopx ...`` sets ``GIT_PAGER=cat`` for us, and
``git -p loopx ...`` already pipes us into git's pager (``GIT_PAGER_IN_USE``). Never when
stdout is not a terminal: programs read the text as printed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Optional

import click

from loopx.cli import terminal
from loopx.ops import ledgers


def show(text: str, *, cwd: str, enabled: bool = True) -> None:
    """Print ``text`` through the pager when stdout is a terminal (and ``enabled``), made
    safe for the terminal first (:func:`loopx.cli.terminal.safe`)."""
    text = terminal.safe(text)
    command = pager_command(cwd) if enabled and sys.stdout.isatty() else None
    if command is None:
        click.echo(text)
        return
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")  # as git: quit if one screen, keep colours, no init string
    env.setdefault("LV", "-c")
    sys.stdout.flush()
    try:
        proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    except OSError:
        click.echo(text)
        return
    assert proc.stdin is not None
    try:
        proc.stdin.write((text + "\n").encode("utf-8", "replace"))
        proc.stdin.close()
    except BrokenPipeError:  # the reader quit before the end: that is fine
        pass
    proc.wait()


def pager_command(cwd: str) -> Optional[str]:
    """The pager command git would use here, or None for none."""
    if os.environ.get("GIT_PAGER_IN_USE"):
        return None
    chosen = os.environ.get("GIT_PAGER")
    if chosen is None:
        chosen = ledgers.git_setting(cwd, "core.pager")
    if chosen is None:
        chosen = os.environ.get("PAGER")
    if chosen is None:
        chosen = "less"
    return None if chosen.strip() in ("", "cat") else chosen
