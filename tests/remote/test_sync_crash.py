"""Crash safety and gc: writers SIGKILLed at random points, writers racing `git gc`.

An event is acknowledged once the writer printed its id (the append returned). After any
number of kills: `git fsck` is clean, every acknowledged event is there, nothing needed a
manual unlock, and retrying an append with the same id adds no duplicate.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from syncutil import (
    assert_fsck_clean, assert_only_fast_forwarded, do_sync, event_ids, note, seeded,
)

TESTS = str(Path(__file__).parents[1])
WORKER = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from syncutil import note, do_sync
path, sync_every = Path(sys.argv[2]), int(sys.argv[3])
for n, event_id in enumerate(sys.argv[4:], 1):
    note(path, "agent:writer", "crash test " + event_id, event_id=event_id)
    print("ACK", event_id, flush=True)
    if sync_every and n % sync_every == 0:
        do_sync(path, retries=20)
        print("SYNCED", flush=True)
"""


def _start(path: Path, ids: list[str], sync_every: int = 1) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", WORKER, TESTS, str(path), str(sync_every), *ids],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _acks(output: str) -> list[str]:
    return [line.split()[1] for line in output.splitlines() if line.startswith("ACK ")]


@pytest.mark.slow
@pytest.mark.parametrize("kills", [15, pytest.param(500, marks=pytest.mark.stress)])
def test_sigkill_during_append_and_sync_loses_no_acknowledged_event(tmp_path: Path, kills: int) -> None:
    from loopx.model.ids import new_event_id

    remote, (writer, reader) = seeded(tmp_path, 2)
    rng = random.Random(kills)
    acked: set[str] = set()
    pending: list[str] = []  # ids a killed writer may or may not have written: retried as is
    for _ in range(kills):
        ids = pending + [new_event_id() for _ in range(4)]
        proc = _start(writer, ids)
        time.sleep(rng.uniform(0.3, 1.8))  # interpreter start, then appends and syncs
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        done = _acks(out)
        acked.update(done)
        pending = [i for i in ids if i not in done][:1]
    # No manual unlock: the next writer just works, and the retried id is recorded once.
    retried = pending[0] if pending else sorted(acked)[-1]
    note(writer, "agent:writer", "crash test " + retried, event_id=retried)
    acked.add(retried)
    do_sync(writer, retries=20)
    do_sync(reader)
    for path in (writer, reader):
        ids = event_ids(path)
        assert len(ids) == len(set(ids)), "an event was recorded twice"
        assert acked <= set(ids), f"lost acknowledged events: {acked - set(ids)}"
    assert_fsck_clean(writer)
    assert_fsck_clean(remote)
    assert_only_fast_forwarded(remote)


def test_writers_keep_working_while_git_gc_runs(tmp_path: Path) -> None:
    from loopx.model.ids import new_event_id

    remote, (clone,) = seeded(tmp_path, 1)
    writers = [_start(clone, [new_event_id() for _ in range(12)], sync_every=4) for _ in range(2)]
    gcs = 0
    while any(w.poll() is None for w in writers):
        subprocess.run(["git", "gc", "--quiet"], cwd=clone, capture_output=True, check=True)
        gcs += 1
    acked = set()
    for proc in writers:
        out, err = proc.communicate()
        assert proc.returncode == 0, err
        acked.update(_acks(out))
    assert gcs >= 1 and len(acked) == 24
    assert acked <= set(event_ids(clone))
    assert_fsck_clean(clone)
    note(clone, "agent:writer", "after gc")
    do_sync(clone)
    assert_only_fast_forwarded(remote)


def test_a_stale_ref_lock_left_in_a_path_remote_by_a_killed_push_needs_no_manual_unlock(
        tmp_path: Path) -> None:
    remote, (clone,) = seeded(tmp_path, 1)
    lock = remote / "refs" / "heads" / "loopx" / "state.lock"
    lock.write_text("")
    os.utime(lock, (time.time() - 60, time.time() - 60))
    note(clone, "agent:writer", "after the crash")
    report = do_sync(clone)
    assert report.pushed and report.retries >= 1
    assert not lock.exists()
