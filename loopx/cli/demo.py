"""`git loopx demo`: what sets loopx apart, told in a throwaway folder in a few seconds.

A small CLI gains ``--format json``. A maintainer plans it on their laptop: a goal with
acceptance criteria, todos that wait for each other, a gate only the maintainer may answer.
An agent installs the hooks, runs the real test (a failure is recorded too), commits with a
``Loopx-Todo:`` trailer (the hook records it) and pushes the ledger. A second machine clones
the repository and takes over by fetch; both agents claim the same todo at once with
``--sync`` and exactly one wins, the other is told who has it. The winner's code change
turns the evidence stale (status names the file) and ``git loopx rerun`` makes it fresh; the
maintainer answers the gate, the release is tagged, the goal closes on fresh evidence.

Every step is a real command on real git repositories (a bare ``origin.git``, clones
``laptop`` and ``devbox``); ``--json`` prints one JSON line per step instead of the story.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

import click

import loopx

MAINTAINER = "human:maintainer@example.com"
AGENT = "agent:claude@laptop"
AGENT2 = "agent:codex@devbox"
WINNER = "@winner"  # the agent (and its clone) that won the race for `tests`
PYTHON = "python"  # the story's bin/python: this interpreter, whatever PATH holds

_APP = '''import sys

def main(argv):
    print("hello, world")

if __name__ == "__main__":
    main(sys.argv[1:])
'''

_APP_JSON = '''import json, sys

def main(argv):
    if argv[:2] == ["--format", "json"]:
        print(json.dumps({"greeting": "hello, world"}))
    else:
        print("hello, world")

if __name__ == "__main__":
    main(sys.argv[1:])
'''

# The winner's tidy-up: same behaviour, different code, so the evidence goes stale.
_APP_TIDY = _APP_JSON.replace("def main(argv):\n", 'def main(argv):\n    """Greet, as text or JSON."""\n')

_TEST = '''import json, subprocess, sys

def hello(*args):
    return subprocess.run([sys.executable, "app.py", *args], capture_output=True, text=True).stdout

assert hello() == "hello, world\\n", "the text output changed"
try:
    assert json.loads(hello("--format", "json")) == {"greeting": "hello, world"}
except (ValueError, AssertionError):
    sys.exit("FAILED: --format json does not print the JSON greeting")
print("2 passed")
'''

# Who races for `tests`, started in this order, RACE_STAGGER seconds apart (the tests set it
# to make either side win; the story starts both at once).
RACERS = [("laptop", AGENT), ("devbox", AGENT2)]
RACE_STAGGER = 0.0

FILES = {"app.py": _APP, "app.py:json": _APP_JSON, "app.py:tidy": _APP_TIDY, "test_app.py": _TEST}


@dataclass(frozen=True)
class Step:
    """One command of the story. ``argv`` is a loopx command line, or a special step:
    ``@write FILE[:VERSION]``, ``@git ARGS...``, ``@clone``, ``@race TODO``."""

    key: str  # a stable name: the --json lines (and the tests) refer to steps by it
    where: str  # "laptop", "devbox" or WINNER
    actor: str
    argv: list[str]
    say: str = ""  # narration: starts a new part of the story
    expect: int = 0  # the exit code the story expects (the agent refused at the gate: 1)


def _run(key: str, where: str, actor: str, *argv: str, say: str = "", expect: int = 0) -> Step:
    return Step(key, where, actor, list(argv), say, expect)


STORY: list[Step] = [
    _run("init", "laptop", MAINTAINER, "init", "--name", "hello-cli",
         say="The maintainer starts a ledger in the repository: it lives on the branch "
             "refs/heads/loopx/state, beside the code."),
    _run("role", "laptop", MAINTAINER, "config", "set", "--role", f"maintainer={MAINTAINER}"),
    _run("goal", "laptop", MAINTAINER, "goal", "add", "Add --format json to hello-cli", "--id", "json",
         "--accept", "default text output unchanged", "--accept", "--format json prints JSON",
         say="A goal with acceptance criteria that evidence must meet, todos that wait for each "
             "other, and a question only the maintainer may answer (a gate)."),
    _run("todo-output", "laptop", MAINTAINER, "todo", "add", "json", "Add the JSON output layer",
         "--id", "output", "--criterion", "a2"),
    _run("todo-tests", "laptop", MAINTAINER, "todo", "add", "json", "Test text and JSON output",
         "--id", "tests", "--after", "output", "--criterion", "a1", "--criterion", "a2"),
    _run("gate", "laptop", MAINTAINER, "gate", "open", "json", "Are the JSON field names stable?",
         "--id", "names", "--authority", "role:maintainer"),
    _run("todo-release", "laptop", MAINTAINER, "todo", "add", "json", "Release 1.1", "--id",
         "release", "--after", "tests", "--gate", "names"),
    _run("status-planned", "laptop", MAINTAINER, "status"),
    _run("hooks", "laptop", AGENT, "hooks", "install",
         say="An agent installs the git hooks: from now on commits record evidence by themselves."),
    _run("claim-output", "laptop", AGENT, "todo", "claim", "output", "--ttl", "30m"),
    _run("run-fails", "laptop", AGENT, "run", "--todo", "output", "--criterion", "a2", "--",
         PYTHON, "test_app.py", expect=1,
         say="It runs the real test before writing any code: the failure is recorded too."),
    _run("write-json", "laptop", AGENT, "@write", "app.py:json"),
    _run("run-passes", "laptop", AGENT, "run", "--todo", "output", "--criterion", "a2", "--id",
         "json-test", "--", PYTHON, "test_app.py",
         say="It writes the JSON layer and runs the test again: the result is bound to the "
             "content it ran on, uncommitted changes included."),
    _run("commit-output", "laptop", AGENT, "@git", "commit", "-q", "-am", "Add --format json",
         "-m", "Loopx-Todo: output",
         say="It commits exactly what it tested. The post-commit hook records the commit for the "
             "todo named in its trailer, and the test evidence stays fresh."),
    _run("done-output", "laptop", AGENT, "todo", "done", "output"),
    _run("sync-laptop", "laptop", AGENT, "sync"),
    _run("push-code", "laptop", AGENT, "@git", "push", "-q", "origin", "main"),
    _run("clone", "devbox", AGENT2, "@clone",
         say="A second machine takes over by fetch: a plain git clone carries the ledger."),
    _run("status-devbox", "devbox", AGENT2, "status"),
    _run("race", "devbox", AGENT2, "@race", "tests",
         say="Both agents claim the next todo at the same moment, with --sync: a claim counts "
             "only once the remote has it, so exactly one wins and the other is told who."),
    _run("winner-hooks", WINNER, WINNER, "hooks", "install",
         say="The winner records the tests, then tidies the code: the evidence goes stale, and "
             "status names the file that changed."),
    _run("run-tests", WINNER, WINNER, "run", "--todo", "tests", "--criterion", "a1",
         "--criterion", "a2", "--", PYTHON, "test_app.py"),
    _run("write-tidy", WINNER, WINNER, "@write", "app.py:tidy"),
    _run("status-stale", WINNER, WINNER, "status"),
    _run("rerun", WINNER, WINNER, "rerun",
         say="git loopx rerun runs what went stale again and records the results: fresh again."),
    _run("status-fresh", WINNER, WINNER, "status"),
    _run("commit-tests", WINNER, WINNER, "@git", "commit", "-q", "-am", "Document main()",
         "-m", "Loopx-Todo: tests"),
    _run("done-tests", WINNER, WINNER, "todo", "done", "tests"),
    _run("push-tests", WINNER, WINNER, "@git", "push", "-q", "origin", "main",
         say="Pushing the code pushes the ledger along (the pre-push hook)."),
    _run("pull", "laptop", MAINTAINER, "@git", "pull", "-q", "--ff-only", "origin", "main",
         say="Back on the laptop: the release waits for the maintainer's answer, and an agent "
             "may not give it."),
    _run("sync-maintainer", "laptop", MAINTAINER, "sync"),
    _run("agent-answers", "laptop", AGENT, "gate", "answer", "names", "--approve", expect=1),
    _run("answer", "laptop", MAINTAINER, "gate", "answer", "names", "--approve", "--comment",
         "field names are stable"),
    _run("claim-release", "laptop", AGENT, "todo", "claim", "release",
         say="The agent tags the release through git loopx run, so the tag is recorded as "
             "evidence, and the maintainer closes the goal: every criterion is met by fresh "
             "evidence and no work is left."),
    _run("tag", "laptop", AGENT, "run", "--todo", "release", "--kind", "receipt", "--", "git",
         "tag", "-a", "v1.1", "-m", "hello-cli 1.1"),
    _run("done-release", "laptop", AGENT, "todo", "done", "release"),
    _run("close", "laptop", MAINTAINER, "goal", "close", "json", "--achieved", "--reason",
         "shipped in 1.1"),
    _run("sync-end", "laptop", MAINTAINER, "sync"),
    _run("status-end", "laptop", MAINTAINER, "status", "--all", "--detail"),
]


@dataclass
class Outcome:
    """What one step did: its exit code and output (parsed JSON when it printed JSON)."""

    step: Step
    command: str
    exit_code: int
    output: Any = None
    stderr: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class Story:
    """The throwaway folder, and who won the race."""

    def __init__(self, base: Path, as_json: bool) -> None:
        self.base, self.as_json = base, as_json
        self.winner: tuple[str, str] = ("laptop", AGENT)

    def clone_dir(self, where: str) -> Path:
        return self.base / (self.winner[0] if where == WINNER else where)

    def actor(self, step: Step) -> str:
        return self.winner[1] if step.actor == WINNER else step.actor


def _git(repo: Path, *args: str, env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=env,
                          check=False)


def _identity(repo: Path, email: str) -> None:
    _git(repo, "config", "user.email", email)
    _git(repo, "config", "user.name", email.split("@")[0])


def _setup(base: Path) -> None:
    """origin.git (bare) and laptop/, a clone with the app and its test, pushed; bin/python
    runs this interpreter (the story's commands say `python`, as a person would type)."""
    (base / "bin").mkdir()
    shim = base / "bin" / PYTHON
    shim.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} \"$@\"\n")
    shim.chmod(0o755)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(base / "origin.git")],
                   check=True, capture_output=True)
    laptop = base / "laptop"
    subprocess.run(["git", "clone", "-q", str(base / "origin.git"), str(laptop)], check=True,
                   capture_output=True)
    _git(laptop, "checkout", "-q", "-b", "main")
    _identity(laptop, "maintainer@example.com")
    (laptop / "app.py").write_text(FILES["app.py"])
    (laptop / "test_app.py").write_text(FILES["test_app.py"])
    _git(laptop, "add", "app.py", "test_app.py")
    _git(laptop, "commit", "-q", "-m", "hello-cli")
    _git(laptop, "push", "-q", "origin", "main")


