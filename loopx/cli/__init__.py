"""`git loopx`: the command line interface (click), over the operations of :mod:`loopx.ops`.

:func:`main` is the entry point; it lives in :mod:`loopx.cli.launch`, which answers
``--version`` and ``-h`` without importing click (start-up time: an agent runs ``git loopx``
dozens of times a turn). The root command group is :mod:`loopx.cli.root`.
"""

from loopx.cli.launch import main

__all__ = ["main"]
