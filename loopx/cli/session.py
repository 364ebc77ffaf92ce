"""`git loopx session ...`: tasks that outlive their first result (docs/sessions.md)."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

import click

from loopx.cli import App, duration, emit_event, event_id_option, lookup, pass_app
from loopx.cli.render import ago, elsewhere, first_line


@click.group()
def session() -> None:
    """Sessions: tasks that respond, wait for input, and take follow-ups as interjections."""


def _now(app: App) -> datetime:
    from loopx.model import clock

    return app.now or clock.now()


@session.command("open")
@click.argument("task")
@click.option("--id", "session_id", help="Id to use (default: a generated s-xxxxxx).")
@click.option("--goal", "goal_id", metavar="GOAL", help="The goal it serves.")
@click.option("--todo", "todo_id", metavar="TODO", help="The todo it serves (implies its goal).")
@click.option("--keep-open/--one-shot", default=True, show_default=True,
              help="Keep it open for follow-ups after it responds, or close it after one result.")
@click.option("--why", help="Why it is kept open (or not): the judgement `session stats` tunes.")
@click.option("--host", help="Host its workspace is on (default: this machine).")
@click.option("--path", "ws_path", help="Its workspace directory (default: the current one).")
@event_id_option
@pass_app
def session_open(app: App, task: str, session_id: Optional[str], goal_id: Optional[str],
                 todo_id: Optional[str], keep_open: bool, why: Optional[str], host: Optional[str],
                 ws_path: Optional[str], event_id: Optional[str]) -> None:
    """Open a session running TASK; you (the actor) are its owner and it takes one slot."""
    from loopx.features import transcripts as sessions
    from loopx.model.ids import new_short_id
    from loopx.ledger.txn import Draft

    workspace = {"host": host or sessions.local_host(),
                 "path": ws_path or str(Path(app.cwd).resolve())}

    def build(txn: Any) -> Any:
        todo = lookup(txn.fold.todos, todo_id, "todo") if todo_id else None
        goal = lookup(txn.fold.goals, goal_id, "goal") if goal_id else None
        goal = goal or (txn.fold.todos[todo].goal if todo else None)
        data = {"id": session_id or new_short_id("s", event_id), "task": task, "todo": todo,
                "keep_open": keep_open, "keep_open_reason": why, "workspace": workspace}
        return txn.add(Draft("session.opened", data, goal, event_id))

    event = app.write(build)
    used = sessions.slots(app.ledger.fold()).get(app.actor, {"used": 0, "limit": 0})
    emit_event(app, event, f"opened session {event.data.id} "
               f"({'kept open' if keep_open else 'one-shot'}; {used['used']}/{used['limit']} "
               f"slots of {app.actor} in use)")


def _session_event(name: str, event_type: str, field: str, doc: str, verb: str) -> None:
    """`session progress|respond ID TEXT`: one event by the owner, TEXT '-' reads stdin."""

    @event_id_option
    @pass_app
    def command(app: App, session_id: str, text: str, event_id: Optional[str]) -> None:
        from loopx.features import transcripts as sessions
        from loopx.ledger.txn import Draft

        body = sys.stdin.read() if text == "-" else text

        def build(txn: Any) -> Any:
            if event_type == "session.responded":
                return sessions.respond(txn, session_id, body, event_id=event_id)
            found = sessions.get(txn.fold, session_id)
            return txn.add(Draft(event_type, {"id": found.id, field: body}, found.goal, event_id))

        event = app.write(build)
        emit_event(app, event, f"session {event.data.id} {verb}")

    command.__doc__ = doc
    command = click.argument("text", metavar=field.upper())(command)
    command = click.argument("session_id", metavar="ID")(command)
    session.command(name)(command)


_session_event("progress", "session.progress", "message",
               "Report progress: the session is still running (owner only; MESSAGE - reads stdin).",
               "is running")
_session_event("respond", "session.responded", "response",
               "Finish a turn: the session is now awaiting input (owner only; RESPONSE - reads "
               "stdin). It stays open until closed or reaped; a --one-shot session closes as done.",
               "has responded")


@session.command("send")
@click.argument("session_id", metavar="ID")
@click.argument("message")
@event_id_option
@pass_app
def session_send(app: App, session_id: str, message: str, event_id: Optional[str]) -> None:
    """Send MESSAGE to a session, running or awaiting input alike (MESSAGE - reads stdin).

    Recorded as a correction if the session is running, as a follow-up if it was awaiting
    input; either way it is running again and the message waits in its inbox.
    """
    from loopx.features import transcripts as sessions

    body = sys.stdin.read() if message == "-" else message
    event = app.write(lambda txn: sessions.send(txn, session_id, body, event_id=event_id))
    said = ("follow-up (it was awaiting input; it runs again)" if event.data.kind == "follow_up"
            else "correction (it is running)")
    emit_event(app, event, f"sent {said} to session {event.data.id}")


def _inbox_text(items: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"#{m['seq']} {m['kind']:<10} from {m['from']} at {m['at']}  [{m['event']}]\n"
        f"    {m['message']}" for m in items) or "inbox empty"


@session.command("inbox")
@click.argument("session_id", metavar="ID")
@click.option("--ack", "and_ack", is_flag=True,
              help="Also mark what is shown as consumed, in the same write (owner only).")
@pass_app
def session_inbox(app: App, session_id: str, and_ack: bool) -> None:
    """Messages the session's executor has not consumed yet, oldest first (poll this)."""
    from loopx.features import transcripts as sessions

    if not and_ack:
        app.ledger.require()
        items = sessions.inbox(sessions.get(app.ledger.fold(), session_id))
    else:
        def build(txn: Any) -> list[dict[str, Any]]:
            shown = sessions.inbox(sessions.get(txn.fold, session_id))
            if shown:
                sessions.ack(txn, session_id, through=shown[-1]["event"])
            return shown

        items = app.write(build)
    items = [{k: m[k] for k in ("event", "seq", "from", "at", "kind", "message")} for m in items]
    app.emit(items, lambda: _inbox_text(items))


