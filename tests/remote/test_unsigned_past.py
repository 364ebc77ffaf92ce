"""An authority act dated into the past where signing was off (session 36, hostile fleet).

Replay orders events by ``(clock, id)``, both the writer's word. Anyone who can push to the
hub could fork the state branch from before the maintainer's first ``signer add``, write an
event there dated just before it, merge and push: every honest clone took it as written
before the key was trusted. A config listing the attacker's key as ``human:alice`` then
turned signing on first, alice's own registration "needed a signature" by that key and was
dropped, and the attacker signed as alice from then on (``signer list`` showed its key).
A clone that holds the policy refuses such a tip now: one line, exit 1, nothing merged.
Real keys, real git, a bare hub, the CLI as a user runs it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import git, invoke
from statekit import commit_files, file_of, run, ssh_key

from loopx import Ledger
from loopx.model.events import make_event

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")

ALICE = "human:alice@example.com"
AGENT = "agent:bot"
STATE = "refs/heads/loopx/state"


def _events(repo: Path, tip: str) -> dict[str, tuple[str, str, int]]:
    """id -> (type, commit that added it, clock) on ``tip``."""
    found = {}
    for line in run(repo, "log", "--format=%H", "--reverse", tip).splitlines():
        for path in run(repo, "diff-tree", "--root", "-r", "--name-only", "--no-commit-id",
                        line).splitlines():
            name = path.rsplit("/", 1)[-1]
            event_id, kind = name.split(".", 1)
            clock = int(run(repo, "show", f"{line}:{path}").split("clock: ")[1].split()[0])
            found[event_id] = (kind.removesuffix(".yaml"), line, clock)
    return found


def _before(repo: Path, tip: str, target: str, step: int = 1) -> tuple[str, int, str]:
    """(a parent to fork from, a clock, an id) that sort an event just before ``target``."""
    events = _events(repo, tip)
    _, commit, clock = events[target]
    parent = run(repo, "rev-parse", f"{commit}^")
    # Same clock, an id ``step`` lower (a ULID is a number in Crockford base32).
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    number = sum(alphabet.index(c) * 32 ** n for n, c in enumerate(reversed(target))) - step
    forged = "".join(alphabet[number // 32 ** n % 32] for n in reversed(range(len(target))))
    assert forged < target
    return parent, clock, forged


@pytest.fixture
def fleet(repo: Path, tmp_path: Path) -> dict[str, Any]:
    """Alice's ledger on a bare hub: a goal, a todo held by gate q-1 (opened before signing
    was on), alice's key trusted on first use, gate q-2 opened after; an agent's clone."""
    alice_key = ssh_key(tmp_path, "alice")[0]
    agent_key = ssh_key(tmp_path, "agent")
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    git(repo, "remote", "add", "origin", str(hub))
    for args in (["init"], ["config", "set", "--role", f"maintainer={ALICE}"],
                 ["goal", "add", "Ship", "--id", "g-1"], ["todo", "add", "g-1", "Build", "--id", "t-1"],
                 ["todo", "add", "g-1", "Plain", "--id", "t-0"]):
        assert invoke(repo, *args, actor=ALICE).code == 0
    assert invoke(repo, "gate", "open", "g-1", "Ship it?", "--id", "q-1", "--authority",
                  "role:maintainer", "--blocks", "t-1", actor=AGENT).code == 0
    added = invoke(repo, "signer", "add", ALICE, "--key", f"{alice_key}.pub", actor=ALICE)
    assert added.code == 0, added.err
    run(repo, "config", "gpg.format", "ssh")
    run(repo, "config", "user.signingkey", str(alice_key))
    assert invoke(repo, "gate", "open", "g-1", "Docs?", "--id", "q-2", "--authority",
                  ALICE, actor=AGENT).code == 0
    assert invoke(repo, "sync", actor=ALICE).code == 0
    agent = tmp_path / "agent-clone"
    git(tmp_path, "clone", "-q", str(hub), str(agent))
    git(agent, "fetch", "-q", "origin", f"{STATE}:{STATE}")
    tip = run(repo, "rev-parse", STATE)
    signer_add = next(i for i, (kind, _, _) in sorted(_events(repo, tip).items())
                      if kind == "config.set" and "allowed_signers" in run(
                          repo, "show", f"{tip}:{_path(repo, tip, i)}"))
    return {"hub": hub, "agent": agent, "agent_key": agent_key, "alice_key": alice_key,
            "tip": tip, "signer_add": signer_add}


def _path(repo: Path, tip: str, event_id: str) -> str:
    return next(p for p in run(repo, "ls-tree", "-r", "--name-only", tip).splitlines()
                if event_id in p)


def _forge(repo: Path, fleet: dict[str, Any], target: str, type: str, data: dict[str, Any],
           actor: str = ALICE, step: int = 1) -> None:
    """In the agent's clone: an event dated just before ``target``, on a fork from before
    it, merged with the hub's tip and pushed there (plain git, never through loopx)."""
    agent, tip = fleet["agent"], fleet["tip"]
    parent, clock, forged = _before(repo, tip, target, step)
    ev = make_event(type=type, data=data, event_id=forged, at="2026-11-29T12:00:00Z",
                    clock=clock, actor=actor, goal=None)
    side = commit_files(agent, "refs/heads/forged", dict([file_of(ev)]), parent=parent)
    union = run(agent, "commit-tree", _union_tree(agent, tip, side), "-p", tip, "-p", side,
                "-m", "union")
    git(agent, "push", "-q", "origin", f"{union}:{STATE}")


