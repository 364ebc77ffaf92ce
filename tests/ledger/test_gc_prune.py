"""`git gc --prune=now` beside writers (issue 12, item 1), with real git.

A write's objects are unreachable until its CAS, and --prune=now deletes unreachable objects
of any age. An append is acknowledged only once every object it wrote is known to be on disk
(rewritten from the bytes still in memory if a prune took it); a ref that points at a missing
commit is explained, not taken for "no ledger"; `doctor` names each lost event and `doctor
--repair` goes on with every other one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, invoke
from syncutil import STATE, do_sync, event_ids, seeded, tip

TESTS = str(Path(__file__).parents[1])
WORKER = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from syncutil import open_ledger
from loopx.ops import notes, sessions
path, kind, count = Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
with open_ledger(path) as led:
    if kind == "session":
        led.run(sessions.open_, "gc test", id="s-" + str(path.name)[-4:] + sys.argv[5],
                path="/tmp", actor="agent:w")
    for n in range(count):
        if kind == "note":
            event = led.run(notes.add, "gc %d" % n, actor="agent:w")
            ids = [event.id]
        elif kind == "batch":  # 20 events: one pack, kept until the ref reaches it
            events, _ = led.write(lambda txn: [notes.add(txn, "batch %d" % i) for i in range(20)],
                                  actor="agent:w")
            ids = [e.id for e in events]
        else:  # transcript chunks are written before the commit is even built
            event = led.run(sessions.checkpoint, "s-" + str(path.name)[-4:] + sys.argv[5],
                            ("line %d\\n" % n).encode() * 20000, summary="so far",
                            actor="agent:w")
            ids = [event.id]
        print("ACK", json.dumps(ids), flush=True)
"""


