"""Verified authority: when the config requires signed answers, an answer counts only if the
commit that added it is signed by the answerer's key in allowed_signers (git verifies it)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import invoke
from statekit import commit_files, event, file_of, run, ssh_key

from loopx import Ledger
from loopx.review.validate import validate

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")

ALICE = "human:alice@example.com"
BOB = "human:bob@example.com"
STATE = "refs/heads/loopx/state"


@pytest.fixture
def signed(repo: Path, tmp_path: Path) -> dict[str, object]:
    """A ledger whose maintainer is alice; gate answers must be signed by alice or bob's key."""
    keys = {name: ssh_key(tmp_path, name) for name in ("alice", "bob", "mallory")}
    signers = tmp_path / "allowed_signers"
    signers.write_text(f"alice@example.com {keys['alice'][1]}\nbob@example.com {keys['bob'][1]}\n")
    lines = [
        ["goal", "add", "Ship", "--id", "g-1", "--accept", "works"],
        ["todo", "add", "g-1", "Build", "--id", "t-1"],
        [
            "config",
            "set",
            "--role",
            f"maintainer={ALICE}",
            "--signed-answers",
            "all",
            "--allowed-signers",
            str(signers),
        ],
    ]
    lines += [
        ["gate", "open", "g-1", f"Question {gate}?", "--id", gate, "--authority", who]
        for gate, who in (
            ("q-1", "role:maintainer"),
            ("q-2", "human:carol@example.com"),
            ("q-3", "role:maintainer"),
        )
    ]
    assert invoke(repo, "init", actor=ALICE).code == 0
    result = invoke(repo, "batch", input="\n".join(json.dumps(line) for line in lines), actor=ALICE)
    assert result.code == 0, result.err
    return {"keys": keys}


def _use_key(repo: Path, key: Path) -> None:
    run(repo, "config", "gpg.format", "ssh")
    run(repo, "config", "user.signingkey", str(key))


def _answer(
    gate: str, *, actor: str = ALICE, decision: str = "approve", clock: int = 50
) -> tuple[str, bytes]:
    return file_of(
        event(
            "gate.answered",
            {"id": gate, "decision": decision},
            clock=clock,
            actor=actor,
            goal="g-1",
        )
    )


def _refused(repo: Path, ref: str, gate: str) -> str:
    """The reason the answer on ``ref`` was not applied (the gate must still be open)."""
    with Ledger.open(repo, ref=ref) as led:
        fold = led.fold()
        assert fold.gates[gate].state == "open"
        reasons = [p.reason for p in fold.problems if p.type == "gate.answered"]
        report = validate(led, base=STATE, head=ref)
    assert [f.rule for f in report.findings] == ["unauthorised-answer"], report.findings
    assert len(reasons) == 1
    return reasons[0]


def test_a_signed_answer_by_the_authority_is_applied(repo: Path, signed: dict) -> None:
    _use_key(repo, signed["keys"]["alice"][0])
    result = invoke(repo, "gate", "answer", "q-1", "--approve", "--comment", "fine", actor=ALICE)
    assert result.code == 0, result.err
    with Ledger.open(repo) as led:
        assert led.fold().gates["q-1"].state == "answered"
        assert led.fold_at(led.tip()).gates["q-1"].decision == "approve"  # fresh, not cached
    assert "-----BEGIN SSH SIGNATURE-----" in run(repo, "cat-file", "commit", STATE)
    log = invoke(repo, "log", "-n", "1").out
    assert "answered gate q-1: approve — 'fine'  (signed by alice@example.com)" in log
    assert validate(Ledger.open(repo), base=f"{STATE}~1", head=STATE).ok


def test_answering_without_a_listed_key_is_refused_before_the_ref_moves(
    repo: Path, signed: dict
) -> None:
    _use_key(repo, signed["keys"]["mallory"][0])
    before = run(repo, "rev-parse", STATE)
    result = invoke(repo, "gate", "answer", "q-1", "--approve", actor=ALICE)
    assert result.code == 1
    assert "allowed_signers" in result.err
    assert run(repo, "rev-parse", STATE) == before


