"""`git loopx session ...`: tasks that outlive their first result (docs/sessions.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import click

from loopx.cli import terminal
from loopx.cli.app import App, duration, event_id_option, optional_duration, pass_app
from loopx.cli.render import ago, elsewhere, first_line
from loopx.features import readback
from loopx.model import inert, plural
from loopx.model.inert import line
from loopx.ops import sessions


@click.group()
def session() -> None:
    """Sessions: tasks that respond, wait for input, and take follow-ups as interjections."""


def _text_or_stdin(text: str) -> str:
    return sys.stdin.read() if text == "-" else text


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
    path = ws_path or str(Path(app.cwd).resolve())
    event = app.write(lambda txn: sessions.open_(
        txn, task, id=session_id, goal=goal_id, todo=todo_id, keep_open=keep_open, why=why,
        host=host, path=path, event_id=event_id))
    used = sessions.slots_used(app.ledger, app.actor)
    others = sessions.others_on_goal(app.ledger, event.data.id)
    app.emit_event(event, f"opened session {event.data.id} "
                   f"({'kept open: it never completes on its own' if keep_open else 'one-shot'}; "
                   f"{used['used']}/{used['limit']} slots of {app.actor} in use)")
    if others and not app.json:  # flagged, not refused: status and `session show` say it too
        terminal.echo(f"note: goal {event.env.goal} already has open session "
                      f"{', '.join(others)}; to go on with that work, `git loopx session send "
                      f"{others[0]} MESSAGE` instead", err=True)


@session.command("progress")
@click.argument("session_id", metavar="ID")
@click.argument("message")
@event_id_option
@pass_app
def session_progress(app: App, session_id: str, message: str, event_id: Optional[str]) -> None:
    """Report progress: the session is still running (owner only; MESSAGE - reads stdin)."""
    body = _text_or_stdin(message)
    event = app.write(lambda txn: sessions.progress(txn, session_id, body, event_id=event_id))
    app.emit_event(event, f"session {event.data.id} is running")


@session.command("respond")
@click.argument("session_id", metavar="ID")
@click.argument("response")
@event_id_option
@pass_app
def session_respond(app: App, session_id: str, response: str, event_id: Optional[str]) -> None:
    """Finish a turn: the session is now awaiting input (owner only; RESPONSE - reads
    stdin). It stays open until closed or reaped; a --one-shot session closes as done."""
    body = _text_or_stdin(response)
    event = app.write(lambda txn: sessions.respond(txn, session_id, body, event_id=event_id))
    closed = app.batch_txn is None and sessions.show(app.ledger, event.data.id,
                                                     now=app.now)["state"] == "closed"
    app.emit_event(event, f"session {event.data.id} has responded"
                   + ("; one-shot, it is closed (done)" if closed else "; it awaits input"))


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
    body = _text_or_stdin(message)
    event = app.write(lambda txn: sessions.send(txn, session_id, body, event_id=event_id))
    said = ("follow-up (it was awaiting input; it runs again)" if event.data.kind == "follow_up"
            else "correction (it is running)")
    app.emit_event(event, f"sent {said} to session {event.data.id}")


@session.command("inbox")
@click.argument("session_id", metavar="ID")
@click.option("--ack", "and_ack", is_flag=True,
              help="Also mark what is shown as consumed, in the same write (owner only).")
@pass_app
def session_inbox(app: App, session_id: str, and_ack: bool) -> None:
    """Messages the session's executor has not consumed yet, oldest first (poll this)."""
    if and_ack:
        items = app.write(lambda txn: sessions.take_inbox(txn, session_id))
    else:
        items = sessions.inbox(app.ledger, session_id)
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
    event = app.write(lambda txn: sessions.ack(txn, session_id, through=through,
                                               event_id=event_id))
    if event is None:
        app.emit({"acked": []}, "inbox already empty")
        return
    app.emit_event(event, f"consumed {plural.counted(len(event.data.interjections), 'message')} of session "
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
    data = transcript_file.read()
    event = app.write(lambda txn: sessions.checkpoint(
        txn, session_id, data, summary=summary, omitted=omitted, event_id=event_id))
    chunks = len(event.data.transcript.chunks)
    app.emit_event(event, f"checkpoint {event.data.number} of session {event.data.id}: "
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
    if want_transcript:
        data = sessions.transcript(app.ledger, session_id, number)
        if sys.stdout.isatty():  # for a person: no control sequences (the bytes are for pipes)
            terminal.echo(data.decode("utf-8", "replace"), nl=False)
            return
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    view = sessions.show(app.ledger, session_id, now=app.now)
    app.emit(view, lambda: _show_text(view))


@session.command("list")
@click.option("--state", type=click.Choice(["running", "awaiting_input", "closed", "open"]),
              help="Only sessions in this state (open = running or awaiting input).")
@click.option("--owner", metavar="ACTOR", help="Only this owner's sessions.")
@pass_app
def session_list(app: App, state: Optional[str], owner: Optional[str]) -> None:
    """Running, awaiting input (with idle time) and closed sessions; slots in use.

    --json prints the list of sessions, as every `list` does; the slots in use are in
    `session stats --json`."""
    data = sessions.listing(app.ledger, state=state, owner=owner, now=app.now)
    app.emit(data["sessions"], lambda: _list_text(data))


@session.command("close")
@click.argument("session_id", metavar="ID")
@click.option("--reason", type=click.Choice(sessions.CLOSE_REASONS),
              help="Why (default: done for its owner, stopped for anyone else).")
@click.option("--note", help="A word on how it ended.")
@event_id_option
@pass_app
def session_close(app: App, session_id: str, reason: Optional[str], note: Optional[str],
                  event_id: Optional[str]) -> None:
    """Close a session and free its slot. Sessions never close on their own."""
    event = app.write(lambda txn: sessions.close(txn, session_id, reason=reason, note=note,
                                                 event_id=event_id))
    app.emit_event(event, f"closed session {event.data.id} ({event.data.reason})")


@session.command("reap")
@click.option("--idle", metavar="DURATION",
              help="Close sessions awaiting input this long (default: ledger config "
                   "session_idle_seconds, else 24h).")
@click.option("--dry-run", is_flag=True, help="Only say what would be closed.")
@pass_app
def session_reap(app: App, idle: Optional[str], dry_run: bool) -> None:
    """Close sessions awaiting input past their idle limit, as expired (one commit)."""
    limit = optional_duration(idle)
    app.ledger.require()
    if dry_run:
        closed = sessions.reapable(app.ledger, idle=limit, now=app.now)
    else:
        closed = app.write(lambda txn: sessions.reap(txn, idle=limit))
    verb = "would close" if dry_run else "closed"
    app.emit({"expired": closed, "dry_run": dry_run},
             f"{verb} {plural.counted(len(closed), 'idle session')}"
             + (f": {', '.join(closed)}" if closed else ""))


@session.command("stats")
@click.option("--window", default="1h", show_default=True, metavar="DURATION",
              help="A one-shot session followed by a new one on its goal within this is a "
                   "missed keep-open.")
@pass_app
def session_stats(app: App, window: str) -> None:
    """How sessions ended: follow-ups to kept-open sessions, unused ones, missed keep-opens."""
    data = sessions.stats(app.ledger, window=duration(window))
    app.emit(data, lambda: _stats_text(data))


def _inbox_text(items: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"#{m['seq']} {m['kind']:<10} from {line(m['from'])} at {m['at']}  [{m['event']}]\n"
        + inert.indented(m["message"]) for m in items) or "inbox empty"


def _show_text(view: dict[str, Any]) -> str:
    ws = view["workspace"]
    out = [f"session {view['id']}: {line(view['task'])}",
           f"  state:     {_state_text(view)}",
           f"  owner:     {line(view['owner'])}",
           f"  workspace: {line(ws['host'])}:{line(ws['path'])}"
           + elsewhere(ws, readback.local_host()),
           f"  keep open: {'yes' if view['keep_open'] else 'no (one-shot)'}"
           + (f" - {line(view['keep_open_reason'])}" if view["keep_open_reason"] else "")]
    out += [f"  ends:      {line(view['ends'])}"] if view.get("ends") else []
    out += [f"  goal:      {view['goal']}"] if view["goal"] else []
    out += [f"  same goal: {line(', '.join(view['same_goal']))} also open on it"] if (
        view.get("same_goal")) else []
    out += [f"  progress:  {line(view['last_progress'])}"] if view["last_progress"] else []
    out += [f"  response:  {line(view['last_response'])}"] if view["last_response"] else []
    out += [f"  inbox:     {len(view['inbox'])} unconsumed of "
            f"{plural.counted(len(view['messages']), 'message')}"]
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


def _stats_text(data: dict[str, Any]) -> str:
    kept, one = data["kept_open"], data["one_shot"]
    closed = ", ".join(f"{n} {why}" for why, n in sorted(data["closed"].items())) or "none"
    out = [f"{plural.counted(data['sessions'], 'session')}: {data['open']['running']} running, "
           f"{data['open']['awaiting_input']} awaiting input; closed: {closed}",
           f"kept open: {kept['total']}; got a follow-up: {kept['got_follow_up']} "
           f"({kept['follow_ups']} follow-ups); expired unused: {kept['expired_unused']}; "
           f"closed unused: {kept['closed_unused']}",
           f"one-shot: {one['total']}; missed keep-open (new session on the same goal within "
           f"{ago(data['window_seconds'])}): {one['missed_keep_open']}"]
    out += [f"  {m['session']} -> {m['followed_by']} after {ago(m['after_seconds'])} "
            f"({m['topic']})" for m in one["missed"]]
    return "\n".join(out)
