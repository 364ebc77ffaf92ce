"""`git loopx server start|stop|status`: a per-repository server that saves each command
Python's imports (most of a single command's time; docs/benchmarks.md).

Only ``git loopx server start`` starts it, and says so. It listens on
``<git common dir>/loopx/server.sock`` (mode 0600, and it answers its own user only). For
each command `git loopx` hands it (loopx/cli/launch.py) it forks a child of itself, every
module imported already; the child takes the caller's stdin, stdout and stderr (passed over
the socket), cwd, environment, umask and argv, runs the same full path as `git loopx` and
sends back the exit code. Each child starts from the same freshly imported parent, so no
command sees another's state: the same rules and the same answers, only sooner.

It stops itself when idle (``--idle``, 10 minutes by default), when its socket is removed,
with ``git loopx server stop``, and before answering a `git loopx` of another version or
installation (any file of the loopx package changed since it started): that command runs
the full path, and the next one too until the server is started again.
"""

from __future__ import annotations

import atexit
import dataclasses
import fcntl
import hashlib
import importlib
import io
import json
import marshal
import os
import pkgutil
import select
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Optional

import click
import pydantic

from loopx.cli import launch, terminal
from loopx.cli.app import App, pass_app
from loopx.errors import LoopxError
from loopx.model import typed
from loopx.ops import ledgers
from loopx.storage import files, locks
from loopx.version import __version__

IDLE_SECONDS = 600
READY_SECONDS = 20.0  # how long `server start` waits for the socket (imports, on a busy box)
# What a child may use, imported once in the server: every layer below the interfaces, and
# the CLI. Not loopx.mcp and loopx.web (their commands exec their own process) nor
# loopx.__main__ (it runs the CLI when imported).
_PRELOAD = ("loopx.cli", "loopx.ops", "loopx.remote", "loopx.hooks", "loopx.redaction",
            "loopx.recovery", "loopx.review", "loopx.upkeep", "loopx.agents", "loopx.ledger",
            "loopx.projection", "loopx.model", "loopx.storage")


# What the interpreter fixed at its start and a child cannot change: its flags (-X utf8,
# -O, PYTHON* settings), the file system encoding and the locale it set from the environment.
_INTERPRETER = [*sys.flags, sys.getfilesystemencoding(), os.environ.get("LC_ALL"),
                os.environ.get("LC_CTYPE"), os.environ.get("LANG")]


@click.group()
def server() -> None:
    """This repository's command server: `git loopx` without the start-up cost.

    Started by `git loopx server start`, or by the first command when
    `git config loopx.server auto` is set (it says so); it stops when idle."""


@server.command("start")
@click.option("--idle", type=click.IntRange(min=1), default=IDLE_SECONDS, show_default=True,
              metavar="SECONDS", help="Stop after this long without a command.")
@pass_app
def server_start(app: App, idle: int) -> None:
    """Start this repository's server (in the background; it stops when idle)."""
    path = _socket(app)
    pid = running(path)
    if pid is None:
        pid = _spawn(path, idle)
    if app.json:
        terminal.echo(json.dumps({"running": True, "pid": pid}))
        return
    terminal.echo(f"loopx server running (pid {pid}) for this repository: commands not run "
                  f"in a terminal are handed to it; it stops after {idle} s without one, or "
                  f"with `git loopx server stop`")


@server.command("stop")
@pass_app
def server_stop(app: App) -> None:
    """Stop this repository's server, if one runs."""
    path = _socket(app)
    pid = running(path)
    if pid is None:
        terminal.echo("no loopx server runs for this repository")
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5.0
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)
    terminal.echo(f"stopped the loopx server (pid {pid})")


@server.command("status")
@pass_app
def server_status(app: App) -> None:
    """Say whether this repository's server runs (and its pid)."""
    pid = running(_socket(app))
    if app.json:
        terminal.echo(json.dumps({"running": pid is not None, "pid": pid}))
        return
    terminal.echo(f"loopx server running (pid {pid})" if pid else
                  "no loopx server runs for this repository")


def _socket(app: App) -> str:
    path = launch.socket_path(app.cwd)
    if path is None:
        raise LoopxError("not in a git repository with a working tree")
    if len(path.encode()) > launch.MAX_SOCKET_PATH:
        raise LoopxError(f"the server's socket path is too long for a unix socket: {path}")
    return path


