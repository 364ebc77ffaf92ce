"""Checkpoints: a fresh clone starts from the projection's rows committed beside the events,
signed by a key the ledger lists, and gets exactly the fold a full replay gives, or does not
use them at all (it replays, and says so)."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Optional

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytest

from conftest import git, invoke, run_loopx
from statekit import commit_files, ssh_key
from loopx.ledger import cache, checkpoints, rows
from loopx.ledger.book import Ledger
from loopx.model.paths import checkpoint_path
from loopx.ops import config, ledgers, sync
from loopx.storage.store import STATE_REF

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")

ACTOR = "agent:a@x"
SIGNER = "human:alice@example.com"  # the ledger's listed signer; her key signs checkpoints


def _key(tmp: Path, name: str = "alice") -> tuple[Path, str]:
    """(private key, public part) of ``name``'s ssh key under ``tmp``, made once."""
    key = tmp / f"key-{name}"
    if not key.exists():
        made, _ = ssh_key(tmp, key.name)
        assert made == key
    return key, " ".join(Path(f"{key}.pub").read_text().split()[:2])


def _sign_with(repo: Path, key: Path) -> None:
    """This clone signs its commits with ``key`` (git's own ssh signing)."""
    git(repo, "config", "gpg.format", "ssh")
    git(repo, "config", "user.signingkey", str(key))


def _list_signer(led: Ledger, tmp: Path) -> None:
    """alice's key in the ledger's allowed_signers (the first key: signing turns on)."""
    led.run(config.add_signer, SIGNER, _key(tmp)[1], actor=SIGNER)


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
    """A bare remote holding a ledger with ``events`` notes and a checkpoint of its tip, signed
    by alice (listed; the origin signs with her key)."""
    remote, origin = _bare_and_clone(tmp)
    _sign_with(origin, _key(tmp)[0])
    with ledgers.open_ledger(origin) as led:
        led.init(actor=ACTOR)
        _list_signer(led, tmp)
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
        assert led.projection.source() == cache.source(
            git(origin, 'rev-parse', STATE_REF + '~4'), SIGNER)
        assert led.replays == 0  # the signed checkpoint and three events: no replay
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


def test_status_names_the_signed_checkpoint_until_doctor_verify_replays_it(
        tmp_path: Path) -> None:
    remote, origin = _bare_with(tmp_path, 4)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    status = invoke(clone, "status", "--json", "--no-ci")
    assert status.json()["ledger"]["checkpoint"] == {
        "commit": git(origin, "rev-parse", f"{STATE_REF}~1"), "signer": SIGNER}
    assert "not used" not in status.err
    checked = invoke(clone, "doctor", "--verify", "--json")
    assert checked.code == 0, checked.out + checked.err
    status = invoke(clone, "status", "--json", "--no-ci").json()
    assert status["ledger"]["checkpoint"] is None  # the cache is now the replay's


def test_doctor_verify_names_a_forged_checkpoint(tmp_path: Path) -> None:
    remote, origin = _bare_with(tmp_path, 4)
    _tamper(origin)
    git(origin, "push", "-q", "origin", STATE_REF)
    forged = tmp_path / "forged"
    git(tmp_path, "clone", "-q", str(remote), str(forged))
    assert invoke(forged, "status", "--json", "--no-ci").json()["goals"][0]["title"] == "The goal"
    result = invoke(forged, "doctor", "--verify", "--json")
    assert result.code == 1, result.out + result.err
    assert any("differs from the replay" in p for p in result.json()["verify"]["problems"])


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
    remote, origin = _bare_with(tmp_path, 1)  # 4 events: the write path made no checkpoint
    monkeypatch.setattr(checkpoints, "crossed", lambda before, after: False)
    with ledgers.open_ledger(origin) as led:
        _notes(led, 10, 3)  # 3 events since the checkpoint: none yet
        sync.sync_(led)
        assert len(checkpoints.listed(led.store, led.tip())) == 1
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    _sign_with(other, _key(tmp_path)[0])
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
    """A ledger of 14 events written by ``share`` (appends, a batch) and sent to a bare
    remote by a plain push or by the pre-push hook (no sync): the remote, the writer."""
    remote, origin = _bare_and_clone(tmp)
    _sign_with(origin, _key(tmp)[0])
    with ledgers.open_ledger(origin) as led:
        led.init(actor=ACTOR)
        _list_signer(led, tmp)
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
    assert made and made[0].events >= 10  # by the writes themselves (14 events)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    status = run_loopx(clone, "status", "--format", "json").json()
    assert status["ledger"]["checkpoint"] == {"commit": made[0].commit, "signer": SIGNER}
    assert status["notes"] == 12 and status["ledger"]["events"] == 14


