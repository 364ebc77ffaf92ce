"""`git loopx run -- CMD`: output streamed and captured, evidence recorded, secrets redacted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, invoke, run_loopx
from loopx.redaction import redact

CANARY = "canary-Sup3rS3cretValue-7f3a"
GH_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.fixture(autouse=True)
def bytecode(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Let the many `git-loopx` processes the hooks start reuse compiled bytecode (a sandbox
    with PYTHONDONTWRITEBYTECODE would recompile loopx in every one of them)."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path_factory.getbasetemp() / "pycache"))


@pytest.fixture
def work(repo: Path) -> Path:
    for args in (("init",), ("goal", "add", "G", "--id", "g1", "--accept", "works", "--accept", "fast"),
                 ("todo", "add", "g1", "T", "--id", "t1")):
        assert invoke(repo, *args).code == 0
    return repo


def only_evidence(repo: Path) -> dict[str, object]:
    (item,) = invoke(repo, "evidence", "list", "--json").json()["evidence"]  # type: ignore[index]
    return item  # type: ignore[no-any-return]


def show_event(repo: Path, kind: str) -> dict[str, object]:
    from loopx.model import codec

    listing = git(repo, "ls-tree", "-r", "--name-only", "refs/heads/loopx/state").splitlines()
    (path,) = [p for p in listing if p.endswith(f".{kind}.yaml")]
    return codec.load(git(repo, "show", f"refs/heads/loopx/state:{path}").encode(), path)  # type: ignore[return-value]


def test_run_streams_output_records_evidence_and_returns_the_exit_code(work: Path) -> None:
    script = "import sys; print('out line'); print('err line', file=sys.stderr); sys.exit(3)"
    result = run_loopx(work, "run", "--todo", "t1", "--criterion", "a1", "--",
                       sys.executable, "-c", script)
    assert result.code == 3
    assert result.out == "out line\n"  # stdout is the command's own, untouched
    assert "err line" in result.err and "recorded test evidence" in result.err
    data = show_event(work, "evidence.recorded")["data"]
    assert data["exit_code"] == 3 and data["todo"] == "t1"  # type: ignore[index]
    assert data["commit"] == git(work, "rev-parse", "HEAD")  # type: ignore[index]
    assert data["tree"] == git(work, "rev-parse", "HEAD^{tree}")  # type: ignore[index]
    assert data["dirty"] is False and data["duration_s"] >= 0  # type: ignore[index,operator]
    assert "out line\n" in data["output_tail"] and "err line\n" in data["output_tail"]  # type: ignore[index,operator]
    assert str(data["digest"]).startswith("sha256:")  # type: ignore[index]
    assert "failed (exit 3)" in str(data["summary"])  # type: ignore[index]


def test_run_without_a_todo_goes_to_the_todo_you_hold(work: Path) -> None:
    assert invoke(work, "todo", "claim", "t1").code == 0
    assert invoke(work, "run", "--", sys.executable, "-c", "pass").code == 0
    assert only_evidence(work)["todo"] == "t1"


def test_run_marks_a_dirty_work_tree(work: Path) -> None:
    (work / "README").write_text("changed\n")
    assert run_loopx(work, "run", "--", "true").code == 0
    assert only_evidence(work)["dirty"] is True


@pytest.mark.parametrize("argv, said", [
    (["no-such-command-xyz"], "No such file or directory"),  # not found: 127
    (["sh", "-c", "no-such-command-xyz"], "not found"),  # the shell's 127
    (["./README"], "Permission denied"),  # not executable: 126
    (["sh", "-c", "./README"], "Permission denied"),  # the shell's 126
])
def test_a_command_that_cannot_start_is_a_usage_error_and_records_nothing(
        work: Path, argv: list[str], said: str) -> None:
    result = run_loopx(work, "run", "--", *argv)
    assert result.code == 1, result.err
    (line,) = [ln for ln in result.err.splitlines() if "could not start" in ln]
    assert said in line and line.endswith("nothing recorded"), line
    assert invoke(work, "evidence", "list", "--json").json()["evidence"] == []  # type: ignore[index]


def test_a_failing_command_that_started_is_still_evidence(work: Path) -> None:
    assert invoke(work, "run", "--", "sh", "-c", "exit 125").code == 125
    assert only_evidence(work)["exit_code"] == 125


def test_rerun_says_a_command_that_cannot_start_here_and_records_nothing(work: Path) -> None:
    tool = work / "check.sh"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    assert invoke(work, "run", "--todo", "t1", "--", "./check.sh").code == 0
    tool.unlink()  # gone from this work tree: the recorded command cannot start
    result = run_loopx(work, "rerun")
    assert result.code == 1 and "could not start" in result.err, result.err
    assert len(invoke(work, "evidence", "list", "--json").json()["evidence"]) == 1  # type: ignore[index]


def test_the_tail_keeps_the_last_lines_within_4_kib(work: Path) -> None:
    script = "for i in range(5000): print('line', i)"
    assert run_loopx(work, "run", "--", sys.executable, "-c", script).code == 0
    tail = str(show_event(work, "evidence.recorded")["data"]["output_tail"])  # type: ignore[index]
    assert tail.endswith("line 4999\n") and len(tail.encode()) <= 4096
    assert tail.count("\n") <= 40


def test_run_needs_a_ledger_before_running_anything(repo: Path) -> None:
    result = run_loopx(repo, "run", "--", "touch", "ran")
    assert result.code == 1 and "git loopx init" in result.err
    assert not (repo / "ran").exists()


def test_secrets_never_reach_the_object_database(work: Path) -> None:
    """A canary in the environment and in the output, in every shape, is nowhere in git."""
    script = (f"import os; print('value:', os.environ['MY_SERVICE_TOKEN']); print('{GH_TOKEN}');"
              "print('-----BEGIN RSA PRIVATE KEY-----'); print('MIIEowIBAAKCAQEA'); "
              "print('-----END RSA PRIVATE KEY-----'); print('Authorization: Bearer abcdefgh12345')")
    env = {"MY_SERVICE_TOKEN": CANARY}
    result = run_loopx(work, "run", "--todo", "t1", "--summary", f"used {CANARY}", "--",
                       sys.executable, "-c", script, CANARY, f"--password={CANARY}", env=env)
    assert result.code == 0, result.err
    assert CANARY in result.out  # the terminal still sees everything
    everything = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=work,
                                capture_output=True, check=True).stdout
    for secret in (CANARY, GH_TOKEN, "MIIEowIBAAKCAQEA", "abcdefgh12345"):
        assert secret.encode() not in everything, secret
    data = show_event(work, "evidence.recorded")["data"]
    assert "[REDACTED:MY_SERVICE_TOKEN]" in str(data["output_tail"])  # type: ignore[index]
    assert "[REDACTED:MY_SERVICE_TOKEN]" in str(data["command"])  # type: ignore[index]
    assert str(data["summary"]) == "used [REDACTED:MY_SERVICE_TOKEN]"  # type: ignore[index]


# --- redact (pure) ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "ghp_" + "x" * 36, "gho_" + "Y" * 36, "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "AKIAIOSFODNN7EXAMPLE", "xoxb-123456789012-abcdefghij", "glpat-abcdefghij0123456789",
])
def test_token_shapes_are_redacted_wherever_they_appear(text: str) -> None:
    assert redact.redact(f"before {text} after") == "before [REDACTED] after"


@pytest.mark.parametrize("line, expected", [
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "aws_secret_access_key = [REDACTED]"),
    ("Authorization: Bearer abc.def.ghi", "Authorization: Bearer [REDACTED]"),
    ("curl -H 'authorization: token 0123456789abcdef'",
     "curl -H 'authorization: token [REDACTED]'"),
    ("got Bearer eyJhbGciOiJIUzI1NiJ9.e30.x", "got Bearer [REDACTED]"),
    ("db password=hunter22 ok", "db password=[REDACTED] ok"),
    ("https://bob:hunter22@example.com/repo.git", "https://bob:[REDACTED]@example.com/repo.git"),
])
def test_credentials_in_context_keep_their_label(line: str, expected: str) -> None:
    assert redact.redact(line) == expected


def test_private_key_blocks_are_removed_across_lines() -> None:
    text = "a\n-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\nBBBB\n-----END OPENSSH PRIVATE KEY-----\nb\n"
    assert redact.redact(text) == (  # one line for one line: line numbers stay true
        "a\n-----BEGIN OPENSSH PRIVATE KEY----- [REDACTED]\n[REDACTED]\n[REDACTED]\n"
        "-----END OPENSSH PRIVATE KEY-----\nb\n")


def test_only_secret_looking_variables_of_six_or_more_characters_count() -> None:
    env = {"GITHUB_TOKEN": "t0ken-value", "DB_PASSWORD": "12345", "AWS_SECRET_ACCESS_KEY": "k" * 40,
           "HOME": "/home/me", "AWS_REGION": "eu-west-1", "SSH_AUTH_SOCK": "/tmp/agent.sock",
           "GIT_AUTHOR_NAME": "Alice Author", "DEPLOY_KEY": "deploykey1"}
    assert set(redact.secret_values(env).values()) == {"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
                                                       "DEPLOY_KEY"}


def test_ordinary_output_is_left_alone() -> None:
    text = "collected 12 items\n\ntests/test_x.py ........ [100%]\n12 passed in 0.31s\n"
    assert redact.redact(text, {"HOME": "/home/me", "API_TOKEN": "zzzzzzzz"}) == text


def test_an_argument_after_a_secret_option_is_redacted() -> None:
    argv = ["deploy", "--token", "abc", "--api-key=k3y123", "-v"]
    assert redact.redact_argv(argv) == ["deploy", "--token", "[REDACTED]", "--api-key=[REDACTED]",
                                        "-v"]


def test_an_unknown_todo_is_refused_before_the_command_runs(work: Path) -> None:
    result = run_loopx(work, "run", "--todo", "nope", "--", "touch", "ran")
    assert result.code == 1 and "no todo matches 'nope'" in result.err
    assert not (work / "ran").exists()