def _writer(path: Path, kind: str, count: int, tag: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", WORKER, TESTS, str(path), kind, str(count), tag],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _acked(out: str) -> set[str]:
    return {i for line in out.splitlines() if line.startswith("ACK ")
            for i in json.loads(line[4:])}


def _fsck(path: Path) -> None:
    proc = subprocess.run(["git", "fsck", "--no-dangling", "--no-progress"], cwd=path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("rounds", [4, pytest.param(60, marks=pytest.mark.stress)])
def test_no_acknowledged_event_is_lost_to_gc_prune_now_beside_writers(
        tmp_path: Path, rounds: int) -> None:
    _, (clone,) = seeded(tmp_path, 1)
    writers = [_writer(clone, "note", 3 * rounds, "a"), _writer(clone, "note", 3 * rounds, "b"),
               _writer(clone, "batch", rounds, "c"), _writer(clone, "session", rounds, "d")]
    gcs = 0
    while any(w.poll() is None for w in writers):
        subprocess.run(["git", "gc", "--quiet", "--prune=now"], cwd=clone, capture_output=True)
        gcs += 1
    acked: set[str] = set()
    for proc in writers:
        out, err = proc.communicate()
        assert proc.returncode == 0, err
        acked |= _acked(out)
    assert gcs >= 3 and len(acked) == (3 + 3 + 20 + 1) * rounds
    assert acked <= set(event_ids(clone)), "acknowledged events are missing"
    _fsck(clone)
    assert invoke(clone, "doctor").code == 0
    for session in ("d",):  # every checkpointed transcript reads back byte-exact
        sid = "s-" + clone.name[-4:] + session
        assert invoke(clone, "session", "show", sid, "--transcript").code == 0
    subprocess.run(["git", "gc", "--quiet", "--prune=now"], cwd=clone, check=True)
    _fsck(clone)


def _prune_before_the_cas(monkeypatch: pytest.MonkeyPatch, what: str) -> list[str]:
    """Make every CAS of loopx/state happen just after a prune deleted the new commit's own
    objects (``what``: its blobs, or the commit itself), as `gc --prune=now` can."""
    from loopx.storage.store import Store

    deleted: list[str] = []
    real = Store.update_ref_if

    def cas(self: Store, ref: str, new: str, **kwargs: object) -> None:
        if ref == STATE:
            old = kwargs.get("expected")
            if what == "commit":
                victims = [new]
            else:
                listing = git(self.cwd, "diff-tree", "-r", "--no-commit-id", "--root",
                              *([str(old)] if old else []), new).splitlines()
                victims = [line.split()[3] for line in listing]
            for oid in victims:
                loose = self.repo.common_dir / "objects" / oid[:2] / oid[2:]
                if loose.exists():
                    loose.unlink()
                    deleted.append(oid)
        real(self, ref, new, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Store, "update_ref_if", cas)
    return deleted


@pytest.mark.parametrize("what", ["blobs", "commit"])
def test_objects_pruned_before_the_cas_are_rewritten_before_the_write_returns(
        ledger: object, repo: Path, monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    from loopx.ops import notes

    deleted = _prune_before_the_cas(monkeypatch, what)
    event = ledger.run(notes.add, "written while gc ran", actor="agent:w")  # type: ignore[attr-defined]
    assert deleted, "the test deleted nothing"
    for oid in deleted:
        assert git(repo, "cat-file", "-t", oid) in ("blob", "commit")
    assert event.id in event_ids(repo)
    _fsck(repo)


def _dangle(repo: Path) -> str:
    """Delete the state tip's commit object, as a prune of an unsettled write did."""
    commit = git(repo, "rev-parse", STATE)
    (repo / ".git" / "objects" / commit[:2] / commit[2:]).unlink()
    return commit


def test_a_ref_pointing_at_a_missing_commit_is_explained_never_taken_for_no_ledger(
        ledger: object, repo: Path) -> None:
    for text in ("one", "two", "three"):
        assert invoke(repo, "note", "add", text).code == 0
    missing = _dangle(repo)
    for args in (("status",), ("note", "add", "more"), ("init",), ("log",)):
        result = invoke(repo, *args)
        assert result.code == 1, (args, result.err)
        assert f"points at {missing[:12]}" in result.err and "git loopx doctor" in result.err
        assert "git loopx init`" not in result.err
    doctor = invoke(repo, "doctor", "--json")
    assert doctor.code == 1 and doctor.json()["health"]["damage"]["tip_missing"]  # type: ignore[index]
    repaired = invoke(repo, "doctor", "--repair", "--json")
    assert repaired.code == 0, repaired.err
    assert repaired.json()["repair"]["unknown"]  # type: ignore[index]
    assert invoke(repo, "status").code == 0 and invoke(repo, "note", "add", "again").code == 0
    subprocess.run(["git", "gc", "--quiet", "--prune=now"], cwd=repo, check=True)
    _fsck(repo)


def test_rollback_works_on_a_dangling_ref(ledger: object, repo: Path) -> None:
    assert invoke(repo, "note", "add", "one").code == 0
    _dangle(repo)
    result = invoke(repo, "doctor", "--rollback", "--json")
    assert result.code == 0, result.err
    assert result.json()["rollback"]["rolled_back"]  # type: ignore[index]


def test_doctor_names_each_lost_event_and_repair_keeps_every_other(ledger: object,
                                                                   repo: Path) -> None:
    written = [invoke(repo, "note", "add", f"note {n}", "--json").json()["id"]  # type: ignore[index]
               for n in range(6)]
    files = {line.split("\t")[1]: line.split()[2]
             for line in git(repo, "ls-tree", "-r", STATE).splitlines()}
    lost = [written[1], written[4]]
    for path, oid in files.items():
        if any(i in path for i in lost):
            (repo / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    assert invoke(repo, "status").code == 0  # the cache does not read the files...
    doctor = invoke(repo, "doctor", "--json")
    assert doctor.code == 1  # ...doctor does, and names them
    named = [e["id"] for e in doctor.json()["health"]["damage"]["lost_events"]]  # type: ignore[index]
    assert sorted(named) == sorted(lost)
    assert all(any(i in p for p in doctor.json()["health"]["problems"]) for i in lost)  # type: ignore[index]
    repaired = invoke(repo, "doctor", "--repair", "--json").json()["repair"]  # type: ignore[index]
    assert sorted(e["id"] for e in repaired["lost"]) == sorted(lost)
    kept = set(event_ids(repo))
    assert set(written) - set(lost) <= kept and not set(lost) & kept
    assert invoke(repo, "doctor").code == 0
    subprocess.run(["git", "gc", "--quiet", "--prune=now"], cwd=repo, check=True)
    _fsck(repo)


def test_repair_restores_missing_objects_from_the_remote_and_loses_nothing(
        tmp_path: Path) -> None:
    remote, (ours,) = seeded(tmp_path, 1)
    assert invoke(ours, "note", "add", "pushed").code == 0
    do_sync(ours)
    blob = [line.split()[2] for line in git(ours, "ls-tree", "-r", STATE).splitlines()][-1]
    (ours / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    before = tip(ours)
    result = invoke(ours, "doctor", "--repair", "--json")
    assert result.code == 0, result.err
    assert result.json()["repair"]["how"] == "restored"  # type: ignore[index]
    assert tip(ours) == before and git(ours, "cat-file", "-t", blob) == "blob"
    assert not git(ours, "for-each-ref", "refs/loopx/restore/")


def test_a_missing_directory_tree_stops_a_write_instead_of_emptying_it(ledger: object,
                                                                     repo: Path) -> None:
    assert invoke(repo, "note", "add", "one").code == 0
    assert invoke(repo, "note", "add", "two").code == 0
    # The `events` tree: on every append's path (a deeper one is on it only if the next
    # event falls in the same second, minute or day).
    events = git(repo, "rev-parse", f"{STATE}:events")
    (repo / ".git" / "objects" / events[:2] / events[2:]).unlink()
    before = tip(repo)
    result = invoke(repo, "note", "add", "three")
    assert result.code == 1 and "missing from this repository" in result.err
    assert tip(repo) == before


def test_sync_names_doctor_when_the_tip_cannot_be_sent(tmp_path: Path) -> None:
    _, (ours,) = seeded(tmp_path, 1)
    assert invoke(ours, "note", "add", "unsent").code == 0
    blob = [line.split()[2] for line in git(ours, "ls-tree", "-r", STATE).splitlines()][-1]
    (ours / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    result = invoke(ours, "sync")
    assert result.code == 1 and "git loopx doctor" in result.err


def test_a_pack_kept_by_a_killed_writer_is_released_by_the_next_write(ledger: object,
                                                                     repo: Path) -> None:
    from loopx.ops import notes

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    packs = repo / ".git" / "objects" / "pack"
    packs.mkdir(parents=True, exist_ok=True)
    orphan, other = packs / "pack-0000.keep", packs / "pack-1111.keep"
    orphan.write_text(f"loopx {dead}\n")
    other.write_text("kept by hand\n")  # not loopx's: left alone
    ledger.run(notes.add, "next write", actor="agent:w")  # type: ignore[attr-defined]
    assert not orphan.exists() and other.exists()
