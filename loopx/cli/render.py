"""Text renderings for people: short, most important first, coloured on a TTY. Text from
events is shown with :func:`loopx.model.inert.line`: one line, so it cannot fake one of ours."""

from __future__ import annotations

from datetime import timedelta
from collections.abc import Callable
from typing import Any, Optional

import click

from loopx.recovery.readback import local_host
from loopx.model import clock, plural, typed
from loopx.model.inert import line
from loopx.projection import answers, compact, environment


def _style(color: bool):  # type: ignore[no-untyped-def]
    def paint(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if color else text

    return paint


def status_text(snap: answers.StatusDoc, *, color: bool = False) -> str:
    paint = _style(color)
    ref = snap.ref.removeprefix("refs/heads/")
    count = snap.ledger.events
    name = f"{line(snap.ledger.name)}, " if snap.ledger.name else ""
    out = [f"On ledger {ref} ({name}{plural.counted(count, 'event')})"]
    shown = [p for p in snap.problems if not p.dismissed]
    if shown:
        out.append("\n" + paint(f"Problems ({len(shown)}), events not applied:", fg="red", bold=True))
        out += [f"  {line(p.event)}: {line(p.reason)}" for p in shown[:10]]
    for goal in snap.goals:
        if goal.state not in ("achieved", "abandoned"):
            out += _goal(goal, paint)
    out += _todos(snap, paint)
    out += _sessions(snap.sessions, paint)
    out += _links(snap.environment.links, paint)
    out += _read_back(snap.environment.effects)
    out += _history(snap)
    if snap.unknown_events:
        out.append(f"\n{plural.counted(len(snap.unknown_events), 'event')} of types this loopx does not know "
                   "(kept; upgrade loopx to read them)")
    if not snap.goals:
        out.append("\nNo goals in play; start one: git loopx goal add TITLE --accept TEXT "
                   "(closed goals, if any: git loopx status --all)")
    return "\n".join(out)


def _goal(goal: answers.Goal, paint: Any) -> list[str]:
    met = sum(c.met for c in goal.acceptance)
    stale = sum(bool(c.met and c.needs_rerun) for c in goal.acceptance)
    out = ["\n" + paint(f"Goal {goal.id}: {line(goal.title)}", bold=True)
           + f"  [{goal.state}, {met}/{len(goal.acceptance)} criteria met"
           + (f", {stale} of them by stale evidence]" if stale else "]")]
    for c in goal.acceptance:
        mark = paint("x", fg="green") if c.met else " "
        if c.needs_rerun:  # met only by stale evidence (added by readback)
            mark = paint("~", fg="yellow")
        out.append(f"  [{mark}] {c.id}  {line(c.text)}" + _criterion_note(c))
    out += [f"  [-] {c.id}  {line(c.text)}  (retired)" for c in goal.retired]
    return out


def _criterion_note(crit: answers.Criterion) -> str:
    if crit.ci:
        verdict = "passed" if crit.ci.verdict == "pass" else "failed"
        return f"  (CI {verdict} for HEAD, not recorded: git loopx ci record)"
    if crit.needs_rerun:
        changed = crit.changed
        shown = f": {line(', '.join(changed[:3]))}{', ...' if len(changed) > 3 else ''} changed" if (
            changed) else ""
        return f"  (evidence is stale{shown}: re-run)"
    if crit.verdict == "fail":
        return f"  (latest evidence {crit.latest} failed)"
    if crit.open_work:  # "passed" only when a verdict passed: work open is not evidence
        work = f"work open: {line(', '.join(crit.open_work))}"
        return f"  (passed, {work})" if crit.verdict == "pass" else f"  ({work})"
    return ""


def _todos(snap: answers.StatusDoc, paint: Any) -> list[str]:
    """Ready, claimed, waiting (with why), then the open gates they wait on."""
    todos = {t.id: t for t in snap.todos}
    closed = {g.id for g in snap.goals if g.state in ("achieved", "abandoned")}
    sections = [
        ("\n" + paint("Ready to work on", fg="green") + " (git loopx todo claim ID, or "
         "git loopx next --claim for the best one):",
         [f"  {t.id:<12} {line(t.title)}{_tags(t)}" for t in (todos[i] for i in snap.frontier)]),
        ("\nClaimed:",
         [f"  {t.id:<12} {line(t.title)}  ({line(t.claimed_by or '')} until {t.lease_expires})"
          for t in todos.values() if t.state == "claimed"]),
        ("\n" + paint("Waiting:", fg="yellow"),
         [f"  {t.id:<12} {line(t.title)}  ({line(t.why_not_ready or '')})" for t in todos.values()
          if t.state in ("open", "blocked") and not t.ready and t.goal not in closed]),
        ("\n" + paint("Open gates:", fg="yellow"),
         [f"  {g.id:<12} {line(g.question)}  (asks {line(', '.join(g.authority))})"
          for g in snap.gates if g.state == "open"]),
        (paint("\nGates with decisions that did not see each other:", fg="red", bold=True),
         [line for g in snap.gates if g.state == "conflicted" for line in _conflict(g)]),
    ]
    return [line for title, rows in sections if rows
            for line in (title, *capped(rows, "git loopx todo list --offset N"))]


ROWS = 15  # rows of one section of the status text; the rest is counted


def capped(rows: list[str], where: str, most: int = ROWS) -> list[str]:
    """``rows`` up to ``most``, then one line counting the rest and saying ``where`` they are:
    a text answer stays a screen however much a ledger (or a remote) holds."""
    if len(rows) <= most:
        return rows
    return [*rows[:most], f"  ... and {len(rows) - most} more ({where})"]


def _tags(todo: answers.Todo) -> str:
    """A ready todo's labels and assignee, when it has them."""
    labels = f"  [{' '.join(line(label) for label in todo.labels)}]" if todo.labels else ""
    return labels + (f"  -> {line(todo.assignee)}" if todo.assignee else "")
def _links(links: dict[str, environment.LinkState], paint: Any) -> list[str]:
    if not links:
        return []
    out = ["\n" + paint("Links:", bold=True)]
    for link, found in links.items():
        about = line(found.title) if found.title else line(found.detail or "")
        out.append(f"  {line(link)}  {found.state}  {about}  ({', '.join(found.by)})")
    return out


def _read_back(effects: dict[str, environment.ReadBack]) -> list[str]:
    return [f"\nEffect {line(e)} read back: {found.state}, {line(found.receipt or found.evidence)}"
            for e, found in effects.items()]


def _conflict(gate: answers.Gate) -> list[str]:
    """A conflicted gate: every decision in force, and how its authority decides again."""
    lines = [f"  {gate.id:<12} {line(gate.question)}  "
             f"(asks {line(', '.join(gate.authority))})"]
    lines += [f"               {d.decision or 'withdraw'} by {line(d.actor)}"
              + (f": {first_line(d.answer or d.comment, 50)}" if d.answer or d.comment
                 else "") + f"  [{d.event}]" for d in gate.conflict]
    lines.append(f"               decide again: git loopx gate answer {gate.id} --supersede "
                 "--approve (or --reject)")
    return lines


def _history(snap: answers.StatusDoc) -> list[str]:
    out = []
    done = [t.id for t in snap.todos if t.state == "done"]
    if done:
        out.append(f"\nDone: {', '.join(done)}")
    closed = [g for g in snap.goals if g.state in ("achieved", "abandoned")]
    if closed:  # only with --all: plain status lists the goals in play
        out.append("\nClosed goals:")
        out += [f"  {g.id:<12} {g.state:<9} {line(g.title)}"
                + (f"  ({line(g.reason)})" if g.reason else "") for g in closed]
    return out


def _sessions(sessions: list[answers.Session], paint: Any) -> list[str]:
    """Sessions awaiting input are waiting for an instruction, not progress: listed first."""
    here, out = local_host(), []
    for state, title, color in (("awaiting_input", "Waiting for your instruction", "cyan"),
                                ("running", "Sessions running", None)):
        rows = [s for s in sessions if s.state == state]
        if rows:
            out.append("\n" + paint(f"{title}:", fg=color))
        for s in rows:
            said = s.last_response if state == "awaiting_input" else s.last_progress
            idle = f", idle {ago(s.idle_seconds)}" if state == "awaiting_input" else ""
            out.append(f"  {s.id:<12} {first_line(s.task, 50)}  ({line(s.owner)}{idle})"
                       + elsewhere({"host": s.workspace.host, "path": s.workspace.path}, here))
            out += [f"               {first_line(said)}"] if said else []
            out += [f"               {plural.counted(len(s.inbox), 'unread message')}"] if s.inbox else []
            out += [f"               completes {line(s.ends)}"] if s.ends and s.keep_open else []
            out += [f"               also open on goal {line(s.goal or '')}: "
                    f"{line(', '.join(s.same_goal))}"] if s.same_goal else []
    return out


def page_text(found: compact.Page[Any], rows: Callable[[], str], empty: str) -> str:
    """A page of a listing as text: its ``rows``, then one line when more follow (which of
    how many these are, how many more, and the option that shows them); ``empty`` when
    there is nothing (saying so of the offset when there is more before it)."""
    if not found:
        return empty if not found.total else f"{empty} from --offset {found.offset} " \
                                             f"({found.total} in all)"
    more = found.next_offset
    return rows() + ("" if more is None else (
        f"\n({found.offset + 1}-{more} of {found.total}; {found.total - more} more: "
        f"--offset {more})"))


def ago(seconds: Optional[int]) -> str:
    """``3h12m`` for a number of seconds; empty for None."""
    return "" if seconds is None else clock.format_duration(timedelta(seconds=seconds))


def first_line(text: Optional[str], width: int = 70) -> str:
    lines = (text or "").strip().splitlines()
    first = line(lines[0]) if lines else ""
    return first if len(first) <= width else first[: width - 3] + "..."


def elsewhere(workspace: dict[str, str], here: str) -> str:
    """A note when a session's workspace is on another host than ``here``."""
    if workspace["host"] == here:
        return ""
    return (f"  (workspace on {line(workspace['host'])}: its live objects cannot be "
            "re-attached here)")


def fields_text(found: Any) -> str:
    """`key: value` lines for a record (a typed answer or a dict), lists joined, empty fields
    left out; each value one line of text (a question from another clone holding a line
    break would have printed a line of its own: "authority: human:alice")."""
    def show(value: Any) -> str:
        if isinstance(value, list):
            return ", ".join(show(v) for v in value)
        if isinstance(value, dict):
            return "; ".join(f"{line(str(k))} = {show(v)}" for k, v in value.items())
        return line(str(value))

    values = typed.plain(found)
    return "\n".join(f"{k}: {show(v)}" for k, v in values.items() if v not in (None, [], {}))


def short_oid(oid: Optional[str]) -> str:
    return oid[:12] if oid else "none"
