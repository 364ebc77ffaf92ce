"""Secrets (issue 12, item 7): detect-secrets' plugins, the shapes they lack, and high-entropy
values in assignment context, applied to every free text loopx writes before any object or
cache file is written. The corpus (tests/secretkit.py) holds 89 credential cases and 85
ordinary lines that must stay as they are."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import secretkit
from conftest import ROOT, git, invoke, run_loopx
from loopx.redaction import redact

POSITIVES = secretkit.POSITIVES + secretkit.POSITIVES_2 + secretkit.POSITIVES_3
NEGATIVES = secretkit.NEGATIVES + secretkit.NEGATIVES_2 + secretkit.NEGATIVES_3


def leaked(secret: str, out: str, window: int = 10) -> bool:
    """Whether any 10-character piece of ``secret`` survived in ``out``."""
    w = min(window, len(secret))
    return any(secret[i:i + w] in out for i in range(len(secret) - w + 1))


def test_the_corpus_is_large() -> None:
    assert len(POSITIVES) >= 25 and len(NEGATIVES) >= 25
    assert len({c.name.split()[0] for c in POSITIVES}) >= 25  # distinct vendors and shapes


@pytest.mark.parametrize("case", POSITIVES, ids=lambda c: c.name)
def test_every_credential_shape_is_redacted_and_its_context_kept(case: secretkit.Case) -> None:
    redactor = redact.Redactor()
    out = "\n".join(redactor.line(line) for line in case.lines)
    assert not [s for s in case.secrets if leaked(s, out)], out
    assert not [k for k in case.keep if k not in out], out
    assert redact.MARK in out
    assert redact.scrub("\n".join(case.lines)) == out  # the write path's scrub says the same


@pytest.mark.parametrize("name,line", NEGATIVES, ids=[n for n, _ in NEGATIVES])
def test_ordinary_lines_stay_exactly_as_they_are(name: str, line: str) -> None:
    assert redact.Redactor().line(line) == line
    assert redact.scrub(line) == line


@pytest.mark.parametrize("case", POSITIVES, ids=lambda c: c.name)
def test_scrubbing_twice_changes_nothing_more(case: secretkit.Case) -> None:
    once = redact.scrub("\n".join(case.lines))
    assert redact.scrub(once) == once


def test_detect_secrets_verify_and_settings_are_never_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """analyze_line consults global settings and may call verify() over the network."""
    from detect_secrets.plugins.base import BasePlugin

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("detect-secrets' analyze_line was called")

    monkeypatch.setattr(BasePlugin, "analyze_line", refuse)
    monkeypatch.setattr(BasePlugin, "verify", refuse)
    for case in POSITIVES:
        redact.scrub("\n".join(case.lines))


# Long lines of what the gates look for (a JWT head, a URL's userinfo, a key name), over and over.
HOSTILE_TEXTS = ("eyJ" * 33000, "://x:" * 20000, "password=" * 20000)


def test_long_lines_are_scrubbed_and_a_token_across_a_window_is_caught() -> None:
    """(How long the hostile texts take: benchmarks/bench_bounds.py.)"""
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4"
    out = redact.scrub("x " * 2040 + token + " y" * 3000)
    assert token[:10] not in out and token[-10:] not in out
    for hostile in HOSTILE_TEXTS:
        assert isinstance(redact.scrub(hostile), str)


def test_detect_secrets_is_imported_only_for_text_that_needs_it(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from loopx.redaction import redact\n"
        "redact.scrub('collected 12 items in 0.3s: all passed')\n"
        "assert 'detect_secrets' not in sys.modules, 'imported for an ordinary line'\n"
        "redact.scrub('API_TOKEN=Zx8kP2mQ9vL4tR7wQ2e')\n"
        "assert 'detect_secrets' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_a_command_that_writes_ordinary_text_never_loads_detect_secrets(repo: Path) -> None:
    assert invoke(repo, "init").code == 0
    code = ("import sys\nfrom loopx.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('LOADED' if 'detect_secrets' in sys.modules else 'CLEAN', file=sys.stderr)\n")
    for args in (["status"], ["note", "add", "an ordinary note about the build"],
                 ["goal", "add", "Ship the thing", "--accept", "tests pass"]):
        proc = subprocess.run([sys.executable, "-c", code, "-C", str(repo),
                               "--actor", "human:test@example.com", *args],
                              capture_output=True, text=True)
        assert proc.stderr.strip().endswith("CLEAN"), (args, proc.stderr)


# --- every free text written, with real git --------------------------------------------------


def _lines(start: int, count: int) -> list[str]:
    """``count`` credential lines from the corpus (one credential each), to put in fields."""
    picked = [c for c in POSITIVES if len(c.lines) == 1][start : start + count]
    assert len(picked) == count
    return [c.lines[0] for c in picked]


def _secrets_of(lines: list[str]) -> list[str]:
    return [s for c in POSITIVES if c.lines[0] in lines for s in c.secrets]


def test_no_credential_in_any_free_text_reaches_git_or_the_cache(repo: Path, tmp_path: Path) -> None:
    texts = iter(_lines(0, 30))
    transcript = tmp_path / "transcript.txt"
    transcript_lines = _lines(30, 6)
    transcript.write_text("\n".join(["$ make deploy", *transcript_lines, "done"]) + "\n")
    actor = "human:test@example.com"
    used: list[str] = []

    def text() -> str:
        value = next(texts)
        used.append(value)
        return value

    steps = [
        ["init"],
        ["goal", "add", text(), "--id", "g1", "--description", text(), "--accept", text()],
        ["todo", "add", "g1", text(), "--id", "t1", "--description", text()],
        ["gate", "open", "g1", text(), "--id", "q1", "--authority", actor],
        ["gate", "answer", "q1", "--answer", text(), "--comment", text()],
        ["note", "add", text(), "--todo", "t1"],
        ["evidence", "add", "--kind", "review", "--todo", "t1", "--summary", text(),
         "--url", text(), "--command", text()],
        ["effect", "intend", text(), "--action", "deploy", "--id", "x1", "--key", "k-1"],
        ["effect", "confirm", "x1", "--receipt", text()],
        ["effect", "intend", "github:o/r#1", "--action", "comment", "--id", "x2"],
        ["effect", "fail", "x2", "--error", text()],
        ["wake", "set", "--in", "1h", "--reason", text()],
        ["todo", "block", "t1", "--reason", text()],
        ["todo", "reopen", "t1", "--reason", text()],
        ["session", "open", text(), "--id", "s1", "--why", text()],
        ["session", "progress", "s1", text()],
        ["session", "respond", "s1", text()],
        ["session", "send", "s1", text()],
        ["session", "checkpoint", "s1", "--transcript", str(transcript), "--summary", text(),
         "--omitted", text()],
        ["session", "close", "s1", "--note", text()],
        ["goal", "close", "g1", "--abandoned", "--reason", text()],
    ]
    for args in steps:
        result = invoke(repo, *args, actor=actor)
        assert result.code == 0, (args, result.err)
    output = "; ".join(_lines(36, 3))
    run = run_loopx(repo, "run", "--kind", "test", "--", sys.executable, "-c",
                    f"print({output!r}); print('ok')")
    assert run.code == 0, run.err
    secrets = _secrets_of(used + transcript_lines + _lines(36, 3))
    assert len(secrets) >= 30
    everything = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=repo,
                                capture_output=True, check=True).stdout.decode("utf-8", "replace")
    caches = "".join(p.read_bytes().decode("latin-1")
                     for p in (repo / ".git" / "loopx").rglob("*") if p.is_file())
    found = [s for s in secrets if leaked(s, everything) or leaked(s, caches)]
    assert not found, f"{len(found)} secrets were written: {found[:3]}"
    shown = invoke(repo, "session", "show", "s1", "--transcript", actor=actor)
    assert shown.code == 0 and "$ make deploy" in shown.out and redact.MARK in shown.out


def test_the_library_ledger_from_open_ledger_scrubs_too(repo: Path) -> None:
    from loopx.ops import ledgers, notes

    (line,) = _lines(40, 1)
    with ledgers.open_ledger(repo) as led:
        ledgers.init(led, actor="agent:x")
        event = led.run(notes.add, f"see {line}", actor="agent:x")
    assert redact.MARK in event.data.text
    assert not [s for s in _secrets_of([line]) if leaked(s, event.data.text)]
    doc = json.loads(invoke(repo, "status", "--json").out)
    assert doc["notes"] == 1
    assert git(repo, "cat-file", "-p", f"refs/heads/loopx/state:{_path_of(repo, event.id)}")


def _path_of(repo: Path, event_id: str) -> str:
    names = git(repo, "ls-tree", "-r", "--name-only", "refs/heads/loopx/state").splitlines()
    return next(n for n in names if event_id in n)
