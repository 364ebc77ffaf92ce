"""The hostile-remote corpus: states forged with real plumbing, pushed to a bare remote, synced.

Each is quarantined (local state unchanged, the files and reasons reported) or, for an event
type from a newer loopx, accepted and reported.
"""

from __future__ import annotations

import json

from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import git, invoke, run_loopx
from syncutil import clone, do_sync, forge, note, seeded, snapshot, state_files, tip


def _event(type_: str = "note.added", data: dict[str, Any] | None = None, v: int = 1) -> tuple[str, bytes]:
    from loopx.model import codec
    from loopx.model import ids
    from loopx.model.paths import event_dir

    event_id = ids.new_event_id()
    doc = {"id": event_id, "type": type_, "v": v, "at": "2030-01-01T00:00:00Z", "clock": 50,
           "actor": "agent:mallory", "data": data or {"id": "n-evil", "text": "hi"}}
    return f"{event_dir(event_id)}/{event_id}.{type_}.yaml", codec.dump(doc)


def _existing_event(repo: Path, ref: str) -> str:
    return next(p for p in state_files(repo, ref) if p.startswith("events/"))


def _dotdot(repo: Path, base: str) -> str:
    return forge(repo, base, add={"../escape.yaml": ("100644", b"x: 1\n")})


def _dotgit(repo: Path, base: str) -> str:
    return forge(repo, base, add={".git/hooks/post-checkout": ("100644", b"#!/bin/sh\n")})


def _symlink(repo: Path, base: str) -> str:
    path, _ = _event()
    return forge(repo, base, add={path: ("120000", b"/etc/passwd")})


def _gitlink(repo: Path, base: str) -> str:
    path, _ = _event()
    return forge(repo, base, add={path: ("160000", base.encode())})


def _executable(repo: Path, base: str) -> str:
    path, data = _event()
    return forge(repo, base, add={path: ("100755", data)})


def _oversize(repo: Path, base: str) -> str:
    path, _ = _event()
    return forge(repo, base, add={path: ("100644", b"x: " + b"a" * 300_000 + b"\n")})


def _alias_bomb(repo: Path, base: str) -> str:
    path, _ = _event()
    bomb = b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n" \
           b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    return forge(repo, base, add={path: ("100644", bomb)})


def _invalid_event(repo: Path, base: str) -> str:
    path, data = _event(data={"id": "n-1", "text": "hi", "surprise": True})
    return forge(repo, base, add={path: ("100644", data)})


def _outside_layout(repo: Path, base: str) -> str:
    return forge(repo, base, add={"README.md": ("100644", b"hello\n")})


def _case_collision(repo: Path, base: str) -> str:
    return forge(repo, base, add={"sessions/abc/transcript-1/0001.txt": ("100644", b"a"),
                                  "sessions/ABC/transcript-1/0001.txt": ("100644", b"b")})


def _deleted(repo: Path, base: str) -> str:
    return forge(repo, base, drop=(_existing_event(repo, base),))


def _modified(repo: Path, base: str) -> str:
    path = _existing_event(repo, base)
    old = git(repo, "cat-file", "blob", f"{base}:{path}")
    return forge(repo, base, add={path: ("100644", old.replace("loopx_version", "loopx_version").encode() + b"#\n")})


def _rewritten(repo: Path, base: str) -> str:
    """Drop the remote's newest commit and put a different one in its place (force-push)."""
    parent = git(repo, "rev-parse", f"{base}^")
    path, data = _event()
    return forge(repo, parent, add={path: ("100644", data)}, parent=parent)


def _odd_directory(name: str) -> Callable[[Path, str], str]:
    """A new directory whose name git's ``<rev>:<path>`` answers cannot be split on (a space,
    a tab: "<name> missing" was read as "<oid> <type> <size>") or that is not UTF-8."""
    def make(repo: Path, base: str) -> str:
        from statekit import commit_files

        path, data = _event()
        odd = path.replace("events/", f"events/{name}/", 1)
        git(repo, "update-ref", "refs/heads/forged", base)
        return commit_files(repo, "refs/heads/forged", {odd: data})
    return make


def _odd_file(rename: Callable[[str], str], data: bytes | None = None) -> Callable[[Path, str], str]:
    """A new file at a path one step from a valid one: a pattern anchored with ``$`` takes a
    name ending in a line break, and ``\\d`` takes any script's digits."""
    def make(repo: Path, base: str) -> str:
        from statekit import commit_files

        path, event = _event()
        git(repo, "update-ref", "refs/heads/forged", base)
        return commit_files(repo, "refs/heads/forged", {rename(path): data or event})
    return make


