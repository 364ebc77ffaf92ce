"""A fleet through one plain bare hub: writers in their own processes and clones append and
sync concurrently (path remote and git daemon), and parked tips on inbox refs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import git, invoke, run_loopx
from syncutil import (
    STATE, assert_fsck_clean, assert_only_fast_forwarded, bare_remote, clone, do_sync, event_ids,
    event_ids_at,
    forge, git_daemon, note, open_ledger, seeded, snapshot, tip,
)

INBOX = "refs/loopx/inbox/"
TESTS = Path(__file__).parents[1]

# One writer: append and sync (default policy), ``events`` times; prints what was acknowledged.
WRITER = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from syncutil import note, do_sync
from loopx.errors import LoopxError
path, events = Path(sys.argv[2]), int(sys.argv[3])
acked, gave_up = [], []
for i in range(events):
    event = note(path, "agent:" + path.name, f"{path.name} {i}")
    try:
        do_sync(path)
    except LoopxError as exc:
        gave_up.append(str(exc))
    else:
        acked.append(event)
print(json.dumps({"acked": acked, "gave_up": gave_up}))
"""


def _fleet(clones: list[Path], events: int) -> list[str]:
    """Every clone appends and syncs ``events`` times at once; the acknowledged event ids
    (and no sync gave up)."""
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(TESTS), str(p), str(events)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for p in clones]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    assert [r["gave_up"] for r in results] == [[] for _ in results]
    return [event for r in results for event in r["acked"]]


def _parked_events(remote: Path) -> set[str]:
    """Event ids the hub holds in its inbox refs (tips parked there, not yet folded)."""
    tips = git(remote, "for-each-ref", "--format=%(objectname)", INBOX).split()
    return {event for t in tips for event in event_ids_at(remote, t)}


def _assert_fleet_held(remote: Path, clones: list[Path], acked: list[str]) -> None:
    """Every acknowledged event on the hub (its loopx/state, or parked in an inbox until the
    next fold), on loopx/state exactly once once everyone synced again; all clones at one tip,
    the hub's loopx/state only fast-forwarded, no inbox left."""
    on_hub = Counter(event_ids(remote))
    assert max(on_hub.values()) == 1, "an event is on the hub's loopx/state twice"
    assert set(acked) <= set(on_hub) | _parked_events(remote), "an acknowledged event is lost"
    for path in clones * 2:
        do_sync(path)
    on_hub = Counter(event_ids(remote))
    assert all(on_hub[event] == 1 for event in acked), "an acknowledged event is missing or twice"
    assert max(on_hub.values()) == 1
    assert {tip(path) for path in clones} == {tip(remote)}
    assert_only_fast_forwarded(remote)
    assert not git(remote, "for-each-ref", INBOX)
    assert_fsck_clean(remote)


def test_a_fleet_through_a_path_hub_never_gives_up_and_loses_nothing(tmp_path: Path) -> None:
    remote, clones = seeded(tmp_path, 5)
    acked = _fleet(clones, 3)
    assert len(acked) == 15
    _assert_fleet_held(remote, clones, acked)
    # A plain clone (no loopx sync) sees the whole ledger, and review passes every change.
    plain = clone(remote, tmp_path / "plain")
    assert run_loopx(plain, "status", "--format", "json").json()["notes"] == 15
    first = git(plain, "rev-list", "--max-parents=0", "origin/loopx/state")
    checked = run_loopx(plain, "validate", "--range", f"{first}..origin/loopx/state")
    assert checked.code == 0 and "OK" in checked.out, checked.out + checked.err


@pytest.mark.stress
def test_thirty_two_writers_through_one_path_hub(tmp_path: Path) -> None:
    remote, clones = seeded(tmp_path, 32)
    acked = _fleet(clones, 5)
    assert len(acked) == 160
    _assert_fleet_held(remote, clones, acked)


@pytest.fixture
def daemon_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """A bare hub served by `git daemon` on 127.0.0.1 (push enabled), stopped by its pid."""
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file:git")
    served = tmp_path / "served"
    served.mkdir()
    remote = bare_remote(served, "hub.git")
    with git_daemon(served) as url:
        yield remote, f"{url}/hub.git"


