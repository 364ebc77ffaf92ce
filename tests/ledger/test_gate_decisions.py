"""Gate decisions (issue 12, items 5 and 6), with real signed commits.

Withdrawing a gate is a decision: only its opener or its authority, signed when answers must
be. Two decisions that did not see each other (a superseded approval from an old proposal
merged after a later rejection) resolve for neither: the gate is conflicted, its todos wait,
and the authority decides again with an answer that supersedes them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke
from statekit import commit_files, event, file_of, run, ssh_key

from loopx import Ledger
from loopx.review.validate import validate

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")

ALICE = "human:alice@example.com"
BOB = "human:bob@example.com"
AGENT = "agent:codex@devbox"
MALLORY = "agent:mallory"
STATE = "refs/heads/loopx/state"


@pytest.fixture
def keys(repo: Path, tmp_path: Path) -> dict[str, Path]:
    """A ledger whose maintainers are alice and bob, with signed answers required; gate q-1
    (asked of the maintainers, opened by the agent) blocks todo t-1."""
    made = {name: ssh_key(tmp_path, name) for name in ("alice", "bob", "mallory")}
    signers = tmp_path / "allowed_signers"
    signers.write_text(f"alice@example.com {made['alice'][1]}\nbob@example.com {made['bob'][1]}\n")
    assert invoke(repo, "init", actor=ALICE).code == 0
    setup = [["goal", "add", "Ship", "--id", "g-1"], ["todo", "add", "g-1", "Build", "--id", "t-1"],
             ["config", "set", "--role", f"maintainer={ALICE},{BOB}", "--signed-answers", "all",
              "--allowed-signers", str(signers)]]
    result = invoke(repo, "batch", input="\n".join(json.dumps(x) for x in setup), actor=ALICE)
    assert result.code == 0, result.err
    opened = invoke(repo, "gate", "open", "g-1", "Ship it?", "--id", "q-1", "--authority",
                    "role:maintainer", "--blocks", "t-1", actor=AGENT)
    assert opened.code == 0, opened.err
    return {name: key for name, (key, _) in made.items()}


def _sign_as(repo: Path, key: Path) -> None:
    run(repo, "config", "gpg.format", "ssh")
    run(repo, "config", "user.signingkey", str(key))


def _clock(repo: Path, ref: str = STATE) -> int:
    with Ledger.open(repo, ref=ref) as led:
        return int(led.fold().max_clock)


def _decision(type_: str, actor: str, clock: int, **data: Any) -> tuple[str, bytes]:
    return file_of(event(type_, {"id": "q-1", **data}, clock=clock, actor=actor, goal="g-1"))


def _gate(repo: Path, ref: str = STATE) -> dict[str, Any]:
    with Ledger.open(repo, ref=ref) as led:
        fresh = led.fold_at(led.tip() or "")
        cached = led.fold()
        assert fresh.gates["q-1"] == cached.gates["q-1"]  # replay and the cache agree
        return {"gate": fresh.gates["q-1"], "problems": fresh.problems,
                "ready": "t-1" in led.snapshot()["frontier"]}


# --- item 5: withdrawal is a decision ----------------------------------------------------------


def test_an_outsider_cannot_withdraw_a_gate(repo: Path, keys: dict[str, Path]) -> None:
    result = invoke(repo, "gate", "withdraw", "q-1", actor=MALLORY)
    assert result.code == 1
    assert ("withdrawn by its opener agent:codex@devbox or by role:maintainer "
            "(human:alice@example.com, human:bob@example.com) only") in result.err
    assert _gate(repo)["gate"].state == "open"


def test_an_unsigned_withdrawal_made_by_hand_is_refused_and_fails_validate(
        repo: Path, keys: dict[str, Path]) -> None:
    ref = "refs/heads/p/withdraw"
    for actor in (MALLORY, ALICE):  # an outsider, then the authority without a signature
        path, data = _decision("gate.withdrawn", actor, _clock(repo) + 1)
        commit_files(repo, ref, {path: data}, parent=run(repo, "rev-parse", STATE))
        found = _gate(repo, ref)
        assert found["gate"].state == "open" and not found["ready"]
        report = validate(Ledger.open(repo), base=STATE, head=ref)
        assert [f.rule for f in report.findings] == ["unauthorised-answer"], report.findings
    assert "not in a commit signed" in found["problems"][-1].reason


def test_a_withdrawal_signed_by_another_listed_key_is_refused(repo: Path,
                                                              keys: dict[str, Path]) -> None:
    path, data = _decision("gate.withdrawn", ALICE, _clock(repo) + 1)
    ref = "refs/heads/p/bob-as-alice"
    commit_files(repo, ref, {path: data}, sign_key=keys["bob"])
    assert _gate(repo, ref)["gate"].state == "open"
    assert not validate(Ledger.open(repo), base=STATE, head=ref).ok


def test_the_authority_withdraws_with_a_signed_commit(repo: Path, keys: dict[str, Path]) -> None:
    _sign_as(repo, keys["alice"])
    result = invoke(repo, "gate", "withdraw", "q-1", "--reason", "not needed", actor=ALICE)
    assert result.code == 0, result.err
    assert "-----BEGIN SSH SIGNATURE-----" in run(repo, "cat-file", "commit", STATE)
    found = _gate(repo)
    assert found["gate"].state == "withdrawn" and found["ready"]


def test_the_opener_may_withdraw_where_answers_need_no_signature(repo: Path) -> None:
    lines = [["goal", "add", "G", "--id", "g-1"],
             ["gate", "open", "g-1", "Ok?", "--id", "q-1", "--authority", ALICE]]
    assert invoke(repo, "init", actor=AGENT).code == 0
    assert invoke(repo, "batch", input="\n".join(json.dumps(x) for x in lines),
                  actor=AGENT).code == 0
    assert invoke(repo, "gate", "withdraw", "q-1", actor=MALLORY).code == 1
    assert invoke(repo, "gate", "withdraw", "q-1", actor=AGENT).code == 0


# --- item 6: decisions that did not see each other ---------------------------------------------


def _old_proposal(repo: Path, keys: dict[str, Path]) -> tuple[str, str]:
    """Alice's signed approval on a proposal branch that is never merged (at first)."""
    path, data = _decision("gate.answered", ALICE, _clock(repo) + 1, decision="approve")
    ref = "refs/heads/p/old"
    commit_files(repo, ref, {path: data}, sign_key=keys["alice"])
    return ref, path


