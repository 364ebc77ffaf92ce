"""The store against real git: plumbing only, compare-and-swap, locks that never need a
manual unlock, concurrent writers on one clone."""

from __future__ import annotations

import hashlib
import itertools
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import git
from loopx.storage import gateway
from loopx.errors import ConflictError, RefRaceError
from loopx.ledger.book import Ledger
from loopx.storage.store import STATE_REF


def test_appends_never_touch_index_worktree_head_or_branch(repo: Path) -> None:
    (repo / "README").write_text("changed in the work tree\n")
    (repo / "staged.txt").write_text("staged\n")
    git(repo, "add", "staged.txt")
    (repo / "untracked.txt").write_text("untracked\n")
    git(repo, "checkout", "-q", "-b", "feature")
    before = (git(repo, "status", "--porcelain=v2", "--branch"), (repo / ".git/index").read_bytes(),
              git(repo, "rev-parse", "HEAD"), git(repo, "symbolic-ref", "HEAD"))
    with Ledger.open(repo) as ledger:
        ledger.init(actor="human:test@example.com")
        for i in range(3):
            ledger.append("note.added", {"id": f"n-{i}", "text": "hi"}, actor="agent:x")
    after = (git(repo, "status", "--porcelain=v2", "--branch"), (repo / ".git/index").read_bytes(),
             git(repo, "rev-parse", "HEAD"), git(repo, "symbolic-ref", "HEAD"))
    assert after == before
    assert git(repo, "rev-list", "--count", "loopx/state") == "4"


def test_update_ref_if_refuses_a_stale_expectation_with_a_retryable_error(ledger: Ledger) -> None:
    store = ledger.store
    tip = store.tip()
    ledger.append("note.added", {"id": "n-1", "text": "hi"}, actor="agent:x")
    with pytest.raises(RefRaceError) as info:
        store.update_ref_if(STATE_REF, tip, expected=tip, reason="test")
    assert info.value.retryable
    with pytest.raises(RefRaceError):
        store.update_ref_if(STATE_REF, tip, expected=None, reason="test: must not exist")


def test_the_reflog_records_every_move(ledger: Ledger) -> None:
    ledger.append("note.added", {"id": "n-1", "text": "hi"}, actor="agent:x")
    messages = [m for _, _, m in ledger.store.reflog()]
    assert messages[0] == "loopx: note.added n-1"
    assert len(messages) == 2


def test_write_tree_refuses_to_change_an_existing_file(ledger: Ledger) -> None:
    store = ledger.store
    tip = store.tip()
    path = next(e.path for e in store.list_files(tip))
    other = store.write_blobs([b"different\n"])[0]
    with pytest.raises(ConflictError):
        store.write_tree(tip, {path: other})


def test_a_lock_left_by_a_killed_writer_is_free_at_once(repo: Path, ledger: Ledger) -> None:
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(Path(__file__).parents[2])!r})
        from loopx.storage import gateway
        from loopx.storage.store import Store
        with Store(gateway.discover({str(repo)!r})).lock():
            print("locked", flush=True)
            time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    assert ledger.store.lock_holder() == holder.pid
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert ledger.store.lock_holder() is None
    ledger.store.wait_limit = 0  # no waiting at all: a lock still held raises LockTimeout
    ledger.append("note.added", {"id": "n-1", "text": "after the crash"}, actor="agent:x")


def test_a_stale_git_ref_lock_from_a_killed_process_is_recovered(ledger: Ledger) -> None:
    lock = ledger.repo.common_dir / "refs/heads/loopx/state.lock"
    lock.write_text("")
    old = time.time() - 60
    os.utime(lock, (old, old))
    ledger.append("note.added", {"id": "n-1", "text": "hi"}, actor="agent:x")
    assert not lock.exists()


