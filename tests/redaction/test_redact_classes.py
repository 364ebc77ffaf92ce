"""Secrets by class (issue 22): the gitleaks default rules (loopx/data/gitleaks.json) beside
detect-secrets and loopx's own classes (a label before `KEY=value`, vendor prefixes with no
keyword, secrets in command-line flags, URL query signatures, base64 `user:pass`, netrc
lines). The corpus is tests/secretkit.py's POSITIVES_4 (125+ secrets of 70+ shapes, each
gitleaks shape named after its rule) and NEGATIVES_4 (50 ordinary lines); every secret is
placed in every channel loopx writes, with real git, and none may reach the state branch."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import secretkit
from conftest import git, invoke
from loopx.redaction import gitleaks, redact
from test_redact import leaked

CASES = secretkit.POSITIVES_4
ONE_LINE = [c for c in CASES if len(c.lines) == 1]
GITLEAKS_SHAPES = [(rule, s) for rule, s in secretkit.SHAPES_4 if not rule.startswith("loopx:")]


def test_the_corpus_has_100_secrets_of_40_shapes_and_50_ordinary_lines() -> None:
    assert len(secretkit.SECRETS_4) >= 100
    assert len({c.name.split(" #")[0] for c in CASES}) >= 40
    assert len({rule for rule, _ in GITLEAKS_SHAPES}) >= 40
    assert len(secretkit.NEGATIVES_4) == 50


def test_the_gitleaks_rules_are_packaged_with_version_and_licence_and_all_convert() -> None:
    doc = json.loads(Path(gitleaks.DATA).read_text("utf-8"))
    assert doc["version"].startswith("v8.") and len(doc["commit"]) == 40 and "MIT" in doc["licence"]
    assert "MIT License" in (Path(gitleaks.DATA).parent / "gitleaks-LICENSE").read_text("utf-8")
    stats = gitleaks.stats()
    assert stats["loaded"] + stats["skipped"] == len(doc["rules"])
    assert stats["loaded"] >= 200 and stats["reasons"] == {"path-only": 1}, stats["reasons"]


@pytest.mark.parametrize("rule,secret", GITLEAKS_SHAPES, ids=[f"{r}-{i % 2}" for i, (r, _) in
                                                               enumerate(GITLEAKS_SHAPES)])
def test_each_gitleaks_shape_is_found_by_its_own_converted_rule(rule: str, secret: str) -> None:
    (found,) = [r for r in gitleaks.rules().rules if r.id == rule]
    one = gitleaks.RuleSet([found], gitleaks.Allow((), ()))
    assert list(one.spans(f"value {secret} end")), rule


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_secret_of_the_corpus_is_redacted_and_its_context_kept(case: secretkit.Case) -> None:
    redactor = redact.Redactor()
    out = "\n".join(redactor.line(line) for line in case.lines)
    assert not [s for s in case.secrets if leaked(s, out)], out
    assert not [k for k in case.keep if k not in out], out
    assert redact.scrub(redact.scrub("\n".join(case.lines))) == redact.scrub("\n".join(case.lines))


def test_at_most_one_of_the_50_ordinary_lines_is_changed() -> None:
    changed = [name for name, line in secretkit.NEGATIVES_4 if redact.scrub(line) != line]
    assert len(changed) <= 1, changed


@pytest.mark.parametrize("pattern,expected", [
    (r"\b(p8e-(?i)[a-z0-9]{32})(?:x|\z)", r"\b(p8e-(?i:[a-z0-9]{32}))(?:x|\Z)"),
    ("a(?i)b|c", "a(?i:b)|(?i:c)"),  # RE2: the flag holds to the group's end, across |
    (r"(x(?i)y|z)w", "(x(?i:y)|(?i:z))w"),
    (r"pat[[:alnum:]]{14}", "pat[a-zA-Z0-9]{14}"),
    ("(?i)[a-z]+", "(?i)[a-z]+"),
])
def test_go_patterns_are_converted_to_python_with_their_meaning(pattern: str, expected: str) -> None:
    assert gitleaks.convert(pattern) == expected


def test_an_unconvertible_rule_is_skipped_and_counted_not_fatal() -> None:
    ruleset = gitleaks.build({"rules": [
        {"id": "ok", "regex": "abc[0-9]{8}", "keywords": ["abc"]},
        {"id": "unicode", "regex": r"\p{Greek}+", "keywords": ["x"]},
        {"id": "broken", "regex": "(unclosed", "keywords": ["u"]},
        {"id": "file", "path": r"\.p12$"},
    ]})
    assert [s for s in ruleset.spans("abc12345678 x unclosed")] == [(0, 11)]
    ruleset.compile_all()
    assert [r.id for r in ruleset.rules] == ["ok"] and sum(ruleset.skipped.values()) == 3


def test_an_ordinary_line_reads_neither_the_rule_file_nor_detect_secrets() -> None:
    code = ("import sys\nfrom loopx.redaction import gitleaks, redact\n"
            "redact.scrub('collected 12 items in 0.3s: all passed')\n"
            "assert gitleaks._RULES is None and 'detect_secrets' not in sys.modules\n"
            "redact.scrub('age key AGE-SECRET-KEY-1' + 'QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L' * 2)\n"
            "assert gitleaks._RULES is not None\n")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- every channel, with real git ----------------------------------------------------------

def _state_objects(repo: Path) -> str:
    """Every object reachable from the state branch, as text."""
    listing = git(repo, "rev-list", "--objects", "refs/heads/loopx/state")
    oids = "\n".join(line.split()[0] for line in listing.splitlines()) + "\n"
    out = subprocess.run(["git", "cat-file", "--batch"], cwd=repo, input=oids.encode(),
                         capture_output=True, check=True).stdout
    return out.decode("utf-8", "replace")


def _chunks(lines: list[str], size: int) -> list[list[str]]:
    return [lines[i:i + size] for i in range(0, len(lines), size)]


def _packed(lines: list[str], limit: int) -> list[list[str]]:
    """The lines in groups whose " ; "-joined text stays within ``limit`` characters."""
    groups: list[list[str]] = [[]]
    for line in lines:
        if groups[-1] and len(" ; ".join([*groups[-1], line])) > limit:
            groups.append([])
        groups[-1].append(line)
    return groups


def _commit(repo: Path, message: str) -> None:
    name = f"f-{uuid.uuid4().hex[:8]}"
    (repo / name).write_text("x\n")
    git(repo, "add", name)
    subprocess.run(["git", "commit", "-q", "-m", message, "-m", "Loopx-Todo: tc"], cwd=repo,
                   capture_output=True, text=True, check=True)


def test_no_secret_of_the_corpus_reaches_the_state_branch_from_any_channel(
        repo: Path, tmp_path: Path) -> None:
    """Every secret in titles, criteria, gate questions, notes, a commit message and a
    transcript; a third of them (every class) in run output, command lines and commit
    subjects (all of them in the stress variant: each run and commit is a process)."""
    _every_channel(repo, tmp_path, processes=ONE_LINE[::3])


@pytest.mark.stress
def test_no_secret_of_the_corpus_reaches_the_state_branch_from_runs_and_commits(
        repo: Path, tmp_path: Path) -> None:
    _every_channel(repo, tmp_path, processes=ONE_LINE)


def _every_channel(repo: Path, tmp_path: Path, processes: list[secretkit.Case]) -> None:
    actor = "human:test@example.com"
    lines = [line for c in ONE_LINE for line in c.lines]
    spawned = [line for c in processes for line in c.lines]
    every = [line for c in CASES for line in c.lines]  # with the multi-line netrc case

    def ok(*args: str, input: str | None = None) -> None:
        result = invoke(repo, *args, actor=actor, input=input)
        assert result.code == 0, (args[:2], result.err)

    ok("init")
    git(repo, "config", "loopx.hooks.background", "false")
    steps: list[list[str]] = []
    for i, chunk in enumerate(_packed(lines, 500)):  # titles, criteria, gate questions
        steps += [["goal", "add", " ; ".join(chunk), "--id", f"g{i}", "--accept", chunk[0]],
                  ["todo", "add", f"g{i}", " ; ".join(chunk), "--id", f"t{i}"],
                  ["gate", "open", f"g{i}", " ; ".join(chunk), "--id", f"q{i}",
                   "--authority", actor]]
    steps += [["note", "add", "\n".join(chunk)] for chunk in _chunks(every, 40)]  # notes
    steps += [["todo", "add", "g0", "commits", "--id", "tc"]]
    ok("batch", "-m", " ; ".join(lines[:10]), input="".join(json.dumps(s) + "\n" for s in steps))
    transcript = tmp_path / "transcript.txt"
    transcript.write_text("\n".join(["$ make deploy", *every, "done"]) + "\n")
    ok("session", "open", "deploy", "--id", "s1")
    ok("session", "checkpoint", "s1", "--transcript", str(transcript), "--summary", "deployed")
    for chunk in _chunks(spawned, 12):  # run output (stdout and stderr; the tail is 4 KiB)
        out, err = chunk[::2], chunk[1::2]
        ok("run", "--kind", "test", "--", sys.executable, "-c",
           f"import sys; print('\\n'.join({out!r})); print('\\n'.join({err!r}), file=sys.stderr)")
    for chunk in _chunks(spawned, 30):  # the command line recorded with a run
        argv = [arg for line in chunk for arg in shlex.split(line, posix=True)]
        ok("run", "--kind", "test", "--", sys.executable, "-c", "pass", *argv)
    assert invoke(repo, "hooks", "install").code == 0
    for chunk in _chunks(spawned, 25):  # commit subjects, captured by post-commit
        _commit(repo, " ; ".join(chunk))
    assert invoke(repo, "status").code == 0
    runs, commits = -(-len(spawned) // 12) + -(-len(spawned) // 30), -(-len(spawned) // 25)
    assert json.loads(invoke(repo, "evidence", "list", "--json").out)["total"] == runs + commits

    stored = _state_objects(repo)
    caches = "".join(p.read_bytes().decode("latin-1")
                     for p in (repo / ".git" / "loopx").rglob("*") if p.is_file())
    secrets = secretkit.SECRETS_4
    assert {c.name.split(" #")[0].split()[0] for c in processes} >= {"label", "flag", "query"}
    found = [s for s in secrets if leaked(s, stored) or leaked(s, caches)]
    assert len(secrets) >= 100 and found == [], f"{len(found)} secrets stored: {found[:3]}"
    assert stored.count(redact.MARK) >= len(secrets)