def _union_tree(repo: Path, a: str, b: str) -> str:
    files = {}
    for rev in (a, b):
        for line in run(repo, "ls-tree", "-r", rev).splitlines():
            meta, path = line.split("\t", 1)
            files[path] = meta.split()[2]
    index = repo / ".git" / "union-index"
    env = {"GIT_INDEX_FILE": str(index)}
    run(repo, "read-tree", "--empty", env=env)
    for path, oid in files.items():
        run(repo, "update-index", "--add", "--cacheinfo", f"100644,{oid},{path}", env=env)
    tree = run(repo, "write-tree", env=env)
    index.unlink()
    return tree


def _signers(public: str) -> str:
    return f"{ALICE} {public}\n"


FORGERIES: dict[str, Callable[[Path, dict[str, Any]], None]] = {
    # the key trusted on first use taken over: another key listed as alice, first
    "signers before the first key": lambda repo, f: _forge(repo, f, f["signer_add"], "config.set", {
        "signed_answers": "all", "allowed_signers": _signers(f["agent_key"][1])}),
    # the maintainer role given to the agent where no signature was needed
    "roles before the first key": lambda repo, f: _forge(repo, f, f["signer_add"], "config.set", {
        "roles": {"maintainer": [AGENT]}}),
    # a gate opened before signing was on, answered in alice's name, dated before her key
    "answer before the first key": lambda repo, f: _forge(repo, f, f["signer_add"], "gate.answered", {
        "id": "q-1", "decision": "approve"}),
    # the held todo finished past its gate, dated before the key
    "done before the first key": lambda repo, f: _forge(repo, f, f["signer_add"], "todo.done", {
        "id": "t-1"}),
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_an_authority_act_dated_before_the_first_key_is_refused(
        repo: Path, fleet: dict[str, Any], forgery: str) -> None:
    with Ledger.open(repo) as led:
        before = led.fold()
        gates = {k: v.state for k, v in before.gates.items()}
        todos = {k: v.state for k, v in before.todos.items()}
        config = dict(before.config)
    tip = run(repo, "rev-parse", STATE)
    FORGERIES[forgery](repo, fleet)
    synced = invoke(repo, "sync", actor=ALICE)
    assert synced.code == 1
    lines = synced.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), synced.err
    assert "written into the past" in lines[0] and "Traceback" not in synced.err
    assert run(repo, "rev-parse", STATE) == tip  # nothing merged
    with Ledger.open(repo) as led:
        fold = led.fold()
        assert {k: v.state for k, v in fold.gates.items()} == gates
        assert {k: v.state for k, v in fold.todos.items()} == todos
        assert fold.config == config and not fold.problems
    listed = invoke(repo, "signer", "list", "--format", "json", actor=ALICE)
    assert fleet["agent_key"][1].split()[1] not in listed.out