def _merge_into_state(repo: Path, other: str) -> None:
    """What sync or a pull request merge does: a two-parent commit with the union tree."""
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        env = {"GIT_INDEX_FILE": f"{scratch}/index"}
        run(repo, "read-tree", STATE, env=env)
        listing = run(repo, "ls-tree", "-r", "--full-tree", other)
        for line in listing.splitlines():
            meta, path = line.split("\t")
            mode, _, oid = meta.split()
            run(repo, "update-index", "--add", "--cacheinfo", f"{mode},{oid},{path}", env=env)
        tree = run(repo, "write-tree", env=env)
    merge = run(repo, "commit-tree", tree, "-p", STATE, "-p", other, "-m", "merge proposal")
    run(repo, "update-ref", STATE, merge)


def test_an_old_signed_approval_merged_after_a_signed_rejection_conflicts(
        repo: Path, keys: dict[str, Path]) -> None:
    old, _ = _old_proposal(repo, keys)
    _sign_as(repo, keys["bob"])
    assert invoke(repo, "gate", "answer", "q-1", "--reject", actor=BOB).code == 0
    assert not validate(Ledger.open(repo), base=STATE, head=old).ok  # conflicts-with-base
    _merge_into_state(repo, old)
    found = _gate(repo)
    gate = found["gate"]
    assert gate.state == "conflicted" and gate.decision is None and not found["ready"]
    assert sorted((d["decision"], d["actor"]) for d in gate.decisions) == [
        ("approve", ALICE), ("reject", BOB)]
    assert not found["problems"]  # both are valid, signed decisions: neither is dropped
    for who in (ALICE, BOB):  # the authority is asked to decide again, with both answers
        snap = invoke(repo, "status", "--json", "--offline", actor=who).json()
        asked = [a for a in snap["actions"] if a.get("gate") == "q-1"]  # type: ignore[index]
        assert asked and asked[0]["kind"] == "answer_gate"
        assert "approve by human:alice" in asked[0]["reason"]
        assert "reject by human:bob" in asked[0]["reason"]
    text = invoke(repo, "status", actor=AGENT).out
    assert "did not see each other" in text and "--supersede" in text
    # Answering again without saying it replaces both is refused on write.
    refused = invoke(repo, "gate", "answer", "q-1", "--approve", actor=BOB)
    assert refused.code == 1 and "--supersede" in refused.err
    assert invoke(repo, "gate", "answer", "q-1", "--reject", "--supersede", actor=BOB).code == 0
    found = _gate(repo)
    assert (found["gate"].state, found["gate"].decision) == ("answered", "reject")
    assert "-----BEGIN SSH SIGNATURE-----" in run(repo, "cat-file", "commit", STATE)