def test_same_event_id_twice_is_one_event_and_different_content_is_refused(ledger: Ledger) -> None:
    from loopx.model.ids import new_event_id

    eid = new_event_id()
    first = ledger.append("note.added", {"id": "n-1", "text": "hi"}, actor="agent:x", event_id=eid)
    again = ledger.append("note.added", {"id": "n-1", "text": "hi"}, actor="agent:x", event_id=eid)
    assert again.id == first.id
    assert ledger.fold().notes == 1
    with pytest.raises(ConflictError):
        ledger.append("note.added", {"id": "n-1", "text": "other"}, actor="agent:x", event_id=eid)


def test_the_cache_is_used_and_a_corrupt_cache_is_ignored(ledger: Ledger) -> None:
    ledger.append("note.added", {"id": "n-1", "text": "hi"}, actor="agent:x")
    cache_file = ledger._live_path
    assert cache_file.exists() and ledger.projection.path.exists()
    cache_file.write_bytes(cache_file.read_bytes()[:-10] + b"corrupted!")
    with Ledger.open(ledger.repo.cwd) as fresh:
        assert fresh.live_fold().notes == 1
        assert fresh.fold().notes == 1


def _writers(repo: Path, writers: int, appends: int) -> None:
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parents[2])!r})
        from loopx import Ledger
        with Ledger.open({str(repo)!r}) as ledger:
            for i in range({appends}):
                ledger.append("note.added", {{"id": f"n-{{sys.argv[1]}}-{{i}}", "text": "x"}},
                              actor=f"agent:w{{sys.argv[1]}}")
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(w)]) for w in range(writers)]
    assert [p.wait() for p in procs] == [0] * writers


def _check_concurrent_appends(repo: Path, writers: int, appends: int) -> None:
    with Ledger.open(repo) as ledger:
        ledger.init(actor="human:test@example.com")
    _writers(repo, writers, appends)
    files = git(repo, "ls-tree", "-r", "--name-only", "loopx/state").splitlines()
    assert len(files) == writers * appends + 1
    parents = git(repo, "rev-list", "--parents", "loopx/state").splitlines()
    assert all(len(line.split()) <= 2 for line in parents), "history must be linear"
    assert len(parents) == writers * appends + 1
    git(repo, "fsck", "--strict")
    with Ledger.open(repo) as ledger:
        fold = ledger.fold()
        assert fold.notes == writers * appends and not fold.problems


def test_concurrent_writers_on_one_clone_lose_nothing(repo: Path) -> None:
    _check_concurrent_appends(repo, writers=4, appends=15)


@pytest.mark.stress
def test_twenty_writers_times_two_hundred_appends(repo: Path) -> None:
    _check_concurrent_appends(repo, writers=20, appends=200)


def test_the_gateway_raises_a_typed_error_with_command_and_stderr(repo: Path) -> None:
    from loopx.errors import GitError

    with pytest.raises(GitError) as info:
        gateway.run(repo, "rev-parse", "--verify", "no-such-ref")
    assert info.value.returncode == 128 and "rev-parse" in str(info.value)


