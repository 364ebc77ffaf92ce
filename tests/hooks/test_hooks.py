"""The git hooks with real `git commit`, `--amend`, `rebase` and `push` to a bare remote."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import ROOT, git, invoke, run_loopx
from loopx.hooks import shims



@pytest.fixture(autouse=True)
def bytecode(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Let the many `git-loopx` processes the hooks start reuse compiled bytecode (a sandbox
    with PYTHONDONTWRITEBYTECODE would recompile loopx in every one of them)."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path_factory.getbasetemp() / "pycache"))


def events(repo: Path, type_: str) -> list[str]:
    """Paths of the state branch's event files of one type."""
    listing = git(repo, "ls-tree", "-r", "--name-only", "refs/heads/loopx/state")
    return [p for p in listing.splitlines() if p.endswith(f".{type_}.yaml")]


def remaps(repo: Path) -> dict[str, str]:
    """old -> new of every evidence.remapped event (each test expects exactly one)."""
    from loopx.model import codec

    (path,) = events(repo, "evidence.remapped")
    doc = codec.load(git(repo, "show", f"refs/heads/loopx/state:{path}").encode(), path)
    return {pair["old"]: pair["new"] for pair in doc["data"]["mappings"]}


def evidence(repo: Path) -> list[dict[str, object]]:
    """Every piece of evidence, oldest first (the listing pages newest first)."""
    result = invoke(repo, "evidence", "list", "--limit", "100000", "--json")
    assert result.code == 0, result.err
    return result.json()["evidence"][::-1]  # type: ignore[index, no-any-return]


