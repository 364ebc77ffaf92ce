"""`git loopx demo`: the classic story in a throwaway repository.

A small CLI gains ``--format json``: a goal with acceptance criteria, todos with dependencies
for the output layer, tests, CI, a maintainer's confirmation (a gate) and the release. Every
step is a real `git loopx` command run against a real git repository; status follows each.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

import click

AGENT = "agent:demo-agent@laptop"
MAINTAINER = "human:maintainer@example.com"

_APP = '''import sys

def main(argv):
    print("hello, world")

if __name__ == "__main__":
    main(sys.argv[1:])
'''

_APP_JSON = '''import json, sys

def main(argv):
    if "--format" in argv and argv[argv.index("--format") + 1] == "json":
        print(json.dumps({"greeting": "hello, world"}))
    else:
        print("hello, world")

if __name__ == "__main__":
    main(sys.argv[1:])
'''

# (narration, actor, argv, show status afterwards)
STORY: list[tuple[str, str, list[str], bool]] = [
    ("Start a ledger in the repository (it lives on refs/heads/loopx/state).",
     MAINTAINER, ["init", "--name", "hello-cli"], False),
    ("Say who the maintainers are: gates can ask a role.",
     MAINTAINER, ["config", "set", "--role", f"maintainer={MAINTAINER}"], False),
    ("The goal, with acceptance criteria that evidence must meet.",
     MAINTAINER, ["goal", "add", "Add --format json to hello-cli", "--id", "json",
                  "--accept", "default text output unchanged",
                  "--accept", "JSON output validates against its schema",
                  "--accept", "CI is green on the change"], True),
    ("Todos with dependencies: output layer, then tests, then CI.",
     MAINTAINER, ["todo", "add", "json", "Add the JSON output layer", "--id", "output",
                  "--criterion", "a2"], False),
    ("", MAINTAINER, ["todo", "add", "json", "Test text and JSON output", "--id", "tests",
                      "--after", "output", "--criterion", "a1", "--criterion", "a2"], False),
    ("", MAINTAINER, ["todo", "add", "json", "Run CI", "--id", "ci", "--after", "tests",
                      "--criterion", "a3"], False),
    ("A gate: the maintainer must confirm the JSON field names before release.",
     MAINTAINER, ["gate", "open", "json", "Are the JSON field names stable?", "--id", "names",
                  "--authority", "role:maintainer"], False),
    ("", MAINTAINER, ["todo", "add", "json", "Release 1.1", "--id", "release", "--after", "ci",
                      "--gate", "names"], True),
    ("An agent claims the frontier todo (a lease, not a lock: it expires).",
     AGENT, ["todo", "claim", "output", "--ttl", "30m"], True),
    ("The agent commits the change; evidence is bound to that commit and tree.",
     AGENT, ["@commit"], False),
    ("", AGENT, ["evidence", "add", "--kind", "test", "--todo", "output", "--id", "schema-test",
                 "--criterion", "a2", "--command", "python app.py --format json | check-schema",
                 "--exit-code", "0", "--summary", "JSON validates"], False),
    ("", AGENT, ["todo", "done", "output", "--evidence", "schema-test"], True),
    ("Tests next: claim, record, done.", AGENT, ["todo", "claim", "tests"], False),
    ("", AGENT, ["evidence", "add", "--kind", "test", "--todo", "tests", "--id", "unit-tests",
                 "--criterion", "a1", "--criterion", "a2", "--command", "pytest",
                 "--exit-code", "0", "--summary", "12 passed"], False),
    ("", AGENT, ["todo", "done", "tests", "--evidence", "unit-tests"], False),
    ("CI reports back as evidence too.", AGENT, ["todo", "claim", "ci"], False),
    ("", AGENT, ["evidence", "add", "--kind", "ci", "--todo", "ci", "--id", "ci-run",
                 "--criterion", "a3", "--check", "tests", "--url", "https://ci.example.com/runs/1",
                 "--exit-code", "0", "--summary", "all checks passed"], False),
    ("", AGENT, ["todo", "done", "ci", "--evidence", "ci-run"], True),
    ("The release waits for the maintainer. An agent may not answer the gate:",
     AGENT, ["gate", "answer", "names", "--approve"], False),
    ("The maintainer answers (tomorrow, on another machine: it is just a git fetch away).",
     MAINTAINER, ["gate", "answer", "names", "--approve", "--comment", "field names are stable"], True),
    ("The agent releases, and the goal closes: every criterion is met by evidence.",
     AGENT, ["todo", "claim", "release"], False),
    ("", AGENT, ["evidence", "add", "--kind", "receipt", "--todo", "release",
                 "--url", "https://example.com/hello-cli/releases/v1.1",
                 "--summary", "tagged v1.1"], False),
    ("", AGENT, ["todo", "done", "release"], False),
    ("", MAINTAINER, ["goal", "close", "json", "--achieved", "--reason", "shipped in 1.1"], True),
]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _setup(repo: Path) -> None:
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "maintainer@example.com")
    _git(repo, "config", "user.name", "Maintainer")
    (repo / "app.py").write_text(_APP)
    _git(repo, "add", "app.py")
    _git(repo, "commit", "-q", "-m", "hello-cli")


def _run_loopx(repo: Path, actor: str, argv: list[str], as_json: bool) -> int:
    from loopx.cli import main

    args = ["-C", str(repo), "--actor", actor, *argv]
    if as_json and argv[0] in ("status",):
        args.append("--json")
    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def run(*, keep: bool, where: Optional[str], as_json: bool) -> None:
    repo = Path(where) if where else Path(tempfile.mkdtemp(prefix="loopx-demo-"))
    repo.mkdir(parents=True, exist_ok=True)
    try:
        _setup(repo)
        click.echo(f"# a throwaway repository: {repo}\n")
        for narration, actor, argv, show in STORY:
            if narration:
                click.echo(click.style(f"# {narration}", fg="cyan") if os.isatty(1) else f"# {narration}")
            if argv == ["@commit"]:
                (repo / "app.py").write_text(_APP_JSON)
                _git(repo, "commit", "-q", "-am", "Add --format json")
                click.echo("$ git commit -am 'Add --format json'")
                continue
            click.echo(f"$ git loopx {shlex.join(argv)}   (as {actor})")
            code = _run_loopx(repo, actor, argv, as_json)
            if code:
                click.echo(f"  (exit {code}: refused, as it should be)")
            if show:
                click.echo("\n$ git loopx status")
                _run_loopx(repo, actor, ["status"], as_json)
            click.echo()
        if keep or where:
            click.echo(f"# the ledger is ordinary git history: git -C {repo} log --oneline loopx/state")
        else:
            click.echo("# the repository is removed now; `git loopx demo --keep` keeps it to look around")
    finally:
        if keep or where:
            click.echo(f"# kept {repo}")
        else:
            shutil.rmtree(repo, ignore_errors=True)