def test_a_chunk_that_fails_mid_load_leaves_the_cache_empty_not_half_filled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks are checked one by one as they stream into the cache: a bad later chunk must
    undo the rows of the earlier ones."""
    import dataclasses

    monkeypatch.setattr(checkpoints, "CHECKPOINT_CHUNK_BYTES", 300)  # many small chunks
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    _sign_with(repo, _key(tmp_path)[0])
    with Ledger.open(repo) as led:
        led.init(actor=ACTOR)
        _list_signer(led, tmp_path)
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
            assert checkpoints.load(scratch, led.store, tip, broken, signer=SIGNER) is False
            assert scratch.tip() is None and list(scratch.dump_rows()) == []
            assert checkpoints.load(scratch, led.store, tip, manifest, signer=SIGNER) is True
            assert scratch.tip() == manifest.commit and list(scratch.dump_rows())
        finally:
            scratch.close()


# --- a checkpoint made by a hostile clone (issue 22): checked on open ------------------------


def _hostile_push(remote: Path, tmp: Path, forge, key: Optional[Path] = None  # type: ignore[no-untyped-def]
                  ) -> Path:
    """A clone of ``remote`` whose ``forge(clone)`` commits a forged checkpoint on the state
    branch with plain git, then pushes it, as a writer with push access could; with ``key``,
    the forging commit is signed with it. Returns the clone."""
    hostile = tmp / "hostile"
    git(tmp, "clone", "-q", str(remote), str(hostile))
    git(hostile, "fetch", "-q", "origin", f"{STATE_REF}:{STATE_REF}")
    forge(hostile)
    if key is not None:
        _resign(hostile, key)
    git(hostile, "push", "-q", "origin", STATE_REF)
    return hostile


def _resign(repo: Path, key: Path) -> None:
    """The state tip made again, same tree, parents and message, signed with ``key``."""
    tip = git(repo, "rev-parse", STATE_REF)
    parents = [arg for parent in git(repo, "rev-parse", f"{tip}^@").split()
               for arg in ("-p", parent)]
    again = git(repo, "-c", "gpg.format=ssh", "-c", f"user.signingkey={key}", "commit-tree",
                "-S", f"{tip}^{{tree}}", *parents, "-m", git(repo, "log", "-1", "--format=%B", tip))
    git(repo, "update-ref", STATE_REF, again, tip)


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


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed by the listed key"])
@pytest.mark.parametrize("forge", [_forged_older_rows, _forged_newer_rows, _forged_counts,
                                   _forged_truncated, _forged_last_key],
                         ids=["older rows", "newer rows", "counts", "truncated", "last key"])
def test_a_checkpoint_a_hostile_clone_forged_is_not_believed_on_open(
        tmp_path: Path, forge, signed: bool) -> None:  # type: ignore[no-untyped-def]
    """Rows of the wrong commit are caught by the cheap checks, even when a listed key signed
    them (a signer's mistake is not believed either)."""
    remote, _ = _bare_with(tmp_path, 4)
    _hostile_push(remote, tmp_path, forge, _key(tmp_path)[0] if signed else None)
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(remote), str(fresh))
    status = run_loopx(fresh, "status", "--format", "json")
    assert status.code == 0, status.err
    assert status.err.count("not used") == 1  # one notice says why
    with Ledger.open(fresh) as led:
        assert _data(led.fold()) == _data(led.fold_at(led.tip()))  # the answer of a replay
        started = cache.started_from(led.projection.source())
        honest = [m.commit for m in checkpoints.listed(led.store, led.tip())
                  if started and started[0] == m.commit]
    assert started is None or honest  # the honest checkpoint of the hub, if any, or a replay
    doc = status.json()
    assert doc["notes"] == _data(led.fold_at(led.tip()))["notes"]  # type: ignore[index]


# --- only a listed signer's checkpoint is adopted without a replay (issue 22) -----------------