_CHECKPOINT = "checkpoints/" + "a" * 40 + "/manifest.json"
CORPUS: dict[str, tuple[Callable[[Path, str], str], str]] = {
    "a line break ending an event's name": (_odd_file(lambda p: p + "\n"), "not an event path"),
    "a line break ending a transcript chunk's name": (
        _odd_file(lambda p: "sessions/s-1/transcript-1/0000.txt\n", b"t"),
        "not a valid sessions/ path"),
    "a line break ending a checkpoint file's name": (
        _odd_file(lambda p: _CHECKPOINT + "\n", b"{}"), "not a valid checkpoints/ path"),
    "another script's digits in an event's date": (
        _odd_file(lambda p: p.replace(p[7:11], "".join(chr(0x660 + int(c)) for c in p[7:11]), 1)),
        "not an event path"),
    "a space in a new directory": (_odd_directory("a b"), "not an event path"),
    "a tab in a new directory": (_odd_directory("a\tb"), "not an event path"),
    "a line break in a new directory": (_odd_directory("a\nb"), "not an event path"),
    "a name not in UTF-8": (_odd_directory(b"bad-\xff".decode("utf-8", "surrogateescape")),
                            "not an event path"),
    "rewritten history": (_rewritten, "rewritten"),
    "deleted event": (_deleted, "deleted"),
    "modified event": (_modified, "modified"),
    "dot-dot path": (_dotdot, "not a normal relative path"),
    "dot-git path": (_dotgit, "names .git"),
    "symlink": (_symlink, "is a symlink"),
    "gitlink": (_gitlink, "gitlink"),
    "executable": (_executable, "executable"),
    "oversize file": (_oversize, "over the 256 KiB cap"),
    "alias bomb": (_alias_bomb, "anchor"),
    "invalid event": (_invalid_event, "surprise"),
    "outside the layout": (_outside_layout, "outside the state layout"),
    "case collision": (_case_collision, "case-insensitive"),
}


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(remote, victim, attacker): the victim has merged the remote's newest commit."""
    remote, (victim, attacker) = seeded(tmp_path, 2)
    note(victim, "agent:victim", "before the attack")
    do_sync(victim)
    git(attacker, "fetch", "-q", "origin")
    return remote, victim, attacker


@pytest.mark.parametrize("case", list(CORPUS))
def test_hostile_remote_state_is_quarantined_and_local_state_unchanged(
        pair: tuple[Path, Path, Path], case: str) -> None:
    remote, victim, attacker = pair
    make, reason = CORPUS[case]
    forged = make(attacker, git(attacker, "rev-parse", "origin/loopx/state"))
    git(attacker, "push", "-q", "-f", "origin", f"{forged}:refs/heads/loopx/state")
    note(victim, "agent:victim", "local work")
    before, files = tip(victim), state_files(victim)

    result = invoke(victim, "sync")

    assert result.code == 1, result.out
    assert "quarantined as refs/loopx/quarantine/origin/" in result.err
    assert reason in result.err
    assert tip(victim) == before and state_files(victim) == files
    refs = git(victim, "for-each-ref", "--format=%(objectname) %(refname)", "refs/loopx/quarantine/")
    assert refs.split()[0] == forged
    report = victim / ".git" / "loopx" / "quarantine" / (refs.split()[1].removeprefix("refs/loopx/quarantine/") + ".txt")
    assert reason in report.read_text()
    again = invoke(victim, "sync")  # still refused, and quarantined once
    assert again.code == 1 and len(git(victim, "for-each-ref", "refs/loopx/quarantine/").splitlines()) == 1
    assert "quarantines" in invoke(victim, "doctor", "--format", "json").out


def test_status_says_while_the_remotes_state_is_quarantined_and_not_once_it_is_fixed(
        pair: tuple[Path, Path, Path]) -> None:
    remote, victim, attacker = pair
    good = git(attacker, "rev-parse", "origin/loopx/state")
    git(attacker, "push", "-q", "-f", "origin", f"{_modified(attacker, good)}:refs/heads/loopx/state")
    assert invoke(victim, "sync").code == 1

    def repairs() -> list[dict[str, str]]:
        doc = json.loads(invoke(victim, "status", "--json").out)
        return [a for a in doc["actions"] if a["kind"] == "repair"]

    (action,) = repairs()
    assert "quarantined as refs/loopx/quarantine/origin/" in action["reason"]
    assert action["command"] == "git loopx doctor"
    assert invoke(victim, "next").code == 0

    git(attacker, "push", "-q", "-f", "origin", f"{good}:refs/heads/loopx/state")  # fixed
    assert invoke(victim, "sync").code == 0
    assert repairs() == []


def test_event_of_an_unknown_type_from_a_newer_loopx_is_kept(pair: tuple[Path, Path, Path]) -> None:
    remote, victim, attacker = pair
    path, data = _event("widget.added", {"anything": [1, 2]}, v=3)
    forged = forge(attacker, git(attacker, "rev-parse", "origin/loopx/state"), add={path: ("100644", data)})
    git(attacker, "push", "-q", "origin", f"{forged}:refs/heads/loopx/state")

    result = invoke(victim, "sync", "--format", "json")

    assert result.code == 0, result.err
    assert result.json()["unknown_events"] == [path]
    assert path in state_files(victim)
    assert [u["type"] for u in snapshot(victim)["unknown_events"]] == ["widget.added"]


