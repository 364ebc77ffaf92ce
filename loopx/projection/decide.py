"""decide(): the ledger snapshot plus a fresh environment -> the ordered list of legal actions.

Pure: values in, values out; "now" and the actor are parameters. No git, no click, no I/O, so
it is tested as a table of cases. Each action is a dict::

    {kind, priority, reason, command, todo?, gate?, effect?, session?, goal?, evidence?}

Lower ``priority`` comes first. ``WAIT_KINDS`` are things to wait for rather than do; when
nothing at all is left, ``next_wake`` says when looking again could change that.
See docs/recovery.md for every kind.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Callable, Iterable, Optional, Sequence

from loopx.model import clock, needs, plural
from loopx.projection import views

Action = dict[str, Any]

# kind -> priority (lower first). Problems before risky retries before leases before work.
PRIORITY = {
    "repair": 10, "finish_operation": 12, "stop_quota": 15, "read_back_effect": 20,
    "replan": 25, "release_lease": 30, "renew_lease": 32, "read_inbox": 34, "session_waiting": 35,
    "answer_gate": 40, "sync": 45, "fix_ci": 48, "record_ci": 49, "rerun_evidence": 50,
    "close_goal": 55,
    "wake_due": 60, "continue": 65, "work": 70, "plan_criterion": 75, "wait_ci": 80, "wait_gate": 85,
    "wait_lease": 88, "wait_host": 90, "notice": 95,
}
# Things to wait for rather than do (`git loopx next` exits 10). A spent budget is one: more
# work would only be refused until someone raises it.
WAIT_KINDS = frozenset({"stop_quota", "wait_ci", "wait_gate", "wait_lease", "wait_host"})
RENEW_WINDOW = timedelta(minutes=10)  # renew a lease this long before it runs out
MAX_WORK = 20  # frontier todos listed as actions; the frontier itself is complete in status


def decide(snapshot: dict[str, Any], environment: dict[str, Any], now: datetime, actor: str,
           *, roles: Optional[dict[str, list[str]]] = None,
           labels: Sequence[str] = ()) -> list[Action]:
    """Every legal next action for ``actor``, most important first. New work is the frontier
    less the todos assigned to someone else, those assigned to ``actor`` first; with
    ``labels``, only the todos that carry every one of them."""
    ctx = _Ctx(snapshot, environment, now, actor, roles or {}, labels)
    actions: list[Action] = []
    for rule in _RULES:
        actions.extend(rule(ctx))
    actions.sort(key=lambda a: (a["priority"], a.pop("order", 0)))
    return actions


def passed_over(snapshot: dict[str, Any], actor: str, labels: Sequence[str] = ()) -> list[str]:
    """Why ready todos were not offered to ``actor`` as work: each one assigned to someone
    else, or (with ``labels``) without one of them, as ``t-1 is assigned to agent:b``."""
    ctx = _Ctx(snapshot, {}, datetime.min, actor, {}, labels)
    found = []
    for todo_id in snapshot.get("frontier", []):
        why = ctx.not_offered(ctx.todos[todo_id])
        if why:
            found.append(f"{todo_id} {why}")
    return found


def next_wake(snapshot: dict[str, Any], now: datetime) -> Optional[str]:
    """The earliest future moment at which the state changes by itself (a wake, a lease end)."""
    times = [w["at"] for w in snapshot.get("wakes", []) if w.get("at")]
    times += [t["lease_expires"] for t in snapshot.get("todos", []) if t.get("lease_expires")]
    times += [e[when] for e in snapshot.get("effects", []) if e.get("state") == "indeterminate"
              and e.get("readback_at") for when in ("readback_at", "held_until")]
    future = sorted(t for t in times if clock.parse_ts(t) > now)
    return clock.format_ts(clock.parse_ts(future[0])) if future else None


def is_waiting(action: Action) -> bool:
    return action["kind"] in WAIT_KINDS


def annotate(snapshot: dict[str, Any], environment: dict[str, Any]) -> None:
    """Add what readback saw to the evidence and acceptance criteria of ``snapshot``, in place.

    A criterion is ``fresh`` when its latest verdict passed and still vouches for the code
    being judged, ``stale``/``unknown`` when it passed on code that changed in its scope (or
    cannot be compared here), ``unmet`` when there is no verdict or the latest failed. A
    finished CI check mapped to it that the ledger does not hold yet is its newest verdict
    (``ci``): it meets or un-meets the criterion here, until ``git loopx ci record`` keeps it.
    """
    fresh = environment.get("evidence") or {}
    judged = environment.get("criteria") or {}
    for ev in snapshot.get("evidence", []):
        ev["freshness"] = (fresh.get(ev["id"]) or {}).get("state")
    for goal in snapshot.get("goals", []):
        for crit in goal["acceptance"]:
            _annotate_criterion(crit, judged.get(f"{goal['id']}:{crit['id']}"))


def _annotate_criterion(crit: dict[str, Any], judged: Optional[dict[str, Any]]) -> None:
    crit["ci"] = None
    if judged is None:  # not inspected (history of closed goals): as it was recorded
        crit["freshness"], crit["changed"] = ("fresh" if crit["met"] else "unmet"), []
    else:
        crit["freshness"], crit["changed"] = judged["state"], list(judged.get("changed") or [])
        crit["why"] = judged.get("reason")
        if "scope" in judged:  # judged on the evidence's own paths, the criterion's, the default
            crit["scope"] = list(judged["scope"])
        if judged.get("source") == "ci":
            crit["met"] = judged["verdict"] == "pass" and not crit.get("open_work")
            crit["ci"] = {"verdict": judged["verdict"], "checks": judged.get("checks", []),
                          "recorded": False}
    crit["needs_rerun"] = crit["freshness"] in ("stale", "unknown")


def _action(kind: str, reason: str, command: Optional[str], order: int = 0, **refs: Any) -> Action:
    action = {"kind": kind, "priority": PRIORITY[kind], "reason": reason, "command": command}
    action.update({k: v for k, v in refs.items() if v is not None})
    if order:
        action["order"] = order
    return action


class _Ctx:
    """The inputs, plus lookups the rules share."""

    def __init__(self, snapshot: dict[str, Any], env: dict[str, Any], now: datetime, actor: str,
                 roles: dict[str, list[str]], labels: Sequence[str] = ()) -> None:
        self.snap, self.env, self.now, self.actor, self.roles = snapshot, env, now, actor, roles
        self.labels = tuple(labels)
        self.goals = {g["id"]: g for g in snapshot.get("goals", [])}
        self.todos = {t["id"]: t for t in snapshot.get("todos", [])}
        self.gates = {g["id"]: g for g in snapshot.get("gates", [])}

    def live_goal(self, goal_id: Optional[str]) -> bool:
        goal = self.goals.get(goal_id or "")
        return goal is not None and goal["state"] == "active"

    def authority(self, gate: dict[str, Any]) -> set[str]:
        people: set[str] = set()
        for who in gate["authority"]:
            people.update(self.roles.get(who[5:], []) if who.startswith("role:") else [who])
        return people

    def quota_spent(self, goal_id: str) -> bool:
        quota = self.snap.get("quota", {})
        return any(quota.get(scope, {}).get("exhausted") for scope in ("*", goal_id))

    def mine(self) -> list[dict[str, Any]]:
        return [t for t in self.todos.values() if t.get("claimed_by") == self.actor]

    def not_offered(self, todo: dict[str, Any]) -> Optional[str]:
        """Why a ready todo is not new work for this actor, or None when it is."""
        assignee = todo.get("assignee")
        if assignee and self.actor and assignee != self.actor:
            return f"is assigned to {assignee}"
        missing = [label for label in self.labels if label not in (todo.get("labels") or ())]
        return f"has no label {', '.join(missing)}" if missing else None

    def offered(self) -> list[str]:
        """The frontier as new work for this actor: the todos assigned to it first."""
        ids = [t for t in self.snap.get("frontier", []) if not self.not_offered(self.todos[t])]
        return sorted(ids, key=lambda t: not self.actor or self.todos[t].get("assignee") != self.actor)


# --- rules: each returns the actions of one concern -------------------------------------------------


def _problems(ctx: _Ctx) -> Iterable[Action]:
    # A file that does not parse or validate is damage to repair. An event refused by the rules
    # (two claims that crossed in a merge, a second answer) is the projection doing its job:
    # the winner is settled, so it is a notice for the actor whose event lost, not a blocker.
    problems = ctx.snap.get("problems", [])
    damaged = [p for p in problems if p.get("type") == "file"]
    if damaged:
        first = damaged[0]
        yield _action("repair", f"{plural.counted(len(damaged), 'file')} on the state branch "
                      f"{_are(len(damaged))} not valid events "
                      f"(first: {first['event']}: {first['reason']})", "git loopx doctor")
    for problem in problems:
        if problem.get("type") != "file" and problem.get("actor") == ctx.actor and not (
                problem.get("dismissed")):
            what = _YOUR.get(problem["type"], f"your {problem['type']} event")
            yield _action("notice", f"{what} was not applied: {problem['reason']}; once read, "
                          "dismiss this notice", f"git loopx notice dismiss {problem['event']}",
                          event=problem["event"])
    for entry in (ctx.snap.get("ledger") or {}).get("clocks_ahead", []):
        yield _action("notice", views.clock_ahead_text(entry), "git loopx doctor")
    unknown = ctx.snap.get("unknown_events", [])
    if unknown:
        yield _action("repair", f"{plural.counted(len(unknown), 'event')} "
                      f"{'is of a type' if len(unknown) == 1 else 'are of types'} this loopx does not know; "
                      "upgrade loopx before acting on this ledger", "pip install -U git-loopx")


_YOUR = {"todo.claimed": "your claim", "todo.renewed": "your renewal",
         "todo.handed_off": "your handoff",
         "todo.done": "your `todo done`", "gate.answered": "your answer"}


def _worktree(ctx: _Ctx) -> Iterable[Action]:
    operation = ctx.env.get("in_progress")
    if operation:
        yield _action("finish_operation", f"a {operation} is in progress in the work tree; "
                      "finish or abort it first", f"git {operation} --continue  # or --abort")


def _quota(ctx: _Ctx) -> Iterable[Action]:
    for scope, quota in sorted(ctx.snap.get("quota", {}).items()):
        if quota.get("exhausted") and (scope == "*" or ctx.live_goal(scope)):
            what = "the ledger-wide budget" if scope == "*" else f"goal {scope}'s budget"
            yield _action("stop_quota", f"{what} is spent ({_spent(quota)}); stop and ask for more",
                          "git loopx quota show", goal=None if scope == "*" else scope)


def _spent(quota: dict[str, Any]) -> str:
    parts = [f"{name} {quota['spent'][name]}/{quota[name]}" for name in ("turns", "tokens", "cost")
             if quota.get(name) is not None]
    return ", ".join(parts)


def _effects(ctx: _Ctx) -> Iterable[Action]:
    """An effect with no outcome is read back before any retry: by its owner once its grace
    is over, by anyone else once the owner's hold is over too (at once, for an intent that
    named no readback, grace or owner)."""
    seen = ctx.env.get("effects") or {}
    for effect in ctx.snap.get("effects", []):
        if effect.get("state") != "indeterminate" or not _effect_yours(ctx, effect):
            continue
        found = seen.get(effect["id"])
        why = f"; read back: {found['evidence']}" if found else ""
        command = (f"git loopx effect readback {effect['id']}" if effect.get("readback") and not found
                   else f"git loopx effect confirm {effect['id']} --receipt URL  # or: effect fail")
        yield _action(
            "read_back_effect",
            f"effect {effect['id']} ({effect['action']} on {effect['target']}) has no recorded "
            f"outcome{why}; read the target back before retrying it", command,
            effect=effect["id"], todo=effect.get("todo"), goal=effect.get("goal"))


def _effect_yours(ctx: _Ctx, effect: dict[str, Any]) -> bool:
    if not (effect.get("readback") or effect.get("grace") or effect.get("hold")):
        return True  # an intent of loopx before readbacks (v1), or one that asked for none
    start = effect["readback_at"] if ctx.actor == effect.get("owner") else effect["held_until"]
    return clock.parse_ts(start) <= ctx.now


def _replan(ctx: _Ctx) -> Iterable[Action]:
    for todo in ctx.mine():
        for gate_id in todo.get("decisions_since_claim", []):
            gate = ctx.gates.get(gate_id, {})
            said = gate.get("answer") or gate.get("decision") or "answered"
            yield _action(
                "replan", f"the plan you are executing for {todo['id']} predates decision "
                f"{gate_id} ({said} by {gate.get('answered_by')}: {gate.get('question', '')}); "
                "re-plan with it, then acknowledge it",
                f"git loopx todo ack {todo['id']} --gate {gate_id}", todo=todo["id"],
                gate=gate_id)


def _leases(ctx: _Ctx) -> Iterable[Action]:
    for todo in ctx.todos.values():
        if todo.get("expired_claim_by") == ctx.actor and todo["state"] == "open":
            yield _action("release_lease", f"your lease on {todo['id']} has expired; release it, "
                          f"or claim it again to go on (git loopx todo claim {todo['id']})",
                          f"git loopx todo release {todo['id']}", todo=todo["id"])
    for todo in ctx.mine():
        left = clock.parse_ts(todo["lease_expires"]) - ctx.now
        if left <= RENEW_WINDOW:
            yield _action("renew_lease", f"your lease on {todo['id']} ends in "
                          f"{clock.format_duration(left)}", f"git loopx todo renew {todo['id']}",
                          todo=todo["id"])


def _sessions(ctx: _Ctx) -> Iterable[Action]:
    """The owner of an open session reads its inbox; anyone else answers one awaiting input
    (never its owner: it is the one waiting)."""
    host = ctx.env.get("host")
    for session in ctx.snap.get("sessions", []):
        owner = session.get("owner")
        if owner == ctx.actor and session.get("state") != "closed" and session.get("inbox"):
            yield _read_inbox(session)
        if session.get("state") != "awaiting_input" or owner == ctx.actor:
            continue
        reason = f"session {session['id']} ({session.get('task') or 'no task'}) is waiting for your instruction"
        where = (session.get("workspace") or {}).get("host")
        if where and host and where != host:
            reason += f"; it runs on {where}, not here, and cannot be re-attached from this host"
        if owner:
            reason += f" (it belongs to {owner})"
        yield _action("session_waiting", reason,
                      f"git loopx session send {session['id']} MESSAGE", session=session["id"],
                      todo=session.get("todo"), goal=session.get("goal"))


def _read_inbox(session: dict[str, Any]) -> Action:
    inbox = session["inbox"]
    kinds = {m.get("kind") for m in inbox}
    what = "corrections" if kinds == {"correction"} else (
        "follow-ups" if kinds == {"follow_up"} else "messages")
    count = plural.counted(len(inbox), what[:-1], what)
    latest = inbox[-1]
    return _action("read_inbox", f"your session {session['id']} "
                   f"({session.get('task') or 'no task'}) has {count} unread (the latest from "
                   f"{latest.get('from')}): read them before you go on",
                   f"git loopx session inbox {session['id']} --ack", session=session["id"],
                   todo=session.get("todo"), goal=session.get("goal"))


def _gates(ctx: _Ctx) -> Iterable[Action]:
    for gate in ctx.gates.values():
        if gate["state"] == "answered" and gate.get("decision") == "reject":
            yield from _rejected(ctx, gate)
        if gate["state"] == "conflicted" and ctx.live_goal(gate["goal"]):
            yield _conflicted(ctx, gate)
        if gate["state"] != "open" or not ctx.live_goal(gate["goal"]):
            continue
        asks = ", ".join(gate["authority"])
        if ctx.actor in ctx.authority(gate):
            yield _action("answer_gate", f"gate {gate['id']} asks you: {gate['question']}",
                          f"git loopx gate answer {gate['id']} --approve  # or --reject, --answer TEXT",
                          gate=gate["id"], goal=gate["goal"])
        else:
            blocked = [t for t in ctx.todos.values() if gate["id"] in t.get("gates", [])
                       and t["state"] in ("open", "blocked")]
            what = (f"{', '.join(t['id'] for t in blocked)} wait{'s' if len(blocked) == 1 else ''}"
                    if blocked else "waiting")
            yield _action("wait_gate", f"{what} for gate {gate['id']}: {gate['question']} "
                          f"(must be answered by {asks})", f"git loopx gate show {gate['id']}",
                          gate=gate["id"], goal=gate["goal"])


def _conflicted(ctx: _Ctx, gate: dict[str, Any]) -> Action:
    """Decisions that did not see each other: neither wins; the authority decides again."""
    said = ", ".join(f"{d.get('decision') or 'withdraw'} by {d['actor']} [{d['event']}]"
                     for d in gate.get("conflict", []))
    if ctx.actor in ctx.authority(gate):
        return _action("answer_gate", f"gate {gate['id']} has decisions that did not see each "
                       f"other ({said}): {gate['question']}; decide again",
                       f"git loopx gate answer {gate['id']} --supersede --approve  # or --reject",
                       gate=gate["id"], goal=gate["goal"])
    return _action("wait_gate", f"gate {gate['id']} has decisions that did not see each other "
                   f"({said}); {', '.join(gate['authority'])} must decide again",
                   f"git loopx gate show {gate['id']}", gate=gate["id"], goal=gate["goal"])


def _rejected(ctx: _Ctx, gate: dict[str, Any]) -> Iterable[Action]:
    """A "no" stands: the todos it blocks will never be ready. Re-plan them: cancel, or ask
    a new question (a new gate) for a changed plan. Never a way around the answer."""
    for todo in ctx.todos.values():
        if gate["id"] in todo.get("gates", []) and todo["state"] in ("open", "blocked"):
            yield _action(
                "replan", f"gate {gate['id']} was rejected by {gate.get('answered_by')} "
                f"({gate.get('comment') or gate['question']}): {todo['id']} cannot go ahead; "
                "cancel it or re-plan with a new gate", f"git loopx todo cancel {todo['id']} "
                f"--reason 'gate {gate['id']} rejected'", todo=todo["id"], gate=gate["id"])


def _hooks(ctx: _Ctx) -> Iterable[Action]:
    aside = (ctx.env.get("hooks") or {}).get("set_aside") or []
    if aside:
        count = plural.counted(len(aside), "queued hook entry", "queued hook entries")
        yield _action("repair", f"{count} could not be applied and {_are(len(aside))} set aside "
                      f"({aside[0]['reason']}); fix the cause, then `git loopx hooks drain "
                      "--retry`", "git loopx hooks queue")


def _sync(ctx: _Ctx) -> Iterable[Action]:
    state = ctx.env.get("state") or {}
    if state.get("quarantined"):
        yield _action("repair", f"{state.get('remote', 'origin')}'s loopx/state failed the incoming "
                      f"check and is quarantined as {state['quarantined']}; sync refuses it (local "
                      "state is intact) until the remote is fixed", "git loopx doctor")
    if state.get("unmerged"):
        yield _action("sync", f"{plural.counted(state['unmerged'], 'fetched event')} "
                      f"{_are(state['unmerged'])} not merged into {state['ref']} yet",
                      "git loopx sync")
    if state.get("unpushed"):
        yield _action("sync", f"{plural.counted(state['unpushed'], 'event')} "
                      f"{_are(state['unpushed'])} not pushed to "
                      f"{state.get('remote', 'origin')} yet", "git loopx sync", order=1)


def _ci(ctx: _Ctx) -> Iterable[Action]:
    ci = ctx.env.get("ci") or {}
    head = (ctx.env.get("head") or "")[:12]
    if ci.get("state") == "pending":
        yield _action("wait_ci", f"CI is running for HEAD {head}", "git loopx status")
    elif ci.get("state") == "failure":
        failed = [c["name"] for c in ci.get("checks", []) if c.get("state") == "failure"]
        yield _action("fix_ci", f"CI failed for HEAD {head}: {', '.join(failed) or ci.get('detail')}",
                      None)


def _criteria(ctx: _Ctx) -> Iterable[Action]:
    for goal in ctx.goals.values():
        if goal["state"] != "active":
            continue
        idle = not _unfinished(ctx, goal)
        for crit in goal["acceptance"]:
            action = _criterion_action(goal, crit, idle)
            if action is not None:
                yield action
        if goal["acceptance"] and all(_state(c) == "fresh" and not c.get("ci")
                                      for c in goal["acceptance"]) and idle:
            yield _action("close_goal", f"every criterion of goal {goal['id']} is met by fresh "
                          "evidence", f"git loopx goal close {goal['id']} --achieved",
                          goal=goal["id"])
        elif not goal["acceptance"] and idle:
            done = [t["id"] for t in ctx.todos.values()
                    if t["goal"] == goal["id"] and t["state"] == "done"]
            if done:  # else `next` said "nothing left to do" (exit 20), the goal left open
                shown = ", ".join(done[:3]) + (", ..." if len(done) > 3 else "")
                yield _action("close_goal", f"goal {goal['id']} has no criteria and its work "
                              f"is done ({shown})", f"git loopx goal close {goal['id']} "
                              "--achieved", goal=goal["id"])


def _state(crit: dict[str, Any]) -> str:
    """fresh | stale | unknown | unmet (a snapshot decide() was not given annotated counts
    its criteria as recorded)."""
    return str(crit.get("freshness") or ("fresh" if crit.get("met") else "unmet"))


def _criterion_action(goal: dict[str, Any], crit: dict[str, Any],
                      idle: bool) -> Optional[Action]:
    """What a criterion asks for; ``idle``: no todo or gate of its goal is still open."""
    where = f"criterion {crit['id']} of goal {goal['id']}"
    rerun = f"git loopx rerun --criterion {goal['id']}:{crit['id']}"
    state, latest = _state(crit), crit.get("latest")
    if crit.get("ci"):
        checks = ", ".join(c["name"] for c in crit["ci"].get("checks", []))
        verdict = "passed" if crit["ci"]["verdict"] == "pass" else "failed"
        return _action("record_ci", f"CI ({checks}) {verdict} for HEAD: {where} is "
                       f"{'met' if verdict == 'passed' else 'not met'} by it; record the result "
                       "so every clone sees it", "git loopx ci record", goal=goal["id"])
    if state in ("stale", "unknown"):
        why = _listed(crit.get("changed") or [], "in its scope changed since") if (
            state == "stale") else (crit.get("why") or "it cannot be compared here")
        return _action("rerun_evidence", f"{where} is met only by {state} evidence "
                       f"{latest}: {why}; re-run it{_whole_tree(crit, state)}", rerun,
                       goal=goal["id"], evidence=latest)
    if state == "unmet" and crit.get("verdict") == "fail":
        why = crit.get("why") or f"{latest} failed"
        return _action("rerun_evidence", f"{where} is not met: {why}; fix it, then re-run",
                       rerun, goal=goal["id"], evidence=latest)
    if state == "unmet" and idle:
        # Nothing passed it and nothing of its goal is open: without this the goal stayed
        # open while `next` said there was nothing left to do (exit 20): an agent loop stops.
        return _action("plan_criterion", f"{where} is not met and nothing of its goal is open "
                       f"to meet it: record what shows it (git loopx run --goal {goal['id']} --criterion "
                       f"{crit['id']} -- COMMAND) or add work for it (git loopx todo add "
                       f"{goal['id']} TITLE --criterion {crit['id']})", None, goal=goal["id"])
    return None


def _whole_tree(crit: dict[str, Any], state: str) -> str:
    """For evidence judged on the whole tree, how to stop unrelated changes making it stale."""
    if state != "stale" or crit.get("scope", ["?"]):
        return ""
    return (" (it is judged on the whole tree, so any change makes it stale: scope it with "
            "run --paths GLOB, goal update --scope ID GLOB or config set --evidence-scope GLOB)")


def _are(count: int) -> str:
    return "is" if count == 1 else "are"


def _listed(files: list[str], what: str) -> str:
    shown = ", ".join(files[:3]) + (", ..." if len(files) > 3 else "")
    return f"{plural.counted(len(files), 'file')} {what} ({shown})"


def _unfinished(ctx: _Ctx, goal: dict[str, Any]) -> bool:
    """Todos still to do or gates still open: closing now would strand them."""
    return any(t["goal"] == goal["id"] and t["state"] in ("open", "claimed", "blocked")
               for t in ctx.todos.values()) or any(
        g["goal"] == goal["id"] and g["state"] == "open" for g in ctx.snap.get("gates", []))


def _wakes(ctx: _Ctx) -> Iterable[Action]:
    ci_state = (ctx.env.get("ci") or {}).get("state")
    for wake in ctx.snap.get("wakes", []):
        due = _wake_due(ctx, wake, ci_state)
        if due:
            yield _action("wake_due", f"wake {wake['id']} is due ({due})"
                          + (f": {wake['reason']}" if wake.get("reason") else ""),
                          # a recurring wake is re-armed (`ack`), a one-shot one cleared
                          f"git loopx wake {'ack' if wake.get('every') else 'clear'} {wake['id']}",
                          goal=wake.get("goal"), wake=wake["id"])


def _wake_due(ctx: _Ctx, wake: dict[str, Any], ci_state: Optional[str]) -> Optional[str]:
    if wake.get("at") and clock.parse_ts(wake["at"]) <= ctx.now:
        return f"it is past {wake['at']}"
    gate = ctx.gates.get(wake.get("on_gate") or "")
    if gate and gate["state"] != "open":
        return f"gate {gate['id']} is {gate['state']}"
    todo = ctx.todos.get(wake.get("on_todo") or "")
    if todo and todo["state"] in ("done", "cancelled"):
        return f"todo {todo['id']} is {todo['state']}"
    on_ci = wake.get("on_ci")
    if on_ci and on_ci in ("HEAD", ctx.env.get("head")) and ci_state in ("success", "failure"):
        return f"CI finished: {ci_state}"
    return None


def _work(ctx: _Ctx) -> Iterable[Action]:
    for todo in ctx.mine():
        if not ctx.quota_spent(todo["goal"]):
            yield _action("continue", f"you hold {todo['id']} ({todo['title']}) until "
                          f"{todo['lease_expires']}; carry on", f"git loopx todo show {todo['id']}",
                          todo=todo["id"], goal=todo["goal"])
    listed = 0
    for todo_id in ctx.offered():
        todo = ctx.todos[todo_id]
        if ctx.quota_spent(todo["goal"]) or listed >= MAX_WORK:
            continue
        lacks = _lacks(ctx, todo)
        if lacks:
            yield _action("wait_host", f"{todo_id} needs what this host lacks: {'; '.join(lacks)}",
                          f"git loopx todo show {todo_id}", todo=todo_id, goal=todo["goal"])
            continue
        listed += 1
        yours = " (assigned to you)" if ctx.actor and todo.get("assignee") == ctx.actor else ""
        yield _action("work", f"{todo_id} is ready: {todo['title']}{yours}",
                      f"git loopx todo claim {todo_id}", order=listed, todo=todo_id, goal=todo["goal"])


def _lacks(ctx: _Ctx, todo: dict[str, Any]) -> list[str]:
    """Why this host cannot work on ``todo`` (its needs unmet), when the host was probed."""
    caps = ctx.env.get("capabilities")
    if not todo.get("needs") or not caps:
        return []
    return needs.lacking(todo["needs"], caps.get("tools") or {})


def _others_leases(ctx: _Ctx) -> Iterable[Action]:
    for todo in ctx.todos.values():
        holder = todo.get("claimed_by")
        if holder and holder != ctx.actor and ctx.live_goal(todo["goal"]):
            yield _action("wait_lease", f"{todo['id']} is held by {holder} until "
                          f"{todo['lease_expires']}", f"git loopx todo show {todo['id']}",
                          todo=todo["id"], goal=todo["goal"])


_RULES: list[Callable[[_Ctx], Iterable[Action]]] = [
    _problems, _worktree, _quota, _effects, _replan, _leases, _sessions, _gates, _hooks, _sync,
    _ci, _criteria, _wakes, _work, _others_leases,
]