def test_an_act_dated_after_the_key_and_other_early_events_still_merge(
        repo: Path, fleet: dict[str, Any]) -> None:
    """Not every late arrival is refused: a note and a todo with no gate finished, dated
    before the key (they decide nothing), and a signed answer from a clone that did not see
    the latest events, merge as before."""
    _forge(repo, fleet, fleet["signer_add"], "note.added", {"id": "n-early", "text": "hi"},
           actor=AGENT)
    synced = invoke(repo, "sync", actor=ALICE)
    assert synced.code == 0, synced.err
    fleet["tip"] = run(repo, "rev-parse", STATE)
    git(fleet["agent"], "fetch", "-q", "origin", f"+{STATE}:{STATE}")
    _forge(repo, fleet, fleet["signer_add"], "todo.done", {"id": "t-0"}, actor=AGENT, step=2)
    synced = invoke(repo, "sync", actor=ALICE)
    assert synced.code == 0, synced.err
    with Ledger.open(repo) as led:  # merged (whatever the fold's own rules make of it)
        assert any(e.type == "todo.done" for e in led.reader.read_events(led.tip() or "", []))
    late = repo.parent / "alice-laptop"
    git(repo.parent, "clone", "-q", str(fleet["hub"]), str(late))
    git(late, "fetch", "-q", "origin", f"{STATE}:{STATE}")
    run(late, "config", "gpg.format", "ssh")
    run(late, "config", "user.signingkey", str(fleet["alice_key"]))
    assert invoke(repo, "note", "add", "meanwhile", actor=ALICE).code == 0
    answered = invoke(late, "gate", "answer", "q-2", "--approve", actor=ALICE)
    assert answered.code == 0, answered.err
    assert invoke(late, "sync", actor=ALICE).code == 0
    synced = invoke(repo, "sync", actor=ALICE)
    assert synced.code == 0, synced.err
    shown = json.loads(invoke(repo, "gate", "show", "q-2", "--format", "json", actor=ALICE).out)
    assert shown["state"] == "answered"


def test_a_signer_dated_where_signing_was_off_again_is_refused(
        repo: Path, fleet: dict[str, Any]) -> None:
    """Not only before the first key: alice turns signing off (signed) and on again; a config
    dated between the two, listing another key as hers, would turn it on first again."""
    assert invoke(repo, "config", "set", "--signed-answers", "off", actor=ALICE).code == 0
    assert invoke(repo, "note", "add", "unsigned for a while", actor=ALICE).code == 0
    assert invoke(repo, "config", "set", "--signed-answers", "all", actor=ALICE).code == 0
    assert invoke(repo, "sync", actor=ALICE).code == 0
    tip = fleet["tip"] = run(repo, "rev-parse", STATE)
    git(fleet["agent"], "fetch", "-q", "origin", f"+{STATE}:{STATE}")
    again = max(i for i, (kind, _, _) in _events(repo, tip).items() if kind == "config.set")
    _forge(repo, fleet, again, "config.set", {
        "signed_answers": "all", "allowed_signers": _signers(fleet["agent_key"][1])})
    synced = invoke(repo, "sync", actor=ALICE)
    assert synced.code == 1 and "written into the past" in synced.err, synced.err
    assert run(repo, "rev-parse", STATE) == tip
