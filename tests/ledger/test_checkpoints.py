"""Checkpoints: a fresh clone starts from the projection's rows committed beside the events,
and gets exactly the fold a full replay gives, or does not use them at all."""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytest

from conftest import git, invoke, run_loopx
from statekit import commit_files
from loopx.ledger import cache, checkpoints, rows
from loopx.ledger.book import Ledger
from loopx.model.paths import checkpoint_path
from loopx.ops import ledgers, sync
from loopx.storage.store import STATE_REF

ACTOR = "agent:a@x"


def _notes(led: Ledger, start: int, count: int, actor: str = ACTOR) -> None:
    for n in range(start, start + count):
        led.append("note.added", {"id": f"n-{n}", "text": f"note {n}"}, actor=actor)


def _data(fold: object) -> object:
    return cache.content(fold)  # type: ignore[arg-type]


def _bare_and_clone(tmp: Path) -> tuple[Path, Path]:
    """A bare remote and a clone of it with one commit on main (no ledger yet)."""
    remote = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", str(remote))
    origin = tmp / "origin"
    git(tmp, "clone", "-q", str(remote), str(origin))
    git(origin, "commit", "-q", "--allow-empty", "-m", "start")
    return remote, origin


def _bare_with(tmp: Path, events: int) -> tuple[Path, Path]:
    """A bare remote holding a ledger with ``events`` notes and a checkpoint of its tip."""
    remote, origin = _bare_and_clone(tmp)
    with ledgers.open_ledger(origin) as led:
        led.init(actor=ACTOR)
        led.append("goal.created", {"id": "g", "title": "The goal"}, actor=ACTOR, goal="g")
        _notes(led, 0, events)
        assert led.checkpoint(actor=ACTOR) == git(origin, "rev-parse", f"{STATE_REF}~1")
    git(origin, "push", "-q", "origin", "HEAD", f"{STATE_REF}:{STATE_REF}")
    return remote, origin


def test_a_fresh_clone_starts_from_the_checkpoint_and_folds_what_a_replay_folds(
        tmp_path: Path) -> None:
    remote, origin = _bare_with(tmp_path, 12)
    with Ledger.open(origin) as led:
        _notes(led, 100, 3)  # after the checkpoint: applied on top of it
    git(origin, "push", "-q", "origin", STATE_REF)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    with ledgers.open_ledger(clone) as led:
        fold = led.fold()
        assert led.projection.source() == f"checkpoint {git(origin, 'rev-parse', STATE_REF + '~4')}"
        assert fold.notes == 15 and fold.goals['g'].title == 'The goal'
        assert _data(fold) == _data(led.fold_at(led.tip()))


def test_the_same_events_give_the_same_checkpoint_bytes(tmp_path: Path) -> None:
    _, origin = _bare_with(tmp_path, 8)
    with Ledger.open(origin) as led:
        tip = led.tip()
        first = checkpoints.listed(led.store, tip)[0]
        lines = checkpoints.lines_of(led.store, tip, first)
        led.projection.clear()  # rebuilt by replay instead of by the writes that made it
        led.fold_at(first.commit)
        led.projection.replace(first.commit, led.fold_at(first.commit))
        again = dict(checkpoints.files(first.commit, led.projection.scalars(),
                                       led.projection.dump_rows()))
    name = checkpoint_path(first.commit, "rows-0000.tsv")
    assert lines is not None and again[name].decode() == "".join(lines)
    assert json.loads(again[checkpoint_path(first.commit, "manifest.json")])["chunks"][0][
        "sha256"] == first.chunks[0][1]


def _tamper(origin: Path) -> None:
    """Rewrite the checkpoint's first chunk (and its sha256, so only a replay can tell): the
    goal's title changes, as a forger's would."""
    with Ledger.open(origin) as led:
        tip = led.tip()
        assert tip is not None
        manifest = checkpoints.listed(led.store, tip)[0]
        lines = checkpoints.lines_of(led.store, tip, manifest)
    assert lines is not None and any('"The goal"' in line for line in lines)
    text = "".join(lines).replace('"The goal"', '"Another goal"').encode()
    doc = json.loads(manifest.to_json())
    doc["chunks"][0]["sha256"] = hashlib.sha256(text).hexdigest()
    commit_files(origin, STATE_REF, {
        checkpoint_path(manifest.commit, "rows-0000.tsv"): text,
        checkpoint_path(manifest.commit, "manifest.json"): json.dumps(doc).encode()})


