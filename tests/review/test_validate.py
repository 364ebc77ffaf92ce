"""`git loopx validate`: each rule catches what it is for, and clean proposals pass, however
they are merged (merge commit, squash, rebase)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import pytest
from conftest import invoke, run_loopx
from statekit import commit_files, event, file_of, run

from loopx import Ledger
from loopx.model import ids
from loopx.model.paths import event_dir
from loopx.review.validate import validate

ALICE = "human:alice@example.com"
AGENT = "agent:codex@devbox"
STATE = "refs/heads/loopx/state"
PROPOSAL = "refs/heads/proposal/p"


@pytest.fixture
def state(repo: Path) -> Path:
    """Goal g-1 with todo t-1 behind gate q-1, which alice (the maintainer) answers."""
    lines = [
        ["config", "set", "--role", f"maintainer={ALICE}"],
        ["goal", "add", "Ship", "--id", "g-1", "--accept", "works"],
        ["todo", "add", "g-1", "Build", "--id", "t-1"],
        [
            "gate",
            "open",
            "g-1",
            "Is the API stable?",
            "--id",
            "q-1",
            "--authority",
            "role:maintainer",
            "--blocks",
            "t-1",
        ],
    ]
    assert invoke(repo, "init", actor=ALICE).code == 0
    result = invoke(repo, "batch", input="\n".join(json.dumps(x) for x in lines), actor=ALICE)
    assert result.code == 0, result.err
    return repo


def _rules(repo: Path, head: str = PROPOSAL, base: str = STATE) -> list[str]:
    with Ledger.open(repo) as led:
        return sorted(f.rule for f in validate(led, base=base, head=head).findings)


def _max_clock(repo: Path) -> int:
    with Ledger.open(repo) as led:
        return led.fold().max_clock


def _propose(repo: Path) -> None:
    """A proposal written with the ordinary CLI: alice approves, the agent claims the todo."""
    assert (
        invoke(
            repo,
            "gate",
            "answer",
            "q-1",
            "--approve",
            "--comment",
            "stable",
            "--state-ref",
            "proposal/p",
            actor=ALICE,
        ).code
        == 0
    )
    result = invoke(repo, "--state-ref", "proposal/p", "todo", "claim", "t-1", actor=AGENT)
    assert result.code == 0, result.err


def test_a_proposal_starts_from_the_state_branch_and_passes(state: Path) -> None:
    tip = run(state, "rev-parse", STATE)
    _propose(state)
    assert run(state, "rev-parse", f"{PROPOSAL}~2") == tip
    assert run(state, "rev-parse", STATE) == tip  # the state branch itself did not move
    assert _rules(state) == []
    result = run_loopx(state, "validate", "--range", "loopx/state..proposal/p")
    assert result.code == 0, result.out + result.err
    assert "OK (2 commits, 2 new events)" in result.out
    assert "answered gate q-1: approve — 'stable'" in result.out


def test_without_a_range_a_proposal_is_checked_against_the_state_branch(state: Path) -> None:
    path, data = file_of(event("note.added", {"id": "n-1", "text": "old"}, clock=2))
    commit_files(state, PROPOSAL, {path: data})
    result = invoke(state, "validate", "--state-ref", "proposal/p")
    assert result.code == 1 and "clock-regression" in result.out
    assert invoke(state, "validate").code == 0  # loopx/state itself, whole history: clean


def test_modified_event_file_fails(state: Path) -> None:
    path = run(state, "ls-tree", "-r", "--name-only", STATE).splitlines()[-1]
    data = run(state, "cat-file", "blob", f"{STATE}:{path}").encode() + b"\n# edited\n"
    commit_files(state, PROPOSAL, {path: data})
    assert _rules(state) == ["modified"]


def test_deleted_event_file_fails(state: Path) -> None:
    path = run(state, "ls-tree", "-r", "--name-only", STATE).splitlines()[-1]
    commit_files(state, PROPOSAL, {path: None})
    assert _rules(state) == ["deleted"]


def test_file_outside_the_event_layout_fails(state: Path) -> None:
    commit_files(state, PROPOSAL, {"events/notes.txt": b"hello\n", "README.md": b"hi\n"})
    assert _rules(state) == ["bad-path", "bad-path"]


def test_session_transcript_chunks_are_allowed_beside_events(state: Path) -> None:
    commit_files(state, PROPOSAL, {"sessions/s-1/transcript-1/0001.txt": b"hello\n"})
    assert _rules(state) == []


def test_executable_event_file_fails(state: Path) -> None:
    path, data = file_of(
        event("note.added", {"id": "n-1", "text": "x"}, clock=_max_clock(state) + 1)
    )
    commit_files(state, PROPOSAL, {path: data}, mode="100755")
    assert _rules(state) == ["bad-mode"]


def test_bad_yaml_fails(state: Path) -> None:
    event_id = ids.new_event_id()
    path = f"{event_dir(event_id)}/{event_id}.note.added.yaml"
    commit_files(state, PROPOSAL, {path: b"id: [unclosed\n"})
    assert _rules(state) == ["bad-yaml"]


def test_schema_error_fails(state: Path) -> None:
    good, _ = file_of(event("note.added", {"id": "n-1", "text": "x"}, clock=_max_clock(state) + 1))
    commit_files(state, PROPOSAL, {good: b"id: nope\ntype: note.added\n"})
    assert _rules(state) == ["schema"]


def test_illegal_transition_fails(state: Path) -> None:
    path, data = file_of(
        event("todo.done", {"id": "t-404"}, clock=_max_clock(state) + 1, goal="g-1")
    )
    commit_files(state, PROPOSAL, {path: data})
    assert _rules(state) == ["illegal-transition"]


def test_unauthorised_answer_fails(state: Path) -> None:
    path, data = file_of(
        event(
            "gate.answered",
            {"id": "q-1", "decision": "approve"},
            clock=_max_clock(state) + 1,
            actor="human:mallory@example.com",
        )
    )
    commit_files(state, PROPOSAL, {path: data})
    assert _rules(state) == ["unauthorised-answer"]


def test_clock_regression_fails(state: Path) -> None:
    path, data = file_of(event("note.added", {"id": "n-1", "text": "backdated"}, clock=2))
    commit_files(state, PROPOSAL, {path: data})
    assert _rules(state) == ["clock-regression"]


def test_a_merge_that_adds_its_own_backdated_event_fails(state: Path) -> None:
    _propose(state)
    path, data = file_of(event("note.added", {"id": "n-9", "text": "evil"}, clock=1))
    tip, proposal = run(state, "rev-parse", STATE), run(state, "rev-parse", PROPOSAL)
    evil = commit_files(state, "refs/heads/evil", {path: data}, parent=proposal)
    merge = run(state, "commit-tree", f"{evil}^{{tree}}", "-p", proposal, "-p", tip, "-m", "merge")
    run(state, "update-ref", PROPOSAL, merge)
    assert _rules(state) == ["clock-regression"]


def test_a_proposal_that_conflicts_with_the_moved_state_branch_fails(state: Path) -> None:
    _propose(state)  # alice approves q-1 on the proposal
    assert invoke(state, "gate", "answer", "q-1", "--reject", actor=ALICE).code == 0
    # The two answers leave q-1 conflicted once merged, and so the claim it blocks fails too.
    assert _rules(state) == ["conflicts-with-base", "conflicts-with-base"]
    assert _rules(state, base=f"{STATE}~1") == []  # against the fork point alone: fine


def test_cli_report_is_readable_and_exits_1(state: Path) -> None:
    path = run(state, "ls-tree", "-r", "--name-only", STATE).splitlines()[-1]
    commit_files(state, PROPOSAL, {path: None})
    result = run_loopx(state, "validate", "--range", "loopx/state..proposal/p")
    assert result.code == 1
    assert "FAILED, 1 problem (1 commit)" in result.out and "deleted" in result.out
    as_json = run_loopx(state, "validate", "--range", "loopx/state..proposal/p", "--format", "json")
    assert as_json.code == 1 and as_json.json()["findings"][0]["rule"] == "deleted"


# --- merging a proposal with real git leaves a valid ledger ---------------------------------


@pytest.fixture
def checkout(state: Path, tmp_path: Path) -> Path:
    """A worktree with loopx/state checked out, where a maintainer merges proposals."""
    where = tmp_path / "state-checkout"
    run(state, "worktree", "add", "-q", str(where), "loopx/state")
    return where


def _concurrent_write(repo: Path, checkout: Optional[Path] = None) -> None:
    if checkout is None:
        assert invoke(repo, "note", "add", "meanwhile on the state branch", actor=ALICE).code == 0
        return
    # loopx refuses to move a branch that a work tree has checked out (an ordinary commit
    # there would then delete events): the maintainer steps off it meanwhile.
    assert invoke(repo, "note", "add", "refused", actor=ALICE).code == 1
    run(checkout, "switch", "-q", "--detach")
    assert invoke(repo, "note", "add", "meanwhile on the state branch", actor=ALICE).code == 0
    run(checkout, "switch", "-q", "loopx/state")


def _after_merge(repo: Path, before: str) -> list[str]:
    """Rules validate finds in what the merge added; the ledger must replay without problems."""
    with Ledger.open(repo) as led:
        fold = led.fold_at(led.tip())
        assert fold.problems == []
        assert fold.gates["q-1"].state == "answered"
        assert fold.todos["t-1"].holder == AGENT
    return _rules(repo, head=STATE, base=before)


@pytest.mark.parametrize("moved", [False, True], ids=["state-unmoved", "state-moved"])
def test_merge_commit_of_a_proposal(state: Path, checkout: Path, moved: bool) -> None:
    _propose(state)
    if moved:
        _concurrent_write(state, checkout)
        run(checkout, "reset", "-q", "--hard", "loopx/state")
    before = run(state, "rev-parse", STATE)
    assert _rules(state, base=before) == []
    run(checkout, "merge", "-q", "--no-ff", "-m", "Merge proposal", "proposal/p")
    assert _after_merge(state, before) == []


@pytest.mark.parametrize("moved", [False, True], ids=["state-unmoved", "state-moved"])
def test_squash_merge_of_a_proposal(state: Path, checkout: Path, moved: bool) -> None:
    _propose(state)
    if moved:
        _concurrent_write(state, checkout)
        run(checkout, "reset", "-q", "--hard", "loopx/state")
    before = run(state, "rev-parse", STATE)
    run(checkout, "merge", "-q", "--squash", "proposal/p")
    run(checkout, "commit", "-q", "-m", "Squashed proposal")
    rules = _after_merge(state, before)
    # Squashing re-bases the proposal's events onto a ledger they were not written on: when
    # the state moved meanwhile, their clocks may be lower than events they never saw. The
    # ledger is valid (above); validating the rewritten commits afterwards says so (docs/review.md).
    assert set(rules) == ({"clock-regression"} if moved else set())


@pytest.mark.parametrize("moved", [False, True], ids=["state-unmoved", "state-moved"])
def test_rebase_merge_of_a_proposal(state: Path, checkout: Path, moved: bool) -> None:
    fork = run(state, "rev-parse", STATE)
    _propose(state)
    if moved:
        _concurrent_write(state, checkout)
        run(checkout, "reset", "-q", "--hard", "loopx/state")
    before = run(state, "rev-parse", STATE)
    run(checkout, "cherry-pick", f"{fork}..proposal/p")
    rules = _after_merge(state, before)
    assert set(rules) == ({"clock-regression"} if moved else set())


def test_rebase_of_the_proposal_branch_itself(state: Path, tmp_path: Path) -> None:
    _propose(state)
    _concurrent_write(state)
    where = tmp_path / "proposal-checkout"
    run(state, "worktree", "add", "-q", str(where), "proposal/p")
    run(where, "rebase", "-q", "loopx/state")
    with Ledger.open(state, ref=PROPOSAL) as led:
        assert led.fold_at(led.tip()).problems == []


def test_a_proposal_in_a_fresh_clone_forks_from_origins_state(state: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    run(tmp_path, "clone", "-q", str(state), str(clone))
    run(clone, "fetch", "-q", "origin", "loopx/state:refs/remotes/origin/loopx/state")
    assert invoke(clone, "note", "add", "from the clone", "--state-ref", "proposal/c").code == 0
    assert run(clone, "rev-parse", "proposal/c~1") == run(state, "rev-parse", STATE)


def test_the_pull_request_flow_end_to_end(state: Path, tmp_path: Path) -> None:
    """Push a proposal to a bare remote; CI checks out the PR merged into loopx/state (as
    GitHub's refs/pull/N/merge) and runs the workflow's command."""
    origin = tmp_path / "origin.git"
    run(tmp_path, "init", "-q", "--bare", str(origin))
    run(state, "push", "-q", str(origin), "loopx/state")
    alice = tmp_path / "alice"
    run(tmp_path, "clone", "-q", str(origin), str(alice))
    answer = run_loopx(
        alice, "gate", "answer", "q-1", "--approve", "--state-ref", "proposal/q-1", actor=ALICE
    )
    assert answer.code == 0, answer.err
    run(alice, "push", "-q", "origin", "proposal/q-1")
    ci = tmp_path / "ci"
    run(tmp_path, "clone", "-q", "--no-checkout", str(origin), str(ci))
    run(ci, "checkout", "-q", "--detach", "origin/loopx/state")
    run(ci, "merge", "-q", "--no-ff", "-m", "Merge pull request #1", "origin/proposal/q-1")
    result = run_loopx(ci, "validate", "--range", "origin/loopx/state..HEAD")
    assert result.code == 0, result.out + result.err
    assert "answered gate q-1: approve" in result.out
