"""Bounded objects per append (issue 20): new events go under a fan-out of the day
(``events/YYYY/MM/DD/<id[:6]>/<id[6]>/<id[7]>/``), so the trees one append rewrites stay small
however many events a day holds; ledgers written in the older layout keep reading, writing and
syncing; a path in either layout that does not match its event is refused; loopx's own
maintenance packs with gc.auto=0 and loses nothing beside a writer."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import git, invoke
from statekit import commit_files
from syncutil import STATE, do_sync, open_ledger, seeded, tip
from loopx.model import codec, ids
from loopx.model.paths import PATH_RE, file_path, file_paths, legacy_event_dir


def _note(event_id: str, text: str, clock: int = 2) -> bytes:
    return codec.dump({"id": event_id, "type": "note.added", "v": 1, "at": "2026-06-01T00:00:00Z",
                       "clock": clock, "actor": "agent:old", "data": {"id": f"n-{event_id[-6:].lower()}",
                                                                    "text": text}})


def test_new_events_go_under_the_fan_out_and_both_layouts_are_event_paths() -> None:
    event_id = ids.new_event_id()
    new, old = file_paths(event_id, "note.added")
    assert new == file_path(event_id, "note.added")
    assert new == f"{legacy_event_dir(event_id)}/{event_id[:6]}/{event_id[6]}/{event_id[7]}/{event_id}.note.added.yaml"
    assert old == f"{legacy_event_dir(event_id)}/{event_id}.note.added.yaml"
    assert PATH_RE.match(new) and PATH_RE.match(old)
    assert not PATH_RE.match(new.replace(f"/{event_id[6]}/", "/"))  # a fan-out with a level missing


def test_a_ledger_in_the_old_layout_keeps_reading_writing_and_syncing(tmp_path: Path) -> None:
    remote, (ours, theirs) = seeded(tmp_path, 2)
    old_id = ids.new_event_id()
    old_path = f"{legacy_event_dir(old_id)}/{old_id}.note.added.yaml"
    commit_files(ours, STATE, {old_path: _note(old_id, "written before the fan-out")},
                 message="an event of the old layout")
    assert invoke(ours, "status", "--json").json()["ledger"]["events"] == 2  # type: ignore[index]
    # A retried append of the old event finds its earlier copy where the old layout put it.
    with open_ledger(ours) as led:
        assert led.find_event(led.tip(), old_id) is not None
    again = invoke(ours, "note", "add", "written before the fan-out", "--event-id", old_id,
                   actor="agent:old")
    assert git(ours, "ls-tree", "-r", "--name-only", STATE, "--", "events/").count(old_id) == 1, again.err
    assert invoke(ours, "note", "add", "after the fan-out").code == 0
    names = git(ours, "ls-tree", "-r", "--name-only", STATE, "--", "events/").splitlines()
    assert old_path in names and any(n.count("/") == 7 for n in names)
    do_sync(ours)
    do_sync(theirs)  # a clone that writes the new layout takes both
    assert invoke(theirs, "note", "add", "from the other clone").code == 0
    do_sync(theirs)
    do_sync(ours)
    assert tip(ours) == tip(theirs) == git(remote, "rev-parse", STATE)
    with open_ledger(theirs) as led:
        assert led.fold().notes == 3 and not led.fold().problems


@pytest.mark.parametrize("where", ["fan-out of another id", "fan-out level swapped"])
def test_a_new_layout_path_that_does_not_match_its_event_is_refused(tmp_path: Path, where: str) -> None:
    from loopx.errors import Quarantined

    remote, (ours,) = seeded(tmp_path, 1)
    event_id, other = ids.new_event_id(), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"
    day = legacy_event_dir(event_id)
    fan = (f"{other[:6]}/{other[6]}/{other[7]}" if where == "fan-out of another id"
           else f"{event_id[:6]}/{event_id[7]}/{event_id[6]}")
    path = f"{day}/{fan}/{event_id}.note.added.yaml"
    if path == file_path(event_id, "note.added"):
        pytest.skip("the two fan-out characters happen to be equal")
    commit_files(remote, STATE, {path: _note(event_id, "smuggled")}, message="hostile path")
    before = tip(ours)
    with pytest.raises(Quarantined):
        do_sync(ours)
    assert tip(ours) == before


_WRITER = """
import sys
from syncutil import open_ledger
from loopx.ops import notes
with open_ledger(sys.argv[1]) as led:
    for n in range(int(sys.argv[2])):
        print(led.run(notes.add, "note %d" % n, actor="agent:w").id, flush=True)
"""


def _maintain_while_writing(tmp_path: Path, appends: int) -> None:
    """A writer appends in a subprocess while loopx's maintenance runs over and over, with
    gc.auto=0: every acknowledged event is on the branch, and fsck is clean."""
    _, (ours,) = seeded(tmp_path, 1)
    git(ours, "config", "gc.auto", "0")
    tests = Path(__file__).resolve().parents[1]
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(ours), str(appends)],
                              cwd=tests, stdout=subprocess.PIPE, text=True,
                              env={**__import__("os").environ, "PYTHONPATH": str(tests)})
    with open_ledger(ours) as led:
        command = led.store.maintenance()
    stop = threading.Event()

    def maintain() -> None:
        while not stop.is_set():
            subprocess.run(["git", *command], cwd=ours, capture_output=True)

    runner = threading.Thread(target=maintain)
    runner.start()
    try:
        acked = [line.strip() for line in writer.stdout or []]
        assert writer.wait() == 0
    finally:
        stop.set()
        runner.join()
    subprocess.run(["git", *command], cwd=ours, check=True)
    listed = git(ours, "ls-tree", "-r", "--name-only", STATE, "--", "events/")
    assert len(acked) == appends and all(event_id in listed for event_id in acked)
    assert git(ours, "fsck", "--connectivity-only", "--no-dangling") == ""
    assert int(dict(line.split(": ") for line in git(ours, "count-objects", "-v").splitlines())[
        "packs"]) >= 1


def test_maintenance_with_gc_auto_off_loses_nothing_beside_a_writer(tmp_path: Path) -> None:
    _maintain_while_writing(tmp_path, 15)


@pytest.mark.stress
def test_maintenance_beside_a_writer_stress(tmp_path: Path) -> None:
    _maintain_while_writing(tmp_path, 400)
