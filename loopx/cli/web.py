"""`git loopx web`: the local web page (docs/web.md).

The page is an interface of its own (``loopx.web``, a sibling of this package that neither
imports, like ``loopx.mcp``): this command checks that Starlette and uvicorn are installed
and hands the process over to ``python -m loopx.web`` with the same repository, actor and
state branch, so no other command ever loads them.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import click

from loopx.cli.app import App, pass_app
from loopx.errors import LoopxError

# The same sentence as loopx.web.HINT (not imported: the two interfaces are independent).
HINT = ("the web page needs Starlette and uvicorn: pip install 'starlette>=0.37' "
        "'uvicorn>=0.29' (the [web] extra of git-loopx)")


@click.command()
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="The port on 127.0.0.1 (0: a free one).")
@pass_app
def web(app: App, port: int) -> None:
    """Serve this repository's ledger as a web page on 127.0.0.1, until Ctrl-C.

    Prints the page's URL with a token in it (like a notebook server): every request needs
    the token, and none reaches the page from another machine. The page shows the goals with
    their criteria and evidence freshness, the todo graph, the gates waiting on you with a form
    to answer each (the same operation as `gate answer`, as you: --actor, $LOOPX_ACTOR or
    human:<git user.email>), sessions with their inbox and your notices, and updates itself
    when the ledger changes. /status.json is `status --format json`.
    Needs the [web] extra of git-loopx: pip install 'git-loopx[web]'.
    """
    if any(importlib.util.find_spec(m) is None for m in ("starlette", "uvicorn")):
        raise LoopxError(HINT)
    app.ledger.require()
    argv = [sys.executable, "-m", "loopx.web", "-C", app.cwd, "--actor", app.actor,
            "--port", str(port)]
    argv += ["--state-ref", app.state_ref] if app.state_ref else []
    sys.stdout.flush()
    os.execv(sys.executable, argv)