def test_forgery_unsigned_commit(repo: Path, signed: dict) -> None:
    path, data = _answer("q-3")
    commit_files(repo, "refs/heads/p/unsigned", {path: data})
    assert "not in a commit signed" in _refused(repo, "refs/heads/p/unsigned", "q-3")


def test_forgery_signed_by_a_key_not_in_the_list(repo: Path, signed: dict) -> None:
    path, data = _answer("q-3")
    commit_files(repo, "refs/heads/p/mallory", {path: data}, sign_key=signed["keys"]["mallory"][0])
    assert "not in a commit signed" in _refused(repo, "refs/heads/p/mallory", "q-3")


def test_forgery_listed_signer_answering_in_the_authoritys_name(repo: Path, signed: dict) -> None:
    path, data = _answer("q-3", actor=ALICE)
    commit_files(repo, "refs/heads/p/bob-as-alice", {path: data}, sign_key=signed["keys"]["bob"][0])
    reason = _refused(repo, "refs/heads/p/bob-as-alice", "q-3")
    assert reason == f"the answer to gate q-3 is signed by bob@example.com, not by {ALICE}"


def test_forgery_listed_signer_who_is_not_the_gates_authority(repo: Path, signed: dict) -> None:
    path, data = _answer("q-3", actor=BOB)
    commit_files(repo, "refs/heads/p/bob", {path: data}, sign_key=signed["keys"]["bob"][0])
    assert "answered by role:maintainer (" in _refused(repo, "refs/heads/p/bob", "q-3")


def test_forgery_validly_signed_answer_for_another_gate(repo: Path, signed: dict) -> None:
    path, data = _answer("q-2", actor=ALICE)  # q-2 asks carol, not alice
    commit_files(repo, "refs/heads/p/other", {path: data}, sign_key=signed["keys"]["alice"][0])
    assert "answered by human:carol@example.com only" in _refused(repo, "refs/heads/p/other", "q-2")


def test_forgery_tampered_signed_commit(repo: Path, signed: dict) -> None:
    path, data = _answer("q-3", decision="approve")
    good = commit_files(
        repo, "refs/heads/p/good", {path: data}, sign_key=signed["keys"]["alice"][0]
    )
    # Keep alice's signature header, swap the tree for one whose answer says "reject".
    forged_blob = run(
        repo, "hash-object", "-w", "--stdin", input=data.replace(b"approve", b"reject")
    )
    raw = run(repo, "cat-file", "commit", good)
    tree_with = _tree_with(repo, f"{good}^{{tree}}", path, forged_blob)
    tampered = raw.replace(raw.split("\n", 1)[0], f"tree {tree_with}", 1)
    oid = run(
        repo, "hash-object", "-t", "commit", "-w", "--stdin", input=(tampered + "\n").encode()
    )
    run(repo, "update-ref", "refs/heads/p/tampered", oid)
    assert "not in a commit signed" in _refused(repo, "refs/heads/p/tampered", "q-3")
    with Ledger.open(repo, ref="refs/heads/p/good") as led:  # the untampered one is fine
        assert led.fold().gates["q-3"].decision == "approve"


def test_forgery_answer_rewritten_after_it_was_signed(repo: Path, signed: dict) -> None:
    path, data = _answer("q-3", decision="approve")
    ref = "refs/heads/p/rewritten"
    commit_files(repo, ref, {path: data}, sign_key=signed["keys"]["alice"][0])
    commit_files(repo, ref, {path: data.replace(b"approve", b"reject")})
    with Ledger.open(repo, ref=ref) as led:
        fold = led.fold()
        assert fold.gates["q-3"].state == "open"
        assert "not in a commit signed" in fold.problems[-1].reason
        rules = {f.rule for f in validate(led, base=STATE, head=ref).findings}
    assert rules == {"modified", "unauthorised-answer"}


