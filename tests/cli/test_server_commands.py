"""`git loopx server`: a command handed to the repository's server gives the same stdout,
stderr, exit code and ledger as the full path, and the server goes away when idle, stopped,
outdated or orphaned. Real processes: `git loopx` on PATH, the server it starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

import loopx
from conftest import Result, git, run_loopx

ACTOR = "human:test@example.com"
# The same commands through both paths: reads, a write, usage errors, help, an unknown id,
# global options before the command, stdin (batch).
SAME = [
    ["status", "--format", "json", "--no-ci"], ["next", "--no-ci"], ["todo", "list"],
    ["note", "list"], ["todo", "show", "t"], ["todo", "show", "nope"],
    ["note", "add", "--bogus", "x"], ["note", "add"], ["note", "add", "--help"],
    ["no-such-command"], ["--json", "todo", "list"], ["todo", "list", "--actor", "x"],
]


@pytest.fixture
def served(repo: Path) -> Iterator[Path]:
    for args in (["init"], ["goal", "add", "G", "--id", "g", "--accept", "works"],
                 ["todo", "add", "g", "T", "--id", "t"], ["note", "add", "hello"]):
        assert run_loopx(repo, *args).code == 0
    yield repo
    run_loopx(repo, "server", "stop")


def start(repo: Path, *args: str) -> int:
    got = run_loopx(repo, "--json", "server", "start", *args)
    assert got.code == 0, got.err
    return int(json.loads(got.out)["pid"])


def socket(repo: Path) -> Path:
    return repo / ".git" / "loopx" / "server.sock"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"


def wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def handed_off(repo: Path, *args: str, input: str | None = None,
               env: dict[str, str] | None = None) -> tuple[Result, list[str]]:
    """`git loopx ARGS` through the console entry point, and the modules that process
    imported (a command the server ran imports neither click nor the command tree)."""
    probe = ("import json, sys\nfrom loopx.cli.launch import main\nwhere = sys.argv.pop(1)\n"
             "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\nelse:\n"
             "    code = 0\nsys.stdout.flush()\n"
             "open(where, 'w').write(json.dumps(sorted(sys.modules)))\nsys.exit(code)")
    where = repo.parent / "modules.json"
    proc = subprocess.run([sys.executable, "-c", probe, str(where), *args], cwd=repo,
                          input=input or "", capture_output=True, text=True,
                          env=dict(os.environ, LOOPX_ACTOR=ACTOR, **(env or {})))
    return Result(proc.returncode, proc.stdout, proc.stderr), json.loads(where.read_text())


def test_commands_give_the_same_output_and_exit_through_the_server(served: Path) -> None:
    full = [run_loopx(served, *args) for args in SAME]
    start(served)
    for args, before in zip(SAME, full):
        got, modules = handed_off(served, *args)
        assert (got.code, same(got.out), got.err) == (before.code, same(before.out),
                                                      before.err), args
        assert "click" not in modules, f"{args} ran in the caller, not the server"


def same(out: str) -> str:
    """The output less what changes from one run to the next (free disk space, and whether
    the host's capabilities were read before)."""
    if not out.startswith('{"ledger"'):
        return out
    status = json.loads(out)
    status["environment"].pop("capabilities")
    return json.dumps(status)


def test_a_write_through_the_server_is_the_same_event_as_the_full_path(served: Path) -> None:
    full = run_loopx(served, "note", "add", "from the full path", "--todo", "t")
    start(served)
    got, modules = handed_off(served, "note", "add", "from the server", "--todo", "t")
    assert got.code == full.code == 0 and "click" not in modules
    assert got.out.split()[0] == full.out.split()[0] == "noted"
    notes = json.loads(run_loopx(served, "--json", "note", "list", "--todo", "t").out)["notes"]
    assert [(n["text"], n["actor"], n["todo"]) for n in notes] == [
        ("from the server", ACTOR, "t"), ("from the full path", ACTOR, "t")]
    assert run_loopx(served, "validate").code == 0


def test_stdin_reaches_a_command_the_server_runs(served: Path) -> None:
    lines = '["note", "add", "one from stdin"]\n["note", "add", "two from stdin"]\n'
    start(served)
    got, modules = handed_off(served, "batch", input=lines)
    assert got.code == 0, got.err
    assert "click" not in modules
    texts = [n["text"] for n in json.loads(run_loopx(served, "--json", "note", "list").out)[
        "notes"]]
    assert texts[:2] == ["two from stdin", "one from stdin"]  # newest first


def test_start_says_so_and_stop_stops_it(served: Path) -> None:
    said = run_loopx(served, "server", "start", "--idle", "30")
    assert said.code == 0 and "loopx server running (pid" in said.out
    assert "git loopx server stop" in said.out and "30 s" in said.out
    pid = json.loads(run_loopx(served, "--json", "server", "status").out)["pid"]
    assert start(served) == pid  # one server per repository
    stopped = run_loopx(served, "server", "stop")
    assert stopped.code == 0 and f"pid {pid}" in stopped.out
    assert wait_gone(pid) and not socket(served).exists()
    assert run_loopx(served, "server", "status").out.startswith("no loopx server runs")
    got, modules = handed_off(served, "todo", "list")
    assert got.code == 0 and "click" in modules  # nothing listens: the full path


def test_it_stops_when_idle(served: Path) -> None:
    pid = start(served, "--idle", "1")
    assert wait_gone(pid) and not socket(served).exists()


def test_it_stops_when_its_socket_goes(served: Path) -> None:
    """A repository deleted under it (a test's temporary directory) takes the server along."""
    pid = start(served)
    socket(served).unlink()
    assert wait_gone(pid)


def test_an_outdated_server_stops_and_the_command_runs_the_full_path(served: Path) -> None:
    """Any file of the package newer than the server (an upgrade, an edit) makes it stale."""
    expected = run_loopx(served, "todo", "list")
    pid = start(served)
    marker = Path(loopx.__file__).with_name("version.py")
    was = marker.stat()
    try:
        os.utime(marker, ns=(was.st_atime_ns, was.st_mtime_ns + 1_000_000_000))
        got, modules = handed_off(served, "todo", "list")
    finally:
        os.utime(marker, ns=(was.st_atime_ns, was.st_mtime_ns))
    assert (got.code, got.out, got.err) == (expected.code, expected.out, expected.err)
    assert "click" in modules  # it ran here
    assert wait_gone(pid) and not socket(served).exists()


def test_a_worktree_finds_its_repositorys_server(served: Path) -> None:
    git(served, "worktree", "add", "-q", str(served.parent / "wt"))
    start(served)
    got, modules = handed_off(served.parent / "wt", "todo", "list")
    assert got.code == 0 and "click" not in modules
    assert got.out == run_loopx(served, "todo", "list").out


def test_in_process_callers_keep_their_own_streams(served: Path) -> None:
    """`loopx.cli.main([...])` (CliRunner, a library) never hands its fds to the server."""
    from conftest import invoke

    start(served)
    assert invoke(served, "todo", "list").out == run_loopx(served, "todo", "list").out


@pytest.mark.parametrize("args", [["--debug", "todo", "list"], ["-C", ".", "hook", "post-merge"],
                                  ["--json", "server", "status"]])
def test_debug_hooks_and_long_runners_stay_with_the_full_path(served: Path,
                                                              args: list[str]) -> None:
    """--debug logs this process's git calls; git's hooks and the commands that run for long
    (mcp, web, watch, wait) or manage the server gain nothing from a handed-over start."""
    start(served)
    got, modules = handed_off(served, *args)
    assert "click" in modules, f"{args} was handed to the server"
    assert got.code == run_loopx(served, *args).code


def test_a_caller_with_another_locale_or_flags_runs_the_full_path(served: Path) -> None:
    """The interpreter fixes its locale and flags at start: a child could not take them."""
    start(served)
    got, modules = handed_off(served, "todo", "list", env={"PYTHONUTF8": "1", "LC_ALL": "C"})
    assert got.code == 0 and "click" in modules
    assert run_loopx(served, "server", "status").out.startswith("loopx server running")


def _wait_listening(repo: Path, seconds: float = 30.0) -> int | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status = json.loads(run_loopx(repo, "--json", "server", "status").out)
        if status["running"]:
            return int(status["pid"])
        time.sleep(0.1)
    return None


def test_loopx_server_auto_starts_one_on_demand_and_says_so(served: Path) -> None:
    """The first command runs here and starts the server (one line on stderr); the next is
    handed to it; a start under way is not started twice."""
    expected = run_loopx(served, "todo", "list")
    git(served, "config", "loopx.server", "auto")
    got, modules = handed_off(served, "todo", "list")
    assert "click" in modules and got.out == expected.out and got.code == 0
    (said,) = [line for line in got.err.splitlines() if "command server" in line]
    assert said.startswith("loopx: started this repository's command server (pid ")
    assert "loopx.server=auto" in said and "git loopx server stop" in said
    pid = _wait_listening(served)
    assert pid is not None and f"pid {pid}," in said
    assert not (socket(served).parent / "server.sock.starting").exists()
    again, modules = handed_off(served, "todo", "list")
    assert "click" not in modules and again.out == expected.out
    assert "command server" not in again.err


@pytest.mark.parametrize("value", [None, "false", "on", "1"])
def test_without_loopx_server_auto_no_server_is_started(served: Path, value: str | None) -> None:
    if value is not None:
        git(served, "config", "loopx.server", value)
    got, modules = handed_off(served, "todo", "list")
    assert got.code == 0 and "click" in modules and "command server" not in got.err
    assert not socket(served).exists()
    assert not (socket(served).parent / "server.sock.starting").exists()


def test_a_start_under_way_is_not_started_again(served: Path) -> None:
    """32 agents' first commands at once start one server, not 32: the marker a start makes
    (until its server listens, or for READY_SECONDS if it died) keeps the others out."""
    from loopx.cli import server

    git(served, "config", "loopx.server", "auto")
    marker = socket(served).parent / "server.sock.starting"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    got, _ = handed_off(served, "todo", "list")
    assert "command server" not in got.err and not socket(served).exists()
    old = time.time() - server.READY_SECONDS - 1
    os.utime(marker, (old, old))  # a start that died long ago
    got, _ = handed_off(served, "todo", "list")
    assert "started this repository's command server" in got.err
    assert _wait_listening(served) is not None


def _dangling(marker: Path) -> None:
    marker.symlink_to(marker.parent / "nowhere")


def _linked_fresh(marker: Path) -> None:
    (marker.parent / "fresh").touch()
    marker.symlink_to(marker.parent / "fresh")


def _future(marker: Path) -> None:
    marker.touch()
    ahead = time.time() + 3600  # made before the clock was set back an hour
    os.utime(marker, (ahead, ahead))


@pytest.mark.parametrize("plant", [_dangling, _linked_fresh, Path.mkdir, os.mkfifo, _future])
def test_a_marker_start_detached_never_makes_is_no_start_under_way(
        served: Path, plant: Callable[[Path], object]) -> None:
    """A link (dangling or to a fresh file), a folder, a fifo or a file from the future is
    not a start under way: it is removed and a server started (each kept auto from ever
    starting one)."""
    git(served, "config", "loopx.server", "auto")
    marker = socket(served).parent / "server.sock.starting"
    marker.parent.mkdir(parents=True, exist_ok=True)
    plant(marker)
    got, _ = handed_off(served, "todo", "list")
    assert got.code == 0 and "started this repository's command server" in got.err
    assert _wait_listening(served) is not None
    assert not os.path.lexists(marker)


def test_first_commands_racing_past_a_dead_start_start_one_server(served: Path) -> None:
    """Eight first commands that all find a dead start's marker: one removes it and starts
    the server (the folder is locked meanwhile), the others find its new marker, or its
    socket once it listens (it removes the marker then)."""
    from loopx.cli import server

    git(served, "config", "loopx.server", "auto")
    marker = socket(served).parent / "server.sock.starting"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    old = time.time() - server.READY_SECONDS - 1
    os.utime(marker, (old, old))
    probe = ("import sys\nfrom loopx.cli import server\npid = server.start_detached(sys.argv[1])"
             "\nprint('started' if pid else 'not')")
    procs = [subprocess.Popen([sys.executable, "-c", probe, str(socket(served))], cwd=served,
                              stdout=subprocess.PIPE, text=True) for _ in range(8)]
    said = [proc.communicate(timeout=120)[0].strip() for proc in procs]
    assert sorted(said) == ["not"] * 7 + ["started"]
    assert _wait_listening(served) is not None


@pytest.mark.parametrize("kind", ["fifo", "zero", "minus one", "underscores"])
def test_a_pid_file_that_is_no_pid_file_names_no_server(served: Path, kind: str) -> None:
    """The server's pid file is read as loopx's other files are: a fifo there hung `server
    status` (and start and stop) for good, a link to /dev/zero grew it until killed, and
    int() took ' -1' (a live server's pid file rewritten), which `server stop` would have
    sent SIGTERM to: os.kill(-1) signals every process of the user."""
    from loopx.cli import server

    pidfile = Path(f"{socket(served)}.pid")
    if kind in ("minus one", "underscores"):
        pid = start(served)
        pidfile.write_text(" -1\n" if kind == "minus one" else "1_0\n")
        try:
            assert server.running(str(socket(served))) is None
        finally:  # (the fixture's `server stop` must not read -1)
            pidfile.write_text(f"{pid}\n")
        return
    if kind == "fifo":
        os.mkfifo(pidfile)
    else:
        pidfile.symlink_to("/dev/zero")
    got = subprocess.run(["git", "loopx", "server", "status"], cwd=served, capture_output=True,
                         text=True, timeout=30, env=dict(os.environ, LOOPX_ACTOR=ACTOR))
    assert got.returncode == 0 and got.stdout.startswith("no loopx server runs"), got
