"""The entry point of `git loopx`: answers what needs no command tree (``--version``, ``-h``)
from constants and a generated file, hands a command to this repository's server when
``git loopx server start`` started one (loopx/cli/server.py), and everything else to the
click group.

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
    code = _hand_off(args) if argv is None else None  # the console script's process only
    if code is not None:
        sys.exit(code)
    run(argv)


def run(argv: list[str] | None) -> None:
    """The full path: the click tree (what the server's child runs too)."""
    # pydantic looks for plugins in every installed package's metadata on first use (tens of
    # milliseconds); loopx uses none. A user's own setting is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from loopx.cli import root  # the command tree: only when there is a command to run

    root.main(argv)


# --- the server's client --------------------------------------------------------------------

SOCKET = "server.sock"  # in <git common dir>/loopx/, made by ``git loopx server start``
MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with its NUL


def socket_path(start: str) -> str | None:
    """Where this repository's server listens: ``<git common dir>/loopx/server.sock``, found by
    walking up from ``start`` to the first ``.git`` (a directory, or a worktree's ``gitdir:``
    file). Only a rendezvous: the server's child finds the repository again the way every
    command does, from the cwd and environment the client hands over."""
    here = os.path.abspath(start)
    while True:
        dot = os.path.join(here, ".git")
        if os.path.isdir(dot):
            return os.path.join(dot, "loopx", SOCKET)
        if os.path.isfile(dot):
            return _worktree_socket(here, dot)
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _worktree_socket(here: str, dot: str) -> str | None:
    with open(dot, encoding="utf-8") as text:
        first = text.readline().strip()
    if not first.startswith("gitdir:"):
        return None
    gitdir = os.path.join(here, first.removeprefix("gitdir:").strip())
    common = os.path.join(gitdir, "commondir")
    if os.path.isfile(common):
        with open(common, encoding="utf-8") as text:
            gitdir = os.path.join(gitdir, text.read().strip())
    return os.path.join(os.path.normpath(gitdir), "loopx", SOCKET)


_VALUED = ("-C", "--actor", "--state-ref", "--format", "--now")  # root options with a value
_OWN_PROCESS = ("server", "mcp", "web", "watch", "wait", "demo", "hook", "hooks", "help")


def _hand_off(args: list[str]) -> int | None:
    """Run the command in this repository's server, if one listens: its exit code, or None to
    run it here. The server forks a child of itself (every module imported already) that takes
    this process's stdin, stdout and stderr, cwd, environment and umask, runs the full path
    and sends back the exit code. A terminal stays with the full path (the pager and prompts
    need the terminal's foreground process group), and so does --debug; so do the commands
    that run for long or hand their process over (start-up is nothing to them) and git's
    hooks (``hook``: loopx/hooks)."""
    start, command = _command(args)
    if command is None or command in _OWN_PROCESS or os.environ.get("LOOPX_DEBUG") \
            or "--debug" in args or not _plain_stdio():
        return None
    path = socket_path(start)
    if path is None or len(path.encode()) > MAX_SOCKET_PATH:
        return None
    if not os.path.exists(path):
        _start_on_demand(start, path)
        return None
    return _ask(path, args)


def _start_on_demand(start: str, path: str) -> None:
    """``git config loopx.server auto``: no server listens, so start one for the commands
    after this one (this one runs here: the server takes a second to import everything),
    and say so. Only then: nothing is left running that the user did not ask for."""
    from loopx.errors import LoopxError  # the full path follows: it imports these anyway
    from loopx.ops import ledgers

    try:
        if (ledgers.git_setting(start, "loopx.server") or "").lower() != "auto":
            return
        from loopx.cli import server

        pid = server.start_detached(path)
    except (LoopxError, OSError):
        return  # no repository, or no room for the socket: the command says what it finds
    if pid is not None:
        sys.stderr.write(f"loopx: started this repository's command server (pid {pid}, "
                         f"loopx.server=auto); it stops after {server.IDLE_SECONDS} s without "
                         "a command, or with `git loopx server stop`\n")


def _command(args: list[str]) -> tuple[str, str | None]:
    """The directory ``-C`` names (else ``.``) and the command's name, past root's options."""
    start, i = ".", 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-C" and i + 1 < len(args):
            start = args[i + 1]
        i += 2 if args[i] in _VALUED else 1
    return start, args[i] if i < len(args) else None


def _plain_stdio() -> bool:
    """stdin, stdout and stderr are this process's own fds 0, 1 and 2, none a terminal."""
    try:
        streams = [s.fileno() if s else -1 for s in (sys.stdin, sys.stdout, sys.stderr)]
    except (AttributeError, OSError, ValueError):  # replaced by a caller (io.UnsupportedOperation)
        return False
    return streams == [0, 1, 2] and not any(os.isatty(fd) for fd in streams)


def _ask(path: str, args: list[str]) -> int | None:
    # The C modules, not socket.py, signal.py and json: those build enum classes and compile
    # regular expressions on import, a third of this process's time (docs/benchmarks.md).
    import _signal  # type: ignore[import-not-found]  # here: --version and -h need none
    import _socket
    import marshal

    umask = os.umask(0o22)
    os.umask(umask)
    body = marshal.dumps({
        "version": __version__, "python": f"{sys.prefix} {sys.version}",
        "interpreter": [*sys.flags, sys.getfilesystemencoding(), os.environ.get("LC_ALL"),
                        os.environ.get("LC_CTYPE"), os.environ.get("LANG")], "argv0": sys.argv[0],
        "args": args, "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask,
        "stdio": [[s.encoding, s.errors, s.line_buffering] for s in (sys.stdin, sys.stdout,
                                                                      sys.stderr)]})
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(5.0)  # a server that neither forks nor answers is no server
        conn.connect(path)
        fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))  # C ints
        conn.sendmsg([len(body).to_bytes(4, "big") + body],
                     [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        lines = _Lines(conn)
        first = lines.next()
        if first[:1] != [b"pid"]:
            return None  # "stale" (another version: it stops), "other", or gone: nothing ran
        conn.settimeout(None)
        pid = int(first[1])
        for signum in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP):
            _signal.signal(signum, lambda signum, _frame: _forward(pid, signum))
        last = lines.next()
    except OSError:
        return None  # no server listens (a socket left by a killed one): nothing ran
    finally:
        conn.close()
    if last[:1] != [b"exit"]:
        sys.stderr.write("error: the loopx server stopped before the command finished\n")
        return 3
    return int(last[1])


def _forward(pid: int, signum: int) -> None:
    """Ctrl-C, a hang-up or a kill of this process reach the command's process."""
    try:
        os.kill(pid, signum)
    except OSError:
        pass


class _Lines:
    """The server's reply lines (``pid N``, then ``exit N``), read off the socket."""

    def __init__(self, conn: object) -> None:
        self.conn, self.held = conn, b""

    def next(self) -> list[bytes]:
        while b"\n" not in self.held:
            more = self.conn.recv(256)  # type: ignore[attr-defined]
            if not more:
                return []
            self.held += more
        line, self.held = self.held.split(b"\n", 1)
        return line.split()


def _post_commit() -> None:
    """``git loopx hook post-commit`` as the shim calls it, without the click tree: the
    same operation and lines as ``loopx.cli.hooks.hook`` (click and the command modules
    cost a recording commit tens of milliseconds; docs/benchmarks.md)."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from loopx.cli.terminal import safe
    from loopx.errors import LoopxError, UsageError
    from loopx.ops import hooks, ledgers

    actor: str | None = None
    refused: str | None = None
    try:
        actor = ledgers.actor(".", os.environ.get("LOOPX_ACTOR") or None, named="$LOOPX_ACTOR")
    except UsageError as exc:  # an identity loopx refuses: said once one is needed
        refused = str(exc)
    except (LoopxError, OSError):  # no identity yet: the hook says so if it needs one
        pass
    result = hooks.run(hooks.Hook("post-commit", ".", actor,
                                  os.environ.get("LOOPX_STATE_REF") or None, no_actor=refused))
    for line in result.lines:
        sys.stderr.write(safe(f"loopx: {line}") + "\n")
    if result.failed:
        hint = "" if result.strict else (" (git goes on; set loopx.hooks.strict=true to stop "
                                         "instead)")
        sys.stderr.write(safe(f"loopx: post-commit hook failed: {result.failed}{hint}") + "\n")
    sys.exit(result.exit_code)
