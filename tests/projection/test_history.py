"""history.describe and history.diff are pure: events and snapshots in, words out."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from loopx.projection import history
from loopx.model import ids
from loopx.projection import folding, views
from loopx.model.events import EVENT_TYPES, make_event, parse_event

SHA = "0" * 40
EXAMPLES = {
    "ledger.initialised": {"loopx_version": "0.1.0"},
    "config.set": {
        "roles": {"maintainer": ["human:a@x"]},
        "signed_answers": ["q-1"],
        "allowed_signers": "a@x ssh-ed25519 AAAA\n# comment\n",
    },
    "goal.created": {"id": "g-1", "title": "T", "acceptance": [{"id": "a1", "text": "works"}]},
    "goal.updated": {"id": "g-1", "title": "New", "state": "paused"},
    "goal.closed": {"id": "g-1", "outcome": "achieved", "reason": "all met"},
    "todo.added": {"id": "t-1", "goal": "g-1", "title": "Do", "depends_on": ["t-0"]},
    "todo.updated": {"id": "t-1", "add_gates": ["q-1"]},
    "todo.claimed": {"id": "t-3", "until": "2026-11-29T14:05:00Z"},
    "todo.renewed": {"id": "t-3", "until": "2026-11-29T15:05:00Z"},
    "todo.released": {"id": "t-3"},
    "todo.done": {"id": "t-3", "evidence": ["e-1"]},
    "todo.acked": {"id": "t-3", "gates": ["q-1"]},
    "todo.assigned": {"id": "t-3", "to": "agent:b@h"},
    "todo.handed_off": {"id": "t-3", "to": "agent:b@h", "until": "2026-11-29T15:05:00Z",
                        "note": "tests pass; docs left"},
    "notice.dismissed": {"events": ["01JDZ0000000000000000000AA"]},
    "todo.blocked": {"id": "t-3", "reason": "waiting on CI"},
    "todo.reopened": {"id": "t-3"},
    "todo.cancelled": {"id": "t-3", "reason": "not needed"},
    "gate.opened": {"id": "q-1", "goal": "g-1", "question": "Stable?", "authority": ["role:m"]},
    "gate.answered": {"id": "G-1", "decision": "approve", "comment": "error_code is stable"},
    "gate.withdrawn": {"id": "q-1"},
    "evidence.recorded": {"id": "e-1", "kind": "test", "exit_code": 1, "commit": SHA},
    "evidence.remapped": {"mappings": [{"old": SHA, "new": SHA}]},
    "wake.set": {"id": "w-1", "at": "2026-11-29T14:05:00Z"},
    "wake.cleared": {"id": "w-1"},
    "wake.fired": {"id": "w-1", "at": "2026-11-29T14:05:00Z", "next": "2026-11-29T14:35:00Z"},
    "quota.set": {"turns": 10},
    "quota.spent": {"tokens": 500},
    "effect.intended": {
        "id": "x-1",
        "target": "github:o/r#1",
        "action": "comment",
        "idempotency_key": "k",
    },
    "effect.confirmed": {"id": "x-1", "receipt": "https://example.com/1"},
    "effect.failed": {"id": "x-1", "error": "boom", "retryable": False},
    "note.added": {"id": "n-1", "text": "hello"},
    "session.opened": {
        "id": "s-1",
        "task": "fix it",
        "keep_open": True,
        "workspace": {"host": "devbox", "path": "/w"},
    },
    "session.progress": {"id": "s-1", "message": "halfway"},
    "session.responded": {"id": "s-1", "response": "done, see PR"},
    "session.interjected": {"id": "s-1", "message": "also X", "kind": "follow_up"},
    "session.checkpointed": {
        "id": "s-1",
        "number": 1,
        "summary": "so far",
        "transcript": {"chunks": [], "bytes": 0, "sha256": "0" * 64},
    },
    "session.acked": {"id": "s-1", "interjections": ["01M8K3N3KD4ZAY0F5HCT6M5FMP"]},
    "session.closed": {"id": "s-1", "reason": "done"},
}


def _event(type_: str, data: dict, clock: int = 1) -> object:
    return make_event(
        type=type_,
        data=data,
        event_id=ids.new_event_id(),
        at="2026-11-29T12:00:00Z",
        clock=clock,
        actor="human:a@x",
    )


@pytest.mark.parametrize("type_", sorted(EVENT_TYPES))
def test_every_event_type_reads_as_a_sentence(type_: str) -> None:
    if type_ not in EXAMPLES:
        pytest.skip(f"add an example (and a sentence in history.py) for {type_}")
    text = history.describe(_event(type_, EXAMPLES[type_]))  # type: ignore[arg-type]
    assert text and "\n" not in text and "None" not in text


def test_the_examples_from_the_issue_read_as_written() -> None:
    assert (
        history.describe(_event("todo.claimed", EXAMPLES["todo.claimed"]))
        == "claimed t-3 until 2026-11-29 14:05Z"
    )
    assert (
        history.describe(_event("gate.answered", EXAMPLES["gate.answered"]))
        == "answered gate G-1: approve — 'error_code is stable'"
    )


def test_unknown_types_are_named_not_dropped() -> None:
    doc = {
        "id": ids.new_event_id(),
        "type": "future.thing",
        "v": 1,
        "at": "2026-11-29T12:00:00Z",
        "clock": 1,
        "actor": "human:a@x",
        "data": {},
    }
    assert "does not know" in history.describe(parse_event(doc))


def test_diff_reports_a_goal_achieved_and_the_frontier() -> None:
    now = datetime(2026, 11, 29, tzinfo=timezone.utc)
    events = [_event(t, EXAMPLES[t]) for t in ("goal.created",)]
    before = views.snapshot(folding.replay(events), now)
    closed = make_event(
        type="goal.closed",
        data={"id": "g-1", "outcome": "abandoned"},
        event_id=ids.new_event_id(),
        at="2026-11-29T12:00:00Z",
        clock=2,
        actor="human:a@x",
    )
    after = views.snapshot(folding.replay([*events, closed]), now)
    result = history.diff(before, after)
    assert result["changes"] == [
        {"kind": "goal", "id": "g-1", "change": "changed", "text": "active -> abandoned"}
    ]
    assert result["frontier"] == {"before": [], "after": []}


def test_diff_shows_a_session_opening_and_closing() -> None:
    now = datetime(2026, 11, 29, tzinfo=timezone.utc)
    opened = _event("session.opened", EXAMPLES["session.opened"])
    closed = make_event(
        type="session.closed",
        data={"id": "s-1", "reason": "done"},
        event_id=ids.new_event_id(),
        at="2026-11-29T12:00:00Z",
        clock=2,
        actor="human:a@x",
    )
    empty = views.snapshot(folding.replay([]), now)
    running = views.snapshot(folding.replay([opened]), now)
    done = views.snapshot(folding.replay([opened, closed]), now)
    added = history.diff(empty, running)["changes"]
    assert [(c["kind"], c["change"]) for c in added] == [("session", "added")]
    changed = history.diff(running, done)["changes"]
    assert changed[0]["text"].endswith("-> closed")


def test_diff_between_diverged_branches_shows_a_different_answer() -> None:
    now = datetime(2026, 11, 29, tzinfo=timezone.utc)
    gate = {"id": "q-1", "goal": "g-1", "question": "Ok?", "authority": ["human:a@x"]}

    def answered(decision: str) -> dict:
        events = [
            _event("goal.created", EXAMPLES["goal.created"], clock=1),
            _event("gate.opened", gate, clock=2),
            _event("gate.answered", {"id": "q-1", "decision": decision}, clock=3),
        ]
        return views.snapshot(folding.replay(events), now)

    change = history.diff(answered("approve"), answered("reject"))["changes"]
    assert change[0]["text"] == (
        "answered differently (was approve by human:a@x): reject by human:a@x"
    )