def test_discover_finds_the_common_dir_of_a_worktree(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    found = gateway.discover(tmp_path / "wt")
    assert found.common_dir == (repo / ".git").resolve()
    assert found.work_tree == (tmp_path / "wt").resolve()
    with Ledger.open(tmp_path / "wt") as ledger:
        ledger.init(actor="human:test@example.com")
    assert git(repo, "rev-list", "--count", "loopx/state") == "1"


def test_single_appends_do_not_pile_up_loose_objects(repo: Path, ledger: Ledger,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # loopx's own maintenance: it packs whatever the repository's gc.auto says (0: off).
    git(repo, "config", "gc.auto", "0")
    monkeypatch.setattr("loopx.storage.repacking.GC_AUTO_LOOSE", 256)
    # git estimates loose objects from objects/17 alone (x 256): put three there (kept
    # reachable by a ref: unreachable ones would make gc warn), so that the estimate is past
    # the threshold whatever ids the appends' objects get.
    fillers = []
    for n in range(3):
        text = next(f"filler {n} {i}\n" for i in itertools.count() if hashlib.sha1(
            f"blob {len(f'filler {n} {i}')+1}\0filler {n} {i}\n".encode()).hexdigest()[:2] == "17")
        fillers.append(git(repo, "hash-object", "-w", "--stdin", input=text))
    tree = git(repo, "mktree", input="".join(f"100644 blob {oid}\tf{n}\n"
                                             for n, oid in enumerate(fillers)))
    git(repo, "update-ref", "refs/fillers", git(repo, "commit-tree", tree, "-m", "fillers"))

    def counts() -> dict[str, int]:
        return {k: int(v) for k, v in (line.split(": ")
                for line in git(repo, "count-objects", "-v").splitlines()) if v.isdigit()}

    ledger.append("note.added", {"id": "n-0", "text": "x"}, actor="agent:x")
    deadline = time.monotonic() + 60
    while counts()["count"] > 0 and time.monotonic() < deadline:
        time.sleep(0.1)  # `git repack -d` runs in the background
    assert counts()["count"] == 0 and counts()["in-pack"] >= 3 + 7, counts()
    assert not (repo / ".git" / "gc.log").exists()  # it would stop every later auto gc
    assert git(repo, "fsck", "--connectivity-only", "--no-dangling").strip() == ""
    ledger.append("note.added", {"id": "n-1", "text": "x"}, actor="agent:x")
    with Ledger.open(repo) as fresh:
        assert fresh.fold().notes == 2


def test_has_ref_reads_loose_and_packed_refs_without_git(ledger: Ledger) -> None:
    store, cwd = ledger.store, ledger.repo.cwd
    assert store.has_ref(STATE_REF) is True  # a loose ref file
    git(cwd, "pack-refs", "--all")
    assert not (ledger.repo.common_dir / STATE_REF).exists()
    assert store.has_ref(STATE_REF) is True  # now only in packed-refs
    assert store.has_ref("refs/heads/loopx/state-not") is False
    assert store.has_ref("refs/heads/loopx") is False  # a prefix is not the ref


def test_list_files_reads_every_name_git_can_hold(ledger: Ledger) -> None:
    """Paths with tabs, newlines, spaces, quotes, bytes that are not UTF-8 and text that looks
    like a listing line are listed as gitpython reads the same tree, mode, type and id too."""
    import git as gitpython

    store = ledger.store
    names = ["a\tb", "new\nline", " lead and trail ", 'q"uote', "100644 blob " + "0" * 40 + "\tx",
             "\u00e9t\u00e9", b"bad-\xff".decode("utf-8", "surrogateescape"), "d/e/f"]
    blobs = store.write_blobs([n.encode("utf-8", "surrogateescape") for n in names])
    tree = store.write_tree(store.tip(), {f"odd/{n}": oid for n, oid in zip(names, blobs)})
    listed = {e.path: (e.mode, e.type, e.oid) for e in store.list_files(tree)}
    seen = {}
    root = gitpython.Tree(gitpython.Repo(ledger.repo.cwd), bytes.fromhex(tree), path="")
    for item in root.traverse():
        if item.type == "blob":
            path = os.fsdecode(os.fsencode(item.path))
            seen[path] = (f"{item.mode:06o}", "blob", item.hexsha)
    assert listed == seen
    assert {f"odd/{n}" for n in names} <= set(listed)


def test_a_listing_holds_each_mode_and_type_once(ledger: Ledger) -> None:
    """A cold replay holds the listing of every file: a mode and a type string per entry
    were 11 MB of a 100k status's peak. The entries share one string of each."""
    for n in range(30):
        ledger.append("note.added", {"id": f"n-{n}", "text": f"note {n}"}, actor="agent:x")
    entries = ledger.store.list_files(ledger.store.resolve(STATE_REF) or "")
    assert len(entries) > 30
    assert len({id(e.mode) for e in entries}) == len({e.mode for e in entries})
    assert len({id(e.type) for e in entries}) == len({e.type for e in entries}) == 1