def running(path: str) -> Optional[int]:
    """The pid of the server listening on ``path``, or None."""
    # Read as every pid file of ours is (a fifo is not waited on, /dev/zero not read without
    # end, the text ASCII digits): int() took " -1", which `server stop` sent SIGTERM to, and
    # os.kill(-1) signals every process of the user.
    pid = locks.pid_of(locks.read_holder(Path(path + ".pid")))
    if pid is None:
        return None
    try:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with probe:
            probe.settimeout(2.0)
            probe.connect(path)
            probe.sendall(struct.pack("!I", 0))  # an empty request: "are you there?"
            return pid if probe.recv(16).startswith(b"here") else None
    except OSError:
        return None


def start_detached(path: str) -> Optional[int]:
    """Start a server on ``path`` without waiting for it to listen (``loopx.server=auto``:
    launch.py); None when one is starting already (``path``.starting, made exclusively and
    removed once it listens, or older than READY_SECONDS: a start that died) or has started.
    The folder is locked meanwhile, so that two commands that both find a dead start's
    marker do not each remove the other's new one and start a server each."""
    marker = path + ".starting"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    folder = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        if _starting(marker) or os.path.exists(path):  # or started, and listening, since
            return None                                # the caller found no socket
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return _spawn(path, IDLE_SECONDS, wait=False)
    finally:
        os.close(folder)  # and with it the lock


def _starting(marker: str) -> bool:
    """Whether ``marker`` is a start under way: a file (no link, folder or fifo, which
    start_detached never makes: those are removed) made within READY_SECONDS of now, either
    way (a clock set back leaves a dead start's marker in the future)."""
    try:
        found = os.lstat(marker)
    except FileNotFoundError:
        return False
    if stat.S_ISREG(found.st_mode) and abs(time.time() - found.st_mtime) <= READY_SECONDS:
        return True
    (os.rmdir if stat.S_ISDIR(found.st_mode) else os.unlink)(marker)
    return False


def _spawn(path: str, idle: int, *, wait: bool = True) -> int:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "LOOPX_DEBUG"}
    with open(os.devnull, "rb") as null, files.log(Path(path + ".log")) as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; from loopx.cli import server; "
             "server.serve(sys.argv[1], int(sys.argv[2]))", path, str(idle)],
            stdin=null, stdout=null, stderr=log, env=env, start_new_session=True,
            close_fds=True)
    if not wait:
        return proc.pid
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if running(path) == proc.pid:
            return proc.pid
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    raise LoopxError(f"the loopx server did not start (see {path}.log)")


# --- the server process ---------------------------------------------------------------------


def serve(path: str, idle: int) -> None:
    """Listen on ``path`` until idle for ``idle`` seconds, stopped, or outdated."""
    stamp = fingerprint()
    for package in _PRELOAD:
        _preload(package)
    _warm()
    _warm_settings()
    try:
        listener = _listen(path)
    finally:
        _unlink(path + ".starting")  # (start_detached's): listening, or never will
    inode = os.stat(path).st_ino
    files.replace(Path(path + ".pid"), f"{os.getpid()}\n".encode())  # never through a link
    stop: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    signal.signal(signal.SIGCHLD, lambda *_: _reap())
    last = time.monotonic()
    try:
        while not stop and time.monotonic() - last < idle and _same_inode(path, inode):
            try:
                ready, _, _ = select.select([listener], [], [], 1.0)
            except InterruptedError:
                continue
            if ready:
                conn, _ = listener.accept()
                last = time.monotonic()
                _fork(conn, listener, stamp)
    finally:
        if _same_inode(path, inode):
            for leftover in (path, path + ".pid"):
                _unlink(leftover)


