"""The rules for sessions (docs/sessions.md): one check per session event, called from
:func:`loopx.projection.checks.check` like every other rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Union, cast

from loopx.model import clock, plural
from loopx.model.paths import transcript_chunk_path
from loopx.projection import rule_base, views
from loopx.projection.entities import Fold, Session

if TYPE_CHECKING:  # annotations only: the state layer runs without pydantic on warm reads
    # Each rule narrows ``event.data`` to its payload with ``cast("Model", ...)``: a string,
    # so nothing here is imported at run time.
    from loopx.model.events import (
        Event, SessionAcked, SessionCheckpointed,
        SessionClosed, SessionInterjected, SessionOpened, SessionProgress, SessionResponded,
    )

    # The payloads of the events that act on an existing session.
    SessionChange = Union[SessionProgress, SessionResponded, SessionInterjected,
                          SessionCheckpointed, SessionAcked, SessionClosed]

# --- sessions: see docs/sessions.md ------------------------------------------------------------


def _need_session(fold: Fold, event: Event, *, owner: bool = False,
                  open_: bool = True) -> tuple[Optional[Session], Optional[str]]:
    data = cast("SessionChange", event.data)
    session = fold.sessions.get(data.id)
    if session is None:
        return None, f"unknown session {data.id}"
    if open_ and session.state == "closed":
        return session, f"session {session.id} is closed ({session.closed_reason})"
    if owner and event.env.actor != session.owner:
        return session, (f"only its owner {session.owner} can do that to session {session.id}; "
                         f"you are {event.env.actor} (send it a message instead)")
    return session, None


def opened(fold: Fold, event: Event) -> Optional[str]:
    data, goal = cast("SessionOpened", event.data), event.env.goal
    if data.id in fold.sessions:
        return f"session {data.id} already exists"
    if data.todo is not None and data.todo not in fold.todos:
        return f"unknown todo {data.todo}"
    if data.todo is not None and goal is not None and fold.todos[data.todo].goal != goal:
        return f"todo {data.todo} belongs to goal {fold.todos[data.todo].goal}, not {goal}"
    return (rule_base.need_goal(fold, goal) if goal else None) or _free_slot(fold, event.env.actor, event.env.at)


def _free_slot(fold: Fold, owner: str, at: str) -> Optional[str]:
    limit = views.session_slots(fold)
    mine = [fold.sessions[s] for s in fold.open_sessions.get(owner, [])]
    if len(mine) < limit:
        return None
    idle = sorted((s for s in mine if s.state == "awaiting_input"), key=lambda s: (s.active_at, s.id))
    now = clock.parse_ts(at)
    named = ", ".join(
        f"{s.id} (awaiting input for {clock.format_duration(now - clock.parse_ts(s.active_at))})"
        for s in idle[:10])
    if not idle:  # the reaper closes idle sessions only: it cannot help here
        return (f"{owner} already holds {plural.counted(len(mine), 'open session')} (limit "
                f"{limit}); none is idle (all running); free a slot with "
                "`git loopx session close ID`")
    return (f"{owner} already holds {plural.counted(len(mine), 'open session')} (limit {limit}); "
            f"idle sessions that could be closed: {named}; free a slot with "
            "`git loopx session close ID` or `git loopx session reap`")


def running(fold: Fold, event: Event) -> Optional[str]:
    session, why = _need_session(fold, event, owner=True)
    if why is None and session is not None and session.state != "running":
        return f"session {session.id} is awaiting input; it runs again when a message is sent"
    return why


def owner(fold: Fold, event: Event) -> Optional[str]:
    return _need_session(fold, event, owner=True)[1]


def open(fold: Fold, event: Event) -> Optional[str]:
    return _need_session(fold, event)[1]


def checkpointed(fold: Fold, event: Event) -> Optional[str]:
    session, why = _need_session(fold, event, owner=True)
    if why or session is None:
        return why
    data = cast("SessionCheckpointed", event.data)
    if data.number != len(session.checkpoints) + 1:
        return (f"session {session.id} has {len(session.checkpoints)} checkpoints; "
                f"the next one is number {len(session.checkpoints) + 1}, not {data.number}")
    chunks = data.transcript.chunks
    if [c.path for c in chunks] != [transcript_chunk_path(session.id, data.number, i)
                                    for i in range(len(chunks))]:
        return f"transcript chunks of session {session.id} are not at their expected paths"
    if sum(c.bytes for c in chunks) != data.transcript.bytes:
        return "transcript size does not match the sum of its chunks"
    return None


def acked(fold: Fold, event: Event) -> Optional[str]:
    data = cast("SessionAcked", event.data)
    session, why = _need_session(fold, event, owner=True, open_=False)
    if why or session is None:
        return why
    known = {m["event"] for m in session.messages}
    unknown = [i for i in data.interjections if i not in known]
    if unknown:
        return f"session {session.id} has no interjection {', '.join(unknown[:5])}"
    if set(data.interjections) <= set(session.acked):
        return f"those messages to session {session.id} were already acknowledged"
    return None


def closed(fold: Fold, event: Event) -> Optional[str]:
    data = cast("SessionClosed", event.data)
    session, why = _need_session(fold, event)
    if why is None and session is not None and data.reason == "expired" and (
        session.state != "awaiting_input"
    ):
        # A follow-up that sorts before the reaper's close wins: the session runs on.
        return f"session {session.id} is {session.state}, only a session awaiting input expires"
    return why
