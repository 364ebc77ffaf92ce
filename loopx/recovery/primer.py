"""The primer of `git loopx prime`: what an agent needs at the start of a session or after its
context was compacted. What loopx is in three lines, the commands it needs, and the live state
that matters to *this* actor: its leases, the top of the frontier, gates waiting on it, its
sessions' inboxes, stale evidence. Built from the status document only; short and stable, so a
session-start hook can inject it every time. Every value from the ledger is shown through
:mod:`loopx.model.inert`: the Markdown structure is loopx's own."""

from __future__ import annotations

from typing import Any, Optional

from loopx.model import inert
from loopx.model.inert import md

FRONTIER_SHOWN = 5
SHOWN = 10  # items of any other section (the primer goes into a context: it stays short)

ABOUT = [
    "loopx keeps this repository's plan and proof on the git branch `loopx/state`: goals with",
    "acceptance criteria, todos, gates (questions only a named human answers) and evidence.",
    "It outlives this session: trust it over your memory, and record what you do as you go.",
]

COMMANDS = [
    ("git loopx next --claim", "the single best action for you; claims the top ready todo"),
    ("git loopx status", "everything, and why each todo is not ready (`--format json`)"),
    ("git loopx run --todo ID -- CMD", "run a test and record its result as evidence"),
    ("git loopx todo done ID --evidence E", "finish a todo (`todo renew ID` keeps your lease)"),
    ("git loopx todo add GOAL TITLE --discovered-from ID", "work you found on the way"),
    ("git loopx gate open GOAL QUESTION --authority WHO", "ask a human; do not guess"),
    ("git loopx note add TEXT --todo ID", "leave word for whoever comes next"),
    ("git loopx wait", "block until a wake is due or the state changes"),
]


def facts(snap: dict[str, Any], *, actor: Optional[str], now: str) -> dict[str, Any]:
    """What matters to ``actor`` in the status document ``snap`` (its ``--format json``)."""
    todos = {t["id"]: t for t in snap["todos"]}
    actions = snap["actions"]

    def of(kind: str) -> list[dict[str, Any]]:
        return [{"reason": a["reason"], "command": a["command"]}
                for a in actions if a["kind"] == kind][:SHOWN]

    return {
        "actor": actor, "now": now, "ledger": snap["ledger"].get("name"),
        "next": actions[0] if actions else None, "next_wake": snap.get("next_wake"),
        "leases": [_todo(t) for t in snap["todos"] if actor and t["claimed_by"] == actor],
        "frontier": [_todo(todos[t]) for t in snap["frontier"][:FRONTIER_SHOWN]],
        "frontier_size": len(snap["frontier"]),
        "gates": of("answer_gate"),
        "inboxes": [{"session": s["id"], "task": s["task"], "unread": len(s["inbox"])}
                    for s in snap.get("sessions", [])
                    if actor and s["owner"] == actor and s["state"] != "closed" and s["inbox"]],
        "sessions": [{"session": s["id"], "task": s["task"], "state": s["state"],
                      "keep_open": s["keep_open"], "ends": s.get("ends"),
                      "same_goal": s.get("same_goal", [])}
                     for s in snap.get("sessions", [])
                     if actor and s["owner"] == actor and s["state"] != "closed"],
        "stale": of("rerun_evidence"),
        "attention": [{"kind": a["kind"], "reason": a["reason"], "command": a["command"]}
                      for a in actions if a["kind"] in _ATTENTION][:SHOWN],
    }


# Actions for this actor that are not covered by a section above but must not be missed.
_ATTENTION = ("repair", "finish_operation", "stop_quota", "read_back_effect", "replan",
              "release_lease", "renew_lease", "wake_due")


def _todo(todo: dict[str, Any]) -> dict[str, Any]:
    return {"id": todo["id"], "title": todo["title"], "goal": todo["goal"],
            "priority": todo.get("priority", 2), "until": todo.get("lease_expires")}


def markdown(data: dict[str, Any]) -> str:
    """The primer as Markdown."""
    who = (md(data["actor"]) if data["actor"]
           else "nobody yet (set LOOPX_ACTOR, e.g. agent:NAME@HOST)")
    out = [f"# loopx primer for {who}", "", *ABOUT, "", "## Commands", ""]
    out += [f"- `{cmd}` — {what}" for cmd, what in COMMANDS]
    out += ["", f"## Now ({md(data['now'])}, ledger {md(data['ledger'] or 'loopx/state')})", ""]
    out += _next_line(data)
    out += _section("Needs attention", [f"- {a['kind']}: {md(a['reason'])}{_cmd(a)}"
                                        for a in data["attention"]])
    out += _section("Your leases", [f"- {md(t['id'])}: {md(t['title'])} (goal {md(t['goal'])}), "
                                    f"until {md(str(t['until']))}" for t in data["leases"]])
    shown = len(data["frontier"])
    more = f" (top {shown} of {data['frontier_size']})" if data["frontier_size"] > shown else ""
    out += _section(f"Ready to claim{more}", [
        f"- P{t['priority']} {md(t['id'])}: {md(t['title'])} (goal {md(t['goal'])})"
        for t in data["frontier"]])
    out += _section("Gates waiting on you", [f"- {md(g['reason'])}{_cmd(g)}"
                                             for g in data["gates"]])
    out += _section("Your sessions' inboxes", [
        f"- {md(s['session'])} ({md(s['task'])}): {s['unread']} unread — "
        + inert.code(f"git loopx session inbox {s['session']} --ack") for s in data["inboxes"]])
    out += _section("Your open sessions", [
        f"- {md(s['session'])} ({md(s['task'])}): {s['state'].replace('_', ' ')}; "
        + ("kept open, it never completes on its own: "
           + inert.code(f"git loopx session close {s['session']}") + " when it is done"
           if s["keep_open"] else "one-shot: it closes when it responds")
        + (f"; also open on its goal: {md(', '.join(s['same_goal']))}" if s["same_goal"] else "")
        for s in data["sessions"]])
    out += _section("Stale evidence", [f"- {md(s['reason'])}{_cmd(s)}" for s in data["stale"]])
    return "\n".join(out).rstrip() + "\n"


def _next_line(data: dict[str, Any]) -> list[str]:
    best = data["next"]
    if best is None:
        wake = f"; look again at {md(data['next_wake'])}" if data["next_wake"] else ""
        return [f"**Next:** nothing to do{wake}.", ""]
    return [f"**Next:** {best['kind']}: {md(best['reason'])}{_cmd(best)}", ""]


def _cmd(action: dict[str, Any]) -> str:
    return f" — {inert.code(action['command'])}" if action.get("command") else ""


def _section(title: str, lines: list[str]) -> list[str]:
    return [f"{title}:", "", *lines, ""] if lines else []
