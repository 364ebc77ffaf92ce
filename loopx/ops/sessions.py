"""Sessions: tasks that respond, wait for input, and take follow-ups as interjections."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Optional

from loopx.errors import NotFound, TransitionError
from loopx.recovery import readback
from loopx.agents import transcripts
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import clock, plural, typed
from loopx.model.ids import new_short_id
from loopx.model.paths import TRANSCRIPT_MAX_BYTES, transcript_chunk_path
from loopx.ops import lookup
from loopx.projection import answers, views

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        Event, SessionAcked, SessionCheckpointed, SessionClosed, SessionInterjected, SessionOpened, SessionProgress, SessionResponded,
    )

CLOSE_REASONS = ("done", "stopped", "abandoned")
Session = answers.Session  # a session as status shows it
Message = answers.Message  # an inbox message as status shows it


@dataclass(frozen=True)
class Interjection:
    """A message sent to a session: ``kind`` as the replay order makes it, ``sent_as`` what
    its sender saw."""

    event: str
    seq: int
    from_: str = field(metadata={typed.KEY: "from"})  # a Python keyword
    at: str
    kind: str
    sent_as: str
    message: str


@dataclass(frozen=True)
class Checkpoint:
    """A transcript checkpoint: its size, digest and how many chunks hold it."""

    number: int
    event: str
    at: str
    summary: str
    omitted: Optional[str]
    bytes: int
    sha256: str
    chunks: int


@dataclass(frozen=True)
class SessionShown:
    """`session show`: a session with every message and its checkpoints."""

    id: str
    state: str
    owner: str
    task: str
    goal: Optional[str]
    todo: Optional[str]
    workspace: answers.Workspace
    idle_seconds: Optional[int]
    inbox: list[answers.Message]
    keep_open: bool
    keep_open_reason: Optional[str]
    closed_reason: Optional[str]
    last_response: Optional[str]
    last_progress: Optional[str]
    opened_at: str
    checkpoints: list[Checkpoint]
    ends: Optional[str] = None  # how an open session ends (null once closed)
    same_goal: Optional[list[str]] = typed.optional()  # the other open sessions on its goal
    messages: list[Interjection] = field(default_factory=list)


@dataclass(frozen=True)
class Slots:
    used: int
    limit: int


@dataclass(frozen=True)
class SessionListing:
    """`session list`: the sessions, the slots each owner uses and the limit."""

    sessions: list[Session]
    slots: dict[str, Slots]
    limit: int


@dataclass(frozen=True)
class OpenCounts:
    running: int
    awaiting_input: int


@dataclass(frozen=True)
class KeptOpen:
    total: int
    got_follow_up: int
    follow_ups: int
    expired_unused: int
    closed_unused: int


@dataclass(frozen=True)
class Missed:
    """A one-shot session whose topic got a new session soon after it closed."""

    session: str
    topic: str
    followed_by: str
    after_seconds: int


@dataclass(frozen=True)
class OneShot:
    total: int
    missed_keep_open: int
    missed: list[Missed]


@dataclass(frozen=True)
class SessionStats:
    """How sessions ended (`session stats`), to tune the keep-open judgement."""

    sessions: int
    open: OpenCounts
    closed: dict[str, int]  # closed reason -> sessions
    kept_open: KeptOpen
    one_shot: OneShot
    window_seconds: int
    slots: dict[str, Slots]
    slot_limit: int


def open_(txn: Txn, task: str, *, id: Optional[str] = None, goal: Optional[str] = None,
          todo: Optional[str] = None, keep_open: bool = True, why: Optional[str] = None,
          host: Optional[str] = None, path: str, event_id: Optional[str] = None) -> Event[SessionOpened]:
    """Open a session running ``task``; the actor owns it and it takes one of their slots.

    ``path`` is its workspace directory on ``host`` (default: this machine); ``keep_open``
    keeps it open for follow-ups after it responds (else it closes after one result).
    """
    fold = txn.fold
    tid = lookup.optional(fold.todos, todo, "todo")
    gid = lookup.optional(fold.goals, goal, "goal") or (fold.todos[tid].goal if tid else None)
    data = {"id": id or new_short_id("s", event_id), "task": task, "todo": tid,
            "keep_open": keep_open, "keep_open_reason": why,
            "workspace": {"host": host or readback.local_host(), "path": path}}
    return txn.add(Draft("session.opened", data, gid, event_id))


def progress(txn: Txn, session: str, message: str, *, event_id: Optional[str] = None) -> Event[SessionProgress]:
    """Report progress: the session is still running (owner only)."""
    found = transcripts.get(txn.fold, session)
    return txn.add(Draft("session.progress", {"id": found.id, "message": message}, found.goal,
                         event_id))


def respond(txn: Txn, session: str, response: str, *, event_id: Optional[str] = None) -> Event[SessionResponded]:
    """Finish a turn. A kept-open session now awaits input; a one-shot session has given its
    one result and is closed as done in the same commit. Refused while a correction waits
    unread in its inbox: the response would ignore it."""
    found = transcripts.get(txn.fold, session)
    corrections = [m for m in views.unread(found) if m["kind"] == "correction"]
    if corrections and txn.actor == found.owner:  # anyone else is refused as not the owner
        raise TransitionError(
            f"session {found.id} has {plural.counted(len(corrections), 'unread correction')} "
            f"(the latest from {corrections[-1]['from']}): read them first "
            f"(git loopx session inbox {found.id} --ack), then respond")
    event = txn.add(Draft("session.responded", {"id": found.id, "response": response},
                          found.goal, event_id))
    if not found.keep_open and found.state != "closed":
        txn.add(Draft("session.closed", {"id": found.id, "reason": "done",
                                         "note": "one-shot: closed after its result"},
                      found.goal))
    return event


def send(txn: Txn, session: str, message: str, *, event_id: Optional[str] = None) -> Event[SessionInterjected]:
    """Interject ``message``: a correction if the session runs, a follow-up if it waits."""
    found = transcripts.get(txn.fold, session)
    data = {"id": found.id, "message": message, "kind": views.interjection_kind(found)}
    return txn.add(Draft("session.interjected", data, found.goal, event_id))


def ack(txn: Txn, session: str, *, through: Optional[str] = None,
        event_id: Optional[str] = None) -> Optional[Event[SessionAcked]]:
    """Mark the inbox consumed up to and including interjection ``through`` (default: all).

    Returns None when there is nothing to acknowledge.
    """
    found = transcripts.get(txn.fold, session)
    ids = [m["event"] for m in transcripts.inbox(found)]
    if through is not None:
        if through not in ids:
            raise NotFound(f"{through} is not an unconsumed message of session {found.id}")
        ids = ids[: ids.index(through) + 1]
    if not ids:
        return None
    return txn.add(Draft("session.acked", {"id": found.id, "interjections": ids}, found.goal,
                         event_id))


def _message(found: dict[str, Any]) -> answers.Message:
    """An inbox message as status shows it (without ``sent_as``)."""
    return answers.Message(found["event"], found["seq"], found["from"], found["at"],
                           found["kind"], found["message"])


def take_inbox(txn: Txn, session: str) -> list[answers.Message]:
    """The unconsumed messages, marked consumed in the same write (owner only)."""
    shown = transcripts.inbox(transcripts.get(txn.fold, session))
    if shown:
        ack(txn, session, through=shown[-1]["event"])
    return [_message(m) for m in shown]


def checkpoint(txn: Txn, session: str, transcript: bytes, *, summary: str,
               omitted: Optional[str] = None, event_id: Optional[str] = None) -> Event[SessionCheckpointed]:
    """Store ``transcript`` as chunk files beside the events and record the checkpoint with
    the summary that replaces it, in this one commit (owner only). Secrets in it are
    redacted first, like every text loopx writes."""
    transcript = txn.scrub_bytes(transcript)
    if len(transcript) > TRANSCRIPT_MAX_BYTES:
        raise transcripts.TranscriptError(
            f"transcript is {len(transcript)} bytes, over the {TRANSCRIPT_MAX_BYTES // 2**20} MiB "
            "limit; checkpoint more often, or store the oldest part elsewhere and say so in "
            "--omitted")
    found = transcripts.get(txn.fold, session)
    # A retry of an event id that is already recorded must rebuild the same event (a no-op).
    retried = [c["number"] for c in found.checkpoints if event_id and c["event"] == event_id]
    number = retried[0] if retried else len(found.checkpoints) + 1
    parts = transcripts.chunks(transcript)
    paths = [transcript_chunk_path(found.id, number, i) for i in range(len(parts))]
    oids = txn.attach(dict(zip(paths, parts)))
    data = {"id": found.id, "number": number, "summary": summary, "omitted": omitted,
            "transcript": {
                "chunks": [{"path": p, "oid": oids[p], "bytes": len(c)}
                           for p, c in zip(paths, parts)],
                "bytes": len(transcript), "sha256": hashlib.sha256(transcript).hexdigest()}}
    return txn.add(Draft("session.checkpointed", data, found.goal, event_id))


def close(txn: Txn, session: str, *, reason: Optional[str] = None, note: Optional[str] = None,
          event_id: Optional[str] = None) -> Event[SessionClosed]:
    """Close a session and free its slot; ``reason`` defaults to done for its owner and
    stopped for anyone else."""
    found = transcripts.get(txn.fold, session)
    why = reason or ("done" if found.owner == txn.actor else "stopped")
    return txn.add(Draft("session.closed", {"id": found.id, "reason": why, "note": note},
                         found.goal, event_id))


def reap(txn: Txn, *, idle: Optional[int] = None) -> list[str]:
    """Close every session awaiting input for ``idle`` seconds (default: the ledger's
    setting) as expired; returns their ids."""
    limit = idle if idle is not None else transcripts.idle_seconds(txn.fold)
    note = f"awaiting input for over {clock.format_duration(timedelta(seconds=limit))}"
    found = transcripts.reapable(txn.fold, txn.now, limit,
                                 lambda events: txn.ledger.first_seen(events, txn.now))
    for item in found:
        txn.add(Draft("session.closed", {"id": item.id, "reason": "expired", "note": note},
                      item.goal))
    return [s.id for s in found]


def reapable(ledger: Ledger, *, idle: Optional[int] = None,
             now: Optional[datetime] = None) -> list[str]:
    """The sessions :func:`reap` would close now."""
    fold = ledger.fold()
    limit = idle if idle is not None else transcripts.idle_seconds(fold)
    moment = now or ledger.time()
    return [s.id for s in transcripts.reapable(
        fold, moment, limit, lambda events: ledger.first_seen(events, moment))]


def inbox(ledger: Ledger, session: str) -> list[answers.Message]:
    """The messages the session's executor has not consumed yet, oldest first."""
    ledger.require()
    return [_message(m) for m in transcripts.inbox(transcripts.get(ledger.fold(), session))]