def test_a_fresh_clone_does_not_adopt_a_hostile_origin(pair: tuple[Path, Path, Path], tmp_path: Path) -> None:
    remote, victim, attacker = pair
    forged = _symlink(attacker, git(attacker, "rev-parse", "origin/loopx/state"))
    git(attacker, "push", "-q", "origin", f"{forged}:refs/heads/loopx/state")
    fresh = clone(remote, tmp_path / "fresh")

    result = run_loopx(fresh, "status")

    assert result.code == 1 and "was not adopted" in result.err and "is a symlink" in result.err
    assert tip(fresh) is None
    doctor = run_loopx(fresh, "doctor", "--format", "json")
    assert doctor.json()["health"]["quarantines"][0]["tip"] == forged


def test_a_session_transcript_chunk_is_accepted(pair: tuple[Path, Path, Path]) -> None:
    remote, victim, attacker = pair
    chunk = "sessions/s-1/transcript-1/0000.txt"
    forged = forge(attacker, git(attacker, "rev-parse", "origin/loopx/state"),
                   add={chunk: ("100644", b"hello transcript\n")})
    git(attacker, "push", "-q", "origin", f"{forged}:refs/heads/loopx/state")
    result = invoke(victim, "sync")
    assert result.code == 0, result.err
    assert chunk in state_files(victim)


def test_the_bulk_check_of_a_whole_tip_finds_what_every_rule_finds(
        pair: tuple[Path, Path, Path]) -> None:
    """A fresh clone judges the whole tip, most lines by one pattern: on every hostile
    shape (and neighbours the pattern almost accepts) it must find exactly what the
    line-by-line rules find."""
    from loopx.remote import incoming
    from loopx.storage import gateway
    from loopx.storage.store import Store

    _, _, attacker = pair
    base = git(attacker, "rev-parse", "origin/loopx/state")
    path, data = _event()
    day, name = path.rsplit("/", 1)
    cp = "checkpoints/" + "a" * 40
    neighbours = {
        f"{day}/{name.lower()}": ("100644", data),  # a lowercase id
        f"{day}/{name[:-5]}.yml": ("100644", data),
        f"{day}/{name.replace('.note.added', '.Note.added')}": ("100644", data),
        f"{day}/x{name}": ("100644", data),
        f"Events/{path[7:]}": ("100644", data),
        f"{cp}/rows-0001.tsv": ("100644", b"x\n"),
        f"{cp}/manifest.json": ("100755", b"{}"),
        f"{cp}/rows-1.tsv": ("100644", b"x\n"),
        "checkpoints/" + "A" * 40 + "/manifest.json": ("100644", b"{}"),
        f"{day}/{_event()[0].rsplit('/', 1)[1]}": ("100644", b"x" * (256 * 1024 + 1)),
        _event()[0]: ("100644", b"x" * (256 * 1024)),  # exactly the cap: allowed
        "sessions/s-1/transcript-1/0000.txt": ("100644", b"t"),
    }
    tips = [make(attacker, base) for make, _ in CORPUS.values() if make is not _rewritten]
    tips.append(forge(attacker, base, add=neighbours))
    other = "checkpoints/" + "b" * 40  # only plain files: a collision with them alone
    tips.append(forge(attacker, base, add={f"{other}/manifest.json": ("100644", b"{}"),
                                          f"{other.upper()}/manifest.json": ("100644", b"{}")}))
    tips.append(forge(attacker, base, add={f"EVENTS/{path[7:]}": ("100644", data)}))
    store = Store(gateway.discover(attacker))
    refused: list[bool] = []
    try:
        for tip in tips:
            bulk = incoming._check_whole(store, tip, True)
            each = incoming._check_whole(store, tip, True, bulk=False)  # every rule, each line
            assert bulk.counted == each.counted
            found, expected = set(map(repr, bulk.findings)), set(map(repr, each.findings))
            assert found == expected, (found - expected, expected - found)
            assert bulk.unknown == each.unknown
            refused.append(bool(each.findings))
    finally:
        store.close()
    assert refused[-3:] == [True, True, True]  # the neighbours are refused, not just alike


@pytest.mark.parametrize("broken", [5, 150])
def test_a_refusal_is_bounded_however_many_files_the_remote_broke(
        pair: tuple[Path, Path, Path], broken: int) -> None:
    """Hundreds of hostile files with long names (and a control character in one): sync's
    refusal says how many findings, the first few clipped, and where the report lists them
    all; it does not grow with them (it was 20 findings whole, 4 KB at 150-character paths)."""
    remote, victim, attacker = pair
    base = git(attacker, "rev-parse", "origin/loopx/state")
    long = "x" * 400
    files = {f"events/{n:03d}-{long}\x1b[2J.yaml": ("100644", b"x: 1\n") for n in range(broken)}
    git(attacker, "push", "-q", "-f", "origin",
        f"{forge(attacker, base, add=files)}:refs/heads/loopx/state")

    result = invoke(victim, "sync")

    assert result.code == 1
    (line,) = result.err.splitlines()
    assert len(line) < 2000 and "\x1b" not in line
    said = "at least 100 findings" if broken > 100 else f"({broken} findings)"
    assert said in line and "events/000-xxx" in line
    assert "events/003-" not in line and ("... and" in line) == (broken > 3)
    report = Path(line.rsplit("report: ", 1)[1])
    assert report.read_text().count("events/") >= min(broken, 100)