def _daemon_fleet(tmp_path: Path, url: str, count: int) -> list[Path]:
    clones = [clone(url, tmp_path / f"d{n}") for n in range(count)]
    with open_ledger(clones[0]) as led:
        led.init(actor="agent:d0")
    do_sync(clones[0])
    for path in clones[1:]:
        do_sync(path)
    return clones


def test_a_fleet_through_git_daemon_never_gives_up_and_loses_nothing(
        tmp_path: Path, daemon_hub: tuple[Path, str]) -> None:
    remote, url = daemon_hub
    clones = _daemon_fleet(tmp_path, url, 4)
    acked = _fleet(clones, 3)
    assert len(acked) == 12
    _assert_fleet_held(remote, clones, acked)


@pytest.mark.stress
def test_thirty_two_writers_through_git_daemon(tmp_path: Path,
                                               daemon_hub: tuple[Path, str]) -> None:
    remote, url = daemon_hub
    clones = _daemon_fleet(tmp_path, url, 32)
    acked = _fleet(clones, 5)
    _assert_fleet_held(remote, clones, acked)


def test_racing_claims_with_sync_in_a_fleet_have_exactly_one_winner(tmp_path: Path) -> None:
    remote, clones = seeded(tmp_path, 5)
    assert invoke(clones[0], "goal", "add", "G", "--id", "g-1", "--accept", "x").code == 0
    assert invoke(clones[0], "todo", "add", "g-1", "T", "--id", "t-1").code == 0
    for path in clones:
        do_sync(path)
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(TESTS), str(p), "3"],
                                stdout=subprocess.PIPE, text=True) for p in clones[3:]]
    claims = [subprocess.Popen(["git", "loopx", "todo", "claim", "t-1", "--sync"], cwd=path,
                               env=dict(os.environ, LOOPX_ACTOR=f"agent:{path.name}"),
                               text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
              for path in clones[:3]]
    results = [(p.wait(timeout=300), p.communicate()) for p in claims]
    for proc in writers:
        assert json.loads(proc.communicate(timeout=300)[0])["gave_up"] == []
    winners = [clones[n].name for n, (code, _) in enumerate(results) if code == 0]
    assert len(winners) == 1, results
    assert all(f"went to agent:{winners[0]}" in err for code, (_, err) in results if code)
    for path in clones * 2:
        do_sync(path)
    for path in clones:
        with open_ledger(path) as led:
            todo = led.fold().todos["t-1"]
        assert todo.holder == f"agent:{winners[0]}" and todo.contested_by == []
    assert_only_fast_forwarded(remote)


# --- inbox refs, one step at a time ------------------------------------------------------------


def _park(path: Path, remote: Path) -> str:
    """Put ``path``'s tip on an inbox ref of the hub, as a sync that lost its race does."""
    from loopx.remote import sync
    from loopx.storage import gateway

    inbox = sync.inbox.name(gateway.discover(path))
    git(path, "push", "-q", "origin", f"{STATE}:{inbox}")
    return inbox


def test_a_parked_tip_goes_into_loopx_state_with_anyone_elses_sync(tmp_path: Path) -> None:
    remote, (a, b) = seeded(tmp_path, 2)
    parked = note(a, "agent:a", "waits on the hub")
    inbox = _park(a, remote)
    note(b, "agent:b", "from b")
    report = do_sync(b)
    assert report.received == 1 and parked in event_ids(remote)
    assert git(remote, "rev-parse", inbox) == tip(a)  # only its owner deletes it
    assert do_sync(a).merge == "fast-forward"
    assert not git(remote, "for-each-ref", INBOX)
    assert_only_fast_forwarded(remote)


def test_a_sync_whose_tip_someone_else_folded_is_done_and_tidies_its_inbox(tmp_path: Path) -> None:
    remote, (a, b) = seeded(tmp_path, 2)
    mine = note(a, "agent:a", "a")
    _park(a, remote)
    _fetch(a)  # a sees its own inbox on the hub, as a sync that gave up did
    assert git(a, "for-each-ref", "refs/loopx/inboxes/origin/")
    do_sync(b)  # folds a's parked tip into the hub's loopx/state
    assert mine in event_ids(remote)
    report = do_sync(a)
    assert report.parked is None and tip(a) == tip(remote)
    assert not git(remote, "for-each-ref", INBOX) and not git(a, "for-each-ref", "refs/loopx/inboxes/")


def test_a_hostile_inbox_is_quarantined_and_does_not_stop_the_sync(tmp_path: Path) -> None:
    remote, (a, b) = seeded(tmp_path, 2)
    first = note(a, "agent:a", "kept")
    do_sync(a)
    do_sync(b)
    path = next(p for p in git(a, "ls-tree", "-r", "--name-only", STATE).splitlines()
                if first in p)
    for name, bad in {"deletes": forge(a, STATE, drop=(path,)),
                      "outside": forge(a, STATE, add={"run.sh": ("100755", b"rm -rf /\n")})}.items():
        git(a, "push", "-q", "origin", f"{bad}:{INBOX}{name}")
    note(b, "agent:b", "goes on")
    report = _fetch(b)  # every fetch looks at the inboxes (a sync that pushed first does not)
    assert len(report.quarantined) == 2 and do_sync(b).pushed
    assert first in event_ids(remote) and "run.sh" not in git(remote, "ls-tree", "--name-only", STATE)
    assert len(git(b, "for-each-ref", "refs/loopx/quarantine/").splitlines()) == 2
    again = _fetch(b)  # known bad tips are not checked (or quarantined) again
    assert again.quarantined == [] and snapshot(b)["notes"] == 2


def _fetch(path: Path) -> Any:
    from loopx.remote import sync

    with open_ledger(path) as led:
        return sync.fetch(ledger=led)


def test_an_inbox_from_another_ledger_is_left_out(tmp_path: Path) -> None:
    remote, (a,) = seeded(tmp_path, 1)
    stranger = tmp_path / "stranger"
    git(tmp_path, "init", "-q", str(stranger))
    with open_ledger(stranger) as led:
        led.init(actor="agent:s")
        led.append("note.added", {"id": "n-x", "text": "not yours"}, actor="agent:s")
    git(stranger, "push", "-q", str(remote), f"{STATE}:{INBOX}stranger")
    note(a, "agent:a", "mine")
    assert _fetch(a).merge == "up-to-date" and do_sync(a).pushed
    assert snapshot(a)["notes"] == 1 and tip(a) == tip(remote)


def test_a_sync_that_loses_again_after_parking_is_done_and_the_next_sync_folds_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from loopx.remote import sync

    remote, (a, b, c) = seeded(tmp_path, 3)
    note(c, "agent:c", "c moves the hub")
    do_sync(c)  # a's push-ahead loses: a parks, fetches, merges, and pushes again...
    do_sync(b)
    note(b, "agent:b", "b wins the race")
    mine = note(a, "agent:a", "parked")
    real_push = sync._push
    calls = []

    def push_racing_b(store: Any, report: Any, tip_: Any) -> Any:
        if Path(store.cwd) != a:
            return real_push(store, report, tip_)
        calls.append(tip_)
        if len(calls) == 2:  # ...and b's plain `git push` of its state gets in just before
            git(b, "push", "-q", "origin", STATE)
        return real_push(store, report, tip_)

    monkeypatch.setattr(sync, "_push", push_racing_b)
    report = do_sync(a)
    monkeypatch.undo()
    assert len(calls) == 2 and report.parked and report.parked.startswith(INBOX)
    assert mine not in event_ids(remote) and mine in _parked_events(remote)
    assert mine not in event_ids(b)
    assert do_sync(c).received >= 2 and mine in event_ids(remote)  # anyone's next sync folds it
    assert do_sync(a).parked is None and not git(remote, "for-each-ref", INBOX)
    text = invoke(a, "sync")
    assert text.code == 0 and "waits on" not in text.out
    assert_only_fast_forwarded(remote)


def test_one_attempt_folds_a_few_inbox_tips_and_the_next_sync_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from loopx.remote import sync

    monkeypatch.setattr(sync, "FOLD_AT_MOST", 2)
    remote, (b, *parkers) = seeded(tmp_path, 4)
    waiting = [note(p, f"agent:{p.name}", "parked") for p in parkers]
    for path in parkers:
        _park(path, remote)
    first = do_sync(b)
    assert first.received == 2 and len(set(waiting) & set(event_ids(remote))) == 2
    assert do_sync(b).received == 1 and set(waiting) <= set(event_ids(remote))
    assert_only_fast_forwarded(remote)
