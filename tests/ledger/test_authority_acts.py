"""Authority acts need proof (issue 21): once a maintainer registers a key, answering,
withdrawing or superseding a gate, finishing or cancelling work a gate holds, an override, a
forced spend and changes to roles, signers or policy count only in a commit signed by the
actor's listed key (git's own ssh signing, real keys made here). Refused on write without it;
an unsigned or forged one that arrives by fetch is a problem and changes nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import pytest
from conftest import git, invoke
from statekit import commit_files, event, file_of, run, ssh_key

from loopx import Ledger

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")

ALICE = "human:alice@example.com"
BOB = "human:bob@example.com"
AGENT = "agent:codex@devbox"
STATE = "refs/heads/loopx/state"


def _setup(repo: Path) -> None:
    """Goal g-1 whose todo t-1 waits on gate q-1 (asked of the maintainer alice, opened by the
    agent); goal g-2 with an unmet criterion and no work; a budget of one turn."""
    lines = [["config", "set", "--role", f"maintainer={ALICE}"],
             ["goal", "add", "Ship", "--id", "g-1"],
             ["goal", "add", "Docs", "--id", "g-2", "--accept", "written"],
             ["todo", "add", "g-1", "Build", "--id", "t-1"],
             ["quota", "set", "--goal", "g-1", "--turns", "1"]]
    assert invoke(repo, "init", actor=ALICE).code == 0
    done = invoke(repo, "batch", input="\n".join(json.dumps(line) for line in lines), actor=ALICE)
    assert done.code == 0, done.err
    opened = invoke(repo, "gate", "open", "g-1", "Ship it?", "--id", "q-1", "--authority",
                    "role:maintainer", "--blocks", "t-1", actor=AGENT)
    assert opened.code == 0, opened.err


@pytest.fixture
def keys(repo: Path, tmp_path: Path) -> dict[str, Path]:
    """The ledger above, with alice's key registered (trust on first use)."""
    _setup(repo)
    made = {name: ssh_key(tmp_path, name)[0] for name in ("alice", "bob", "mallory")}
    added = invoke(repo, "signer", "add", ALICE, "--key", f"{made['alice']}.pub", actor=ALICE)
    assert added.code == 0, added.err
    return made


def _sign_with(repo: Path, key: Path | None) -> None:
    if key is None:
        subprocess.run(["git", "config", "--unset-all", "user.signingkey"], cwd=repo)
        return
    run(repo, "config", "gpg.format", "ssh")
    run(repo, "config", "user.signingkey", str(key))


def _tip(repo: Path) -> str:
    return run(repo, "rev-parse", STATE)


def test_the_first_key_is_trusted_on_first_use_and_turns_signing_on(repo: Path,
                                                                     tmp_path: Path) -> None:
    _setup(repo)
    key, public = ssh_key(tmp_path, "alice")
    added = invoke(repo, "signer", "add", ALICE, "--key", f"{key}.pub", actor=ALICE)
    assert added.code == 0, added.err
    assert "trusted on first use" in added.out and "Signing is on" in added.out
    with Ledger.open(repo) as led:
        config = led.fold().config
    assert config["signed_answers"] == "all"
    assert config["allowed_signers"] == f"{ALICE} {public}\n"
    listed = invoke(repo, "signer", "list", "--json", actor=ALICE).json()
    assert [s["identity"] for s in listed] == [ALICE]
    assert listed[0]["fingerprint"] in subprocess.run(
        ["ssh-keygen", "-l", "-f", f"{key}.pub"], capture_output=True, text=True).stdout
    # A private key given by mistake, or anything else, is refused with one line.
    for wrong in (key, tmp_path / "nothing.pub"):
        if not wrong.exists():
            wrong.write_text("ssh-ed25519 AAAAnotakey\n")
        refused = invoke(repo, "signer", "add", BOB, "--key", str(wrong), actor=ALICE)
        assert refused.code == 1 and refused.err.startswith("error: not an ssh public key")


