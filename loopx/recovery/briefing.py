"""The Markdown handoff packet of `git loopx brief`: everything a new agent needs to start,
built from the status document (ledger + environment as inspected now), nothing else.

Every value in it came from an event or the environment and is shown through
:mod:`loopx.model.inert`: the headings, lists and code spans are loopx's own, nothing else."""

from __future__ import annotations

from typing import Any, Optional

from loopx.model import inert, plural
from loopx.model.inert import md
from loopx.projection import graph


def markdown(snap: dict[str, Any], *, goal_id: Optional[str] = None) -> str:
    """The brief for every live goal (or just ``goal_id``)."""
    goals = [g for g in snap["goals"]
             if (g["id"] == goal_id if goal_id else g["state"] in ("active", "paused"))]
    out = [f"# loopx brief: {md(snap['ledger'].get('name') or snap.get('ref', 'loopx/state'))}",
           ""]
    out += _next_section(snap)
    for goal in goals:
        out += _goal_section(snap, goal)
    out += _gates_section(snap)
    out += _leases_section(snap)
    out += _sessions_section(snap)
    out += _warnings_section(snap)
    out += _environment_section(snap["environment"])
    if not goals:
        out += ["No live goals. Start one: `git loopx goal add TITLE --accept TEXT`.", ""]
    return "\n".join(out).rstrip() + "\n"


def _next_section(snap: dict[str, Any]) -> list[str]:
    out = ["## Next actions", ""]
    actions = snap["actions"][:10]
    for n, action in enumerate(actions, 1):
        cmd = f" — {inert.code(action['command'])}" if action.get("command") else ""
        out.append(f"{n}. **{action['kind']}**: {md(action['reason'])}{cmd}")
    if not actions:
        out.append("Nothing to do" + (f"; look again at {md(snap['next_wake'])}."
                                      if snap.get("next_wake") else "."))
    return out + [""]


def _goal_section(snap: dict[str, Any], goal: dict[str, Any]) -> list[str]:
    out = [f"## Goal {md(goal['id'])}: {md(goal['title'])} ({md(goal['state'])})", "",
           "### Acceptance", ""]
    evidence = {e["id"]: e for e in snap["evidence"]}
    judged = snap.get("environment", {}).get("evidence") or {}
    for crit in goal["acceptance"]:
        # As in `status`: [x] met, [~] passed only by evidence gone stale; a fresh pass with
        # work serving it still open is not met.
        mark = "~" if crit.get("needs_rerun") else "x" if crit.get("met") else " "
        out.append(f"- [{mark}] **{md(crit['id'])}** {md(crit['text'])} — "
                   f"{md(str(crit.get('freshness', 'unmet')))}"
                   + _criterion_detail(goal, crit))
        for ev_id in crit.get("evidence", []):
            out.append("  - " + _evidence_line(evidence.get(ev_id, {"id": ev_id}), judged))
    out += [f"- [-] ~~{md(c['id'])}~~ {md(c['text'])} — retired" for c in goal.get("retired", [])]
    recorded = [e for e in snap["evidence"] if e.get("goal") == goal["id"]]
    if recorded:  # all of it, commit records too, newest last
        out += ["", "### Evidence", ""] + [f"- {_evidence_line(e, judged)}"
                                           for e in recorded[-20:]]
    todos = [t for t in snap["todos"] if t["goal"] == goal["id"]]
    out += ["", "### Done", ""] + _todo_lines([t for t in todos if t["state"] == "done"])
    out += ["", "### Frontier (ready)", ""] + _todo_lines([t for t in todos if t["ready"]])
    waiting = [t for t in todos if t["state"] in ("open", "blocked", "claimed") and not t["ready"]]
    out += ["", "### Not ready", ""] + _todo_lines(waiting, why=True)
    picture = graph.mermaid_block(graph.plan(snap, goal=goal["id"]))
    if picture:  # GitHub draws it; elsewhere it reads as a list of edges
        out += ["", "### Plan", ""] + picture
    return out + [""]


def _evidence_line(ev: dict[str, Any], judged: dict[str, Any]) -> str:
    """``e-1 (test, for t-1, 3c76bab4d2 (recorded on 04d38397ae), stale): summary``: the commit
    it points to now, after amends and rebases, and the one it was recorded on."""
    recorded = str(ev.get("commit") or "")
    now = str((judged.get(str(ev.get("id")), {}) or {}).get("commit") or recorded)
    commit = "no commit" if not recorded else md(now[:10]) + (
        f" (recorded on {md(recorded[:10])})" if now != recorded else "")
    todo = f"for {md(ev['todo'])}, " if ev.get("todo") else ""
    return (f"{md(str(ev.get('id')))} ({md(str(ev.get('kind')))}, {todo}{commit}, "
            f"{md(ev.get('freshness') or 'n/a')})"
            + (f": {md(ev['summary'])}" if ev.get("summary") else ""))