def commit(repo: Path, message: str, *extra: str,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A real `git commit` of a new file; returns the process (hooks write to its stderr)."""
    name = f"f-{uuid.uuid4().hex[:8]}"
    (repo / name).write_text(message + "\n")
    git(repo, "add", name)
    return subprocess.run(["git", "commit", "-q", "-m", message, *extra], cwd=repo,
                          capture_output=True, text=True, check=True, env=env)


@pytest.fixture
def work(repo: Path) -> Path:
    """A repository with a ledger, goal g1 (criterion a1), todo t1 and the hooks installed."""
    for args in (("init",), ("goal", "add", "G", "--id", "g1", "--accept", "works"),
                 ("todo", "add", "g1", "T", "--id", "t1"), ("hooks", "install")):
        result = invoke(repo, *args)
        assert result.code == 0, result.err
    return repo


def write_hook(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


# --- install / uninstall ---------------------------------------------------------------------


def test_install_is_idempotent_and_status_reports_it(work: Path) -> None:
    again = invoke(work, "hooks", "install")
    assert again.out.count("already installed") == 3
    status = invoke(work, "hooks", "status", "--json").json()
    assert [s["installed"] for s in status] == [True, True, True]  # type: ignore[index]
    assert all(os.access(work / ".git" / "hooks" / name, os.X_OK) for name in shims.HOOK_NAMES)


def test_uninstall_restores_an_existing_hook_byte_for_byte_and_mode(repo: Path) -> None:
    folder = repo / ".git" / "hooks"
    original = write_hook(folder, "pre-push", "# mine\r\nexit 0\n\x00tail-bytes")
    original.chmod(0o751)
    before = (original.read_bytes(), stat.S_IMODE(original.stat().st_mode))
    assert invoke(repo, "hooks", "install").code == 0
    assert shims.is_shim(original) and (folder / "pre-push.loopx-chained").exists()
    assert invoke(repo, "hooks", "uninstall").code == 0
    assert (original.read_bytes(), stat.S_IMODE(original.stat().st_mode)) == before
    assert not (folder / "post-commit").exists()  # none was there: none is left
    assert not list(folder.glob("*.loopx-*"))


def test_force_sets_the_old_hook_aside_unrun_and_uninstall_brings_it_back(repo: Path) -> None:
    folder = repo / ".git" / "hooks"
    write_hook(folder, "post-commit", f"touch {repo}/ran\n")
    result = invoke(repo, "hooks", "install", "--force")
    assert "WITHOUT chaining" in result.out
    invoke(repo, "init")
    commit(repo, "x")
    assert not (repo / "ran").exists()
    invoke(repo, "hooks", "uninstall")
    assert (folder / "post-commit").read_text() == f"#!/bin/sh\ntouch {repo}/ran\n"


def test_checked_in_hooks_match_the_packaged_template() -> None:
    for path, text in shims.render_repo_hooks(ROOT).items():
        assert path.read_text() == text, f"{path} is stale: regenerate it from loopx/data/hook.sh"


# --- post-commit -----------------------------------------------------------------------------


def test_commit_with_a_todo_trailer_records_commit_evidence(work: Path) -> None:
    proc = commit(work, "Fix it\n\nLoopx-Todo: t1")
    head = git(work, "rev-parse", "HEAD")
    (ev,) = evidence(work)
    assert (ev["kind"], ev["commit"], ev["todo"], ev["goal"], ev["summary"]) == (
        "commit", head, "t1", "g1", "Fix it")
    assert ev["tree"] == git(work, "rev-parse", "HEAD^{tree}")
    # t1 is a todo of an open goal: the shim queued the record (evidence() applied it)
    assert "recording this commit's evidence in the background" in proc.stderr


def test_commit_without_trailers_links_the_todos_the_committer_holds(work: Path) -> None:
    commit(work, "unrelated")
    assert evidence(work) == []  # no trailer, no lease: nothing
    invoke(work, "todo", "claim", "t1")
    commit(work, "work on it")
    assert [e["todo"] for e in evidence(work)] == ["t1"]


def test_a_goal_trailer_alone_records_goal_evidence_and_unknown_ids_are_reported(
        work: Path) -> None:
    proc = commit(work, "Goal work\n\nLoopx-Goal: g1\nLoopx-Todo: nope")
    (ev,) = evidence(work)
    assert (ev["goal"], ev["todo"]) == ("g1", None)
    assert "no todo matches 'nope'" in proc.stderr


def test_several_todos_are_recorded_in_one_state_commit(work: Path) -> None:
    invoke(work, "todo", "add", "g1", "U", "--id", "t2")
    before = git(work, "rev-list", "--count", "refs/heads/loopx/state")
    commit(work, "Both\n\nLoopx-Todo: t1\nLoopx-Todo: t2")
    assert sorted(e["todo"] for e in evidence(work)) == ["t1", "t2"]  # type: ignore[type-var]
    assert int(git(work, "rev-list", "--count", "refs/heads/loopx/state")) == int(before) + 1


def test_a_repository_without_a_ledger_gets_nothing(repo: Path) -> None:
    assert invoke(repo, "hooks", "install").code == 0
    proc = commit(repo, "plain\n\nLoopx-Todo: t1")
    assert proc.stderr == ""
    assert git(repo, "for-each-ref", "refs/heads/loopx") == ""


# --- post-rewrite ----------------------------------------------------------------------------


def test_amend_remaps_the_evidence_to_the_new_commit(work: Path) -> None:
    commit(work, "v1\n\nLoopx-Todo: t1")
    old = git(work, "rev-parse", "HEAD")
    git(work, "commit", "-q", "--amend", "-m", "v2\n\nLoopx-Todo: t1")
    new = git(work, "rev-parse", "HEAD")
    assert remaps(work) == {old: new}
    # One record, remapped: an amend does not add a second commit record beside it.
    assert [e["commit"] for e in evidence(work)] == [old]
    git(work, "commit", "-q", "--amend", "-m", "v3\n\nLoopx-Todo: t1")  # followed through remaps
    assert len(evidence(work)) == 1


def test_an_amend_that_names_a_new_todo_records_it(work: Path) -> None:
    invoke(work, "todo", "add", "g1", "U", "--id", "t2")
    commit(work, "v1\n\nLoopx-Todo: t1")
    git(work, "commit", "-q", "--amend", "-m", "v2\n\nLoopx-Todo: t1\nLoopx-Todo: t2")
    new = git(work, "rev-parse", "HEAD")
    assert {(e["todo"], e["commit"]) for e in evidence(work) if e["todo"] == "t2"} == {("t2", new)}
    assert len(evidence(work)) == 2


def test_commits_on_the_state_branch_or_a_proposal_are_never_recorded(work: Path) -> None:
    invoke(work, "todo", "claim", "t1")
    git(work, "checkout", "-q", "loopx/state")
    proc = commit(work, "poking at the ledger\n\nLoopx-Todo: t1")
    # Nothing is recorded; the hook says that a commit there can delete events (issue 12).
    assert "this commit is on loopx/state itself" in proc.stderr and evidence(work) == []
    git(work, "checkout", "-q", "main")
    git(work, "update-ref", "refs/loopx/proposals/p", "HEAD")
    git(work, "symbolic-ref", "HEAD", "refs/loopx/proposals/p")
    commit(work, "a proposal\n\nLoopx-Todo: t1")
    assert evidence(work) == []


def test_todos_of_closed_goals_are_never_attributed(work: Path) -> None:
    for args in (("goal", "add", "Old", "--id", "g2"), ("todo", "add", "g2", "Old work", "--id", "t9"),
                 ("goal", "close", "g2", "--abandoned")):
        assert invoke(work, *args).code == 0
    proc = commit(work, "late\n\nLoopx-Todo: t9\nLoopx-Goal: g2")
    assert evidence(work) == []
    assert "todo t9's goal g2 is abandoned" in proc.stderr and "goal g2 is abandoned" in proc.stderr


def test_a_lease_counts_only_for_commits_on_the_branch_it_was_taken_on(work: Path,
                                                                     tmp_path: Path) -> None:
    assert invoke(work, "todo", "claim", "t1").code == 0  # on main
    git(work, "checkout", "-q", "-b", "release")
    commit(work, "release chore")
    assert evidence(work) == []
    git(work, "checkout", "-q", "main")
    commit(work, "the work")
    assert [e["todo"] for e in evidence(work)] == ["t1"]
    wt = tmp_path / "wt"
    git(work, "worktree", "add", "-q", "-b", "elsewhere", str(wt))
    commit(wt, "another worktree's work")
    assert len(evidence(work)) == 1
    commit(wt, "named\n\nLoopx-Todo: t1")  # a trailer is honoured on any branch
    assert len(evidence(work)) == 2


def test_loopx_todo_none_opts_a_commit_out_of_the_lease_it_was_made_under(work: Path) -> None:
    assert invoke(work, "todo", "claim", "t1").code == 0
    proc = commit(work, "Fix a typo in the changelog\n\nLoopx-Todo: none")
    assert evidence(work) == [] and "trailer ignored" not in proc.stderr, proc.stderr
    commit(work, "Typo again\n\nLoopx-Todo: None")  # as git reads trailers: any case
    assert evidence(work) == []
    commit(work, "Goal chore\n\nLoopx-Todo: none\nLoopx-Goal: g1")  # a goal still counts
    assert [(e["todo"], e["goal"]) for e in evidence(work)] == [(None, "g1")]
    commit(work, "the work")
    assert [e["todo"] for e in evidence(work)][1:] == ["t1"]


def test_a_commit_is_the_leases_work_only_when_nothing_says_otherwise(work: Path) -> None:
    """Unrelated, and so not evidence for the todo held on the branch: a commit whose trailer
    names another todo, one by someone else, and a merge (mostly others' work, brought in)."""
    assert invoke(work, "todo", "add", "g1", "U", "--id", "t2").code == 0
    assert invoke(work, "todo", "claim", "t1").code == 0
    commit(work, "other work\n\nLoopx-Todo: t2")
    assert [e["todo"] for e in evidence(work)] == ["t2"]
    other = dict(os.environ, LOOPX_ACTOR="agent:other@box")
    commit(work, "someone else's commit", env=other)
    assert len(evidence(work)) == 1
    git(work, "checkout", "-q", "-b", "side", "HEAD~1")
    commit(work, "side work", env=other)
    git(work, "checkout", "-q", "main")
    # concluded by `git commit`, as after a conflict: post-commit runs (a plain merge runs none)
    git(work, "merge", "-q", "--no-ff", "--no-commit", "side")
    subprocess.run(["git", "commit", "-q", "-m", "Merge side"], cwd=work, check=True)
    assert git(work, "rev-parse", "-q", "--verify", "HEAD^2")  # a merge indeed
    assert len(evidence(work)) == 1  # the merge brought someone else's work in
    git(work, "reset", "-q", "--hard", "HEAD~1")
    git(work, "merge", "-q", "--no-ff", "--no-commit", "side")
    subprocess.run(["git", "commit", "-q", "-m", "Merge side\n\nLoopx-Todo: t1"], cwd=work,
                   check=True)
    assert [e["todo"] for e in evidence(work)] == ["t2", "t1"]  # named: it counts


def test_a_lease_taken_on_a_detached_head_attributes_nothing(work: Path) -> None:
    git(work, "checkout", "-q", "--detach")
    assert invoke(work, "todo", "claim", "t1").code == 0
    commit(work, "detached work")
    assert evidence(work) == []


def test_rewriting_commits_no_evidence_names_records_nothing(work: Path) -> None:
    commit(work, "plain")
    git(work, "commit", "-q", "--amend", "-m", "plain, reworded")
    assert events(work, "evidence.remapped") == []


def test_rebase_remaps_evidence_of_every_rewritten_commit(work: Path) -> None:
    git(work, "checkout", "-q", "-b", "topic")
    commit(work, "one\n\nLoopx-Todo: t1")
    commit(work, "two\n\nLoopx-Todo: t1")
    olds = git(work, "rev-list", "--reverse", "main..topic").split()
    git(work, "checkout", "-q", "main")
    commit(work, "upstream change")
    git(work, "checkout", "-q", "topic")
    git(work, "rebase", "-q", "main")
    news = git(work, "rev-list", "--reverse", "main..topic").split()
    assert remaps(work) == dict(zip(olds, news))
    # The picks themselves are not recorded again: post-rewrite is the record of a rebase.
    assert {e["commit"] for e in evidence(work)} == set(olds)


# --- pre-push --------------------------------------------------------------------------------


@pytest.fixture
def remote(work: Path, tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(work, "remote", "add", "origin", str(bare))
    return bare


def test_pushing_code_carries_the_state_branch_along(work: Path, remote: Path) -> None:
    commit(work, "work\n\nLoopx-Todo: t1")
    proc = subprocess.run(["git", "push", "-q", "origin", "main"], cwd=work, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert git(remote, "rev-parse", "refs/heads/loopx/state") == git(
        work, "rev-parse", "refs/heads/loopx/state")
    assert "pushed refs/heads/loopx/state to origin" in proc.stderr


def test_a_sync_after_the_state_went_along_finds_nothing_moved(work: Path, remote: Path) -> None:
    """The hook's push did not move what sync last accepted from origin, so the next sync
    pushed again and said "already in step with origin" beside "origin's OLD -> NEW"."""
    assert run_loopx(work, "sync").code == 0
    assert run_loopx(work, "note", "add", "after the sync").code == 0
    tip = git(work, "rev-parse", "refs/heads/loopx/state")
    git(work, "push", "-q", "origin", "main")  # the state goes along
    assert git(remote, "rev-parse", "refs/heads/loopx/state") == tip
    report = run_loopx(work, "sync", "--json").json()
    assert (report["remote_before"], report["remote_after"]) == (tip, tip), report
    assert report["sent"] == 0 and report["received"] == 0
    assert git(work, "rev-parse", "refs/loopx/accepted/origin/loopx/state") == tip


def test_push_state_false_keeps_the_state_branch_home(work: Path, remote: Path) -> None:
    git(work, "config", "loopx.pushState", "false")
    git(work, "push", "-q", "origin", "main")
    assert git(remote, "for-each-ref", "refs/heads/loopx") == ""


def test_a_diverged_remote_state_is_left_alone_and_reported(work: Path, remote: Path,
                                                           tmp_path: Path) -> None:
    git(work, "push", "-q", "origin", "main")  # state goes along
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    git(other, "fetch", "-q", "origin", "refs/heads/loopx/state:refs/heads/loopx/state")
    assert run_loopx(other, "note", "add", "from elsewhere").code == 0
    git(other, "push", "-q", "origin", "refs/heads/loopx/state")
    theirs = git(remote, "rev-parse", "refs/heads/loopx/state")
    invoke(work, "note", "add", "mine")
    commit(work, "more")
    proc = subprocess.run(["git", "push", "origin", "main"], cwd=work, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr  # the code push itself is never held up
    if importlib_has("loopx.remote.sync"):  # sync once: both sides' events end up on the remote
        assert git(remote, "merge-base", "--is-ancestor", theirs, "refs/heads/loopx/state") == ""
        assert "origin had other state changes: synced" in proc.stderr
    else:
        assert git(remote, "rev-parse", "refs/heads/loopx/state") == theirs  # never forced
        assert "run `git loopx sync`" in proc.stderr


def importlib_has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


# --- chaining existing hooks -----------------------------------------------------------------


def test_a_chained_hook_gets_its_arguments_and_stdin(work: Path, remote: Path) -> None:
    folder = work / ".git" / "hooks"
    invoke(work, "hooks", "uninstall")
    write_hook(folder, "pre-push", f'echo "$@" > {work}/args; cat > {work}/stdin\n')
    write_hook(folder, "post-rewrite", f'echo "$@" > {work}/rw-args; cat > {work}/rw-stdin\n')
    invoke(work, "hooks", "install")
    commit(work, "one\n\nLoopx-Todo: t1")
    git(work, "commit", "-q", "--amend", "-m", "one again")
    git(work, "push", "-q", "origin", "main")
    head = git(work, "rev-parse", "HEAD")
    assert (work / "args").read_text() == f"origin {remote}\n"
    assert (work / "stdin").read_text() == f"refs/heads/main {head} refs/heads/main {'0' * 40}\n"
    assert (work / "rw-args").read_text() == "amend\n"
    assert (work / "rw-stdin").read_text().split()[1] == head
    assert git(remote, "for-each-ref", "--format=%(refname)", "refs/heads/loopx") != ""


def test_a_failing_user_pre_push_hook_still_stops_the_push(work: Path, remote: Path) -> None:
    invoke(work, "hooks", "uninstall")
    write_hook(work / ".git" / "hooks", "pre-push", "echo 'no pushing today' >&2; exit 1\n")
    invoke(work, "hooks", "install")
    proc = subprocess.run(["git", "push", "origin", "main"], cwd=work, capture_output=True,
                          text=True)
    assert proc.returncode != 0 and "no pushing today" in proc.stderr
    assert git(remote, "for-each-ref") == ""  # neither the code nor the state went


def test_a_chained_post_commit_still_runs_and_loopx_records_too(work: Path) -> None:
    invoke(work, "hooks", "uninstall")
    write_hook(work / ".git" / "hooks", "post-commit", f"echo ran >> {work}/log; exit 3\n")
    invoke(work, "hooks", "install")
    commit(work, "x\n\nLoopx-Todo: t1")  # check=True: a failing post-commit never failed commit
    assert (work / "log").read_text() == "ran\n"
    assert len(evidence(work)) == 1


# --- where hooks live ------------------------------------------------------------------------


def test_a_linked_worktree_uses_the_shared_hooks_and_records(work: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    git(work, "worktree", "add", "-q", "-b", "wt", str(wt))
    status = invoke(wt, "hooks", "status", "--json").json()
    assert all(s["installed"] for s in status)  # type: ignore[index]
    commit(wt, "from the worktree\n\nLoopx-Todo: t1")
    assert [e["commit"] for e in evidence(work)] == [git(wt, "rev-parse", "HEAD")]


def test_the_default_hooks_folder_gets_no_work_tree_note(repo: Path) -> None:
    result = invoke(repo, "hooks", "install")
    assert result.code == 0 and "is in the work tree" not in result.out


def test_husky_style_core_hooks_path_is_honoured(work: Path) -> None:
    invoke(work, "hooks", "uninstall")
    git(work, "config", "core.hooksPath", ".husky")
    write_hook(work / ".husky", "post-commit", f"echo husky >> {work}/log\n")
    result = invoke(work, "hooks", "install")
    assert str(work / ".husky") in result.out
    assert "is in the work tree" in result.out  # .husky/ is not ignored: the user is told
    assert shims.is_shim(work / ".husky" / "post-commit")
    commit(work, "x\n\nLoopx-Todo: t1")
    assert (work / "log").read_text() == "husky\n" and len(evidence(work)) == 1
    invoke(work, "hooks", "uninstall")
    assert (work / ".husky" / "post-commit").read_text() == f"#!/bin/sh\necho husky >> {work}/log\n"


# --- failing open ----------------------------------------------------------------------------


def test_a_loopx_failure_prints_one_line_and_never_blocks_git(work: Path, remote: Path) -> None:
    env = dict(os.environ, LOOPX_HOOK_TEST_FAIL="all")
    (work / "f").write_text("x")
    git(work, "add", "f")
    proc = subprocess.run(["git", "commit", "-q", "-m", "x"], cwd=work, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stderr.count("\n") == 1 and "post-commit hook failed: forced failure" in proc.stderr
    push = subprocess.run(["git", "push", "-q", "origin", "main"], cwd=work, env=env,
                          capture_output=True, text=True)
    assert push.returncode == 0
    assert git(remote, "rev-parse", "main") == git(work, "rev-parse", "HEAD")


def test_strict_mode_lets_a_loopx_failure_stop_the_push(work: Path, remote: Path) -> None:
    git(work, "config", "loopx.hooks.strict", "true")
    env = dict(os.environ, LOOPX_HOOK_TEST_FAIL="pre-push")
    push = subprocess.run(["git", "push", "-q", "origin", "main"], cwd=work, env=env,
                          capture_output=True, text=True)
    assert push.returncode != 0 and "pre-push hook failed" in push.stderr


def test_an_unreadable_state_does_not_block_the_commit(work: Path) -> None:
    lock = work / ".git" / "loopx" / "write.lock"
    lock.unlink(missing_ok=True)
    lock.mkdir(parents=True)  # the clone lock cannot be opened: every loopx write fails
    git(work, "config", "loopx.hooks.background", "false")  # recorded inside the commit
    proc = commit(work, "x\n\nLoopx-Todo: t1")
    assert "loopx: post-commit hook failed" in proc.stderr


def test_a_shim_without_loopx_says_so_in_one_line(repo: Path, tmp_path: Path) -> None:
    hook = tmp_path / "post-commit"
    hook.write_text(shims.shim_text("post-commit", str(tmp_path / "no-python")))
    hook.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run([str(hook)], cwd=repo, env=env, capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stderr == (f"loopx: post-commit hook skipped: git-loopx is not installed "
                           f"(reinstall loopx, or remove {hook})\n")


def test_loopx_writes_never_run_repository_hooks(work: Path, remote: Path) -> None:
    folder = work / ".git" / "hooks"
    invoke(work, "hooks", "uninstall")
    for name in ("reference-transaction", "post-commit", "pre-commit", "post-rewrite", "pre-push"):
        write_hook(folder, name, f"echo {name} >> {work}/canary\n")
    invoke(work, "todo", "claim", "t1")
    invoke(work, "note", "add", "hello")
    assert run_loopx(work, "run", "--todo", "t1", "--", "true").code == 0
    update = f"refs/heads/main {git(work, 'rev-parse', 'HEAD')} refs/heads/main {'0' * 40}\n"
    pushed = run_loopx(work, "hook", "pre-push", "origin", str(remote), input=update)
    assert "pushed refs/heads/loopx/state" in pushed.err  # loopx's own push ran no pre-push
    assert not (work / "canary").exists()
    git(work, "update-ref", "refs/heads/probe", "HEAD")  # the canary itself does work
    assert "reference-transaction" in (work / "canary").read_text()


# --- the pre-commit framework ----------------------------------------------------------------


def test_pre_commit_hooks_manifest_names_every_loopx_hook() -> None:
    from loopx.model import codec

    entries = codec.load((ROOT / ".pre-commit-hooks.yaml").read_bytes(), ".pre-commit-hooks.yaml")
    stages = {e["id"]: (e["stages"], e["entry"]) for e in entries}  # type: ignore[union-attr]
    for name in shims.HOOK_NAMES:
        assert stages[f"loopx-{name}"] == ([name], f"git-loopx hook {name}")
    assert stages["loopx-validate"][1] == "git-loopx validate"


def test_pre_push_under_pre_commit_reads_the_refs_from_its_environment(work: Path,
                                                                      remote: Path) -> None:
    head = git(work, "rev-parse", "HEAD")
    env = {"PRE_COMMIT_REMOTE_NAME": "origin", "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/main",
           "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/main", "PRE_COMMIT_TO_REF": head,
           "PRE_COMMIT_FROM_REF": "0" * 40}
    result = run_loopx(work, "hook", "pre-push", input="", env=env)
    assert result.code == 0, result.err
    assert git(remote, "rev-parse", "refs/heads/loopx/state") == git(
        work, "rev-parse", "refs/heads/loopx/state")


def test_work_on_a_held_lease_is_recorded_off_the_commits_path(work: Path) -> None:
    """The shim queues the record and a detached drain writes it; the command right after
    the commit waits for that drain, so it sees the evidence without anyone sleeping."""
    assert invoke(work, "todo", "claim", "t1").code == 0
    proc = commit(work, "held")
    assert "loopx: recording this commit's evidence in the background (" in proc.stderr
    head = git(work, "rev-parse", "HEAD")
    assert [(e["commit"], e["todo"]) for e in evidence(work)] == [(head, "t1")]
    assert not list((work / ".git" / "loopx" / "spool").glob("*.json"))


@pytest.fixture
def drain_held(work: Path):  # type: ignore[no-untyped-def]
    """The queue's drain lock held by this process: as if a drain were still running."""
    import fcntl

    folder = work / ".git" / "loopx" / "spool"
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / ".drain.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield lambda: os.close(fd)
    finally:
        try:
            os.close(fd)
        except OSError:
            pass


def test_a_queued_record_waits_durably_and_the_next_command_applies_it(
        work: Path, drain_held) -> None:  # type: ignore[no-untyped-def]
    assert invoke(work, "todo", "claim", "t1").code == 0
    commit(work, "queued")
    head = git(work, "rev-parse", "HEAD")
    queued = run_loopx(work, "hooks", "queue", "--json")
    assert queued.code == 0 and queued.json()["queued"] == 1  # type: ignore[index]
    (waiting,) = queued.json()["waiting"]  # type: ignore[index]
    assert (waiting["hook"], waiting["commit"]) == ("post-commit", head)
    text = run_loopx(work, "hooks", "queue").out
    assert f"post-commit of {head[:12]}  by human:test@example.com" in text
    assert all(head not in line for line in events(work, "evidence.recorded"))
    drain_held()  # the "running drain" ends without applying it (a drainer killed, say)
    assert [e["commit"] for e in evidence(work)] == [head]
    assert run_loopx(work, "hooks", "queue", "--json").json() == {
        "queued": 0, "set_aside": [], "waiting": []}


def test_an_entry_that_can_never_apply_is_set_aside_shown_and_retried(work: Path) -> None:
    from loopx.hooks import spool

    loopx_dir = work / ".git" / "loopx"
    spool.append(loopx_dir, hook="post-commit", actor="human:test@example.com",
                 inputs={"commit": "0" * 40, "branch": "refs/heads/main", "amended": None},
                 state_ref="refs/heads/loopx/state")
    drained = run_loopx(work, "hooks", "drain")
    assert drained.code == 1 and "set aside" in drained.out
    status = invoke(work, "status", "--json", "--offline")
    assert status.json()["environment"]["hooks"]["set_aside"][0]["entry"].endswith(".json")
    (action,) = [a for a in status.json()["actions"] if a["command"] == "git loopx hooks queue"]
    assert action["kind"] == "repair" and "hooks drain --retry" in action["reason"]
    retried = run_loopx(work, "hooks", "drain", "--retry", "--json")
    assert retried.code == 1 and len(retried.json()["set_aside"]) == 1  # still no such commit


def test_background_false_records_in_the_foreground(work: Path) -> None:
    git(work, "config", "loopx.hooks.background", "false")
    assert invoke(work, "todo", "claim", "t1").code == 0
    proc = commit(work, "now")
    (ev,) = evidence(work)
    assert f"recorded commit evidence {ev['id']} for todo t1" in proc.stderr


def test_a_commit_naming_a_todo_is_recorded_in_the_foreground(work: Path) -> None:
    """A trailer is checked at once: a wrong id is said on the commit, not in a log."""
    proc = commit(work, "typo\n\nLoopx-Todo: t404")
    assert "t404" in proc.stderr and "background" not in proc.stderr


def test_the_common_post_commit_path_loads_no_pydantic() -> None:
    """No trailer and no lease is decided from the projection cache: keep pydantic (the
    slowest import) off that path, or every plain `git commit` pays for it."""
    code = ("import sys, loopx.cli, loopx.cli.hooks, loopx.hooks.capture, loopx.ledger.cache, loopx.hooks.shims; "
            "print('pydantic' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False", "a module on the post-commit path imports pydantic"


# --- post-commit without Python --------------------------------------------------------------


@pytest.fixture
def probe(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose `git-loopx` notes each start in a file, then runs the real one."""
    real = shutil.which("git-loopx")
    assert real, "git-loopx is not on PATH"
    folder, marker = tmp_path / "probe-bin", tmp_path / "started"
    write_hook(folder, "git-loopx", f'echo "$*" >> {marker}\nexec {real} "$@"\n')
    return dict(os.environ, PATH=f"{folder}{os.pathsep}{os.environ['PATH']}",
                LOOPX_ACTOR="human:test@example.com"), marker


def hooks_state(repo: Path) -> list[str]:
    """The file's tip and lease lines (without its header, format and check lines)."""
    lines = (repo / ".git" / "loopx" / "hooks.state").read_text().splitlines()[1:]
    assert lines[0] == "format 2" and lines[-1].startswith("check ")
    assert lines[-2].startswith("ids ")  # hooks.ids, for trailers (test_queued_commits.py)
    return lines[1:-2]


def test_a_commit_with_nothing_to_record_starts_no_loopx(
        work: Path, probe: tuple[dict[str, str], Path]) -> None:
    env, started = probe
    assert hooks_state(work) == [f"tip {git(work, 'rev-parse', 'refs/heads/loopx/state')}"]
    commit(work, "plain", env=env)
    assert not started.exists() and evidence(work) == []
    commit(work, "with a trailer\n\nloopx-todo : t9", env=env)  # any spelling git accepts
    assert started.read_text() == "hook post-commit\n"  # no such todo: loopx says so
    assert evidence(work) == []


def test_a_held_lease_is_seen_by_the_shim_and_queued_for_a_detached_drain(
        work: Path, probe: tuple[dict[str, str], Path]) -> None:
    """No loopx runs in the foreground: the shim queues the commit and starts only the
    drain (in the background, so it is polled for, with a hang guard)."""
    env, started = probe
    assert invoke(work, "todo", "claim", "t1").code == 0
    (lease,) = [line for line in hooks_state(work) if line.startswith("lease ")]
    assert lease.split()[:3] == ["lease", "human:test@example.com", "refs/heads/main"]
    commit(work, "work on it", env=env)
    # (Waited for before anything reads the ledger: a command that reads drains the queue
    # itself, and a drain that finds another holding the queue's lock leaves it to that one,
    # starting nothing.)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.read_text() == "hooks drain --quiet\n"
    assert [e["todo"] for e in evidence(work)] == ["t1"]
    started.unlink()
    other = dict(env, LOOPX_ACTOR="agent:someone-else")
    commit(work, "not theirs", env=other)  # the lease is not this committer's
    git(work, "checkout", "-q", "-b", "elsewhere")
    commit(work, "other branch", env=env)  # nor was it taken on this branch
    assert not started.exists() and [e["summary"] for e in evidence(work)] == ["work on it"]


def test_an_expired_lease_starts_no_loopx(work: Path, probe: tuple[dict[str, str], Path]) -> None:
    env, started = probe
    assert invoke(work, "todo", "claim", "t1", "--ttl", "1s").code == 0
    subprocess.run(["sleep", "1.1"], check=True)
    commit(work, "after the lease ran out", env=env)
    assert not started.exists() and evidence(work) == []


def test_a_stale_or_missing_state_file_makes_the_shim_ask_loopx(
        work: Path, probe: tuple[dict[str, str], Path]) -> None:
    """The file is only a shortcut: one that does not match the state tip never hides a
    lease, and loopx writes a fresh one."""
    env, started = probe
    assert invoke(work, "todo", "claim", "t1").code == 0
    path = work / ".git" / "loopx" / "hooks.state"
    # As an older state would have it: no lease; written for the tip before the claim.
    path.write_text(f"tip {git(work, 'rev-parse', 'refs/heads/loopx/state~1')}\n")
    commit(work, "one", env=env)
    assert started.exists() and len(evidence(work)) == 1
    assert hooks_state(work)[0] == f"tip {git(work, 'rev-parse', 'refs/heads/loopx/state')}"
    started.unlink()
    path.unlink()
    commit(work, "two", env=env)
    assert started.exists() and len(evidence(work)) == 2


def _damaged(text: str, how: str) -> str:
    lines = text.splitlines(keepends=True)
    if how == "truncated":  # cut off in the lease line: the check line is gone
        return "".join(lines[:3]) + lines[3][:12]
    if how == "flipped byte":  # the lease's actor altered, the check line kept
        return text.replace("human:test@example.com", "human:tesT@example.com")
    if how == "no check line":  # as a loopx before the check line wrote it
        return "".join(line for line in lines if not line.startswith(("format", "check")))
    assert how == "another format"
    return text.replace("format 2", "format 9")


@pytest.mark.parametrize("how", ["truncated", "flipped byte", "no check line",
                                 "another format"])
def test_a_damaged_state_file_of_the_tip_is_not_believed(
        work: Path, probe: tuple[dict[str, str], Path], how: str) -> None:
    """Issue 22: the file names the right tip, but is not whole: the shim asks loopx, which
    records the lease's commit, says so in one line and writes the file afresh; `doctor`
    reports it meanwhile."""
    env, started = probe
    assert invoke(work, "todo", "claim", "t1").code == 0
    path = work / ".git" / "loopx" / "hooks.state"
    path.write_text(_damaged(path.read_text(), how))
    report = run_loopx(work, "doctor", "--json")
    assert any("hooks.state" in w for w in report.json()["health"]["warnings"])  # type: ignore[index]
    proc = commit(work, "on the lease", env=env)
    assert started.exists(), proc.stderr
    assert "hooks.state was not believed" in proc.stderr
    assert [e["todo"] for e in evidence(work)] == ["t1"]
    assert hooks_state(work)[0] == f"tip {git(work, 'rev-parse', 'refs/heads/loopx/state')}"
    again = run_loopx(work, "doctor", "--json")
    assert not any("hooks.state" in w for w in again.json()["health"]["warnings"])  # type: ignore[index]