def _shown(story: Story, step: Step) -> str:
    if step.argv[0] == "@write":
        return f"edit {step.argv[1].split(':')[0]}"
    if step.argv[0] == "@git":
        return "git " + shlex.join(step.argv[1:])
    if step.argv[0] == "@clone":
        return "git clone origin.git devbox"
    if step.argv[0] == "@race":
        return f"git loopx todo claim {step.argv[1]} --sync"
    return "git loopx " + shlex.join(step.argv)


@contextlib.contextmanager
def _captured(together: bool) -> Iterator[tuple[io.BytesIO, io.BytesIO]]:
    """This process's stdout and stderr, caught (text and bytes) while a step runs in it;
    ``together``: both into one buffer, in the order they were written."""
    out = io.BytesIO()
    err = out if together else io.BytesIO()
    text_out = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    text_err = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    try:
        with contextlib.redirect_stdout(text_out), contextlib.redirect_stderr(text_err):
            yield out, err
    finally:  # detached, a wrapper no longer closes the buffer when it is collected
        for wrapper in (text_out, text_err):
            wrapper.flush()
            wrapper.detach()


def _in_process(repo: Path, actor: str, argv: list[str], as_json: bool) -> tuple[int, str, str]:
    """Run one `git loopx` command in this process; (exit code, stdout, stderr). For the
    story (not --json) both streams come back together, in order, as stdout."""
    from loopx.cli import main  # the root group imports this module's command

    extra = ["--json"] if as_json else ["--no-pager"] if argv[0] in ("status", "log") else []
    cut = argv.index("--") if "--" in argv else len(argv)  # `run`'s options end at `--`
    args = ["-C", str(repo), "--actor", actor, *argv[:cut], *extra, *argv[cut:]]
    code = 0
    with _captured(together=not as_json) as (out, err):
        try:
            main(args)
        except SystemExit as exc:
            code = int(exc.code or 0)
    text = out.getvalue().decode("utf-8", "replace")
    return code, text, "" if not as_json else err.getvalue().decode("utf-8", "replace")