def test_an_unsigned_superseding_answer_does_not_resolve_a_conflict(
        repo: Path, keys: dict[str, Path]) -> None:
    old, _ = _old_proposal(repo, keys)
    _sign_as(repo, keys["bob"])
    assert invoke(repo, "gate", "answer", "q-1", "--reject", actor=BOB).code == 0
    _merge_into_state(repo, old)
    superseding = [d["event"] for d in _gate(repo)["gate"].decisions]
    path, data = _decision("gate.answered", BOB, _clock(repo) + 1, decision="approve",
                           supersedes=superseding)
    commit_files(repo, STATE, {path: data})  # unsigned
    found = _gate(repo)
    assert found["gate"].state == "conflicted" and not found["ready"]
    assert "not in a commit signed" in found["problems"][-1].reason


def test_two_unseen_approvals_agree_and_need_no_new_decision(repo: Path,
                                                             keys: dict[str, Path]) -> None:
    old, _ = _old_proposal(repo, keys)
    _sign_as(repo, keys["bob"])
    assert invoke(repo, "gate", "answer", "q-1", "--approve", actor=BOB).code == 0
    _merge_into_state(repo, old)
    found = _gate(repo)
    assert (found["gate"].state, found["gate"].decision) == ("answered", "approve")
    assert found["ready"]


def test_an_answer_and_a_withdrawal_that_did_not_see_each_other_conflict(
        repo: Path, keys: dict[str, Path]) -> None:
    old, _ = _old_proposal(repo, keys)
    _sign_as(repo, keys["bob"])
    assert invoke(repo, "gate", "withdraw", "q-1", actor=BOB).code == 0
    _merge_into_state(repo, old)
    found = _gate(repo)
    assert found["gate"].state == "conflicted" and not found["ready"]
    assert {d["kind"] for d in found["gate"].decisions} == {"answer", "withdraw"}


def test_a_range_that_answers_a_decided_gate_without_superseding_fails_validate(
        repo: Path, keys: dict[str, Path]) -> None:
    _sign_as(repo, keys["alice"])
    assert invoke(repo, "gate", "answer", "q-1", "--approve", actor=ALICE).code == 0
    path, data = _decision("gate.answered", BOB, _clock(repo) + 1, decision="reject")
    ref = "refs/heads/p/second"
    commit_files(repo, ref, {path: data}, sign_key=keys["bob"])
    report = validate(Ledger.open(repo), base=STATE, head=ref)
    assert [f.rule for f in report.findings] == ["conflicting-decision"], report.findings


def test_a_superseding_answer_replaces_the_decision_it_saw(repo: Path,
                                                           keys: dict[str, Path]) -> None:
    _sign_as(repo, keys["alice"])
    assert invoke(repo, "gate", "answer", "q-1", "--approve", actor=ALICE).code == 0
    again = invoke(repo, "gate", "answer", "q-1", "--reject", actor=ALICE)
    assert again.code == 1 and "already answered (approve by human:alice" in again.err
    assert invoke(repo, "gate", "answer", "q-1", "--reject", "--supersede", actor=ALICE).code == 0
    found = _gate(repo)
    assert (found["gate"].state, found["gate"].decision) == ("answered", "reject")
    log = invoke(repo, "log", "-n", "1").out
    assert "answered gate q-1: reject (replacing " in log
