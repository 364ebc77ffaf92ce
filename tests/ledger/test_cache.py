"""The projection cache: an incremental update (only the files a new tip added) equals a full
rebuild, a corrupt cache is never trusted, and long rebuilds report progress."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import git
from loopx.ledger import cache, replay, rows
from loopx.errors import TransitionError
from loopx.ledger.txn import Txn
from loopx.model import clock
from loopx.projection import entities, folding, views
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft

ACTOR = "agent:a"

# One step of a story: each kind picks its target by index among what exists, so every drawn
# list is a plausible history; steps the rules refuse are simply skipped.
steps = st.lists(st.tuples(st.sampled_from(["goal", "todo", "claim", "done", "note", "evidence",
                                            "gate", "answer", "close"]), st.integers(0, 5)),
                 min_size=1, max_size=6)


def _draft(fold: entities.Fold, kind: str, pick: int, n: int) -> Draft | None:
    goals, todos, gates = sorted(fold.goals), sorted(fold.todos), sorted(fold.gates)
    if kind == "goal":
        return Draft("goal.created", {"id": f"g-{n}", "title": "G",
                                      "acceptance": [{"id": "a1", "text": "ok"}]}, f"g-{n}")
    if kind == "note":
        return Draft("note.added", {"id": f"n-{n}", "text": "hi"})
    if not goals:
        return None
    goal = goals[pick % len(goals)]
    if kind == "todo":  # sometimes after a todo of another goal: dependencies cross goals
        after = [todos[pick % len(todos)]] if todos and pick % 2 else []
        return Draft("todo.added", {"id": f"t-{n}", "goal": goal, "title": "T",
                                    "depends_on": after}, goal)
    if kind == "close":
        return Draft("goal.closed", {"id": goal, "outcome": "abandoned"}, goal)
    if kind == "evidence":
        return Draft("evidence.recorded", {"id": f"e-{n}", "kind": "test", "criteria": ["a1"]}, goal)
    if kind == "gate":
        return Draft("gate.opened", {"id": f"q-{n}", "goal": goal, "question": "?",
                                     "authority": [ACTOR]}, goal)
    if kind == "answer" and gates:
        return Draft("gate.answered", {"id": gates[pick % len(gates)], "decision": "approve"})
    if kind in ("claim", "done") and todos:
        tid = todos[pick % len(todos)]
        data = {"id": tid, "until": "2099-01-01T00:00:00Z"} if kind == "claim" else {"id": tid}
        return Draft(f"todo.{'claimed' if kind == 'claim' else 'done'}", data)
    return None


def _append(led: Ledger, batch: list[tuple[str, int]], counter: list[int]) -> None:
    def build(txn: Txn) -> None:
        for kind, pick in batch:
            counter[0] += 1
            draft = _draft(txn.fold, kind, pick, counter[0])
            if draft is not None:
                try:
                    txn.add(draft)
                except TransitionError:
                    pass

    led.write(build, actor=ACTOR)


def _full(led: Ledger) -> entities.Fold:
    problems: list[entities.Problem] = []
    fold = folding.replay(led.read_events(led.tip(), problems))
    fold.problems[:0] = problems
    return fold


def _new_repo(where: Path) -> Path:
    path = where / "repo"
    path.mkdir()
    git(path, "init", "-q")
    return path


def _rewind(led: Ledger, tip: str) -> None:
    """Put the cache back at an older tip, as if the newer events had arrived by fetch."""
    led.projection.replace(tip, led.fold_at(tip))
    led._live_path.unlink(missing_ok=True)


def _data(fold: entities.Fold) -> object:
    return cache.content(fold)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(steps, min_size=1, max_size=5))
# Every kind of step at least once, over two batches (the stress variant samples 40 more).
@example([[("goal", 0), ("todo", 0), ("todo", 1), ("claim", 0), ("done", 0), ("note", 0)],
          [("evidence", 1), ("gate", 1), ("answer", 0), ("claim", 1), ("close", 0)]])
def test_incremental_update_equals_full_rebuild(batches: list[list[tuple[str, int]]]) -> None:
    _incremental_equals_full(batches)


@pytest.mark.stress
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(steps, min_size=1, max_size=5))
def test_incremental_update_equals_full_rebuild_sampled_more(
        batches: list[list[tuple[str, int]]]) -> None:
    _incremental_equals_full(batches)


def _incremental_equals_full(batches: list[list[tuple[str, int]]]) -> None:
    with tempfile.TemporaryDirectory(prefix="loopx-cache-") as tmp:
        repo = _new_repo(Path(tmp))
        counter = [0]
        with Ledger.open(repo) as writer:
            writer.init(actor=ACTOR)
            for batch in batches:
                before = writer.tip()
                assert before is not None
                _append(writer, batch, counter)
                written = _data(writer.fold())  # what the write path itself cached
                _rewind(writer, before)
                with Ledger.open(repo) as reader:
                    incremental = reader.fold()
                    full = _full(reader)
                    assert _data(incremental) == _data(full) == written
                    for table in ("goals", "todos", "gates", "evidence"):  # order counts too
                        assert list(getattr(incremental, table)) == list(getattr(full, table))
                    _check_live(reader, full)
                    rebuilt = reader.reader.rebuild(reader.tip())
                    assert _data(rebuilt) == _data(full)


def _check_live(reader: Ledger, full: entities.Fold) -> None:
    """The live file alone gives the default status: the full one minus closed goals."""
    live = reader.live_fold()
    loaded = cache.load_live(reader._live_path)
    assert loaded is not None and loaded[0] == reader.tip()
    assert _data(loaded[1]) == _data(live)
    assert _data(live) == _data(cache.split(full))
    now = clock.parse_ts("2030-01-01T00:00:00Z")
    whole, part = views.snapshot(full, now), views.snapshot(live, now)
    in_play = {g["id"] for g in whole["goals"] if g["state"] in ("active", "paused")}
    assert [g["id"] for g in part["goals"]] == [g["id"] for g in whole["goals"] if g["id"] in in_play]
    assert part["frontier"] == whole["frontier"]
    assert [t for t in part["todos"] if t["goal"] in in_play] == [
        t for t in whole["todos"] if t["goal"] in in_play]


def test_incremental_update_reads_only_the_new_files(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    before = ledger.tip()
    assert before is not None
    ledger.append("note.added", {"id": "n-1", "text": "one"}, actor=ACTOR)
    ledger.append("note.added", {"id": "n-2", "text": "two"}, actor=ACTOR)
    _rewind(ledger, before)
    parsed: list[int] = []
    original = replay.Reader._parse_entries

    def counting(self: replay.Reader, entries: list[object],
                 problems: list[entities.Problem]) -> object:
        parsed.append(len(entries))
        return original(self, entries, problems)  # type: ignore[arg-type]

    monkeypatch.setattr(replay.Reader, "_parse_entries", counting)
    with Ledger.open(ledger.repo.cwd) as reader:
        assert reader.fold().notes == 2
    assert parsed == [2]


def test_a_write_reads_and_writes_only_the_rows_it_touches(ledger: Ledger) -> None:
    for n in range(30):
        ledger.append("goal.created", {"id": f"g-{n}", "title": "G"}, actor=ACTOR, goal=f"g-{n}")
    statements: list[str] = []
    ledger.projection.conn.set_trace_callback(statements.append)
    ledger.append("todo.added", {"id": "t-1", "goal": "g-7", "title": "T"}, actor=ACTOR,
                  goal="g-7")
    ledger.projection.conn.set_trace_callback(None)
    # The new todo's goal is read (is it open?) and the todo itself looked up (is the id free?).
    # No statement reads a table of rows that belong to goals whole: the live file is made
    # from the rows of the goals in play (all thirty here), selected by goal.
    whole = [s for s in statements if s.startswith("SELECT") and "FROM sealed_rows WHERE kind=" in s
             and " AND " not in s and "MAX(seq)" not in s
             and any(f"kind='{k}'" in s for k in ("todos", "gates", "evidence", "quotas"))]
    assert not whole, whole
    rows_read = [s for s in statements if "FROM sealed_rows WHERE kind='goals' AND id=" in s]
    assert rows_read and all("g-7" in s for s in rows_read), rows_read


@pytest.mark.parametrize("damage", ["garbage", "empty", "truncated"])
def test_a_corrupt_database_is_ignored_and_rebuilt(ledger: Ledger, damage: str) -> None:
    ledger.append("note.added", {"id": "n-1", "text": "one"}, actor=ACTOR)
    ledger.close()
    path = ledger.projection.path
    raw = path.read_bytes()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.write_bytes({"garbage": b"not a cache at all" * 100, "empty": b"",
                      "truncated": raw[: len(raw) // 2]}[damage])
    ledger._live_path.unlink()
    with Ledger.open(ledger.repo.cwd) as reader:
        assert reader.fold().notes == 1
        assert reader.projection.tip() == reader.tip()  # rewritten


@pytest.mark.parametrize("damage", ["garbage", "flipped", "truncated", "empty"])
def test_a_corrupt_live_file_is_ignored(ledger: Ledger, damage: str) -> None:
    ledger.append("note.added", {"id": "n-1", "text": "one"}, actor=ACTOR)
    path = ledger._live_path
    raw = path.read_bytes()
    path.write_bytes({"garbage": b"not a cache at all", "empty": b"",
                      "flipped": raw[:-5] + bytes([raw[-5] ^ 0xFF]) + raw[-4:],
                      "truncated": raw[: len(raw) // 2]}[damage])
    assert cache.load_live(path) is None
    with Ledger.open(ledger.repo.cwd) as reader:
        assert reader.live_fold().notes == 1
    assert cache.load_live(path) is not None  # rewritten


def test_a_cache_from_another_schema_version_is_ignored(ledger: Ledger,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    ledger.append("note.added", {"id": "n-1", "text": "one"}, actor=ACTOR)
    ledger.close()
    assert cache.load_live(ledger._live_path) is not None
    monkeypatch.setattr(rows, "ROWS_KEY", "999:0.0:rows-0")
    monkeypatch.setattr(cache, "_LIVE_KEY", b"999")
    assert cache.load_live(ledger._live_path) is None
    with Ledger.open(ledger.repo.cwd) as reader:
        assert reader.projection.tip() is None  # cleared, not misread
        assert reader.fold().notes == 1


def test_the_cache_lives_in_the_common_dir_shared_by_worktrees(ledger: Ledger, repo: Path,
                                                               tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    with Ledger.open(tmp_path / "wt") as other:
        assert other.projection.path == ledger.projection.path
        assert other.projection.path.parent == repo / ".git" / "loopx" / "cache"


def test_long_rebuild_reports_progress(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(5):
        ledger.append("note.added", {"id": f"n-{n}", "text": "x"}, actor=ACTOR)
    ledger.projection.clear()
    monkeypatch.setattr(replay, "PROGRESS_MIN_EVENTS", 3)
    monkeypatch.setattr(replay, "PARSE_CHUNK", 2)
    seen: list[tuple[int, int]] = []
    with Ledger.open(ledger.repo.cwd) as reader:
        reader.progress.report = lambda task, done, total: seen.append((done, total))
        assert reader.fold().notes == 5
    assert seen == [(2, 6), (4, 6), (6, 6)]


def test_rebuild_equals_plain_replay_with_broken_and_hand_written_files(ledger: Ledger) -> None:
    import json

    from loopx.model import ids
    from loopx.model.paths import event_dir
    from loopx.storage.store import STATE_REF

    for n in range(3):
        ledger.append("note.added", {"id": f"n-{n}", "text": "x"}, actor=ACTOR)
    doc = {"id": ids.new_event_id(), "type": "note.added", "v": 1, "at": "2026-01-01T00:00:00Z",
           "clock": 99, "actor": ACTOR, "data": {"id": "n-hand", "text": "flow style"}}
    hand = f"{event_dir(doc['id'])}/{doc['id']}.note.added.yaml"  # JSON is YAML, not canonical
    broken = f"{event_dir(doc['id'])}/{ids.new_event_id()}.note.added.yaml"
    store, base = ledger.store, ledger.tip()
    oids = store.write_blobs([json.dumps(doc).encode(), b"clock: 1\nnot: [valid"])
    tree = store.write_tree(base, {hand: oids[0], broken: oids[1]})
    commit = store.commit_tree(tree, [base], "hand\n", author=("t", "t@x"))
    store.update_ref_if(STATE_REF, commit, expected=base, reason="test")
    ledger.projection.clear()
    with Ledger.open(ledger.repo.cwd) as reader:
        rebuilt = cache.materialize(reader.fold())
        plain = _full(reader)
    assert rebuilt.notes == 4 and len(rebuilt.problems) == 1
    assert _data(rebuilt) == _data(plain)


@pytest.mark.parametrize("disorder", ["none", "early", "late"])
def test_a_file_out_of_listing_order_costs_no_second_parse(
        ledger: Ledger, monkeypatch: pytest.MonkeyPatch, disorder: str) -> None:
    """Files are listed by date and id; replay applies them in (clock, id) order. A file out
    of listing order, dated before every other event and clocked after them ("early"), or
    dated after them and clocked before most ("late": a clone whose clock lagged), is only
    sorted into place: a rebuild parses each file exactly once, and its fold is the plain
    replay's."""
    from loopx.ledger import layout
    from loopx.model import codec, ids
    from loopx.model.paths import event_dir
    from loopx.storage.store import STATE_REF

    for n in range(6):
        ledger.append("note.added", {"id": f"n-{n}", "text": "x"}, actor=ACTOR)
    if disorder != "none":
        day = 86_400_000 * (-1 if disorder == "early" else 1)
        odd = ids._encode(ids.ulid_ms(ledger.fold().last_key[1]) + day, 10) + "0" * 16
        doc = {"id": odd, "type": "note.added", "v": 1, "at": "2026-01-01T00:00:00Z",
               "clock": 50 if disorder == "early" else 2, "actor": ACTOR,
               "data": {"id": "n-odd", "text": "offline"}}
        store, base = ledger.store, ledger.tip()
        (oid,) = store.write_blobs([codec.dump(doc)])
        tree = store.write_tree(base, {f"{event_dir(odd)}/{odd}.note.added.yaml": oid})
        commit = store.commit_tree(tree, [base], "odd\n", author=("t", "t@x"))
        store.update_ref_if(STATE_REF, commit, expected=base, reason="test")
    ledger.projection.clear()
    parsed: list[str] = []
    real = layout.read_events  # (read_event too reads through it)
    monkeypatch.setattr(replay, "PARSE_CHUNK", 3)
    monkeypatch.setattr(layout, "read_events",
                        lambda files: parsed.extend(p for p, _ in files) or real(files))
    with Ledger.open(ledger.repo.cwd) as reader:
        rebuilt = cache.materialize(reader.fold())
        files = len(parsed)
        plain = _full(reader)
    assert files == rebuilt.events == (6 if disorder == "none" else 7) + 1  # + initialised
    assert sorted(parsed[:files]) == sorted(set(parsed[:files]))
    assert rebuilt.notes == (6 if disorder == "none" else 7)
    assert _data(rebuilt) == _data(plain)