def _parsed(text: str) -> Any:
    """The last JSON document a command printed (a `run` prints the command's output first)."""
    decoder = json.JSONDecoder()
    for start in range(len(text)):
        if text[start] in "[{" and (start == 0 or text[start - 1] == "\n"):
            try:
                value, end = decoder.raw_decode(text, start)
            except ValueError:
                continue
            if not text[end:].strip():
                return value
    return text or None


def _run_step(story: Story, step: Step) -> Outcome:
    repo, actor = story.clone_dir(step.where), story.actor(step)
    shown = _shown(story, step)
    kind = step.argv[0]
    if kind == "@write":
        name = step.argv[1]
        (repo / name.split(":")[0]).write_text(FILES[name])
        return Outcome(step, shown, 0)
    if kind == "@clone":
        proc = subprocess.run(["git", "clone", "-q", str(story.base / "origin.git"), str(repo)],
                              capture_output=True, text=True, check=False)
        _identity(repo, "codex@devbox.example.com")
        return Outcome(step, shown, proc.returncode, proc.stdout, proc.stderr)
    if kind == "@git":  # hooks run as the actor, as an agent's environment would say
        proc = _git(repo, *step.argv[1:], env=dict(os.environ, LOOPX_ACTOR=actor))
        if not story.as_json:
            click.echo(proc.stdout + proc.stderr, nl=False)
        return Outcome(step, shown, proc.returncode, proc.stdout, proc.stderr)
    if kind == "@race":
        return _race(story, step, shown)
    code, out, err = _in_process(repo, actor, step.argv, story.as_json)
    if not story.as_json:
        click.echo(out, nl=False)
    return Outcome(step, shown, code, _parsed(out), err)


