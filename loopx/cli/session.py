"""`git loopx session ...`: tasks that outlive their first result (docs/sessions.md)."""

from __future__ import annotations

import sys

import click

from loopx.cli import terminal
from loopx.cli.app import App, declared
from loopx.cli.render import ago, elsewhere, first_line
from loopx.recovery import readback
from loopx.model import inert, plural
from loopx.model.inert import line
from loopx.ops import catalog, declare, sessions
from loopx.ops.declare import Values


@click.group()
def session() -> None:
    """Sessions: tasks that respond, wait for input, and take follow-ups as interjections."""


def _stdin_text(v: Values) -> Values:
    """A message given as ``-`` is read from stdin (the command line's convention)."""
    return Values({**v, "text": sys.stdin.read()}) if v.text == "-" else v


def _op(name: str) -> declare.Operation:
    return catalog.find("session " + name)


@session.command("open")
@declared(_op("open"))
def session_open(app: App, v: Values) -> None:
    event = app.call(_op("open"), v)
    used = sessions.slots_used(app.ledger, app.actor)
    others = sessions.others_on_goal(app.ledger, event.data.id)
    app.emit_event(event, f"opened session {event.data.id} "
                   f"({'kept open: it never completes on its own' if v.keep_open else 'one-shot'}; "
                   f"{used['used']}/{used['limit']} slots of {app.actor} in use)")
    if others and not app.json:  # flagged, not refused: status and `session show` say it too
        terminal.echo(f"note: goal {event.env.goal} already has open session "
                      f"{', '.join(others)}; to go on with that work, `git loopx session send "
                      f"{others[0]} MESSAGE` instead", err=True)


@session.command("progress")
@declared(_op("progress"))
def session_progress(app: App, v: Values) -> None:
    event = app.call(_op("progress"), _stdin_text(v))
    app.emit_event(event, f"session {event.data.id} is running")


@session.command("respond")
@declared(_op("respond"))
def session_respond(app: App, v: Values) -> None:
    event = app.call(_op("respond"), _stdin_text(v))
    closed = sessions.show(app.ledger, event.data.id, now=app.now).state == "closed"
    app.emit_event(event, f"session {event.data.id} has responded"
                   + ("; one-shot, it is closed (done)" if closed else "; it awaits input"))


@session.command("send")
@declared(_op("send"))
def session_send(app: App, v: Values) -> None:
    event = app.call(_op("send"), _stdin_text(v))
    said = ("follow-up (it was awaiting input; it runs again)" if event.data.kind == "follow_up"
            else "correction (it is running)")
    app.emit_event(event, f"sent {said} to session {event.data.id}")


@session.command("inbox")
@declared(_op("inbox"))
def session_inbox(app: App, v: Values) -> None:
    items = app.call(_op("inbox"), v)
    app.emit(items, lambda: _inbox_text(items))


@session.command("ack")
@declared(_op("ack"))
def session_ack(app: App, v: Values) -> None:
    event = app.call(_op("ack"), v)
    if event is None:
        app.emit({"acked": []}, "inbox already empty")
        return
    app.emit_event(event, f"consumed {plural.counted(len(event.data.interjections), 'message')} of session "
                   f"{event.data.id}")


@session.command("checkpoint")
@declared(_op("checkpoint"))
def session_checkpoint(app: App, v: Values) -> None:
    event = app.call(_op("checkpoint"), v)
    chunks = len(event.data.transcript.chunks)
    app.emit_event(event, f"checkpoint {event.data.number} of session {event.data.id}: "
                   f"{len(v.transcript)} bytes in {chunks} chunk{'s' if chunks != 1 else ''}")


@session.command("show")
@declared(_op("show"))
def session_show(app: App, v: Values) -> None:
    found = app.call(_op("show"), v)
    if isinstance(found, bytes):
        if sys.stdout.isatty():  # for a person: no control sequences (the bytes are for pipes)
            terminal.echo(found.decode("utf-8", "replace"), nl=False)
            return
        sys.stdout.buffer.write(found)
        sys.stdout.flush()
        return
    app.emit(found, lambda: _show_text(found))


@session.command("list")
@declared(_op("list"))
def session_list(app: App, v: Values) -> None:
    """Running, awaiting input (with idle time) and closed sessions; slots in use.

    --json prints the list of sessions, as every `list` does; the slots in use are in
    `session stats --json`."""
    data = app.call(_op("list"), v)
    app.emit(data.sessions, lambda: _list_text(data))