def _criterion_detail(goal: dict[str, Any], crit: dict[str, Any]) -> str:
    """Why a criterion is not simply met: its scope, what changed, a failure, unrecorded CI."""
    parts = [f"judged on {_listed(crit['paths'])}"] if crit.get("paths") else []
    if crit.get("open_work"):
        parts.append(f"work open: {_listed(crit['open_work'])}")
    if crit.get("changed"):
        parts.append(f"changed since: {_listed(crit['changed'][:5])}")
    if crit.get("verdict") == "fail" and not crit.get("ci"):
        parts.append(f"latest evidence {md(str(crit.get('latest')))} failed")
    if crit.get("ci"):
        names = _listed([c["name"] for c in crit["ci"].get("checks", [])])
        parts.append(f"CI ({names}) {md(crit['ci']['verdict'])} for HEAD, not recorded yet: "
                     "`git loopx ci record`")
    elif crit.get("needs_rerun") or crit.get("verdict") == "fail":
        rerun = f"git loopx rerun --criterion {goal['id']}:{crit['id']}"
        parts.append(f"re-run: {inert.code(rerun)}")
    return f" ({'; '.join(parts)})" if parts else ""


def _todo_lines(todos: list[dict[str, Any]], *, why: bool = False) -> list[str]:
    if not todos:
        return ["- (none)"]
    return [f"- {md(t['id'])}: {md(t['title'])}"
            + (f" — {md(t['why_not_ready'])}" if why and t["why_not_ready"] else "")
            + (f" — done without evidence: {md(t['no_evidence_reason'])}"
               if t.get("no_evidence_reason") else "")
            for t in todos]


def _listed(values: list[str]) -> str:
    return ", ".join(md(str(v)) for v in values)


def _gates_section(snap: dict[str, Any]) -> list[str]:
    gates = [g for g in snap["gates"] if g["state"] == "open"]
    if not gates:
        return []
    return ["## Open gates", ""] + [
        f"- {md(g['id'])}: {md(g['question'])} (asks {_listed(g['authority'])}; blocks "
        f"{_listed(g['blocks']) or 'nothing yet'})" for g in gates] + [""]


def _leases_section(snap: dict[str, Any]) -> list[str]:
    held = [t for t in snap["todos"] if t.get("claimed_by")]
    if not held:
        return []
    return ["## Leases", ""] + [
        f"- {md(t['id'])} held by {md(t['claimed_by'])} until {md(str(t['lease_expires']))}"
        + (f" (decisions since claim: {_listed(t['decisions_since_claim'])})"
           if t.get("decisions_since_claim") else "") for t in held] + [""]


def _sessions_section(snap: dict[str, Any]) -> list[str]:
    sessions = [s for s in snap.get("sessions", []) if s.get("state") != "closed"]
    if not sessions:
        return []
    here = snap["environment"].get("host")
    lines = []
    for s in sessions:
        where = (s.get("workspace") or {}).get("host")
        elsewhere = f" on {md(where)} (not this host)" if where and here and where != here else ""
        lines.append(f"- {md(s['id'])} ({s['state']}, {md(str(s.get('owner')))}){elsewhere}: "
                     f"{md(str(s.get('task')))}")
    return ["## Sessions", ""] + lines + [""]


def _warnings_section(snap: dict[str, Any]) -> list[str]:
    out = [f"- problem: {md(p['event'])}: {md(p['reason'])}" for p in snap["problems"][:20]]
    out += [f"- effect {md(e['id'])} ({md(e['action'])} on {md(e['target'])}) is indeterminate: "
            "read it back"
            for e in snap.get("effects", []) if e.get("state") == "indeterminate"]
    if snap.get("unknown_events"):
        out.append(f"- {plural.counted(len(snap['unknown_events']), 'event')} of unknown types "
                   "(upgrade loopx)")
    return ["## Warnings", ""] + out + [""] if out else []


def _environment_section(env: dict[str, Any]) -> list[str]:
    ci = env.get("ci") or {}
    state = env.get("state") or {}
    upstream = env.get("upstream")
    lines = [
        "## Environment (inspected now)", "",
        f"- host: {md(str(env.get('host')))}, work tree: {md(env.get('worktree') or '(bare)')}",
        f"- HEAD: {md(env.get('head') or '(none)')}"
        + (f" on branch {md(env['branch'])}" if env.get("branch") else
           " (detached)" if env.get("detached") else ""),  # neither in a bare repository
        f"- uncommitted changes: {_listed(env.get('dirty', [])[:20]) or 'none'}",
        f"- untracked files: {len(env.get('untracked', []))}",
    ]
    if env.get("in_progress"):
        lines.append(f"- {md(env['in_progress'])} in progress")
    if upstream:
        lines.append(f"- upstream {md(upstream['name'])}: {upstream['ahead']} ahead, "
                     f"{upstream['behind']} behind")
    if state.get("tracking"):
        lines.append(f"- ledger vs {md(state['tracking'])}: "
                     f"{plural.counted(state.get('unpushed', 0), 'event')} not pushed, "
                     f"{state.get('unmerged', 0)} fetched and not merged")
    else:
        lines.append("- ledger: not shared yet (no remote has loopx/state; `git loopx sync`)")
    lines.append(f"- CI ({md(ci.get('provider') or 'none')}): {md(str(ci.get('state')))}"
                 + (f" — {md(ci['detail'])}" if ci.get("detail") else ""))
    return lines + [""]