def _forged_title(hostile: Path) -> None:
    """A consistent forgery, newer than the honest checkpoint: one more note, then a
    checkpoint of that tip whose rows are all of the right commit, but with the goal's title
    changed (only a replay can tell)."""
    with Ledger.open(hostile) as led:
        _notes(led, 500, 1)
    tip, scalars, lines = _rows_of_tip(hostile)
    forged = [line.replace('"The goal"', '"Another goal"') for line in lines]
    assert forged != lines
    commit_files(hostile, STATE_REF, dict(checkpoints.files(tip, scalars, iter(forged))),
                 message="loopx: checkpoint")


def _fresh_fold(remote: Path, tmp: Path, name: str,
                capsys: pytest.CaptureFixture[str]) -> tuple[Ledger, str]:
    """A fresh clone of ``remote`` folded in this process: (its ledger, what it said)."""
    fresh = tmp / name
    git(tmp, "clone", "-q", str(remote), str(fresh))
    capsys.readouterr()
    led = ledgers.open_ledger(fresh)
    led.fold()
    return led, capsys.readouterr().err


def test_a_checkpoint_signed_by_a_listed_signer_is_adopted_without_a_replay(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    remote, origin = _bare_with(tmp_path, 6)
    led, said = _fresh_fold(remote, tmp_path, "fresh", capsys)
    with led:
        assert led.replays == 0
        assert led.projection.source() == cache.source(
            git(origin, "rev-parse", f"{STATE_REF}~1"), SIGNER)
        assert _data(led.fold()) == _data(led.fold_at(led.tip()))
        wrote = led.append("note.added", {"id": "n-after", "text": "after"}, actor=ACTOR)
        assert wrote and led.replays == 0  # a write is judged on the signed rows too
    assert said == ""


@pytest.mark.parametrize("how", ["modified in an unsigned commit", "added unsigned"])
def test_an_unsigned_forgery_is_not_adopted_and_one_notice_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str) -> None:
    """The forgery replaces the only checkpoint (then the clone replays every event) or sits
    beside the honest one (then it starts from that one)."""
    remote, origin = _bare_with(tmp_path, 4)
    if how == "added unsigned":
        _hostile_push(remote, tmp_path, _forged_title)
    else:
        _tamper(origin)
        git(origin, "push", "-q", "origin", STATE_REF)
    led, said = _fresh_fold(remote, tmp_path, "fresh", capsys)
    with led:
        assert led.fold().goals["g"].title == "The goal"
        assert _data(led.fold()) == _data(led.fold_at(led.tip()))
        started = cache.started_from(led.projection.source())
        assert (led.replays, started and started[1]) == (
            (1, None) if how != "added unsigned" else (0, SIGNER))
    assert said.count("loopx: checkpoint") == 1, said  # one notice, naming the forgery
    assert "not signed by a key in the ledger's allowed_signers" in said
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    status = run_loopx(other, "status", "--format", "json")
    assert status.code == 0, status.err
    assert status.json()["goals"][0]["title"] == "The goal"  # type: ignore[index]
    assert status.err.count("not used") == 1


def test_a_forgery_signed_by_an_unlisted_key_is_not_adopted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    remote, _ = _bare_with(tmp_path, 4)
    _hostile_push(remote, tmp_path, _forged_title, _key(tmp_path, "mallory")[0])
    assert "SSH SIGNATURE" in git(remote, "cat-file", "commit", STATE_REF)
    led, said = _fresh_fold(remote, tmp_path, "fresh", capsys)
    with led:
        assert led.fold().goals["g"].title == "The goal"
        assert _data(led.fold()) == _data(led.fold_at(led.tip()))
        assert led.replays == 0  # from the honest checkpoint alice signed
    assert said.count("loopx: checkpoint") == 1
    assert "is not signed by a key in the ledger's allowed_signers" in said


