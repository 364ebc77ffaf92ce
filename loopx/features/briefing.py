"""The Markdown handoff packet of `git loopx brief`: everything a new agent needs to start,
built from the status document (ledger + environment as inspected now), nothing else."""

from __future__ import annotations

from typing import Any, Optional

from loopx.model import plural


def markdown(snap: dict[str, Any], *, goal_id: Optional[str] = None) -> str:
    """The brief for every live goal (or just ``goal_id``)."""
    goals = [g for g in snap["goals"]
             if (g["id"] == goal_id if goal_id else g["state"] in ("active", "paused"))]
    out = [f"# loopx brief: {snap['ledger'].get('name') or snap.get('ref', 'loopx/state')}", ""]
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
        cmd = f" — `{action['command']}`" if action.get("command") else ""
        out.append(f"{n}. **{action['kind']}**: {action['reason']}{cmd}")
    if not actions:
        out.append("Nothing to do" + (f"; look again at {snap['next_wake']}." if snap.get("next_wake") else "."))
    return out + [""]


def _goal_section(snap: dict[str, Any], goal: dict[str, Any]) -> list[str]:
    out = [f"## Goal {goal['id']}: {goal['title']} ({goal['state']})", "", "### Acceptance", ""]
    evidence = {e["id"]: e for e in snap["evidence"]}
    judged = snap.get("environment", {}).get("evidence") or {}
    for crit in goal["acceptance"]:
        # As in `status`: [x] met by fresh evidence, [~] met only by evidence gone stale.
        mark = {"fresh": "x", "stale": "~", "unknown": "~"}.get(crit.get("freshness") or "", " ")
        out.append(f"- [{mark}] **{crit['id']}** {crit['text']} — {crit.get('freshness', 'unmet')}"
                   + _criterion_detail(goal, crit))
        for ev_id in crit.get("evidence", []):
            out.append("  - " + _evidence_line(evidence.get(ev_id, {"id": ev_id}), judged))
    out += [f"- [-] ~~{c['id']}~~ {c['text']} — retired" for c in goal.get("retired", [])]
    recorded = [e for e in snap["evidence"] if e.get("goal") == goal["id"]]
    if recorded:  # all of it, commit records too, newest last
        out += ["", "### Evidence", ""] + [f"- {_evidence_line(e, judged)}"
                                           for e in recorded[-20:]]
    todos = [t for t in snap["todos"] if t["goal"] == goal["id"]]
    out += ["", "### Done", ""] + _todo_lines([t for t in todos if t["state"] == "done"])
    out += ["", "### Frontier (ready)", ""] + _todo_lines([t for t in todos if t["ready"]])
    waiting = [t for t in todos if t["state"] in ("open", "blocked", "claimed") and not t["ready"]]
    out += ["", "### Not ready", ""] + _todo_lines(waiting, why=True)
    return out + [""]


def _evidence_line(ev: dict[str, Any], judged: dict[str, Any]) -> str:
    """``e-1 (test, for t-1, 3c76bab4d2 (recorded on 04d38397ae), stale): summary``: the commit
    it points to now, after amends and rebases, and the one it was recorded on."""
    recorded = str(ev.get("commit") or "")
    now = str((judged.get(str(ev.get("id")), {}) or {}).get("commit") or recorded)
    commit = "no commit" if not recorded else now[:10] + (
        f" (recorded on {recorded[:10]})" if now != recorded else "")
    todo = f"for {ev['todo']}, " if ev.get("todo") else ""
    return (f"{ev.get('id')} ({ev.get('kind')}, {todo}{commit}, {ev.get('freshness') or 'n/a'})"
            + (f": {ev['summary']}" if ev.get("summary") else ""))