@session.command("ack")
@click.argument("session_id", metavar="ID")
@click.option("--through", metavar="EVENT",
              help="Consume up to and including this message (default: the whole inbox).")
@event_id_option
@pass_app
def session_ack(app: App, session_id: str, through: Optional[str], event_id: Optional[str]) -> None:
    """Mark inbox messages as consumed by the session's executor (owner only).

    A loop should pass --through with the last message it read, so a message that arrived
    since is not consumed unseen.
    """
    from loopx.features import transcripts as sessions

    event = app.write(lambda txn: sessions.ack(txn, session_id, through=through, event_id=event_id))
    if event is None:
        app.emit({"acked": []}, "inbox already empty")
        return
    emit_event(app, event, f"consumed {len(event.data.interjections)} messages of session "
               f"{event.data.id}")


@session.command("checkpoint")
@click.argument("session_id", metavar="ID")
@click.option("--transcript", "transcript_file", required=True, type=click.File("rb"),
              help="The transcript so far (- for stdin); stored byte-exact, chunked.")
@click.option("--summary", required=True, help="The summary that replaces it in context.")
@click.option("--omitted", help="What the summary leaves out.")
@event_id_option
@pass_app
def session_checkpoint(app: App, session_id: str, transcript_file: Any, summary: str,
                       omitted: Optional[str], event_id: Optional[str]) -> None:
    """Store the transcript on the state branch with the summary that replaces it (owner only)."""
    from loopx.features import transcripts as sessions

    data = transcript_file.read()
    event = app.write(lambda txn: sessions.checkpoint(
        txn, session_id, data, summary=summary, omitted=omitted, event_id=event_id))
    chunks = len(event.data.transcript.chunks)
    emit_event(app, event, f"checkpoint {event.data.number} of session {event.data.id}: "
               f"{len(data)} bytes in {chunks} chunk{'s' if chunks != 1 else ''}")


