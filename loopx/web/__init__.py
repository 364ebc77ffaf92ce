"""The web page, an interface beside the CLI and the MCP server: `git loopx web` (docs/web.md).

:mod:`loopx.web.page` renders the status document as HTML (pure); :mod:`loopx.web.server`
serves it with Starlette on 127.0.0.1, behind a token; ``python -m loopx.web`` is what the
command runs. Starlette and uvicorn are an optional extra, imported by nothing else.
"""

HINT = ("the web page needs Starlette and uvicorn: pip install 'starlette>=0.37' "
        "'uvicorn>=0.29' (the [web] extra of git-loopx)")