def _race(story: Story, step: Step, shown: str) -> Outcome:
    """`todo claim TODO --sync` from both clones at once, as two processes."""
    todo = step.argv[1]
    env = dict(os.environ)
    package_root = str(Path(loopx.__file__).resolve().parents[1])
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    procs = []
    for where, who in RACERS:
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "loopx", "-C", str(story.base / where), "--actor", who, "todo",
             "claim", todo, "--sync", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=env))
        time.sleep(RACE_STAGGER)
    results = []
    for (where, who), proc in zip(RACERS, procs):
        out, err = proc.communicate()
        results.append({"where": where, "actor": who, "exit_code": proc.returncode,
                        "output": _parsed(out), "stderr": err.strip()})
    winners = [r for r in results if r["exit_code"] == 0]
    if winners:
        story.winner = (winners[0]["where"], winners[0]["actor"])
    outcome = Outcome(step, shown, 0 if len(winners) == 1 else 1, extra={"racers": results,
                                                            "winner": story.winner[1]})
    if not story.as_json:
        for r in results:
            said = (f"claimed todo {todo}" if r["exit_code"] == 0
                    else r["stderr"].removeprefix("error: "))
            click.echo(f"  {r['where']} ({r['actor']}): exit {r['exit_code']}: {said}")
    return outcome


def _header(story: Story, step: Step, shown: str) -> None:
    if step.say:
        text = f"\n# {step.say}"
        click.echo(click.style(text, fg="cyan") if sys.stdout.isatty() else text)
    if step.argv[0] == "@race":
        for where, who in RACERS:
            click.echo(f"{where}$ {shown}   (as {who}, both at once)")
        return
    where = story.winner[0] if step.where == WINNER else step.where
    click.echo(f"{where}$ {shown}   (as {story.actor(step)})")


def _line(story: Story, n: int, outcome: Outcome) -> dict[str, Any]:
    step = outcome.step
    return {"step": n, "key": step.key, "where": story.winner[0] if step.where == WINNER else step.where,
            "actor": story.actor(step), "command": outcome.command, "exit_code": outcome.exit_code,
            "expected_exit_code": step.expect, "output": outcome.output,
            "stderr": outcome.stderr, **outcome.extra, "say": step.say}


def run(*, keep: bool, where: Optional[str], as_json: bool) -> int:
    """Tell the story; returns 0 when every step ended as the story expects."""
    base = Path(where) if where else Path(tempfile.mkdtemp(prefix="loopx-demo-"))
    base.mkdir(parents=True, exist_ok=True)
    story, failed, started = Story(base, as_json), 0, time.monotonic()
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{base / 'bin'}{os.pathsep}{path}"  # for every command the story runs
    try:
        _setup(base)
        if not as_json:
            click.echo(f"# a throwaway folder: {base} (origin.git, laptop/, devbox/)")
            click.echo(f"# (bin/python there runs {sys.executable})")
        for n, step in enumerate(STORY, 1):
            if not as_json:
                _header(story, step, _shown(story, step))
            outcome = _run_step(story, step)
            failed += outcome.exit_code != step.expect
            if as_json:
                click.echo(json.dumps(_line(story, n, outcome), default=str))
            elif outcome.exit_code and outcome.exit_code == step.expect:
                click.echo(f"  (exit {outcome.exit_code}, as the story expects)")
            elif outcome.exit_code != step.expect:
                click.echo(f"  (exit {outcome.exit_code}: the story expected {step.expect})")
        seconds = time.monotonic() - started
        if not as_json:
            click.echo(f"\n# {len(STORY)} steps in {seconds:.1f}s. The ledger is ordinary git "
                       f"history: git -C {base / 'laptop'} log --oneline loopx/state"
                       if keep or where else
                       f"\n# {len(STORY)} steps in {seconds:.1f}s; the folder is removed now "
                       "(`git loopx demo --keep` keeps it to look around)")
    finally:
        os.environ["PATH"] = path
        if keep or where:
            if not as_json:
                click.echo(f"# kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    return 1 if failed else 0