@session.command("show")
@click.argument("session_id", metavar="ID")
@click.option("--transcript", "want_transcript", is_flag=True,
              help="Print a checkpointed transcript, byte-exact, instead.")
@click.option("--checkpoint", "number", type=click.IntRange(min=1),
              help="Which checkpoint (default: the latest).")
@pass_app
def session_show(app: App, session_id: str, want_transcript: bool, number: Optional[int]) -> None:
    """One session: state, owner, workspace, last response, inbox, checkpoints."""
    from loopx.state import views
    from loopx.features import transcripts as sessions

    app.ledger.require()
    found = sessions.get(app.ledger.fold(), session_id)
    if want_transcript:
        out = sys.stdout.buffer
        out.write(sessions.read_transcript(app.ledger, found, number))
        out.flush()
        return
    view = views.session_view(found, _now(app))
    view["messages"] = list(found.messages)
    view["checkpoints"] = [{k: v for k, v in c.items() if k != "chunks"} | {"chunks": len(c["chunks"])}
                           for c in found.checkpoints]
    app.emit(view, lambda: _show_text(view))


def _show_text(view: dict[str, Any]) -> str:
    from loopx.features import transcripts as sessions

    ws = view["workspace"]
    out = [f"session {view['id']}: {view['task']}",
           f"  state:     {_state_text(view)}",
           f"  owner:     {view['owner']}",
           f"  workspace: {ws['host']}:{ws['path']}" + elsewhere(ws, sessions.local_host()),
           f"  keep open: {'yes' if view['keep_open'] else 'no (one-shot)'}"
           + (f" - {view['keep_open_reason']}" if view["keep_open_reason"] else "")]
    out += [f"  goal:      {view['goal']}"] if view["goal"] else []
    out += [f"  progress:  {view['last_progress']}"] if view["last_progress"] else []
    out += [f"  response:  {view['last_response']}"] if view["last_response"] else []
    out += [f"  inbox:     {len(view['inbox'])} unconsumed of {len(view['messages'])} messages"]
    for point in view["checkpoints"]:
        out.append(f"  checkpoint {point['number']} ({point['bytes']} bytes, {point['at']}): "
                   f"{first_line(point['summary'])}")
    return "\n".join(out)


def _state_text(view: dict[str, Any]) -> str:
    if view["state"] == "awaiting_input":
        return f"waiting for your instruction (idle {ago(view['idle_seconds'])})"
    if view["state"] == "closed":
        return f"closed ({view['closed_reason']})"
    return "running"


@session.command("list")
@click.option("--state", type=click.Choice(["running", "awaiting_input", "closed", "open"]),
              help="Only sessions in this state (open = running or awaiting input).")
@click.option("--owner", metavar="ACTOR", help="Only this owner's sessions.")
@pass_app
def session_list(app: App, state: Optional[str], owner: Optional[str]) -> None:
    """Running, awaiting input (with idle time) and closed sessions; slots in use."""
    from loopx.features import transcripts as sessions
    from loopx.state import views

    app.ledger.require()
    fold = app.ledger.fold()
    rows = [views.session_view(s, _now(app)) for s in
            sorted(fold.sessions.values(), key=lambda s: (s.clock, s.id))]
    if owner:
        rows = [v for v in rows if v["owner"] == owner]
    if state:
        rows = [v for v in rows if v["state"] == state or (state == "open" and v["state"] != "closed")]
    data = {"sessions": rows, "slots": sessions.slots(fold),
            "limit": views.session_slots(fold)}
    app.emit(data, lambda: _list_text(data))


def _list_text(data: dict[str, Any]) -> str:
    out: list[str] = []
    titles = {"running": "Running", "awaiting_input": "Waiting for your instruction",
              "closed": "Closed"}
    for state, title in titles.items():
        rows = [v for v in data["sessions"] if v["state"] == state]
        if rows:
            out.append(f"{title}:")
            out += [f"  {v['id']:<12} {first_line(v['task'], 50):<50} {v['owner']}"
                    + (f"  idle {ago(v['idle_seconds'])}" if state == "awaiting_input" else "")
                    + (f"  ({v['closed_reason']})" if state == "closed" else "")
                    + (f"  inbox {len(v['inbox'])}" if v["inbox"] else "") for v in rows]
    slots = ", ".join(f"{o} {s['used']}/{s['limit']}" for o, s in data["slots"].items())
    out.append(f"Slots in use: {slots or 'none'} (limit {data['limit']} per owner)")
    return "\n".join(out)