def test_verify_names_a_checkpoint_that_is_not_the_fold_of_its_events(tmp_path: Path) -> None:
    _, origin = _bare_with(tmp_path, 6)
    _tamper(origin)
    with Ledger.open(origin) as led:
        tip = led.tip()
        manifest = checkpoints.listed(led.store, tip)[0]
        problems = checkpoints.verify(led.fold_at(manifest.commit), led.store, tip, manifest)
    assert problems and "differs from the replay of its events" in problems[0]


def test_a_checkpoint_of_another_loopx_version_is_not_used(tmp_path: Path) -> None:
    remote, _ = _bare_with(tmp_path, 5)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    original = rows.ROWS_KEY
    try:
        rows.ROWS_KEY = "999:9.9:rows-9"
        with ledgers.open_ledger(clone) as led:
            assert led.fold().notes == 5 and led.projection.source() is None  # replayed
    finally:
        rows.ROWS_KEY = original


def _late_events_fold_as_a_replay(before: int, late: int, after: int) -> None:
    # Clone B writes `late` events while offline (clocks from the old tip); meanwhile the
    # origin writes, checkpoints and writes more. A fresh clone of the merge must fold the
    # late events where their clocks put them: before the checkpoint's last key.
    with tempfile.TemporaryDirectory(prefix="loopx-cp-") as tmp_:
        tmp = Path(tmp_)
        remote, origin = _bare_with(tmp, before)
        offline = tmp / "offline"
        git(tmp, "clone", "-q", str(remote), str(offline))
        with ledgers.open_ledger(offline) as led:
            _notes(led, 1000, late, actor="agent:b@x")
        with Ledger.open(origin) as led:
            _notes(led, 2000, after)
            led.checkpoint(actor=ACTOR)
        git(origin, "push", "-q", "origin", STATE_REF)
        with ledgers.open_ledger(offline) as led:
            sync.sync_(led)
        fresh = tmp / "fresh"
        git(tmp, "clone", "-q", str(remote), str(fresh))
        with ledgers.open_ledger(fresh) as led:
            assert _data(led.fold()) == _data(led.fold_at(led.tip()))


# The corners of the space the stress variant samples: nothing late, late events with
# nothing after the checkpoint, and both at their largest.
@pytest.mark.parametrize("before, late, after", [(1, 0, 2), (2, 3, 0), (6, 4, 4)])
def test_a_late_older_clocked_event_still_gives_what_a_full_replay_gives(
        before: int, late: int, after: int) -> None:
    _late_events_fold_as_a_replay(before, late, after)


@pytest.mark.stress
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 6), st.integers(0, 4), st.integers(0, 4))
def test_a_late_older_clocked_event_still_gives_what_a_full_replay_gives_sampled(
        before: int, late: int, after: int) -> None:
    _late_events_fold_as_a_replay(before, late, after)


def test_doctor_verify_clears_the_notice_or_names_a_forged_checkpoint(tmp_path: Path) -> None:
    remote, origin = _bare_with(tmp_path, 4)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    status = invoke(clone, "status", "--json", "--no-ci").json()
    assert status["ledger"]["unverified_checkpoint"]
    assert any(a["command"] == "git loopx doctor --verify" for a in status["actions"])
    checked = invoke(clone, "doctor", "--verify", "--json")
    assert checked.code == 0, checked.out + checked.err
    status = invoke(clone, "status", "--json", "--no-ci").json()
    assert status["ledger"]["unverified_checkpoint"] is None

    _tamper(origin)
    git(origin, "push", "-q", "origin", STATE_REF)
    forged = tmp_path / "forged"
    git(tmp_path, "clone", "-q", str(remote), str(forged))
    assert invoke(forged, "status", "--json", "--no-ci").json()["goals"][0]["title"] == (
        "Another goal")  # used at once, as a clone trusts its origin's files...
    result = invoke(forged, "doctor", "--verify", "--json")
    assert result.code == 1  # ...until the replay tells
    assert any("differs from the replay" in p for p in result.json()["verify"]["problems"])
    assert invoke(forged, "status", "--json", "--no-ci").json()["goals"][0]["title"] == "The goal"


