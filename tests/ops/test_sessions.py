"""Persistent sessions: lifecycle, interjections, inbox, slots, reaper, checkpoints, stats."""

from __future__ import annotations

import os
import random
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from conftest import git, invoke, run_loopx

OWNER = "agent:codex@devbox"
BOSS = "human:alice@example.com"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def ok(cwd: Path, *args: str, actor: str = OWNER, now: float | None = None) -> Any:
    """Run a command in-process as ``actor`` (at T0 + ``now`` minutes); return its JSON."""
    pinned = ("--now", at(now)) if now is not None else ()
    result = invoke(cwd, *pinned, *args, "--json", actor=actor)
    assert result.code == 0, result.err
    return result.json()


def fails(cwd: Path, *args: str, actor: str = OWNER, now: float | None = None) -> str:
    pinned = ("--now", at(now)) if now is not None else ()
    result = invoke(cwd, *pinned, *args, actor=actor)
    assert result.code == 1, (result.out, result.err)
    return result.err


def session(cwd: Path, sid: str, now: float | None = None) -> dict[str, Any]:
    status = ok(cwd, "status", now=now)
    return next(s for s in status["sessions"] if s["id"] == sid)


@pytest.fixture
def repo_with_goal(repo: Path) -> Path:
    ok(repo, "init", actor=BOSS)
    ok(repo, "goal", "add", "Monthly reports", "--id", "reports", "--accept", "all months",
       actor=BOSS)
    return repo


def open_session(repo: Path, sid: str = "s-1", *extra: str, now: float = 0,
                 actor: str = OWNER) -> dict[str, Any]:
    return ok(repo, "session", "open", f"task {sid}", "--id", sid, "--goal", "reports",
              "--host", "devbox", "--path", "/work/reports", *extra, now=now, actor=actor)


# --- lifecycle -------------------------------------------------------------------------------


