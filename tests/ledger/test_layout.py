"""One set of per-file rules (loopx.ledger.layout): the same hostile change fed through
`git loopx validate` and through sync's incoming check is refused by both, under the same rule."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
from conftest import git, invoke
from statekit import event, file_of
from syncutil import forge

from loopx import Ledger
from loopx.remote import incoming
from loopx.ledger import layout
from loopx.model.paths import TRANSCRIPT_CHUNK_BYTES
from loopx.review.validate import validate

STATE = "refs/heads/loopx/state"
PROPOSAL = "refs/heads/proposal/p"
CHUNK = "sessions/s-1/transcript-1/0001.txt"
Change = Callable[[Path, str], str]  # (repo, state tip) -> forged commit on top of it


@pytest.fixture
def state(repo: Path) -> Path:
    assert invoke(repo, "init").code == 0
    assert invoke(repo, "goal", "add", "Ship", "--id", "g-1").code == 0
    return repo


def _note(clock: int = 99, **extra: object) -> tuple[str, bytes]:
    return file_of(event("note.added", {"id": "n-1", "text": "hi", **extra}, clock=clock))


def _add(path: str, data: bytes, mode: str = "100644") -> Change:
    return lambda repo, base: forge(repo, base, add={path: (mode, data)})


def _event_at(mode: str) -> Change:
    path, data = _note()
    return _add(path, data, mode)


def _renamed(repo: Path, base: str) -> str:
    _, data = _note()
    other, _ = _note()  # another event's name: a fresh id
    return forge(repo, base, add={other: ("100644", data)})


def _schema(repo: Path, base: str) -> str:
    path, _ = _note()
    _, data = file_of(event("note.added", {"id": "n-1", "text": "hi"}, clock=99))
    return forge(repo, base, add={path: ("100644", data.replace(b"text: hi", b"txt: hi"))})


def _unreal(repo: Path, base: str) -> str:
    path, data = _note()  # dated 2026-11-29; 31 November is no day
    return forge(repo, base, add={path: ("100644", data.replace(b"2026-11-29", b"2026-11-31"))})


def _events(repo: Path, base: str) -> list[str]:
    out = git(repo, "ls-tree", "-r", "--name-only", base).splitlines()
    return [p for p in out if p.startswith("events/")]


def _deleted(repo: Path, base: str) -> str:
    return forge(repo, base, drop=(_events(repo, base)[-1],))


def _modified(repo: Path, base: str) -> str:
    path = _events(repo, base)[-1]
    data = git(repo, "cat-file", "blob", f"{base}:{path}").encode() + b"\n# edited\n"
    return forge(repo, base, add={path: ("100644", data)})


def _case(repo: Path, base: str) -> str:
    return forge(repo, base, add={CHUNK: ("100644", b"a"),
                                  CHUNK.replace("s-1", "S-1"): ("100644", b"b")})


CASES: dict[str, tuple[Change, str]] = {
    "dot-dot": (_add("../escape.yaml", b"x: 1\n"), "bad-path"),
    "dot-git": (_add(".git/hooks/post-checkout", b"#!/bin/sh\n"), "bad-path"),
    "dot-git 8.3 name": (_add("events/GIT~1/x", b"x"), "bad-path"),
    "outside the layout": (_add("README.md", b"hello\n"), "bad-path"),
    "not an event path": (_add("events/notes.txt", b"hello\n"), "bad-path"),
    "not a chunk path": (_add("sessions/s-1/notes.txt", b"hello\n"), "bad-path"),
    "case collision": (_case, "bad-path"),
    "symlink": (_event_at("120000"), "bad-mode"),
    "executable": (_event_at("100755"), "bad-mode"),
    "oversize event": (_add(_note()[0], b"x: " + b"a" * 300_000 + b"\n"), "too-big"),
    "oversize chunk": (_add(CHUNK, b"a" * (TRANSCRIPT_CHUNK_BYTES + 1)), "too-big"),
    "bad yaml": (_add(_note()[0], b"id: [unclosed\n"), "bad-yaml"),
    "alias bomb": (_add(_note()[0], b"a: &a [x]\nb: *a\n"), "bad-yaml"),
    "schema": (_schema, "schema"),
    "a date that is not real": (_unreal, "schema"),
    "name does not match id": (_renamed, "schema"),
    "deleted": (_deleted, "deleted"),
    "modified": (_modified, "modified"),
}


def _validate_rules(repo: Path, forged: str) -> set[str]:
    git(repo, "update-ref", PROPOSAL, forged)
    with Ledger.open(repo) as led:
        found = validate(led, base=STATE, head=PROPOSAL).findings
    return {f.rule for f in found if f.rule in FILE_RULES}


def _incoming_rules(repo: Path, forged: str) -> set[str]:
    with Ledger.open(repo) as led:
        verdict = incoming.check(led.store, theirs=forged, ours=STATE)
    return {f.rule for f in verdict.findings}


FILE_RULES = {"bad-path", "bad-mode", "too-big", "bad-yaml", "schema", "modified", "deleted"}


@pytest.mark.parametrize("case", list(CASES))
def test_validate_and_sync_refuse_a_hostile_file_under_the_same_rule(
        state: Path, case: str) -> None:
    change, rule = CASES[case]
    forged = change(state, git(state, "rev-parse", STATE))
    assert _incoming_rules(state, forged) == {rule}
    assert _validate_rules(state, forged) == {rule}


def test_a_clean_change_passes_both(state: Path) -> None:
    path, data = file_of(event("note.added", {"id": "n-1", "text": "hi"}, clock=99))
    forged = forge(state, git(state, "rev-parse", STATE),
                   add={path: ("100644", data), CHUNK: ("100644", b"chunk\n")})
    assert _incoming_rules(state, forged) == set()
    git(state, "update-ref", PROPOSAL, forged)
    with Ledger.open(state) as led:
        assert validate(led, base=STATE, head=PROPOSAL).ok


@pytest.mark.parametrize("status, rule", [
    ("A", None), ("AA", None), ("M", "modified"), ("T", "modified"), ("D", "deleted"),
    ("AM", "modified"), ("AD", "deleted"),
])
def test_change_rule_reads_git_status_letters(status: str, rule: str | None) -> None:
    broken = layout.change_rule(status)
    assert (broken.rule if broken else None) == rule


def test_case_collisions_name_the_later_spelling() -> None:
    found = layout.case_collisions({"sessions": {"abc", "ABC", "xyz"}, "": {"sessions"}})
    assert [(path, b.rule) for path, b in found] == [("sessions/abc", "bad-path")]


def test_read_events_gives_each_file_what_read_event_gives_it_alone() -> None:
    """Files read stage by stage, together (what replay does), come out as each would alone:
    the same event, or the same error with the same words, in order, whatever their mix."""
    from loopx.errors import CodecError, SchemaError
    from loopx.storage.batches import Oversize

    good, data = _note()
    other, _ = _note()
    files: list[tuple[str, bytes | Oversize | None]] = [
        (good, data),
        ("events/notes.txt", data),  # not an event path
        (_note()[0], None),  # blob missing
        (_note()[0], Oversize("blob", 300_000)),
        (_note()[0], b"id: [unclosed\n"),
        (_note()[0], b"- a list\n"),  # YAML, not a mapping
        (good, data.replace(b"text: hi", b"txt: hi")),
        (other, data),  # another event's name
        _note(clock=7),
    ]
    alone: list[object] = []
    for path, blob in files:
        try:
            alone.append(layout.read_event(path, blob))
        except (CodecError, SchemaError) as exc:
            alone.append(exc)
    together = layout.read_events(files)
    assert [type(x) for x in together] == [type(x) for x in alone]
    assert [str(x) if isinstance(x, Exception) else x.env for x in together] == \
        [str(x) if isinstance(x, Exception) else x.env for x in alone]
    kinds = [type(x).__name__ for x in together]
    assert kinds == ["Event", "SchemaError", "SchemaError", "CodecError", "CodecError",
                     "SchemaError", "SchemaError", "SchemaError", "Event"]


def test_a_broken_files_path_is_said_once_where_status_shows_it(repo: Path) -> None:
    """Status said "PATH: PATH: not valid YAML" (the problem's subject, then its reason
    naming the path again), and the repair action "first: PATH: PATH: ...". Each says the
    path once, for every kind of broken file: bad YAML, a schema error, a copy, a symlink."""
    import subprocess

    from conftest import git, invoke
    from loopx.model.paths import file_path

    assert invoke(repo, "init").code == 0
    assert invoke(repo, "note", "add", "hi").code == 0
    stamp = "01KB" + "A" * 22
    bad = {file_path(stamp, "note.added"): ("100644", "id: x\n: : :\n"),
           file_path("01KB" + "B" * 22, "note.added"): ("100644", "just: text\n"),
           file_path("01KB" + "C" * 22, "note.added"): ("120000", "/etc/passwd")}
    env = {**__import__("os").environ, "GIT_INDEX_FILE": str(repo / ".git" / "t-index")}
    git(repo, "read-tree", "--index-output=.git/t-index", "refs/heads/loopx/state")
    for path, (mode, text) in bad.items():
        blob = git(repo, "hash-object", "-w", "--stdin", input=text)
        subprocess.run(["git", "update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}"],
                       cwd=repo, env=env, check=True)
    tree = subprocess.run(["git", "write-tree"], cwd=repo, env=env, check=True,
                          capture_output=True, text=True).stdout.strip()
    git(repo, "update-ref", "refs/heads/loopx/state",
        git(repo, "commit-tree", tree, "-p", "refs/heads/loopx/state", "-m", "broken"))

    text = invoke(repo, "status").out
    problems = invoke(repo, "status", "--json").json()["problems"]  # type: ignore[index]

    assert sorted(p["event"] for p in problems) == sorted(bad)
    for path in bad:
        assert text.count(path) == 1 + (path == min(bad)), text  # (the repair names the first)
    assert all(p["event"] not in p["reason"] for p in problems)