def test_later_signer_changes_must_be_signed_by_a_listed_key(repo: Path,
                                                             keys: dict[str, Path]) -> None:
    before = _tip(repo)
    for key in (None, keys["bob"], keys["mallory"]):  # no key, or one the ledger does not list
        _sign_with(repo, key)
        refused = invoke(repo, "signer", "add", BOB, "--key", f"{keys['bob']}.pub", actor=ALICE)
        assert refused.code == 1 and "sign" in refused.err, refused.err
        assert _tip(repo) == before
    # A key cannot vouch for its own registration: judged by the list it changes.
    _sign_with(repo, keys["mallory"])
    for who in (ALICE, BOB):
        refused = invoke(repo, "signer", "add", who, "--key", f"{keys['mallory']}.pub",
                         actor=ALICE)
        assert refused.code == 1 and "signed by no key listed there" in refused.err, refused.err
    assert _tip(repo) == before
    _sign_with(repo, keys["alice"])
    added = invoke(repo, "signer", "add", BOB, "--key", f"{keys['bob']}.pub", actor=ALICE)
    assert added.code == 0, added.err
    assert "trusted on first use" not in added.out
    assert "-----BEGIN SSH SIGNATURE-----" in run(repo, "cat-file", "commit", STATE)
    # Bob's key now signs as bob, not as alice.
    _sign_with(repo, keys["bob"])
    assert invoke(repo, "gate", "answer", "q-1", "--approve", actor=ALICE).code == 1
    assert invoke(repo, "signer", "remove", ALICE, actor=BOB).code == 0


# Each authority act, as a command: (actor, argv), on the ledger of `keys`.
ACTS: dict[str, list[tuple[str, list[str]]]] = {
    "answer": [(ALICE, ["gate", "answer", "q-1", "--reject"])],
    "withdraw": [(ALICE, ["gate", "withdraw", "q-1", "--reason", "not needed"])],
    "finish past the gate": [(ALICE, ["todo", "done", "t-1", "--reason", "shipped anyway"])],
    "cancel past the gate": [(ALICE, ["todo", "cancel", "t-1", "--reason", "dropped"])],
    "override": [(ALICE, ["goal", "close", "g-2", "--achieved", "--override", "--reason",
                          "good enough"])],
    "force": [(ALICE, ["quota", "spend", "--goal", "g-1", "--turns", "5", "--force",
                       "--reason", "overran"])],
    "roles": [(ALICE, ["config", "set", "--role", f"maintainer={ALICE},{BOB}"])],
    "policy": [(ALICE, ["config", "set", "--signed-answers", "off"])],
    "signers": [(ALICE, ["signer", "remove", ALICE])],
}


@pytest.mark.parametrize("act", sorted(ACTS))
def test_each_authority_act_is_refused_unsigned_and_accepted_signed(
        repo: Path, keys: dict[str, Path], act: str) -> None:
    for actor, argv in ACTS[act]:
        for key in (None, keys["mallory"]):
            _sign_with(repo, key)
            before = _tip(repo)
            refused = invoke(repo, *argv, actor=actor)
            assert refused.code == 1, (act, refused.out)
            assert "sign" in refused.err and len(refused.err.strip().splitlines()) == 1
            assert _tip(repo) == before
        _sign_with(repo, keys["alice"])
        accepted = invoke(repo, *argv, actor=actor)
        assert accepted.code == 0, (act, accepted.err)
        assert "-----BEGIN SSH SIGNATURE-----" in run(repo, "cat-file", "commit", STATE)
    with Ledger.open(repo) as led:
        fresh = led.fold_at(led.tip() or "")
        assert fresh.problems == []  # the signed act applies on replay too, not only on write


def test_a_supersede_is_an_authority_act_too(repo: Path, keys: dict[str, Path]) -> None:
    _sign_with(repo, keys["alice"])
    assert invoke(repo, "gate", "answer", "q-1", "--reject", actor=ALICE).code == 0
    _sign_with(repo, None)
    refused = invoke(repo, "gate", "answer", "q-1", "--approve", "--supersede", actor=ALICE)
    assert refused.code == 1 and "sign" in refused.err
    _sign_with(repo, keys["alice"])
    assert invoke(repo, "gate", "answer", "q-1", "--approve", "--supersede", actor=ALICE).code == 0