def test_full_lifecycle_from_open_to_close(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    opened = open_session(repo, "s-1", "--why", "the user asks month by month")
    assert opened["actor"] == OWNER and opened["data"]["keep_open"] is True
    assert session(repo, "s-1")["state"] == "running"

    ok(repo, "session", "progress", "s-1", "February half done", now=1)
    assert session(repo, "s-1")["last_progress"] == "February half done"
    ok(repo, "session", "respond", "s-1", "February report: out/feb.pdf", now=2)
    waiting = session(repo, "s-1", now=62)
    assert waiting["state"] == "awaiting_input"
    assert waiting["last_response"] == "February report: out/feb.pdf"
    assert waiting["idle_seconds"] == 3600

    ok(repo, "session", "send", "s-1", "now do March", actor=BOSS, now=70)
    assert session(repo, "s-1")["state"] == "running"
    ok(repo, "session", "respond", "s-1", "March report: out/mar.pdf", now=75)
    ok(repo, "session", "close", "s-1", "--reason", "stopped", actor=BOSS, now=80)

    closed = session(repo, "s-1")
    assert closed["state"] == "closed" and closed["closed_reason"] == "stopped"
    assert closed["idle_seconds"] is None
    assert "closed" in fails(repo, "session", "send", "s-1", "and April?", actor=BOSS)


def test_a_session_never_closes_on_its_own(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    open_session(repo)
    ok(repo, "session", "respond", "s-1", "done for now", now=1)
    assert session(repo, "s-1", now=60 * 24 * 365)["state"] == "awaiting_input"


def test_close_defaults_to_done_for_the_owner_and_stopped_for_others(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    open_session(repo, "s-1")
    open_session(repo, "s-2")
    assert ok(repo, "session", "close", "s-1")["data"]["reason"] == "done"
    assert ok(repo, "session", "close", "s-2", actor=BOSS)["data"]["reason"] == "stopped"


def test_only_the_owner_reports_progress_responds_acks_and_checkpoints(
        repo_with_goal: Path, tmp_path: Path) -> None:
    repo = repo_with_goal
    open_session(repo)
    ok(repo, "session", "send", "s-1", "hello", actor=BOSS)
    transcript = tmp_path / "t.txt"
    transcript.write_text("x")
    for args in (("progress", "s-1", "x"), ("respond", "s-1", "x"), ("ack", "s-1"),
                 ("checkpoint", "s-1", "--transcript", str(transcript), "--summary", "s")):
        assert f"only its owner {OWNER}" in fails(repo, "session", *args, actor=BOSS)


def test_progress_is_refused_while_awaiting_input(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    open_session(repo)
    ok(repo, "session", "respond", "s-1", "here you are")
    assert "awaiting input" in fails(repo, "session", "progress", "s-1", "still going")


def test_a_session_serving_a_todo_takes_the_todos_goal(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    ok(repo, "todo", "add", "reports", "February", "--id", "feb", actor=BOSS)
    ok(repo, "session", "open", "write February", "--id", "s-1", "--todo", "feb")
    assert session(repo, "s-1")["goal"] == "reports" and session(repo, "s-1")["todo"] == "feb"


# --- interjections and the inbox ---------------------------------------------------------------


def test_send_is_one_call_recorded_as_correction_or_follow_up(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    open_session(repo)
    running = ok(repo, "session", "send", "s-1", "use EUR, not USD", actor=BOSS, now=1)
    read = ok(repo, "session", "inbox", "s-1", "--ack", now=1.5)  # before responding
    ok(repo, "session", "respond", "s-1", "February in EUR", now=2)
    waiting = ok(repo, "session", "send", "s-1", "now do March", actor=BOSS, now=3)

    assert running["data"]["kind"] == "correction"
    assert waiting["data"]["kind"] == "follow_up"
    assert [(m["kind"], m["message"], m["from"]) for m in read] == [
        ("correction", "use EUR, not USD", BOSS)]
    inbox = ok(repo, "session", "inbox", "s-1")
    assert [(m["kind"], m["message"], m["from"]) for m in inbox] == [
        ("follow_up", "now do March", BOSS)]
    assert session(repo, "s-1")["state"] == "running"


def test_respond_with_an_unread_correction_is_refused_in_one_line(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    open_session(repo)
    ok(repo, "session", "send", "s-1", "use EUR, not USD", actor=BOSS, now=1)
    before = git(repo, "rev-parse", "refs/heads/loopx/state")
    err = fails(repo, "session", "respond", "s-1", "February in USD", now=2)
    assert err.strip().splitlines() == [
        f"error: session s-1 has 1 unread correction (the latest from {BOSS}): read them first "
        "(git loopx session inbox s-1 --ack), then respond"], err
    assert git(repo, "rev-parse", "refs/heads/loopx/state") == before  # nothing written
    ok(repo, "session", "ack", "s-1", now=3)
    ok(repo, "session", "respond", "s-1", "February in EUR", now=4)
    ok(repo, "session", "send", "s-1", "now do March", actor=BOSS, now=5)  # a follow-up
    ok(repo, "session", "respond", "s-1", "March in EUR", now=6)  # follow-ups do not block


def test_next_tells_the_owner_to_read_its_inbox_and_never_to_message_itself(
        repo_with_goal: Path) -> None:
    repo = repo_with_goal
    open_session(repo)
    ok(repo, "session", "respond", "s-1", "February done", now=1)
    mine = ok(repo, "status", now=2)["actions"]
    assert not [a for a in mine if a.get("session") == "s-1"]  # waiting: for others, not me
    theirs = ok(repo, "status", actor=BOSS, now=2)["actions"]
    assert [(a["kind"], a["command"]) for a in theirs if a.get("session") == "s-1"] == [
        ("session_waiting", "git loopx session send s-1 MESSAGE")]
    ok(repo, "session", "send", "s-1", "now do March", actor=BOSS, now=3)
    nxt = invoke(repo, "next", actor=OWNER)
    assert "your session s-1 (task s-1) has 1 follow-up unread" in nxt.out, nxt.out
    assert "git loopx session inbox s-1 --ack" in nxt.out
    assert "session send" not in nxt.out
    ok(repo, "session", "inbox", "s-1", "--ack", now=4)
    assert not [a for a in ok(repo, "status", now=5)["actions"] if a.get("session") == "s-1"]


def test_a_second_session_on_the_same_goal_is_flagged(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    open_session(repo, "s-1")
    second = invoke(repo, "session", "open", "task s-2", "--id", "s-2", "--goal", "reports",
                    actor=OWNER)
    assert second.code == 0  # flagged, not refused: two sessions on one goal can be meant
    assert ("note: goal reports already has open session s-1; to go on with that work, "
            "`git loopx session send s-1 MESSAGE` instead") in second.err
    assert session(repo, "s-1")["same_goal"] == ["s-2"]
    assert session(repo, "s-2")["same_goal"] == ["s-1"]
    assert "also open on goal reports: s-1" in invoke(repo, "status").out
    assert "same goal: s-1 also open on it" in invoke(repo, "session", "show", "s-2").out
    ok(repo, "session", "close", "s-1")
    assert session(repo, "s-2")["same_goal"] == []
    third = invoke(repo, "session", "open", "other", "--id", "s-3", actor=OWNER)  # no goal
    assert third.code == 0 and "note:" not in third.err


def test_show_status_and_prime_say_a_kept_open_session_never_completes_on_its_own(
        repo_with_goal: Path) -> None:
    repo = repo_with_goal
    open_session(repo, "s-1")
    open_session(repo, "s-2", "--one-shot")
    never = "never on its own: it is kept open until `git loopx session close s-1` or the reaper"
    assert session(repo, "s-1")["ends"] == never
    assert session(repo, "s-2")["ends"] == "when it responds (one-shot)"
    assert f"ends:      {never}" in invoke(repo, "session", "show", "s-1").out
    assert f"completes {never}" in invoke(repo, "status").out
    primer = invoke(repo, "prime", actor=OWNER).out
    assert "kept open, it never completes on its own: `git loopx session close s-1`" in primer
    assert "s-2 (task s-2): running; one-shot: it closes when it responds" in primer
    ok(repo, "session", "close", "s-1")
    assert session(repo, "s-1")["ends"] is None


def test_inbox_keeps_order_and_ack_through_consumes_only_what_was_read(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    open_session(repo)
    for n in range(1, 4):
        ok(repo, "session", "send", "s-1", f"message {n}", actor=BOSS, now=n)
    read = ok(repo, "session", "inbox", "s-1")
    assert [m["message"] for m in read] == ["message 1", "message 2", "message 3"]
    assert [m["seq"] for m in read] == [1, 2, 3]

    ok(repo, "session", "send", "s-1", "message 4", actor=BOSS, now=5)  # arrives unseen
    acked = ok(repo, "session", "ack", "s-1", "--through", read[-1]["event"])
    assert acked["data"]["interjections"] == [m["event"] for m in read]
    assert [m["message"] for m in ok(repo, "session", "inbox", "s-1")] == ["message 4"]
    assert [m["message"] for m in session(repo, "s-1")["inbox"]] == ["message 4"]

    ok(repo, "session", "ack", "s-1")
    assert ok(repo, "session", "inbox", "s-1") == []
    assert ok(repo, "session", "ack", "s-1") == {"acked": []}


def test_inbox_ack_takes_messages_in_one_write(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    open_session(repo)
    ok(repo, "session", "send", "s-1", "one", actor=BOSS)
    ok(repo, "session", "send", "s-1", "two", actor=BOSS)
    taken = ok(repo, "session", "inbox", "s-1", "--ack")
    assert [m["message"] for m in taken] == ["one", "two"]
    assert ok(repo, "session", "inbox", "s-1", "--ack") == []


def test_a_retried_send_with_the_same_event_id_is_recorded_once(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    open_session(repo)
    event_id = "01JA0000000000000000000000"
    for _ in range(2):
        ok(repo, "session", "send", "s-1", "once", "--event-id", event_id, actor=BOSS)
    assert len(ok(repo, "session", "inbox", "s-1")) == 1


def test_messages_from_stdin_survive_a_cold_replay_byte_exact(repo_with_goal: Path) -> None:
    from loopx import Ledger
    from loopx.projection import folding

    repo = repo_with_goal
    open_session(repo)
    result = invoke(repo, "session", "respond", "s-1", "-", input="February done\n", actor=OWNER)
    assert result.code == 0, result.err
    result = invoke(repo, "session", "send", "s-1", "-", input="now March\n\tthen April\n")
    assert result.code == 0, result.err
    with Ledger.open(repo) as ledger:
        fold = folding.replay(ledger.read_events(ledger.tip(), []))
    assert fold.sessions["s-1"].last_response == "February done\n"
    assert fold.sessions["s-1"].messages[0]["message"] == "now March\n\tthen April\n"


def test_replay_rederives_the_kind_when_a_merge_reorders_a_message() -> None:
    from loopx.projection import folding
    from loopx.model.events import make_event

    def event(n: int, type_: str, data: dict[str, Any], actor: str = OWNER) -> Any:
        return make_event(type=type_, data=data, event_id=f"01JA00000000000000000000{n:02d}",
                          at=at(n), clock=n, actor=actor)

    # The sender saw the session running; the merged order puts its response first.
    fold = folding.replay([
        event(1, "session.opened", {"id": "s-1", "task": "t", "keep_open": True,
                                    "workspace": {"host": "h", "path": "/p"}}),
        event(2, "session.responded", {"id": "s-1", "response": "done"}),
        event(3, "session.interjected", {"id": "s-1", "message": "fix it", "kind": "correction"},
              actor=BOSS),
    ])
    message = fold.sessions["s-1"].messages[0]
    assert (message["kind"], message["sent_as"]) == ("follow_up", "correction")
    assert fold.problems == []


# --- slots -------------------------------------------------------------------------------------


def test_opening_past_the_slot_limit_names_the_idle_sessions(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    ok(repo, "config", "set", "--session-slots", "3", actor=BOSS)
    open_session(repo, "s-1", now=0)
    open_session(repo, "s-2", now=0)
    open_session(repo, "s-3", now=0)
    ok(repo, "session", "respond", "s-1", "first done", now=10)
    ok(repo, "session", "respond", "s-3", "third done", now=20)

    err = fails(repo, "session", "open", "one more", "--id", "s-4", now=80)
    assert "already holds 3 open sessions (limit 3)" in err
    assert "s-1 (awaiting input for 1h10m)" in err and "s-3 (awaiting input for 1h)" in err
    assert "s-2 (" not in err  # running, not idle

    open_session(repo, "s-9", actor="agent:other@box")  # slots are per owner
    ok(repo, "session", "close", "s-1", now=81)
    open_session(repo, "s-4", now=82)
    listed = ok(repo, "session", "list")  # a bare list, as every `list --json`
    assert sorted(s["id"] for s in listed if s["state"] != "closed") == ["s-2", "s-3", "s-4", "s-9"]
    stats = ok(repo, "session", "stats")
    assert stats["slots"][OWNER] == {"used": 3, "limit": 3} and stats["slot_limit"] == 3


# --- the reaper --------------------------------------------------------------------------------


def test_reaper_closes_only_sessions_awaiting_input_past_their_idle_limit(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    open_session(repo, "s-idle", now=0)
    open_session(repo, "s-busy", now=0)
    open_session(repo, "s-fresh", now=0)
    ok(repo, "session", "respond", "s-idle", "done", now=10)
    ok(repo, "session", "respond", "s-fresh", "done", now=60 * 20)

    day = 60 * 24
    assert ok(repo, "session", "reap", now=10 + day - 1)["expired"] == []
    assert ok(repo, "session", "reap", "--dry-run", now=10 + day + 1)["expired"] == ["s-idle"]
    assert session(repo, "s-idle")["state"] == "awaiting_input"
    reaped = ok(repo, "session", "reap", now=10 + day + 1)
    assert reaped["expired"] == ["s-idle"]
    assert session(repo, "s-idle")["closed_reason"] == "expired"
    assert session(repo, "s-busy")["state"] == "running"  # running sessions never expire

    assert ok(repo, "session", "reap", "--idle", "1h", now=60 * 21 + 1)["expired"] == ["s-fresh"]


def test_reaper_uses_the_ledger_idle_limit(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    ok(repo, "config", "set", "--session-idle", "2h", actor=BOSS)
    open_session(repo)
    ok(repo, "session", "respond", "s-1", "done", now=0)
    assert ok(repo, "session", "reap", now=119)["expired"] == []
    assert ok(repo, "session", "reap", now=121)["expired"] == ["s-1"]


def test_a_follow_up_that_sorts_before_the_reaper_keeps_the_session_open(repo_with_goal: Path) -> None:
    from loopx import Ledger

    repo = repo_with_goal
    open_session(repo)
    ok(repo, "session", "respond", "s-1", "done", now=0)
    ok(repo, "session", "send", "s-1", "one more thing", actor=BOSS, now=1)
    with Ledger.open(repo) as ledger:
        with pytest.raises(Exception, match="only a session awaiting input expires"):
            ledger.append("session.closed", {"id": "s-1", "reason": "expired"}, actor=OWNER)


# --- checkpoints -------------------------------------------------------------------------------


def _transcript(size: int) -> bytes:
    rng = random.Random(7)
    text = "".join(rng.choice("abcdé€𝄞\n\r\t ") for _ in range(size // 3)).encode()
    return text + bytes(range(256)) + rng.randbytes(size - len(text) - 256)


def test_checkpoint_round_trip_of_a_large_transcript_is_byte_exact(
        repo_with_goal: Path, tmp_path: Path) -> None:
    from loopx.model.paths import TRANSCRIPT_CHUNK_BYTES

    repo = repo_with_goal
    open_session(repo)
    data = _transcript(5 * TRANSCRIPT_CHUNK_BYTES + 12345)
    path = tmp_path / "transcript.bin"
    path.write_bytes(data)
    event = ok(repo, "session", "checkpoint", "s-1", "--transcript", str(path),
               "--summary", "made Feb report", "--omitted", "the raw CSV dumps")
    chunks = event["data"]["transcript"]["chunks"]
    assert len(chunks) == 6 and chunks[0]["path"] == "sessions/s-1/transcript-1/0000.txt"

    shown = subprocess.run(["git", "loopx", "session", "show", "s-1", "--transcript"], cwd=repo,
                           capture_output=True, env=dict(os.environ, LOOPX_ACTOR=OWNER))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == data

    # The chunk files land in the same commit as the event that names them.
    added = git(repo, "diff-tree", "-r", "--name-only", "--no-commit-id", "loopx/state")
    assert sum(p.startswith("sessions/s-1/transcript-1/") for p in added.splitlines()) == 6
    assert sum(p.endswith(".session.checkpointed.yaml") for p in added.splitlines()) == 1


def test_checkpoints_are_numbered_and_each_reads_back(repo_with_goal: Path, tmp_path: Path) -> None:
    repo = repo_with_goal
    open_session(repo)
    for n, text in ((1, "first part\n"), (2, "")):
        (tmp_path / f"{n}.txt").write_text(text)
        event = ok(repo, "session", "checkpoint", "s-1", "--transcript", str(tmp_path / f"{n}.txt"),
                   "--summary", f"part {n}")
        assert event["data"]["number"] == n
    first = run_loopx(repo, "session", "show", "s-1", "--transcript", "--checkpoint", "1")
    assert first.out == "first part\n"
    assert run_loopx(repo, "session", "show", "s-1", "--transcript").out == ""
    assert session(repo, "s-1")["checkpoints"] == 2


@pytest.mark.stress
def test_a_transcript_at_the_size_cap_round_trips(repo_with_goal: Path, tmp_path: Path) -> None:
    from loopx import Ledger
    from loopx.agents import transcripts
    from loopx.model.paths import TRANSCRIPT_MAX_BYTES

    repo = repo_with_goal
    open_session(repo)
    data = random.Random(1).randbytes(TRANSCRIPT_MAX_BYTES)
    (tmp_path / "max").write_bytes(data)
    ok(repo, "session", "checkpoint", "s-1", "--transcript", str(tmp_path / "max"), "--summary", "s")
    with Ledger.open(repo) as ledger:
        assert transcripts.read_transcript(ledger, ledger.fold().sessions["s-1"]) == data


def test_a_retried_checkpoint_is_recorded_once(repo_with_goal: Path, tmp_path: Path) -> None:
    repo = repo_with_goal
    open_session(repo)
    (tmp_path / "t").write_text("the story so far")
    args = ("session", "checkpoint", "s-1", "--transcript", str(tmp_path / "t"), "--summary", "s",
            "--event-id", "01JA0000000000000000000000")
    assert ok(repo, *args) == ok(repo, *args)
    assert session(repo, "s-1")["checkpoints"] == 1


def test_a_transcript_over_the_size_cap_is_refused(repo_with_goal: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from loopx.ops import sessions

    monkeypatch.setattr(sessions, "TRANSCRIPT_MAX_BYTES", 1024)
    repo = repo_with_goal
    open_session(repo)
    (tmp_path / "big").write_bytes(b"x" * 1025)
    err = fails(repo, "session", "checkpoint", "s-1", "--transcript", str(tmp_path / "big"),
                "--summary", "too much")
    assert "over the" in err and "checkpoint more often" in err
    assert session(repo, "s-1")["checkpoints"] == 0


def test_the_projection_cache_advances_past_transcript_files(repo_with_goal: Path,
                                                               tmp_path: Path) -> None:
    from loopx import Ledger
    from loopx.ledger import cache

    repo = repo_with_goal
    open_session(repo)
    with Ledger.open(repo) as ledger:
        before = ledger.tip()
        assert before is not None
    (tmp_path / "t").write_text("hello")
    ok(repo, "session", "checkpoint", "s-1", "--transcript", str(tmp_path / "t"), "--summary", "s")
    with Ledger.open(repo) as ledger:  # as if another clone's writer moved the tip
        ledger.projection.replace(before, ledger.fold_at(before))

    with Ledger.open(repo) as ledger:
        ledger.reader.rebuild = None  # type: ignore[assignment,method-assign]  # must not run
        fold = cache.materialize(ledger.fold())
    assert fold.problems == [] and len(fold.sessions["s-1"].checkpoints) == 1


# --- two clones --------------------------------------------------------------------------------


def test_a_follow_up_sent_on_another_clone_reaches_the_session_host(tmp_path: Path,
                                                                    repo_with_goal: Path) -> None:
    # SYNC: moved with plain git (sync lives on another branch); switch both hops to
    # `git loopx sync` once it is merged.
    host = repo_with_goal
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(host, "remote", "add", "origin", str(remote))
    git(host, "push", "-q", "origin", "main", "refs/heads/loopx/state")
    open_session(host)
    ok(host, "session", "respond", "s-1", "February done", now=1)
    git(host, "push", "-q", "origin", "refs/heads/loopx/state")

    laptop = tmp_path / "laptop"
    git(tmp_path, "clone", "-q", str(remote), str(laptop))
    seen = session(laptop, "s-1")
    assert seen["state"] == "awaiting_input" and seen["workspace"]["host"] == "devbox"
    status = invoke(laptop, "status", actor=BOSS).out
    assert "Waiting for your instruction" in status and "workspace on devbox" in status
    ok(laptop, "session", "send", "s-1", "now do March", actor=BOSS, now=5)
    git(laptop, "push", "-q", "origin", "refs/heads/loopx/state")

    git(host, "fetch", "-q", "origin", "refs/heads/loopx/state:refs/heads/loopx/state")
    inbox = ok(host, "session", "inbox", "s-1")
    assert [(m["kind"], m["message"], m["from"]) for m in inbox] == [
        ("follow_up", "now do March", BOSS)]
    assert session(host, "s-1")["state"] == "running"


# --- stats -------------------------------------------------------------------------------------


def test_stats_on_a_scripted_history(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    ok(repo, "goal", "add", "Invoices", "--id", "invoices", actor=BOSS)
    # kept open and used: a follow-up came
    open_session(repo, "k-used", now=0)
    ok(repo, "session", "respond", "k-used", "Feb", now=5)
    ok(repo, "session", "send", "k-used", "March too", actor=BOSS, now=10)
    ok(repo, "session", "respond", "k-used", "March", now=15)
    ok(repo, "session", "close", "k-used", now=20)
    # kept open, never used, expired
    open_session(repo, "k-idle", now=0)
    ok(repo, "session", "respond", "k-idle", "done", now=5)
    ok(repo, "session", "reap", "--idle", "1h", now=70)
    # one-shot, and a new session on the same goal 30 minutes after it closed: missed
    open_session(repo, "o-missed", "--one-shot", now=100)
    ok(repo, "session", "close", "o-missed", now=110)
    open_session(repo, "o-again", "--one-shot", now=140)
    ok(repo, "session", "close", "o-again", now=145)
    # one-shot on another goal, nothing followed within the hour: fine
    ok(repo, "session", "open", "invoice run", "--id", "o-fine", "--one-shot", "--goal",
       "invoices", now=150)
    ok(repo, "session", "close", "o-fine", now=155)
    open_session(repo, "still-running", now=300)

    stats = ok(repo, "session", "stats")
    assert stats["sessions"] == 6
    assert stats["open"] == {"running": 1, "awaiting_input": 0}
    assert stats["closed"] == {"done": 4, "expired": 1}
    assert stats["kept_open"] == {"total": 3, "got_follow_up": 1, "follow_ups": 1,
                                  "expired_unused": 1, "closed_unused": 0}
    assert stats["one_shot"]["total"] == 3 and stats["one_shot"]["missed_keep_open"] == 1
    assert stats["one_shot"]["missed"] == [
        {"session": "o-missed", "topic": "reports", "followed_by": "o-again", "after_seconds": 1800}]
    narrow = ok(repo, "session", "stats", "--window", "10m")
    assert narrow["one_shot"]["missed_keep_open"] == 0
    assert "missed keep-open" in invoke(repo, "session", "stats").out


# --- status ------------------------------------------------------------------------------------


def test_status_shows_waiting_sessions_as_waiting_for_instruction(repo_with_goal: Path) -> None:
    repo = repo_with_goal
    open_session(repo, "s-wait")
    open_session(repo, "s-run")
    ok(repo, "session", "respond", "s-wait", "Here is the February report")
    ok(repo, "session", "progress", "s-run", "crunching numbers")
    text = invoke(repo, "status").out
    waiting, _, running = text.partition("Sessions running:")
    assert "Waiting for your instruction:" in waiting and "s-wait" in waiting
    assert "Here is the February report" in waiting and "  s-run " not in waiting
    assert "also open on goal reports: s-run" in waiting  # both serve one goal: flagged
    assert "s-run" in running and "crunching numbers" in running


def test_status_json_with_sessions_matches_the_schema(repo_with_goal: Path) -> None:
    import jsonschema

    from loopx.upkeep.schema import status_schema

    repo = repo_with_goal
    open_session(repo, "s-1")
    ok(repo, "session", "send", "s-1", "hi", actor=BOSS)
    open_session(repo, "s-2")
    ok(repo, "session", "respond", "s-2", "done")
    open_session(repo, "s-3")
    ok(repo, "session", "close", "s-3")
    status = ok(repo, "status")
    jsonschema.validate(status, status_schema())
    assert {s["state"] for s in status["sessions"]} == {"running", "awaiting_input", "closed"}


def test_the_cache_keeps_sessions(repo_with_goal: Path) -> None:
    from loopx import Ledger
    from loopx.ledger import cache

    repo = repo_with_goal
    open_session(repo)
    ok(repo, "session", "send", "s-1", "hi", actor=BOSS)
    with Ledger.open(repo) as ledger:
        tip, fold = cache.load_live(ledger._live_path) or (None, None)
        assert tip == ledger.tip()
        assert ledger.projection.tip() == tip
        assert ledger.projection.fold().sessions["s-1"].messages[0]["message"] == "hi"
    assert fold is not None and fold.sessions["s-1"].messages[0]["message"] == "hi"


def test_a_one_shot_session_closes_as_done_with_its_result(repo_with_goal: Path) -> None:
    open_session(repo_with_goal, "once", "--one-shot")
    ok(repo_with_goal, "session", "respond", "once", "the March report")
    shown = ok(repo_with_goal, "session", "show", "once")
    assert (shown["state"], shown["closed_reason"]) == ("closed", "done")
    assert shown["last_response"] == "the March report"
    open_session(repo_with_goal, "kept")
    ok(repo_with_goal, "session", "respond", "kept", "Feb")
    assert ok(repo_with_goal, "session", "show", "kept")["state"] == "awaiting_input"


def test_a_checkpoint_number_without_transcript_is_refused(repo_with_goal: Path,
                                                          tmp_path: Path) -> None:
    """`session show S --checkpoint 5` (no such checkpoint, and no --transcript) showed the
    session as if --checkpoint had not been given."""
    open_session(repo_with_goal)
    result = invoke(repo_with_goal, "session", "show", "s-1", "--checkpoint", "5", actor=OWNER)
    assert result.code == 2 and result.err.strip().splitlines()[-1] == (
        "Error: --checkpoint N picks the transcript to print: give --transcript")
    (tmp_path / "t.txt").write_text("one")
    ok(repo_with_goal, "session", "checkpoint", "s-1", "--transcript", str(tmp_path / "t.txt"),
       "--summary", "s")
    missing = invoke(repo_with_goal, "session", "show", "s-1", "--transcript", "--checkpoint",
                     "5", actor=OWNER)
    assert missing.code == 1 and "has checkpoints 1..1" in missing.err
