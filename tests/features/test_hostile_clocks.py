"""Clocks from a hostile remote or a hand-made commit (issue 12, item 3): a clock far ahead
of the ledger is refused by the incoming check and is a problem event in replay; it never
becomes the floor the next write counts from, so no remote can stop a clone from writing."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git, invoke
from syncutil import STATE, do_sync, note, open_ledger, seeded, tip
from loopx.model import codec, ids
from loopx.model.paths import file_path


def _note_bytes(clock_text: str) -> tuple[str, bytes]:
    """An otherwise valid note whose clock line is ``clock_text`` (written by hand: the
    canonical writer would refuse it)."""
    event_id = ids.new_event_id()
    doc = codec.dump({"id": event_id, "type": "note.added", "v": 1, "at": "2030-01-01T00:00:00Z",
                      "clock": 7, "actor": "agent:mallory",
                      "data": {"id": "n-evil", "text": "from the future"}})
    return file_path(event_id, "note.added"), doc.replace(b"clock: 7\n",
                                                          f"clock: {clock_text}\n".encode())


def _push_to_remote(remote: Path, path: str, data: bytes) -> str:
    """A commit on the bare remote's loopx/state adding one file, built with plumbing."""
    from statekit import commit_files

    return commit_files(remote, STATE, {path: data}, message="hostile clock")


@pytest.mark.parametrize("clock_text", ["9" * 4300, str(2**53 - 1), str(10**12)])
def test_a_remote_clock_far_ahead_is_quarantined_and_the_clone_keeps_writing(
        tmp_path: Path, clock_text: str) -> None:
    from loopx.errors import Quarantined

    remote, (ours,) = seeded(tmp_path, 1)
    path, data = _note_bytes(clock_text)
    _push_to_remote(remote, path, data)
    before = tip(ours)
    with pytest.raises(Quarantined) as refused:
        do_sync(ours)
    assert "out of range" in str(refused.value) or "far ahead" in str(refused.value)
    assert tip(ours) == before
    result = invoke(ours, "note", "add", "still writing")
    assert result.code == 0, result.err


def test_a_local_clock_far_ahead_is_a_problem_and_not_the_next_floor(tmp_path: Path) -> None:
    from statekit import commit_files

    _, (ours,) = seeded(tmp_path, 1)
    path, data = _note_bytes(str(10**12))
    commit_files(ours, STATE, {path: data}, message="hand-made")
    status = invoke(ours, "status", "--json")
    assert status.code == 0, status.err
    snap = status.json()
    assert any("far ahead" in p["reason"] for p in snap["problems"])  # type: ignore[index]
    assert snap["ledger"]["clock"] < 100  # type: ignore[index]
    written = note(ours, "agent:ours", "after the hostile commit")
    with open_ledger(ours) as led:
        event = led.find_event(led.tip(), written)
        assert event.env.clock < 100
        # The cached fold and a fresh replay agree.
        assert led.fold_at(led.tip()).max_clock == led.fold().max_clock


def test_an_event_within_the_clock_lead_is_applied(tmp_path: Path) -> None:
    _, (ours,) = seeded(tmp_path, 1)
    from statekit import commit_files
    from loopx.state.folding import MAX_CLOCK_LEAD

    path, data = _note_bytes(str(MAX_CLOCK_LEAD))  # a ledger that lost that many events
    commit_files(ours, STATE, {path: data}, message="after a loss")
    snap = invoke(ours, "status", "--json").json()
    assert not snap["problems"]  # type: ignore[index]
    assert snap["ledger"]["clock"] == MAX_CLOCK_LEAD  # type: ignore[index]
    assert git(ours, "cat-file", "-t", STATE) == "commit"


def test_a_remote_commit_with_a_huge_message_is_quarantined(tmp_path: Path) -> None:
    from loopx.errors import Quarantined
    from statekit import commit_files

    remote, (ours,) = seeded(tmp_path, 1)
    path, data = _note_bytes("9")
    small = commit_files(remote, STATE, {path: data})
    tree = git(remote, "rev-parse", f"{small}^{{tree}}")
    huge = git(remote, "commit-tree", tree, "-p", f"{small}^", input="x" * 200_000)
    git(remote, "update-ref", STATE, huge)
    before = tip(ours)
    with pytest.raises(Quarantined, match="bytes, over the 64 KiB a state commit may be"):
        do_sync(ours)
    assert tip(ours) == before