def test_acts_that_decide_nothing_need_no_signature(repo: Path, keys: dict[str, Path]) -> None:
    """Ordinary work stays unsigned: agents have no key, and need none."""
    for actor, argv in ((AGENT, ["todo", "add", "g-1", "More", "--id", "t-2"]),
                        (AGENT, ["todo", "done", "t-2", "--reason", "trivial"]),
                        (AGENT, ["quota", "spend", "--goal", "g-1", "--turns", "1"]),
                        (ALICE, ["config", "set", "--lease-ttl", "30m"])):
        result = invoke(repo, *argv, actor=actor)
        assert result.code == 0, (argv, result.err)


# --- the two holes of the issue, signed ledger or not -----------------------------------------


@pytest.mark.parametrize("signed", [False, True])
def test_only_the_authority_finishes_or_cancels_work_a_gate_holds(
        repo: Path, tmp_path: Path, signed: bool) -> None:
    _setup(repo)
    if signed:
        key = ssh_key(tmp_path, "alice")[0]
        assert invoke(repo, "signer", "add", ALICE, "--key", f"{key}.pub", actor=ALICE).code == 0
    for argv in (["todo", "done", "t-1", "--reason", "looks fine"],
                 ["todo", "cancel", "t-1", "--reason", "not needed"]):
        refused = invoke(repo, *argv, actor=AGENT)
        assert refused.code == 1
        assert refused.err.strip() == (
            f"error: todo t-1 waits for gate q-1 (open); {'finishing' if argv[1] == 'done' else 'cancelling'}"
            f" it is decided by role:maintainer ({ALICE}) only; you are {AGENT}")
    with Ledger.open(repo) as led:
        assert led.fold().todos["t-1"].state == "open"


@pytest.mark.parametrize("signed", [False, True])
def test_the_opener_cannot_reverse_the_authoritys_decision(repo: Path, tmp_path: Path,
                                                           signed: bool) -> None:
    _setup(repo)
    if signed:
        key = ssh_key(tmp_path, "alice")[0]
        assert invoke(repo, "signer", "add", ALICE, "--key", f"{key}.pub", actor=ALICE).code == 0
        _sign_with(repo, key)
    assert invoke(repo, "gate", "answer", "q-1", "--reject", actor=ALICE).code == 0
    refused = invoke(repo, "gate", "withdraw", "q-1", "--supersede", actor=AGENT)
    assert refused.code == 1
    assert "withdrawn now by role:maintainer (human:alice@example.com) only; you are agent:codex@devbox" in refused.err
    # Still rejected, the todo still held: finishing it past the reject is refused too.
    assert invoke(repo, "todo", "done", "t-1", "--reason", "x", actor=AGENT).code == 1
    with Ledger.open(repo) as led:
        assert led.fold().gates["q-1"].decision == "reject"


# --- what arrives by fetch -----------------------------------------------------------------


def _forge(clone: Path, type_: str, data: dict[str, object], *, actor: str = ALICE,
           goal: str | None = "g-1", key: Path | None = None) -> None:
    """Write an event into ``clone``'s state with git directly, as a forger would."""
    with Ledger.open(clone) as led:
        clock = led.fold().max_clock + 1
    path, blob = file_of(event(type_, data, clock=clock, actor=actor, goal=goal))
    commit_files(clone, STATE, {path: blob}, sign_key=key)


FORGERIES: dict[str, Callable[[Path, dict[str, Path]], None]] = {
    "unsigned answer": lambda c, k: _forge(c, "gate.answered", {"id": "q-1", "decision": "approve"}),
    "answer signed by an unlisted key": lambda c, k: _forge(
        c, "gate.answered", {"id": "q-1", "decision": "approve"}, key=k["mallory"]),
    "unsigned withdrawal": lambda c, k: _forge(c, "gate.withdrawn", {"id": "q-1"}),
    "unsigned finish past the gate": lambda c, k: _forge(
        c, "todo.done", {"id": "t-1", "reason": "forged"}),
    "unsigned cancel past the gate": lambda c, k: _forge(
        c, "todo.cancelled", {"id": "t-1", "reason": "forged"}),
    "unsigned override": lambda c, k: _forge(
        c, "goal.closed", {"id": "g-2", "outcome": "achieved", "override": True,
                           "reason": "forged"}, goal="g-2"),
    "unsigned new signer": lambda c, k: _forge(
        c, "config.set", {"allowed_signers": f"{ALICE} {ssh_pub(k['mallory'])}\n"}, goal=None),
}


