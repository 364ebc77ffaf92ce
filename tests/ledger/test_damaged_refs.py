"""A state ref that cannot be read, or that points at something other than a commit, is
damage to name (issue 22, "The ledger is read as written"), with real git: never an empty
ledger, never a write that starts a new root over it; `doctor` names it and `doctor
--repair` puts the last good tip of the reflog back, keeping the damaged ref's bytes aside.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import git, invoke
from syncutil import STATE, event_ids

LOOSE = Path(".git") / STATE


def _packed_garbage(repo: Path) -> str:
    git(repo, "pack-refs", "--all")
    packed = repo / ".git" / "packed-refs"
    packed.write_text(packed.read_text().replace(f" {STATE}\n", f"x {STATE}\n"))
    return "its line in"


def _packed_line(change: Callable[[str], str]) -> Callable[[Path], str]:
    """A packed-refs whose state line ``change`` spoils (a cut object id, CRLF endings)."""
    def damage(repo: Path) -> str:
        git(repo, "pack-refs", "--all")
        packed = repo / ".git" / "packed-refs"
        packed.write_bytes(change(packed.read_text()).encode())
        return "its line in"
    return damage


def _loose_garbage(repo: Path) -> str:
    (repo / LOOSE).write_text("not a commit id\n")
    return "holds 'not a commit id'"


def _points_at(kind: str) -> Callable[[Path], str]:
    def damage(repo: Path) -> str:
        oid = {"tree": lambda: git(repo, "rev-parse", f"{STATE}^{{tree}}"),
               "blob": lambda: git(repo, "hash-object", "-w", "README"),
               "tag": lambda: (git(repo, "tag", "-a", "-m", "t", "t1", STATE),
                               git(repo, "rev-parse", "t1"))[1],
               "tag of a tree": lambda: git(repo, "mktag", input=(
                   f"object {git(repo, 'rev-parse', STATE + '^{tree}')}\ntype tree\ntag tt\n"
                   "tagger T <t@example.com> 0 +0000\n\nm\n"))}[kind]()
        (repo / LOOSE).write_text(oid + "\n")
        return f"points at a {kind.removesuffix(' of a tree')} ({oid[:12]}), not a commit"
    return damage


def _symref(repo: Path) -> str:
    (repo / LOOSE).write_text("ref: refs/heads/main\n")
    return "is a symbolic ref to refs/heads/main"


def _gone(repo: Path) -> str:
    git(repo, "pack-refs", "--all")
    packed = repo / ".git" / "packed-refs"
    packed.write_text("".join(line for line in packed.read_text().splitlines(keepends=True)
                              if not line.endswith(f" {STATE}\n")))
    return "is gone, but its reflog says it pointed at"


DAMAGE = {"packed-refs line": _packed_garbage, "loose garbage": _loose_garbage,
          "packed-refs id cut short": _packed_line(
              lambda text: re.sub(rf"^([0-9a-f]{{30}})[0-9a-f]+ {STATE}$", rf"\1 {STATE}", text,
                                  flags=re.M)),
          "packed-refs with CRLF": _packed_line(lambda text: text.replace("\n", "\r\n")),
          "loose id with garbage": lambda repo: (
              (repo / LOOSE).write_text(git(repo, "rev-parse", STATE) + "garbage\n"),
              "garbage', not a commit id")[1],
          "tree": _points_at("tree"), "blob": _points_at("blob"), "tag": _points_at("tag"),
          "tag of a tree": _points_at("tag of a tree"),
          "symref": _symref, "deleted, reflog kept": _gone}


@pytest.mark.parametrize("name", list(DAMAGE))
def test_a_damaged_state_ref_is_named_refuses_writes_and_is_restored_from_the_reflog(
        ledger: object, repo: Path, name: str) -> None:
    for text in ("one", "two"):
        assert invoke(repo, "note", "add", text).code == 0
    good, events = git(repo, "rev-parse", STATE), event_ids(repo)
    said = DAMAGE[name](repo)
    reflog = (repo / ".git" / "logs" / STATE).read_text()
    for args in (("status",), ("note", "add", "three"), ("init",), ("log",)):
        result = invoke(repo, *args)
        assert result.code == 1, (args, result.out, result.err)
        assert said in result.err and "doctor" in result.err, (args, result.err)
        assert "pruned" not in result.err and "git loopx init`" not in result.err
        assert len(result.err.strip().splitlines()) == 1
    assert (repo / ".git" / "logs" / STATE).read_text() == reflog  # no write, no new root
    doctor = invoke(repo, "doctor")
    assert doctor.code == 1 and said in doctor.out and f"back at {good[:12]}" in doctor.out
    repaired = invoke(repo, "doctor", "--repair")
    assert repaired.code == 0, repaired.out + repaired.err
    assert git(repo, "rev-parse", STATE) == good and event_ids(repo) == events
    kept = list((repo / ".git" / "loopx" / "damaged").iterdir())  # the damaged bytes
    assert kept or name == "deleted, reflog kept"
    assert invoke(repo, "note", "add", "three").code == 0
    assert git(repo, "rev-list", "--count", STATE) == "4"
    assert invoke(repo, "doctor").code == 0


def test_a_ref_of_the_wrong_type_is_restored_by_rollback_too(ledger: object, repo: Path) -> None:
    good = git(repo, "rev-parse", STATE)
    _points_at("tree")(repo)
    rolled = invoke(repo, "doctor", "--rollback")
    assert rolled.code == 0, rolled.out + rolled.err
    assert git(repo, "rev-parse", STATE) == good


def test_a_clone_without_a_ledger_is_still_told_to_init(repo: Path) -> None:
    result = invoke(repo, "status")
    assert result.code == 1 and "git loopx init" in result.err
    assert invoke(repo, "init").code == 0 and invoke(repo, "status").code == 0


def test_a_damaged_line_of_another_ref_leaves_the_ledger_readable(ledger: object,
                                                                  repo: Path) -> None:
    git(repo, "branch", "other")
    git(repo, "pack-refs", "--all")
    packed = repo / ".git" / "packed-refs"
    packed.write_text(packed.read_text().replace(" refs/heads/other\n", "x refs/heads/other\n"))
    assert invoke(repo, "note", "add", "still").code == 0
    assert invoke(repo, "status").code == 0