def test_a_checkpoint_whose_signer_was_removed_is_not_adopted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The signers in force at the tip decide, not those when it was made: a key taken off
    the list (rotated, lost) vouches for nothing any more."""
    remote, origin = _bare_with(tmp_path, 4)
    bob, bob_public = _key(tmp_path, "bob")
    with ledgers.open_ledger(origin) as led:  # bob is listed (alice signs that), then alice
        led.write(lambda txn: config.add_signer(txn, "human:bob@example.com", bob_public),
                  actor=SIGNER, sign=True)
        _sign_with(origin, bob)
        led.write(lambda txn: config.remove_signer(txn, SIGNER), actor="human:bob@example.com",
                  sign=True)
    git(origin, "push", "-q", "origin", STATE_REF)
    led, said = _fresh_fold(remote, tmp_path, "fresh", capsys)
    with led:
        assert led.replays == 1 and led.projection.source() is None
        assert [s.split()[0] for s in led.fold().config["allowed_signers"].splitlines()] == [
            "human:bob@example.com"]
    assert "not signed by a key in the ledger's allowed_signers" in said


def test_checkpoint_without_a_signing_key_commits_nothing_and_says_what_to_set(
        tmp_path: Path) -> None:
    remote, origin = _bare_with(tmp_path, 3)
    with Ledger.open(origin) as led:
        _notes(led, 60, 1)
    git(origin, "config", "--unset", "user.signingkey")
    before = git(origin, "rev-parse", STATE_REF)
    result = run_loopx(origin, "checkpoint")
    assert result.code == 1, result.out + result.err
    assert "no signing key is configured here" in result.err
    assert "git config user.signingkey" in result.err
    assert git(origin, "rev-parse", STATE_REF) == before
    _sign_with(origin, _key(tmp_path, "mallory")[0])  # a key, but not one the ledger lists
    result = run_loopx(origin, "checkpoint")
    assert result.code == 1 and "not signed by a key in the ledger's allowed_signers" in result.err
    assert git(origin, "rev-parse", STATE_REF) == before
    _sign_with(origin, _key(tmp_path)[0])
    result = run_loopx(origin, "checkpoint")
    assert result.code == 0, result.err
    assert "SSH SIGNATURE" in git(origin, "cat-file", "commit", STATE_REF)


def test_checkpoint_in_a_ledger_with_no_signers_commits_nothing(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    _sign_with(repo, _key(tmp_path)[0])
    with Ledger.open(repo) as led:
        led.init(actor=ACTOR)
        _notes(led, 0, 2)
    result = run_loopx(repo, "checkpoint")
    assert result.code == 1 and "this ledger lists none" in result.err
    assert "git loopx signer add" in result.err
    assert git(repo, "ls-tree", STATE_REF, "checkpoints") == ""


def test_the_signing_policy_that_only_a_replay_can_judge_trusts_no_checkpoint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
        ) -> None:
    """A config event whose clock may or may not be "far ahead" of the events before it,
    depending on events the policy's own fold does not read: no checkpoint is adopted."""
    from loopx.ledger import signatures
    from loopx.projection import folding

    remote, origin = _bare_and_clone(tmp_path)
    _sign_with(origin, _key(tmp_path)[0])
    with ledgers.open_ledger(origin) as led:
        led.init(actor=ACTOR)
        _notes(led, 0, 8)
        _list_signer(led, tmp_path)  # clock 10: the config fold sees it as its first event
        led.checkpoint(actor=ACTOR)
        assert signatures.policy_at(led.store, led.tip()) is not None
    git(origin, "push", "-q", "origin", "HEAD", f"{STATE_REF}:{STATE_REF}")
    monkeypatch.setattr(folding, "MAX_CLOCK_LEAD", 5)  # between 0 and 9 events before it
    with Ledger.open(origin) as led:
        assert signatures.policy_at(led.store, led.tip()) is None
    led, said = _fresh_fold(remote, tmp_path, "fresh", capsys)
    with led:
        assert led.replays == 1
    assert "only a replay can judge" in said


@pytest.mark.parametrize("setting", ["log.showSignature=true", "log.follow=true",
                                     "color.ui=always", "diff.relative=true"])
def test_a_users_log_settings_change_no_verdict(tmp_path: Path, setting: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Settings that change what `git log` prints (a signature check before each commit,
    --follow for one path, colours) leave the signature verdicts and the history as git
    holds them: the signed checkpoint is still adopted, from any directory."""
    remote, _ = _bare_with(tmp_path, 3)
    name, _, value = setting.partition("=")
    git(tmp_path, "config", "--global", name, value)
    led, said = _fresh_fold(remote, tmp_path, "fresh", capsys)
    with led:
        assert led.replays == 0 and said == "", said
        assert cache.started_from(led.projection.source())[1] == SIGNER  # type: ignore[index]