def test_validate_refuses_a_pull_request_that_adds_a_forged_checkpoint(tmp_path: Path) -> None:
    _, origin = _bare_with(tmp_path, 4)
    with Ledger.open(origin) as led:
        _notes(led, 50, 2)
        tip = led.tip()
        assert tip is not None
        led.fold()
        honest = dict(checkpoints.files(tip, led.projection.scalars(),
                                         led.projection.dump_rows()))
    rows_file = checkpoint_path(tip, "rows-0000.tsv")
    forged = dict(honest, **{rows_file: honest[rows_file].replace(b'"The goal"', b'"Mine"')})
    doc = json.loads(forged[checkpoint_path(tip, "manifest.json")])
    doc["chunks"][0]["sha256"] = hashlib.sha256(forged[rows_file]).hexdigest()
    forged[checkpoint_path(tip, "manifest.json")] = json.dumps(doc).encode()
    for name, files in (("honest", honest), ("forged", forged)):
        commit_files(origin, f"refs/heads/loopx/pr-{name}", dict(files), parent=tip)
        result = invoke(origin, "validate", "--range", f"{STATE_REF}..loopx/pr-{name}", "--json")
        found = [f["rule"] for f in result.json()["findings"]]
        assert found == ([] if name == "honest" else ["checkpoint"]), result.out


