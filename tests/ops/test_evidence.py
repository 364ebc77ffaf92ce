"""Evidence you can trust (issue 11), with real git: a verdict is never wrong about the code.

A small project whose "test suite" (`check.sh`) fails when src/app.py holds the word BUG:
tested on dirty changes then committed (fresh), amended with a bug (stale, the file named,
the goal refuses to close), re-run (unmet, then fresh again), rebased to the same tree
(fresh), changed only in docs under a scoped criterion or the ledger's ignore list (fresh).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import git, invoke, run_loopx

AGENT = "agent:codex@devbox"
HUMAN = "human:test@example.com"
CHECK = "grep -q BUG src/app.py && { echo 'FAILED: BUG found'; exit 1; }; echo '1 passed'\n"


@pytest.fixture(autouse=True)
def bytecode(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The hooks start `git-loopx` processes: let them reuse compiled bytecode."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path_factory.getbasetemp() / "pycache"))


@pytest.fixture
def project(repo: Path) -> Path:
    (repo / "check.sh").write_text(CHECK)
    git(repo, "add", "check.sh")
    git(repo, "commit", "-q", "-m", "the test suite")
    for args in (["init"], ["goal", "add", "Ship the app", "--id", "g1",
                            "--accept", "the tests pass", "--accept", "the docs build"],
                 ["todo", "add", "g1", "Write the app", "--id", "t1", "--criterion", "a1"],
                 ["hooks", "install"]):
        assert invoke(repo, *args).code == 0
    return repo


def ok(repo: Path, *args: str, actor: str = AGENT) -> Any:
    result = run_loopx(repo, *args, actor=actor)
    assert result.code == 0, result.err
    return result


def status(repo: Path) -> dict[str, Any]:
    doc = run_loopx(repo, "status", "--format", "json", "--no-ci", "--detail", actor=AGENT).json()
    assert isinstance(doc, dict)
    return doc


def criterion(repo: Path, crit: str = "a1") -> dict[str, Any]:
    (goal,) = status(repo)["goals"]
    (found,) = [c for c in goal["acceptance"] if c["id"] == crit]
    return found  # type: ignore[no-any-return]


def write(repo: Path, name: str, text: str) -> None:
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_text(text)


def test_tested_on_dirty_changes_then_committed_exactly_is_fresh(project: Path) -> None:
    ok(project, "todo", "claim", "t1")
    write(project, "src/app.py", "print('hello')\n")  # untracked: part of what was tested
    run = ok(project, "run", "--criterion", "a1", "--json", "--", "sh", "check.sh")
    data = json.loads(run.out.split("\n", 1)[1])["data"]
    assert data["dirty"] is True and data["todo"] == "t1"
    assert data["commit"] == git(project, "rev-parse", "HEAD")
    assert criterion(project)["freshness"] == "fresh"  # judged on the work tree as it is
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "the app")
    assert git(project, "rev-parse", "HEAD^{tree}") == data["tree"]
    found = criterion(project)
    assert (found["verdict"], found["freshness"], found["needs_rerun"]) == ("pass", "fresh", False)
    assert (found["met"], found["open_work"]) == (False, ["t1"])  # t1, which serves it, is open
    assert not [a for a in status(project)["actions"] if a["kind"] == "rerun_evidence"]
    ok(project, "todo", "done", "t1")  # the latest result for t1 passed, on this code
    assert (criterion(project)["met"], criterion(project)["open_work"]) == (True, [])


def test_an_amend_with_a_bug_is_stale_names_the_file_and_the_goal_refuses_to_close(
        project: Path) -> None:
    write(project, "src/app.py", "print('hello')\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "the app")
    ok(project, "run", "--goal", "g1", "--criterion", "a1", "--criterion", "a2", "--",
       "sh", "check.sh")
    ok(project, "todo", "done", "t1", "--reason", "the goal's evidence covers it")
    write(project, "src/app.py", "print('hello')  # BUG\n")
    git(project, "commit", "-q", "-a", "--amend", "--no-edit")
    head = git(project, "rev-parse", "HEAD")
    doc = status(project)
    (crit, _) = doc["goals"][0]["acceptance"]
    assert (crit["met"], crit["freshness"], crit["changed"]) == (True, "stale", ["src/app.py"])
    (ev_id,) = crit["evidence"]
    assert doc["environment"]["evidence"][ev_id]["commit"] == head  # remapped, still stale
    refused = run_loopx(project, "goal", "close", "g1", "--achieved", actor=HUMAN)
    assert refused.code == 1 and refused.err.count("\n") == 1
    assert "src/app.py changed since" in refused.err
    assert "git loopx rerun --criterion g1:a1" in refused.err


def test_rerun_records_the_failure_then_the_fix_makes_it_fresh_again(project: Path) -> None:
    write(project, "src/app.py", "print('hello')\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "the app")
    ok(project, "todo", "claim", "t1")
    ok(project, "run", "--criterion", "a1", "--paths", "src/**", "--", "sh", "check.sh")
    write(project, "src/app.py", "print('hello')  # BUG\n")
    git(project, "commit", "-q", "-a", "-m", "a bug")
    action = next(a for a in status(project)["actions"] if a["kind"] == "rerun_evidence")
    assert action["command"] == "git loopx rerun --criterion g1:a1"
    dry = run_loopx(project, "rerun", "--dry-run", actor=AGENT)
    assert dry.code == 0 and "would re-run `sh check.sh`" in dry.err
    assert len(json.loads(invoke(project, "evidence", "list", "--json").out)["evidence"]) == 1
    failed = run_loopx(project, *action["command"].split()[2:], actor=AGENT)
    assert failed.code == 1 and "FAILED: BUG found" in failed.out
    found = criterion(project)
    assert (found["met"], found["verdict"], found["freshness"]) == (False, "fail", "unmet")
    latest = next(e for e in status(project)["evidence"] if e["id"] == found["latest"])
    assert (latest["todo"], latest["criteria"], latest["paths"]) == ("t1", ["a1"], ["src/**"])
    write(project, "src/app.py", "print('hello')\n")
    git(project, "commit", "-q", "-a", "-m", "fix")
    again = run_loopx(project, "rerun", "--criterion", "a1", actor=AGENT)
    assert again.code == 0 and "1 passed" in again.out
    assert criterion(project)["freshness"] == "fresh"
    assert run_loopx(project, "rerun", actor=AGENT).err == "loopx: nothing to re-run\n"


def test_a_rebase_to_the_same_tree_stays_fresh(project: Path) -> None:
    git(project, "checkout", "-q", "-b", "topic")
    write(project, "src/app.py", "print('hello')\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "the app")
    ok(project, "run", "--goal", "g1", "--criterion", "a1", "--", "sh", "check.sh")
    git(project, "checkout", "-q", "main")
    git(project, "commit", "-q", "--allow-empty", "-m", "upstream moved, content did not")
    git(project, "checkout", "-q", "topic")
    git(project, "rebase", "-q", "main")
    found = criterion(project)
    assert (found["freshness"], found["changed"]) == ("fresh", [])
    ev_id = found["latest"]
    assert status(project)["environment"]["evidence"][ev_id]["commit"] == git(
        project, "rev-parse", "HEAD")


def test_a_docs_change_leaves_a_scoped_criterion_fresh(project: Path) -> None:
    ok(project, "goal", "update", "g1", "--scope", "a1", "src/**", "--scope", "a1", "check.sh",
       actor=HUMAN)
    write(project, "src/app.py", "print('hello')\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "the app")
    ok(project, "run", "--goal", "g1", "--criterion", "a1", "--criterion", "a2", "--",
       "sh", "check.sh")
    write(project, "docs/guide.md", "how to use it\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "docs")
    a1, a2 = status(project)["goals"][0]["acceptance"]
    assert (a1["freshness"], a1["paths"]) == ("fresh", ["src/**", "check.sh"])
    assert (a2["freshness"], a2["changed"]) == ("stale", ["docs/guide.md"])  # no scope: all


def test_the_ledgers_ignore_list_leaves_unscoped_evidence_fresh(project: Path) -> None:
    ok(project, "config", "set", "--evidence-ignore", "docs/**", actor=HUMAN)
    ok(project, "run", "--goal", "g1", "--criterion", "a1", "--", "sh", "check.sh")
    ok(project, "run", "--goal", "g1", "--criterion", "a2", "--paths", "docs", "--",
       "sh", "check.sh")
    write(project, "docs/guide.md", "words\n")  # uncommitted: the work tree is judged
    a1, a2 = status(project)["goals"][0]["acceptance"]
    assert a1["freshness"] == "fresh"
    assert (a2["freshness"], a2["changed"]) == ("stale", ["docs/guide.md"])
    shown = json.loads(invoke(project, "config", "show", "--json").out)
    assert shown["evidence_ignore"] == ["docs/**"]
    ok(project, "config", "set", "--no-evidence-ignore", actor=HUMAN)
    assert criterion(project)["freshness"] == "stale"


def test_the_repositorys_default_scope_judges_unscoped_evidence_and_the_hint_says_so(
        project: Path) -> None:
    ok(project, "run", "--goal", "g1", "--criterion", "a2", "--", "sh", "check.sh")
    write(project, "CHANGES.md", "- a fragment\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "changelog")
    doc = status(project)
    a2 = doc["goals"][0]["acceptance"][1]
    assert (a2["freshness"], a2["changed"], a2["scope"]) == ("stale", ["CHANGES.md"], [])
    (hint,) = [a["reason"] for a in doc["actions"] if a["kind"] == "rerun_evidence"]
    assert "judged on the whole tree" in hint and "config set --evidence-scope" in hint
    ok(project, "config", "set", "--evidence-scope", "src/**", "--evidence-scope", "check.sh",
       "--evidence-ignore", "src/vendor/**", actor=HUMAN)
    a2 = criterion(project, "a2")
    assert (a2["freshness"], a2["scope"]) == ("fresh", ["src/**", "check.sh"])
    write(project, "src/vendor/lib.py", "x = 1\n")  # in the scope, but ignored
    assert criterion(project, "a2")["freshness"] == "fresh"
    write(project, "src/app.py", "print('changed')\n")
    doc = status(project)
    a2 = doc["goals"][0]["acceptance"][1]
    assert (a2["freshness"], a2["changed"]) == ("stale", ["src/app.py"])
    (hint,) = [a["reason"] for a in doc["actions"] if a["kind"] == "rerun_evidence"]
    assert "judged on the whole tree" not in hint  # it has a scope: the change is in it
    shown = json.loads(invoke(project, "config", "show", "--json").out)
    assert shown["evidence_scope"] == ["src/**", "check.sh"]
    (project / "src/app.py").unlink()
    git(project, "checkout", "-q", "--", ".")
    ok(project, "config", "set", "--no-evidence-scope", actor=HUMAN)
    assert criterion(project, "a2")["freshness"] == "stale"  # the whole tree again
    both = invoke(project, "config", "set", "--evidence-scope", "x", "--no-evidence-scope")
    assert both.code == 2 and "not both" in both.err


def test_a_newer_failure_unmeets_the_criterion_until_a_newer_pass(project: Path) -> None:
    ok(project, "run", "--goal", "g1", "--criterion", "a1", "--", "sh", "check.sh")
    assert criterion(project)["verdict"] == "pass"  # met once t1, serving it, is done
    write(project, "src/app.py", "BUG\n")
    assert run_loopx(project, "run", "--goal", "g1", "--criterion", "a1", "--",
                     "sh", "check.sh", actor=AGENT).code == 1
    found = criterion(project)
    assert (found["met"], found["verdict"], found["freshness"]) == (False, "fail", "unmet")
    action = next(a for a in status(project)["actions"] if a["kind"] == "rerun_evidence")
    assert "fix it, then re-run" in action["reason"]
    text = run_loopx(project, "status", "--no-ci", actor=AGENT).out
    assert f"latest evidence {found['latest']} failed" in text
    write(project, "src/app.py", "fine\n")
    ok(project, "run", "--goal", "g1", "--criterion", "a1", "--", "sh", "check.sh")
    assert criterion(project)["verdict"] == "pass"


def test_a_revised_criterion_needs_new_evidence_and_a_retired_one_none(project: Path) -> None:
    ok(project, "run", "--goal", "g1", "--criterion", "a1", "--", "sh", "check.sh")
    ok(project, "goal", "update", "g1", "--revise", "a1", "the tests pass on 3.12",
       "--retire", "a2", actor=HUMAN)
    (goal,) = status(project)["goals"]
    assert [(c["id"], c["met"], c["revision"]) for c in goal["acceptance"]] == [("a1", False, 1)]
    assert goal["retired"] == [{"id": "a2", "text": "the docs build"}]
    ok(project, "goal", "update", "g1", "--accept", "it is fast", actor=HUMAN)
    assert [c["id"] for c in status(project)["goals"][0]["acceptance"]] == ["a1", "a3"]
    log = run_loopx(project, "log", actor=AGENT).out
    assert "revised criterion a1 to 'the tests pass on 3.12'" in log and "retired criterion a2" in log


def test_rerun_by_todo_and_what_it_cannot_run_again(project: Path) -> None:
    ok(project, "todo", "claim", "t1")
    ok(project, "run", "--", "sh", "check.sh")  # goes to t1, the todo held
    secret = {"DEPLOY_TOKEN": "s3cr3t-value-42"}
    assert run_loopx(project, "run", "--goal", "g1", "--criterion", "a2", "--", "sh", "-c",
                     "echo $0", "s3cr3t-value-42", env=secret, actor=AGENT).code == 0
    ok(project, "evidence", "add", "--kind", "review", "--goal", "g1", "--criterion", "a1",
       "--summary", "looked fine")
    write(project, "src/app.py", "changed\n")
    plan = json.loads(run_loopx(project, "rerun", "--dry-run", "--json", actor=AGENT).out)
    by_evidence = {tuple(p["evidence"]): p for p in plan}
    skipped = {p["skipped"].split(";")[0] for p in plan if p["skipped"]}
    assert skipped == {"no command was recorded",
                       "its command held secrets that were redacted"}
    assert [p["todo"] for p in plan if not p["skipped"]] == ["t1"]
    assert all(p["exit_code"] is None for p in by_evidence.values())  # a dry run runs nothing
    only = run_loopx(project, "rerun", "--todo", "t1", actor=AGENT)
    assert only.code == 0 and "1 passed" in only.out
    with_secret = run_loopx(project, "rerun", "--criterion", "g1:a2", env=secret, actor=AGENT)
    assert with_secret.code == 0 and "s3cr3t-value-42" in with_secret.out
    everything = invoke(project, "evidence", "list", "--json").out
    assert "s3cr3t-value-42" not in everything and "[REDACTED:DEPLOY_TOKEN]" in everything


def test_a_criterion_scope_is_given_when_the_goal_is_added(project: Path) -> None:
    ok(project, "goal", "add", "Docs", "--id", "g2", "--accept", "docs build",
       "--scope", "a1", "docs/**", actor=HUMAN)
    doc = status(project)
    (docs,) = [g for g in doc["goals"] if g["id"] == "g2"]
    assert docs["acceptance"][0]["paths"] == ["docs/**"]
    bad = invoke(project, "goal", "add", "X", "--accept", "x", "--scope", "a7", "src")
    assert bad.code == 1 and "no criterion a7 to scope" in bad.err


def test_an_empty_scope_clears_a_criterions_paths(project: Path) -> None:
    ok(project, "goal", "update", "g1", "--scope", "a1", "src/**", actor=HUMAN)
    ok(project, "goal", "update", "g1", "--scope", "a1", "", actor=HUMAN)
    assert criterion(project)["paths"] == []


def test_list_show_and_brief_follow_an_amend_and_name_the_commit_it_was_recorded_on(
        project: Path) -> None:
    write(project, "src/app.py", "print('hello')\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "the app", "-m", "Loopx-Todo: t1")
    recorded = git(project, "rev-parse", "HEAD")
    ok(project, "run", "--todo", "t1", "--criterion", "a1", "--id", "e-run", "--", "sh", "check.sh")
    write(project, "src/app.py", "print('hello')  # BUG\n")
    git(project, "commit", "-q", "-a", "--amend", "--no-edit")
    now = git(project, "rev-parse", "HEAD")

    listed = {e["id"]: e for e in json.loads(ok(project, "evidence", "list", "--json").out)[
        "evidence"]}
    assert {e["kind"] for e in listed.values()} == {"commit", "test"}  # the hook's record too
    for ev in listed.values():
        assert (ev["commit"], ev["current_commit"], ev["freshness"]) == (recorded, now, "stale")
    text = ok(project, "evidence", "list").out
    assert f"{now[:10]} (was {recorded[:10]})" in text and "stale" in text

    shown = json.loads(ok(project, "evidence", "show", "e-run", "--json").out)
    assert (shown["commit"], shown["current_commit"]) == (recorded, now)
    assert shown["judged"]["state"] == "stale" and shown["judged"]["changed"] == ["src/app.py"]
    assert shown["output_tail"].strip() == "1 passed" and shown["exit_code"] == 0
    assert shown["digest"].startswith("sha256:") and shown["command"] == "sh check.sh"
    other = next(i for i in listed if i != "e-run")  # the hook's record: a generated id
    prefix = next("e-run"[:n] for n in range(3, 6) if not other.startswith("e-run"[:n]))
    text = ok(project, "evidence", "show", prefix).out
    assert text.startswith("evidence e-run (test): ")
    assert "changed:  src/app.py" in text and "1 passed" in text and "(was " in text

    brief = ok(project, "brief").out
    assert f"e-run (test, for t1, {now[:10]} (recorded on {recorded[:10]}), stale)" in brief
    assert "(commit, for t1, " in brief  # commit records are listed under the goal's evidence
    assert "- [~] **a1**" in brief and "\n2. **" in brief


def test_evidence_show_names_an_unknown_or_ambiguous_id(project: Path) -> None:
    missing = run_loopx(project, "evidence", "show", "e-nope")
    assert missing.code == 1 and "no evidence matches 'e-nope'" in missing.err
    ok(project, "evidence", "add", "--kind", "note", "--goal", "g1", "--id", "e-a1")
    ok(project, "evidence", "add", "--kind", "note", "--goal", "g1", "--id", "e-a2")
    both = run_loopx(project, "evidence", "show", "e-a")
    assert both.code == 1 and "matches several evidence: e-a1, e-a2" in both.err


def loose_objects(repo: Path) -> set[str]:
    folder = repo / ".git" / "objects"
    return {f"{d.name}{f.name}" for d in folder.iterdir() if len(d.name) == 2 for f in d.iterdir()}


def test_judging_a_dirty_work_tree_adds_nothing_to_the_repository(project: Path) -> None:
    """Every `status` on uncommitted changes hashes them to judge evidence: into a scratch
    object directory, so unreachable objects do not pile up (gc would complain)."""
    write(project, "src/app.py", "print('hello')\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "the app")
    ok(project, "run", "--criterion", "a1", "--todo", "t1", "--", "sh", "check.sh")
    write(project, "src/app.py", "print('hello')  # changed\n")
    write(project, "src/new.py", "x = 1\n")  # untracked, not ignored: part of the work tree
    before = loose_objects(project)
    for _ in range(2):
        found = criterion(project)
        assert (found["freshness"], sorted(found["changed"])) == (
            "stale", ["src/app.py", "src/new.py"])
    assert loose_objects(project) == before
    run = ok(project, "run", "--criterion", "a1", "--todo", "t1", "--json", "--", "sh", "check.sh")
    tree = json.loads(run.out.split("\n", 1)[1])["data"]["tree"]
    assert git(project, "cat-file", "-t", tree) == "tree"  # evidence keeps what it ran on
    assert criterion(project)["freshness"] == "fresh"


@pytest.mark.parametrize(("args", "says"), [
    (["--todo", "t1", "--criterion", "a7"], "goal g1 has no criterion a7"),
    (["--todo", "t1", "--id", "e-taken"], "evidence e-taken already exists"),
    (["--criterion", "a1"], "evidence for criteria must name its goal or todo"),
])
def test_run_refuses_what_it_could_not_record_before_the_command_runs(
        project: Path, args: list[str], says: str) -> None:
    """A typo in `--criterion` (or an id already taken) was found only once the command had
    run to its end (a test suite's whole length), then nothing was recorded."""
    ok(project, "evidence", "add", "--kind", "note", "--goal", "g1", "--id", "e-taken")
    before = git(project, "rev-parse", "refs/heads/loopx/state")
    refused = run_loopx(project, "run", *args, "--", "touch", "ran")
    assert (refused.code, refused.out) == (1, "")
    assert says in refused.err and len(refused.err.splitlines()) == 1, refused.err
    assert not (project / "ran").exists()  # the command never started
    assert git(project, "rev-parse", "refs/heads/loopx/state") == before
    bad_actor = run_loopx(project, "run", "--todo", "t1", "--", "touch", "ran", actor="bob")
    assert bad_actor.code == 1 and not (project / "ran").exists(), bad_actor.err