def show(ledger: Ledger, session: str, *, now: Optional[datetime] = None) -> SessionShown:
    """One session: state, owner, workspace, last response, inbox, every message, checkpoints."""
    ledger.require()
    fold = ledger.fold()
    found, moment = transcripts.get(fold, session), now or ledger.time()
    seen = ledger.first_seen([found.active_event], moment) if found.active_event else None
    view = views.session_view(found, moment, seen, also=views.same_goal(fold).get(found.id, []))
    view["messages"] = list(found.messages)
    view["checkpoints"] = [{k: v for k, v in c.items() if k != "chunks"}
                           | {"chunks": len(c["chunks"])} for c in found.checkpoints]
    return typed.build(SessionShown, view)


def others_on_goal(ledger: Ledger, session: str) -> list[str]:
    """The other open sessions on ``session``'s goal (a second session on one goal is flagged:
    the first was probably meant to be followed up with `session send`)."""
    return views.same_goal(ledger.fold()).get(session, [])


def transcript(ledger: Ledger, session: str, number: Optional[int] = None) -> bytes:
    """The transcript of checkpoint ``number`` (default: the latest), verified byte-exact."""
    ledger.require()
    return transcripts.read_transcript(ledger, transcripts.get(ledger.fold(), session), number)


def listing(ledger: Ledger, *, state: Optional[str] = None, owner: Optional[str] = None,
            now: Optional[datetime] = None) -> SessionListing:
    """Sessions (``state``: running, awaiting_input, closed, or open for either of the
    first two), with the slots each owner uses and the limit."""
    ledger.require()
    fold, moment = ledger.fold(), now or ledger.time()
    ordered = sorted(fold.sessions.values(), key=lambda s: (s.clock, s.id))
    seen = ledger.first_seen([s.active_event for s in ordered
                              if s.state != "closed" and s.active_event], moment)
    rows = [views.session_view(s, moment, seen) for s in ordered]
    if owner:
        rows = [v for v in rows if v["owner"] == owner]
    if state:
        rows = [v for v in rows
                if v["state"] == state or (state == "open" and v["state"] != "closed")]
    return typed.build(SessionListing, {"sessions": rows, "slots": transcripts.slots(fold),
                                        "limit": views.session_slots(fold)})


def stats(ledger: Ledger, *, window: int = transcripts.DEFAULT_STATS_WINDOW_SECONDS
          ) -> SessionStats:
    """How sessions ended, to tune the keep-open judgement (see
    :func:`loopx.agents.transcripts.stats`)."""
    ledger.require()
    fold = ledger.fold()
    return typed.build(SessionStats, dict(transcripts.stats(fold, window=window),
                                          slots=transcripts.slots(fold),
                                          slot_limit=views.session_slots(fold)))


def slots_used(ledger: Ledger, actor: str) -> dict[str, int]:
    """``{used, limit}`` of ``actor``'s session slots."""
    fold = ledger.fold()
    return transcripts.slots(fold).get(actor, {"used": 0, "limit": views.session_slots(fold)})