def test_sync_commits_a_checkpoint_its_writers_did_not_make(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writers that made none (an older loopx, a checkpoint that lost a race): sync looks at
    the schedule itself, events merged from elsewhere included."""
    monkeypatch.setattr(checkpoints, "EVERY", 5)
    remote, origin = _bare_with(tmp_path, 2)
    monkeypatch.setattr(checkpoints, "crossed", lambda before, after: False)
    with ledgers.open_ledger(origin) as led:
        _notes(led, 10, 3)  # 3 events since the checkpoint: none yet
        sync.sync_(led)
        assert len(checkpoints.listed(led.store, led.tip())) == 1
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    with ledgers.open_ledger(other) as led:
        _notes(led, 20, 2, actor="agent:b")
        sync.sync_(led)
        assert len(checkpoints.listed(led.store, led.tip())) == 2
    assert git(remote, "rev-parse", STATE_REF) == git(other, "rev-parse", STATE_REF)


def test_the_schedule_is_every_fifth_bounded_by_two_and_ten_thousand() -> None:
    assert [checkpoints.interval(n) for n in (0, 2_000, 10_000, 20_000, 50_000, 10**6)] == [
        2_000, 2_000, 2_000, 4_000, 10_000, 10_000]
    assert not checkpoints.crossed(0, 1_999) and checkpoints.crossed(1_999, 2_000)
    assert checkpoints.crossed(0, 100_000) and not checkpoints.crossed(2_000, 3_999)
    points = [n for n in range(1, 100_001) if checkpoints.crossed(n - 1, n)]
    assert points[:5] == [2_000, 4_000, 6_000, 8_000, 10_000] and len(points) < 25
    assert all(b - a <= 10_000 for a, b in zip(points, points[1:]))
    assert checkpoints.due(4_000, 2_000) and not checkpoints.due(3_999, 2_000)


def _shared(tmp: Path, share: str) -> tuple[Path, Path]:
    """A ledger of 13 events written by ``share`` (appends, a batch) and sent to a bare
    remote by a plain push or by the pre-push hook (no sync): the remote, the writer."""
    remote, origin = _bare_and_clone(tmp)
    with ledgers.open_ledger(origin) as led:
        led.init(actor=ACTOR)
        if share != "batch":
            _notes(led, 0, 12)
    if share == "batch":
        lines = "".join(json.dumps(["note", "add", f"note {n}"]) + "\n" for n in range(12))
        assert invoke(origin, "batch", input=lines).code == 0
    if share == "hook":
        assert invoke(origin, "hooks", "install").code == 0
        git(origin, "push", "-q", "origin", "HEAD")  # the code; the state goes along
    else:
        git(origin, "push", "-q", "origin", "HEAD", f"{STATE_REF}:{STATE_REF}")
    return remote, origin


@pytest.mark.parametrize("share", ["push", "hook", "batch"])
def test_a_ledger_shared_without_sync_gives_a_fresh_clone_a_checkpoint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, share: str) -> None:
    monkeypatch.setattr(checkpoints, "EVERY", 5)  # a checkpoint every 5 events
    remote, origin = _shared(tmp_path, share)
    assert git(remote, "rev-parse", STATE_REF) == git(origin, "rev-parse", STATE_REF)
    with Ledger.open(origin) as led:
        made = checkpoints.listed(led.store, led.tip())
    assert made and made[0].events >= 10  # by the writes themselves (13 events)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    status = run_loopx(clone, "status", "--format", "json").json()
    assert status["ledger"]["unverified_checkpoint"] == made[0].commit  # it started there
    assert status["notes"] == 12 and status["ledger"]["events"] == 13


def test_a_chunk_that_fails_mid_load_leaves_the_cache_empty_not_half_filled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks are checked one by one as they stream into the cache: a bad later chunk must
    undo the rows of the earlier ones."""
    import dataclasses

    monkeypatch.setattr(checkpoints, "CHECKPOINT_CHUNK_BYTES", 300)  # many small chunks
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    with Ledger.open(repo) as led:
        led.init(actor=ACTOR)
        led.append("goal.created", {"id": "g", "title": "The goal"}, actor=ACTOR, goal="g")
        for n in range(20):
            led.append("todo.added", {"id": f"t{n}", "goal": "g", "title": f"todo {n}"},
                       actor=ACTOR, goal="g")
        led.checkpoint(actor=ACTOR)
        tip = led.tip()
        assert tip is not None
        (manifest,) = checkpoints.listed(led.store, tip)
        assert len(manifest.chunks) >= 3
        name, _, count = manifest.chunks[-1]
        broken = dataclasses.replace(manifest, chunks=[*manifest.chunks[:-1],
                                                       (name, "0" * 64, count)])
        scratch = rows.Projection(tmp_path / "scratch.sqlite")
        try:
            assert checkpoints.load(scratch, led.store, tip, broken) is False
            assert scratch.tip() is None and list(scratch.dump_rows()) == []
            assert checkpoints.load(scratch, led.store, tip, manifest) is True
            assert scratch.tip() == manifest.commit and list(scratch.dump_rows())
        finally:
            scratch.close()


# --- a checkpoint made by a hostile clone (issue 22): checked on open ------------------------


def _hostile_push(remote: Path, tmp: Path, forge) -> None:  # type: ignore[no-untyped-def]
    """A clone of ``remote`` whose ``forge(clone)`` commits a forged checkpoint on the state
    branch with plain git, then pushes it, as a writer with push access could."""
    hostile = tmp / "hostile"
    git(tmp, "clone", "-q", str(remote), str(hostile))
    git(hostile, "fetch", "-q", "origin", f"{STATE_REF}:{STATE_REF}")
    forge(hostile)
    git(hostile, "push", "-q", "origin", STATE_REF)


def _rows_of_tip(repo: Path) -> tuple[str, dict[str, object], list[str]]:
    """(tip, scalars, row lines) of ``repo``'s cache at its tip, as its checkpoint would hold."""
    with Ledger.open(repo) as led:
        tip = led.tip()
        assert tip is not None
        led.fold()
        return tip, led.projection.scalars(), list(led.projection.dump_rows())


def _commit_checkpoint(repo: Path, commit: str, scalars: dict[str, object],
                       lines: list[str]) -> None:
    """Commit a checkpoint of ``commit`` holding these rows, in place of the honest ones (so
    a fresh clone has only the forged one to start from)."""
    _replace_checkpoints(repo, dict(checkpoints.files(commit, scalars, iter(lines))))


def _replace_checkpoints(repo: Path, forged: dict[str, bytes]) -> None:
    files: dict[str, bytes | None] = dict(forged)
    for path in git(repo, "ls-tree", "-r", "--name-only", STATE_REF, "checkpoints").splitlines():
        files.setdefault(path, None)
    commit_files(repo, STATE_REF, files, message="loopx: checkpoint")


def _forged_older_rows(hostile: Path) -> None:
    """Rows of an earlier commit, filed as the checkpoint of the tip."""
    _, scalars, lines = _rows_of_tip(hostile)
    with Ledger.open(hostile) as led:
        _notes(led, 300, 2)
        tip = led.tip()
    assert tip is not None
    _commit_checkpoint(hostile, tip, scalars, lines)


def _forged_newer_rows(hostile: Path) -> None:
    """Rows of a later commit, filed as the checkpoint of an earlier one."""
    with Ledger.open(hostile) as led:
        earlier = led.tip()
        _notes(led, 400, 2)
    assert earlier is not None
    _, scalars, lines = _rows_of_tip(hostile)
    _commit_checkpoint(hostile, earlier, scalars, lines)


def _forged_counts(hostile: Path) -> None:
    """The honest rows of the tip with counters that disagree with its manifest."""
    tip, scalars, lines = _rows_of_tip(hostile)
    files = dict(checkpoints.files(tip, dict(scalars, events=int(scalars["events"]) + 7),  # type: ignore[call-overload]
                                   iter(lines)))
    path = checkpoint_path(tip, "manifest.json")
    doc = json.loads(files[path])
    doc["events"] = int(scalars["events"])  # type: ignore[call-overload]
    files[path] = json.dumps(doc).encode()
    _replace_checkpoints(hostile, files)


def _forged_truncated(hostile: Path) -> None:
    """A chunk cut short (its digest kept): a copy that broke on the way."""
    tip, scalars, lines = _rows_of_tip(hostile)
    files = dict(checkpoints.files(tip, scalars, iter(lines)))
    chunk = checkpoint_path(tip, "rows-0000.tsv")
    files[chunk] = files[chunk][: len(files[chunk]) // 2]
    _replace_checkpoints(hostile, files)


def _forged_last_key(hostile: Path) -> None:
    """A last key naming an event the commit does not hold (swapped for another id)."""
    tip, scalars, lines = _rows_of_tip(hostile)
    clock, _ = scalars["last_key"]  # type: ignore[misc]
    forged = dict(scalars, last_key=[clock, "01M8TMNKPSQSZRDCTAGCRV2PHW"])
    _commit_checkpoint(hostile, tip, forged, lines)


@pytest.mark.parametrize("forge", [_forged_older_rows, _forged_newer_rows, _forged_counts,
                                   _forged_truncated, _forged_last_key],
                         ids=["older rows", "newer rows", "counts", "truncated", "last key"])
def test_a_checkpoint_a_hostile_clone_forged_is_not_believed_on_open(
        tmp_path: Path, forge) -> None:  # type: ignore[no-untyped-def]
    remote, _ = _bare_with(tmp_path, 4)
    _hostile_push(remote, tmp_path, forge)
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(remote), str(fresh))
    status = run_loopx(fresh, "status", "--format", "json")
    assert status.code == 0, status.err
    assert "not used:" in status.err  # a notice says why
    with Ledger.open(fresh) as led:
        assert _data(led.fold()) == _data(led.fold_at(led.tip()))  # the answer of a replay
        source = led.projection.source()
        honest = [m.commit for m in checkpoints.listed(led.store, led.tip())
                  if f"checkpoint {m.commit}" == source]
    assert source is None or honest  # the honest checkpoint of the hub, if any, or a replay
    doc = status.json()
    assert doc["notes"] == _data(led.fold_at(led.tip()))["notes"]  # type: ignore[index]


def test_a_consistent_forgery_is_replayed_before_the_first_write_with_a_notice(
        tmp_path: Path) -> None:
    """Rows that are all of the right commit but say what no event says (the goal's title)
    pass the cheap checks; they are flagged unverified, and the first write replays and
    rebuilds before it is judged, saying so (the honest limit: the reads before it)."""
    remote, origin = _bare_with(tmp_path, 4)
    _tamper(origin)
    git(origin, "push", "-q", "origin", STATE_REF)
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(remote), str(fresh))
    status = run_loopx(fresh, "status", "--format", "json")
    assert status.json()["ledger"]["unverified_checkpoint"]  # type: ignore[index]
    wrote = run_loopx(fresh, "note", "add", "after the clone")
    assert wrote.code == 0, wrote.err
    assert "is not the fold of its events; the cache was rebuilt from the events" in wrote.err
    after = run_loopx(fresh, "status", "--format", "json").json()
    assert after["ledger"]["unverified_checkpoint"] is None  # type: ignore[index]
    assert after["goals"][0]["title"] == "The goal"  # type: ignore[index]
    with Ledger.open(fresh) as led:
        assert _data(led.fold()) == _data(led.fold_at(led.tip()))