def fingerprint() -> str:
    """What a server must share with its callers besides the version and the interpreter:
    the loopx package's place, and the name, size and time of each of its files (an upgrade,
    an edited checkout, a file put back with an old time)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found, stack = [], [root]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    stack.append(entry.path)
                elif entry.name.endswith((".py", ".txt", ".sh", ".json")):
                    got = entry.stat()
                    found.append(f"{entry.path} {got.st_size} {got.st_mtime_ns}")
    digest = hashlib.sha256("\n".join(sorted(found)).encode()).hexdigest()
    return f"{__version__} {root} {digest}"


def _preload(package: str) -> None:
    module = importlib.import_module(package)
    for found in pkgutil.walk_packages(module.__path__, package + "."):
        if not found.name.endswith("__main__"):
            importlib.import_module(found.name)


def _warm() -> None:
    """Do once what each command would do again on first use: build the pydantic models
    that defer it (loopx.model.payloads.base) and the dataclasses' plans (loopx.model.typed).
    Both are pure functions of the classes."""
    stack, seen = list(pydantic.BaseModel.__subclasses__()), set()
    while stack:
        model = stack.pop()
        if model in seen:
            continue
        seen.add(model)
        stack.extend(model.__subclasses__())
        if model.__module__.startswith("loopx.") and not model.__pydantic_complete__:
            model.model_rebuild()
    for name, module in list(sys.modules.items()):  # the answers' types live in these
        if name.startswith(("loopx.projection.", "loopx.ops.")):
            for value in list(vars(module).values()):
                if (isinstance(value, type) and dataclasses.is_dataclass(value)
                        and value.__module__ == name):
                    try:
                        typed.prepare(value)
                    except NameError:  # hints only a type checker sees: no answer's type
                        pass


def _warm_settings() -> None:
    """Read this repository's git settings once (loopx.storage.settings), from where the
    server started and from its work tree: a child in either answers from that listing
    while no file behind it has changed, instead of starting `git config` again."""
    try:
        for where in dict.fromkeys([".", str(ledgers.work_tree(".") or ".")]):
            ledgers.git_setting(where, "user.email")
    except (LoopxError, OSError):
        pass  # only a head start: each child reads what it needs


def _listen(path: str) -> socket.socket:
    if running(path) is not None:
        raise SystemExit(f"loopx server: another server listens on {path}")
    _unlink(path)  # a socket left by a server that was killed
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # the socket is this user's only (the child also checks)
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    listener.listen(64)
    return listener


def _same_inode(path: str, inode: int) -> bool:
    try:
        return os.stat(path).st_ino == inode
    except OSError:
        return False


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _fork(conn: socket.socket, listener: socket.socket, stamp: str) -> None:
    if os.fork():
        conn.close()
        return
    try:
        listener.close()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        code = _answer(conn, stamp)
    except BaseException:  # the child never returns into the server's loop
        code = 3
    os._exit(code)


def _answer(conn: socket.socket, stamp: str) -> int:
    """In the child: one request, run as `git loopx` would run it."""
    uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                              struct.calcsize("3i")))[1]
    head, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    if uid != os.getuid():
        return 1
    size = struct.unpack("!I", head[:4])[0] if len(head) >= 4 else 0
    if not size:
        conn.sendall(b"here\n")
        return 0
    body = head[4:]
    while len(body) < size:
        more = conn.recv(size - len(body))
        if not more:
            return 1
        body += more
    request = marshal.loads(body)  # from this user only (SO_PEERCRED above)
    if len(fds) != 3 or fingerprint() != stamp or request["version"] != __version__ \
            or request["python"] != f"{sys.prefix} {sys.version}":
        conn.sendall(b"stale\n")
        os.kill(os.getppid(), signal.SIGTERM)  # outdated: stop; the caller runs it itself
        return 0
    if request["interpreter"] != _INTERPRETER:
        conn.sendall(b"other\n")  # flags or a locale of its own: the caller runs it itself
        return 0
    conn.sendall(f"pid {os.getpid()}\n".encode())
    _become(request, fds)
    code = _run(request["args"])
    conn.sendall(f"exit {code}\n".encode())
    return code


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """Take the caller's stdio, cwd, environment, umask and argv."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.umask(request["umask"])
    sys.argv = [request["argv0"], *request["args"]]
    streams = []
    for fd, (encoding, errors, line_buffering) in enumerate(request["stdio"]):
        mode = "rb" if fd == 0 else "wb"
        raw = open(fd, mode, closefd=False)  # noqa: SIM115 -- sys.std* own it from now on
        streams.append(_text(raw, encoding, errors, line_buffering))
    sys.stdin, sys.stdout, sys.stderr = streams


def _text(raw: Any, encoding: str, errors: str, line_buffering: bool) -> Any:
    return io.TextIOWrapper(raw, encoding=encoding, errors=errors,
                            line_buffering=line_buffering)


def _run(args: list[str]) -> int:
    """The full path, with Python's own exit: SystemExit's code, a traceback for anything
    else, and 120 when stdout cannot be flushed."""
    try:
        launch.run(args)
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()  # what the command registered, as at its exit
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        code = 120
    return code


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write(f"{code}\n")
    return 1