def _criterion_detail(goal: dict[str, Any], crit: dict[str, Any]) -> str:
    """Why a criterion is not simply met: its scope, what changed, a failure, unrecorded CI."""
    parts = [f"judged on {', '.join(crit['paths'])}"] if crit.get("paths") else []
    if crit.get("changed"):
        parts.append(f"changed since: {', '.join(crit['changed'][:5])}")
    if crit.get("verdict") == "fail" and not crit.get("ci"):
        parts.append(f"latest evidence {crit.get('latest')} failed")
    if crit.get("ci"):
        names = ", ".join(c["name"] for c in crit["ci"].get("checks", []))
        parts.append(f"CI ({names}) {crit['ci']['verdict']} for HEAD, not recorded yet: "
                     "`git loopx ci record`")
    elif crit.get("needs_rerun") or crit.get("verdict") == "fail":
        parts.append(f"re-run: `git loopx rerun --criterion {goal['id']}:{crit['id']}`")
    return f" ({'; '.join(parts)})" if parts else ""


def _todo_lines(todos: list[dict[str, Any]], *, why: bool = False) -> list[str]:
    if not todos:
        return ["- (none)"]
    return [f"- {t['id']}: {t['title']}" + (f" — {t['why_not_ready']}" if why and t["why_not_ready"] else "")
            + (f" — done without evidence: {t['no_evidence_reason']}"
               if t.get("no_evidence_reason") else "")
            for t in todos]


def _gates_section(snap: dict[str, Any]) -> list[str]:
    gates = [g for g in snap["gates"] if g["state"] == "open"]
    if not gates:
        return []
    return ["## Open gates", ""] + [
        f"- {g['id']}: {g['question']} (asks {', '.join(g['authority'])}; blocks "
        f"{', '.join(g['blocks']) or 'nothing yet'})" for g in gates] + [""]


def _leases_section(snap: dict[str, Any]) -> list[str]:
    held = [t for t in snap["todos"] if t.get("claimed_by")]
    if not held:
        return []
    return ["## Leases", ""] + [
        f"- {t['id']} held by {t['claimed_by']} until {t['lease_expires']}"
        + (f" (decisions since claim: {', '.join(t['decisions_since_claim'])})"
           if t.get("decisions_since_claim") else "") for t in held] + [""]


def _sessions_section(snap: dict[str, Any]) -> list[str]:
    sessions = [s for s in snap.get("sessions", []) if s.get("state") != "closed"]
    if not sessions:
        return []
    here = snap["environment"].get("host")
    lines = []
    for s in sessions:
        where = (s.get("workspace") or {}).get("host")
        elsewhere = f" on {where} (not this host)" if where and here and where != here else ""
        lines.append(f"- {s['id']} ({s['state']}, {s.get('owner')}){elsewhere}: {s.get('task')}")
    return ["## Sessions", ""] + lines + [""]


def _warnings_section(snap: dict[str, Any]) -> list[str]:
    out = [f"- problem: {p['event']}: {p['reason']}" for p in snap["problems"][:20]]
    out += [f"- effect {e['id']} ({e['action']} on {e['target']}) is indeterminate: read it back"
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
        f"- host: {env.get('host')}, work tree: {env.get('worktree') or '(bare)'}",
        f"- HEAD: {env.get('head') or '(none)'} "
        + (f"on branch {env['branch']}" if env.get("branch") else "(detached)"),
        f"- uncommitted changes: {', '.join(env.get('dirty', [])[:20]) or 'none'}",
        f"- untracked files: {len(env.get('untracked', []))}",
    ]
    if env.get("in_progress"):
        lines.append(f"- {env['in_progress']} in progress")
    if upstream:
        lines.append(f"- upstream {upstream['name']}: {upstream['ahead']} ahead, {upstream['behind']} behind")
    if state.get("tracking"):
        lines.append(f"- ledger vs {state['tracking']}: "
                     f"{plural.counted(state.get('unpushed', 0), 'event')} not pushed, "
                     f"{state.get('unmerged', 0)} fetched and not merged")
    else:
        lines.append("- ledger: not shared yet (no remote has loopx/state; `git loopx sync`)")
    lines.append(f"- CI ({ci.get('provider') or 'none'}): {ci.get('state')}"
                 + (f" — {ci['detail']}" if ci.get("detail") else ""))
    return lines + [""]