@session.command("close")
@click.argument("session_id", metavar="ID")
@click.option("--reason", type=click.Choice(["done", "stopped", "abandoned"]),
              help="Why (default: done for its owner, stopped for anyone else).")
@click.option("--note", help="A word on how it ended.")
@event_id_option
@pass_app
def session_close(app: App, session_id: str, reason: Optional[str], note: Optional[str],
                  event_id: Optional[str]) -> None:
    """Close a session and free its slot. Sessions never close on their own."""
    from loopx.features import transcripts as sessions
    from loopx.ledger.txn import Draft

    def build(txn: Any) -> Any:
        found = sessions.get(txn.fold, session_id)
        why = reason or ("done" if found.owner == app.actor else "stopped")
        return txn.add(Draft("session.closed", {"id": found.id, "reason": why, "note": note},
                             found.goal, event_id))

    event = app.write(build)
    emit_event(app, event, f"closed session {event.data.id} ({event.data.reason})")


@session.command("reap")
@click.option("--idle", metavar="DURATION",
              help="Close sessions awaiting input this long (default: ledger config "
                   "session_idle_seconds, else 24h).")
@click.option("--dry-run", is_flag=True, help="Only say what would be closed.")
@pass_app
def session_reap(app: App, idle: Optional[str], dry_run: bool) -> None:
    """Close sessions awaiting input past their idle limit, as expired (one commit)."""
    from loopx.features import transcripts as sessions

    def limit(fold: Any) -> int:
        return duration(idle) if idle else sessions.idle_seconds(fold)

    now = _now(app)
    app.ledger.require()
    if dry_run:
        fold = app.ledger.fold()
        closed = [s.id for s in sessions.reapable(fold, now, limit(fold))]
    else:
        closed = app.write(lambda txn: sessions.reap(txn, now, limit(txn.fold)))
    verb = "would close" if dry_run else "closed"
    app.emit({"expired": closed, "dry_run": dry_run},
             f"{verb} {len(closed)} idle sessions" + (f": {', '.join(closed)}" if closed else ""))


@session.command("stats")
@click.option("--window", default="1h", show_default=True, metavar="DURATION",
              help="A one-shot session followed by a new one on its goal within this is a "
                   "missed keep-open.")
@pass_app
def session_stats(app: App, window: str) -> None:
    """How sessions ended: follow-ups to kept-open sessions, unused ones, missed keep-opens."""
    from loopx.features import transcripts as sessions

    app.ledger.require()
    data = sessions.stats(app.ledger.fold(), window=duration(window))
    app.emit(data, lambda: _stats_text(data))


def _stats_text(data: dict[str, Any]) -> str:
    kept, one = data["kept_open"], data["one_shot"]
    closed = ", ".join(f"{n} {why}" for why, n in sorted(data["closed"].items())) or "none"
    out = [f"{data['sessions']} sessions: {data['open']['running']} running, "
           f"{data['open']['awaiting_input']} awaiting input; closed: {closed}",
           f"kept open: {kept['total']}; got a follow-up: {kept['got_follow_up']} "
           f"({kept['follow_ups']} follow-ups); expired unused: {kept['expired_unused']}; "
           f"closed unused: {kept['closed_unused']}",
           f"one-shot: {one['total']}; missed keep-open (new session on the same goal within "
           f"{ago(data['window_seconds'])}): {one['missed_keep_open']}"]
    out += [f"  {m['session']} -> {m['followed_by']} after {ago(m['after_seconds'])} "
            f"({m['topic']})" for m in one["missed"]]
    return "\n".join(out)