def ssh_pub(key: Path) -> str:
    return " ".join(Path(f"{key}.pub").read_text().split()[:2])


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_a_forged_act_arriving_by_fetch_has_no_effect(repo: Path, tmp_path: Path,
                                                      keys: dict[str, Path], forgery: str) -> None:
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    git(repo, "remote", "add", "origin", str(hub))
    assert invoke(repo, "sync", actor=ALICE).code == 0
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(hub), str(other))
    git(other, "fetch", "-q", "origin", f"{STATE}:{STATE}")
    with Ledger.open(repo) as led:
        before = led.fold()
        gates, todos, goals = (dict((k, v.state) for k, v in t.items())
                               for t in (before.gates, before.todos, before.goals))
        config = dict(before.config)
    FORGERIES[forgery](other, keys)
    git(other, "push", "-q", "origin", STATE)
    synced = invoke(repo, "sync", actor=ALICE)
    assert synced.code == 0, synced.err
    status = invoke(repo, "status", "--format", "json", "--no-ci", actor=ALICE).json()
    with Ledger.open(repo) as led:
        for fold in (led.fold(), led.fold_at(led.tip() or "")):  # cached and replayed
            assert {k: v.state for k, v in fold.gates.items()} == gates
            assert {k: v.state for k, v in fold.todos.items()} == todos
            assert {k: v.state for k, v in fold.goals.items()} == goals
            assert fold.config == config
            assert len(fold.problems) == 1 and "sign" in fold.problems[0].reason
    assert [p["reason"] for p in status["problems"]] == [fold.problems[0].reason]


# --- review: a range is judged by the signers and policy at its base ---------------------------


def test_validate_rejects_a_range_that_adds_a_signer_and_uses_it(repo: Path,
                                                                 keys: dict[str, Path]) -> None:
    _sign_with(repo, keys["alice"])
    assert invoke(repo, "config", "set", "--role", f"maintainer={ALICE},{BOB}",
                  actor=ALICE).code == 0  # bob may answer, but has no key listed yet
    for proposal in ("proposal/bob", "proposal/add-only"):
        added = invoke(repo, "signer", "add", BOB, "--key", f"{keys['bob']}.pub",
                       "--state-ref", proposal, actor=ALICE)
        assert added.code == 0, added.err
    _sign_with(repo, keys["bob"])
    answered = invoke(repo, "gate", "answer", "q-1", "--approve", "--state-ref", "proposal/bob",
                      "--json", actor=BOB)
    assert answered.code == 0, answered.err  # at HEAD the key is listed: the answer applies
    report = invoke(repo, "validate", "--range", f"{STATE}..refs/heads/proposal/bob", "--json",
                    actor=ALICE)
    assert report.code == 1
    findings = report.json()["findings"]
    assert [(f["rule"], f["where"]) for f in findings] == [
        ("unauthorised-at-base", answered.json()["id"])]
    assert "judged by the signers and signing policy of the merge base" in findings[0]["message"]
    # The signer change alone is fine; once it is merged, bob's key counts.
    alone = invoke(repo, "validate", "--range", f"{STATE}..refs/heads/proposal/add-only",
                   actor=ALICE)
    assert alone.code == 0, alone.out
    git(repo, "update-ref", STATE, "refs/heads/proposal/add-only")
    assert invoke(repo, "gate", "answer", "q-1", "--approve", "--state-ref", "proposal/later",
                  actor=BOB).code == 0
    assert invoke(repo, "validate", "--range", f"{STATE}..refs/heads/proposal/later",
                  actor=ALICE).code == 0


def test_an_act_that_cannot_be_signed_says_what_git_said_in_one_line(
        repo: Path, keys: dict[str, Path]) -> None:
    before = _tip(repo)
    _sign_with(repo, keys["alice"])
    _sign_with(repo, None)  # ssh signing on, and no key to sign with
    refused = invoke(repo, "gate", "answer", "q-1", "--approve", actor=ALICE)
    assert refused.code == 1 and refused.err.count("\n") == 1, refused.err
    assert refused.err.startswith("error: could not sign the commit (git: fatal: either "
                                  "user.signingkey or gpg.ssh.defaultKeyCommand needs to be "
                                  "configured); "), refused.err
    assert "commit-tree" not in refused.err and _tip(repo) == before