@session.command("close")
@declared(_op("close"))
def session_close(app: App, v: Values) -> None:
    event = app.call(_op("close"), v)
    app.emit_event(event, f"closed session {event.data.id} ({event.data.reason})")


@session.command("reap")
@declared(_op("reap"))
def session_reap(app: App, v: Values) -> None:
    done = app.call(_op("reap"), v)
    closed = done["expired"]
    verb = "would close" if v.dry_run else "closed"
    app.emit(done, f"{verb} {plural.counted(len(closed), 'idle session')}"
             + (f": {', '.join(closed)}" if closed else ""))


@session.command("stats")
@declared(_op("stats"))
def session_stats(app: App, v: Values) -> None:
    data = app.call(_op("stats"), v)
    app.emit(data, lambda: _stats_text(data))


def _inbox_text(items: list[sessions.Message]) -> str:
    return "\n".join(
        f"#{m.seq} {m.kind:<10} from {line(m.from_)} at {m.at}  [{m.event}]\n"
        + inert.indented(m.message) for m in items) or "inbox empty"


def _show_text(view: sessions.SessionShown) -> str:
    ws = view.workspace
    out = [f"session {view.id}: {line(view.task)}",
           f"  state:     {_state_text(view)}",
           f"  owner:     {line(view.owner)}",
           f"  workspace: {line(ws.host)}:{line(ws.path)}"
           + elsewhere({"host": ws.host, "path": ws.path}, readback.local_host()),
           f"  keep open: {'yes' if view.keep_open else 'no (one-shot)'}"
           + (f" - {line(view.keep_open_reason)}" if view.keep_open_reason else "")]
    out += [f"  ends:      {line(view.ends)}"] if view.ends else []
    out += [f"  goal:      {view.goal}"] if view.goal else []
    out += [f"  same goal: {line(', '.join(view.same_goal))} also open on it"] if (
        view.same_goal) else []
    out += [f"  progress:  {line(view.last_progress)}"] if view.last_progress else []
    out += [f"  response:  {line(view.last_response)}"] if view.last_response else []
    out += [f"  inbox:     {len(view.inbox)} unconsumed of "
            f"{plural.counted(len(view.messages), 'message')}"]
    for point in view.checkpoints:
        out.append(f"  checkpoint {point.number} ({point.bytes} bytes, {point.at}): "
                   f"{first_line(point.summary)}")
    return "\n".join(out)


def _state_text(view: sessions.SessionShown) -> str:
    if view.state == "awaiting_input":
        return f"waiting for your instruction (idle {ago(view.idle_seconds)})"
    if view.state == "closed":
        return f"closed ({view.closed_reason})"
    return "running"


def _list_text(data: sessions.SessionListing) -> str:
    out: list[str] = []
    titles = {"running": "Running", "awaiting_input": "Waiting for your instruction",
              "closed": "Closed"}
    for state, title in titles.items():
        rows = [v for v in data.sessions if v.state == state]
        if rows:
            out.append(f"{title}:")
            out += [f"  {v.id:<12} {first_line(v.task, 50):<50} {v.owner}"
                    + (f"  idle {ago(v.idle_seconds)}" if state == "awaiting_input" else "")
                    + (f"  ({v.closed_reason})" if state == "closed" else "")
                    + (f"  inbox {len(v.inbox)}" if v.inbox else "") for v in rows]
    slots = ", ".join(f"{o} {s.used}/{s.limit}" for o, s in data.slots.items())
    out.append(f"Slots in use: {slots or 'none'} (limit {data.limit} per owner)")
    return "\n".join(out)


def _stats_text(data: sessions.SessionStats) -> str:
    kept, one = data.kept_open, data.one_shot
    closed = ", ".join(f"{n} {why}" for why, n in sorted(data.closed.items())) or "none"
    out = [f"{plural.counted(data.sessions, 'session')}: {data.open.running} running, "
           f"{data.open.awaiting_input} awaiting input; closed: {closed}",
           f"kept open: {kept.total}; got a follow-up: {kept.got_follow_up} "
           f"({kept.follow_ups} follow-ups); expired unused: {kept.expired_unused}; "
           f"closed unused: {kept.closed_unused}",
           f"one-shot: {one.total}; missed keep-open (new session on the same goal within "
           f"{ago(data.window_seconds)}): {one.missed_keep_open}"]
    out += [f"  {m.session} -> {m.followed_by} after {ago(m.after_seconds)} "
            f"({m.topic})" for m in one.missed]
    return "\n".join(out)