def _tree_with(repo: Path, tree: str, path: str, blob: str) -> str:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        env = {"GIT_INDEX_FILE": f"{scratch}/index"}
        run(repo, "read-tree", tree, env=env)
        run(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
        return run(repo, "write-tree", env=env)


def test_answering_with_no_signing_key_says_how_to_set_one(repo: Path, signed: dict) -> None:
    result = invoke(repo, "gate", "answer", "q-1", "--approve", actor=ALICE)
    assert result.code == 1
    assert "user.signingkey" in result.err


def test_answers_arriving_on_a_cached_ledger_are_verified_too(repo: Path, signed: dict) -> None:
    """A fetched tip is folded incrementally from the cache: signatures must still count."""
    with Ledger.open(repo) as led:
        led.fold()  # cache the current tip, so the next read advances from it
    path, data = _answer("q-1", clock=40)
    commit_files(repo, STATE, {path: data}, sign_key=signed["keys"]["alice"][0])
    path, data = _answer("q-3", clock=41)
    commit_files(repo, STATE, {path: data})  # unsigned
    with Ledger.open(repo) as led:
        assert led.fold().gates["q-1"].state == "answered"
        assert led.fold().gates["q-3"].state == "open"
    status = invoke(repo, "status", "--format", "json").json()
    assert "not in a commit signed" in status["problems"][0]["reason"]


def test_an_unsigned_config_change_cannot_switch_signing_off(repo: Path, signed: dict) -> None:
    with Ledger.open(repo) as led:
        clock = led.fold().max_clock
    off = file_of(
        event(
            "config.set",
            {"signed_answers": "off", "roles": {"maintainer": [BOB]}},
            clock=clock + 1,
            actor=ALICE,
        )
    )
    answer = _answer("q-3", actor=BOB, clock=clock + 2)
    ref = "refs/heads/p/config"
    commit_files(repo, ref, dict([off]))
    commit_files(repo, ref, dict([answer]))
    with Ledger.open(repo, ref=ref) as led:
        fold = led.fold()
        assert fold.config["signed_answers"] == "all"
        assert fold.gates["q-3"].state == "open"
        rules = sorted(f.rule for f in validate(led, base=STATE, head=ref).findings)
    assert rules == ["unauthorised-answer", "unauthorised-config"]


def test_a_signed_config_change_by_a_listed_signer_applies(repo: Path, signed: dict) -> None:
    _use_key(repo, signed["keys"]["alice"][0])
    result = invoke(repo, "config", "set", "--role", f"maintainer={ALICE},{BOB}", actor=ALICE)
    assert result.code == 0, result.err
    with Ledger.open(repo) as led:
        assert led.fold_at(led.tip()).config["roles"]["maintainer"] == [ALICE, BOB]
    # Settings that do not decide who may answer need no signature.
    run(repo, "config", "--unset", "user.signingkey")
    assert invoke(repo, "config", "set", "--lease-ttl", "30m", actor=ALICE).code == 0


def test_sign_on_request_when_the_config_does_not_require_it(repo: Path, tmp_path: Path) -> None:
    key, _ = ssh_key(tmp_path, "dave")
    _use_key(repo, key)
    lines = [
        ["goal", "add", "G", "--id", "g-1"],
        ["gate", "open", "g-1", "Ok?", "--id", "q-1", "--authority", ALICE],
    ]
    assert invoke(repo, "init", actor=ALICE).code == 0
    assert (
        invoke(repo, "batch", input="\n".join(json.dumps(x) for x in lines), actor=ALICE).code == 0
    )
    assert invoke(repo, "gate", "answer", "q-1", "--approve", "--sign", actor=ALICE).code == 0
    assert "-----BEGIN SSH SIGNATURE-----" in run(repo, "cat-file", "commit", STATE)
