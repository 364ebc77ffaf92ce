"""The ledger's history in state terms, for people reviewing it. Pure: no git, no I/O.

:func:`describe` says what one event does ("claimed t-3 until 14:05", "answered gate q-1:
approve — 'error_code is stable'"); :func:`diff` compares two snapshots of the projection
(goals, acceptance, todos, gates, evidence, leases, config, problems, the frontier).
``git loopx log`` and ``git loopx diff`` print these.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from loopx.model import clock, inert

if TYPE_CHECKING:  # describe() reads validated events and plain ones alike
    from loopx.model.events import Event
    from loopx.model.plain import PlainEvent

_QUOTE_MAX = 80


def _quote(text: Optional[str]) -> str:
    if not text:
        return ""
    line = " ".join(text.split())
    return "'" + inert.clip(line, _QUOTE_MAX) + "'"


def _with(text: str, note: Optional[str], sep: str = ": ") -> str:
    return f"{text}{sep}{_quote(note)}" if note else text


def _n(count: int, one: str, many: Optional[str] = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def _hhmm(ts: str) -> str:
    """``2026-11-29T14:05:00Z`` -> ``2026-11-29 14:05Z``: a lease's end at a glance."""
    return ts.replace("T", " ")[:16] + "Z"


def _config(d: Any) -> str:
    parts = []
    if d.roles is not None:
        parts.append("roles " + "; ".join(f"{r}={','.join(w)}" for r, w in sorted(d.roles.items())))
    if d.lease_ttl_seconds is not None:
        parts.append(f"lease ttl {d.lease_ttl_seconds}s")
    if d.session_slots is not None:
        parts.append(f"session slots {d.session_slots}")
    if d.session_idle_seconds is not None:
        parts.append(f"session idle {d.session_idle_seconds}s")
    if d.signed_answers is not None:
        rule = d.signed_answers
        parts.append("signed answers " + (", ".join(rule) if isinstance(rule, list) else rule))
    if d.allowed_signers is not None:
        keys = [
            ln for ln in d.allowed_signers.splitlines() if ln.strip() and not ln.startswith("#")
        ]
        parts.append(
            f"allowed signers ({_n(len(keys), 'key')}: "
            + ", ".join(sorted({ln.split()[0] for ln in keys}))
            + ")"
        )
    if d.evidence_ignore is not None:
        parts.append("evidence ignores " + (", ".join(d.evidence_ignore) or "nothing"))
    if d.evidence_scope is not None:
        parts.append("evidence is judged on " + (", ".join(d.evidence_scope) or "the whole tree")
                     + " by default")
    if d.ci_criteria is not None:
        parts.append("CI checks meet " + ("; ".join(
            f"{check} -> {', '.join(crits)}" for check, crits in sorted(d.ci_criteria.items()))
            or "no criteria"))
    return "set config: " + ", ".join(parts)


def _goal_created(d: Any) -> str:
    crit = f" with {_n(len(d.acceptance), 'criterion', 'criteria')}" if d.acceptance else ""
    return f"created goal {d.id}: {_quote(d.title)}{crit}"


def _goal_updated(d: Any) -> str:
    parts = [f"title {_quote(d.title)}"] if d.title else []
    parts += [f"criterion {c.id} {_quote(c.text)}" for c in d.add_acceptance]
    parts += [f"revised criterion {c.id} to {_quote(c.text)}" for c in d.revise or ()]
    parts += [f"retired criterion {c}" for c in d.retire or ()]
    parts += [f"criterion {c.id} judged on {', '.join(c.paths) or 'the whole tree'}"
              for c in d.scope or ()]
    parts += [f"state {d.state}"] if d.state else []
    parts += ["description"] if d.description is not None else []
    return f"updated goal {d.id}: " + ", ".join(parts)


def _goal_closed(d: Any) -> str:
    return _with(
        f"closed goal {d.id} as {d.outcome}" + (" (override)" if d.override else ""),
        d.reason,
        " — ",
    )


def _todo_added(d: Any) -> str:
    extra = [f"after {', '.join(d.depends_on)}"] if d.depends_on else []
    extra += [f"gates {', '.join(d.gates)}"] if d.gates else []
    extra += [f"for {', '.join(d.criteria)}"] if d.criteria else []
    extra += [f"priority {d.priority}"] if d.priority is not None else []
    extra += [f"found while doing {d.discovered_from}"] if d.discovered_from else []
    extra += [f"labels {', '.join(d.labels)}"] if d.labels else []
    tail = f" ({'; '.join(extra)})" if extra else ""
    return f"added todo {d.id} to {d.goal}: {_quote(d.title)}{tail}"


def _todo_updated(d: Any) -> str:
    parts = [f"title {_quote(d.title)}"] if d.title else []
    parts += [f"now waits for {', '.join(d.add_depends_on)}"] if d.add_depends_on else []
    parts += [f"now needs gates {', '.join(d.add_gates)}"] if d.add_gates else []
    parts += [f"priority {d.priority}"] if d.priority is not None else []
    parts += ["description"] if d.description is not None else []
    parts += [f"labelled {', '.join(d.add_labels)}"] if d.add_labels else []
    parts += [f"no longer labelled {', '.join(d.remove_labels)}"] if d.remove_labels else []
    return f"updated todo {d.id}: " + ", ".join(parts)


def _todo_done(d: Any) -> str:
    proof = f" with evidence {', '.join(d.evidence)}" if d.evidence else ""
    if d.reason:
        proof += f" without passing evidence, because {_quote(d.reason)}"
    return _with(f"finished todo {d.id}{proof}", d.summary, " — ")


def _gate_opened(d: Any) -> str:
    blocks = f", blocking {', '.join(d.blocks)}" if d.blocks else ""
    asks = ", ".join(d.authority)
    return f"opened gate {d.id} on {d.goal}: {_quote(d.question)} (asks {asks}{blocks})"


def _gate_answered(d: Any) -> str:
    text = f"answered gate {d.id}: {d.decision}"
    if d.answer:
        text += f" {_quote(d.answer)}"
    return _with(text + _replacing(d), d.comment, " — ")


def _replacing(d: Any) -> str:
    return f" (replacing {', '.join(d.supersedes)})" if d.supersedes else ""


def _evidence(d: Any) -> str:
    result = (
        ""
        if d.exit_code is None
        else (" passed" if d.exit_code == 0 else f" failed (exit {d.exit_code})")
    )
    where = f" at {d.commit[:12]}" if d.commit else ""
    for_ = [f"todo {d.todo}"] if d.todo else []
    for_ += [f"criteria {', '.join(d.criteria)}"] if d.criteria else []
    tail = f" for {', '.join(for_)}" if for_ else ""
    tail += f" (on {', '.join(d.paths)})" if d.paths else ""
    return _with(f"recorded {d.kind} evidence {d.id}{result}{where}{tail}", d.summary or d.command)


def _wake_set(d: Any) -> str:
    when = [f"at {_hhmm(d.at)}"] if d.at else []
    when += [f"on gate {d.on_gate}"] if d.on_gate else []
    when += [f"on CI for {d.on_ci}"] if d.on_ci else []
    when += [f"on todo {d.on_todo}"] if d.on_todo else []
    every = f" and every {_seconds(d.every)}" if d.every else ""
    return _with(f"set wake {d.id} {' or '.join(when)}{every}", d.reason)


def _seconds(seconds: int) -> str:
    return clock.format_duration(timedelta(seconds=seconds))


def _quota(verb: str) -> Callable[[Any], str]:
    def text(d: Any) -> str:
        parts = [f"{n} {getattr(d, n)}" for n in ("turns", "tokens", "cost") if getattr(d, n)]
        forced = f", past the budget: {_quote(d.reason)}" if getattr(d, "force", None) else ""
        turn = (f" (a turn of {d.host}, exit {d.exit})"
                if getattr(d, "host", None) else "")
        return f"{verb} quota: " + (", ".join(parts) or "nothing") + forced + turn

    return text


_DESCRIBE: dict[str, Callable[[Any], str]] = {
    "ledger.initialised": lambda d: (
        "initialised the ledger" + (f" {_quote(d.name)}" if d.name else "")
    ),
    "config.set": _config,
    "goal.created": _goal_created,
    "goal.updated": _goal_updated,
    "goal.closed": _goal_closed,
    "todo.added": _todo_added,
    "todo.updated": _todo_updated,
    "todo.claimed": lambda d: f"claimed {d.id} until {_hhmm(d.until)}",
    "todo.renewed": lambda d: f"renewed the lease on {d.id} until {_hhmm(d.until)}",
    "todo.assigned": lambda d: (f"assigned {d.id} to {d.to}" if d.to
                                else f"cleared the assignee of {d.id}"),
    "todo.handed_off": lambda d: _with(
        f"handed {d.id} on to {d.to}, leased until {_hhmm(d.until)}", d.note),
    "todo.released": lambda d: _with(f"released {d.id}", d.reason),
    "todo.done": _todo_done,
    "todo.acked": lambda d: f"acknowledged decision {', '.join(d.gates)} on todo {d.id}",
    "notice.dismissed": lambda d: (
        f"dismissed the notice about {_n(len(d.events), 'event')} not applied: {', '.join(d.events[:5])}"
    ),
    "todo.blocked": lambda d: _with(f"blocked todo {d.id}", d.reason),
    "todo.reopened": lambda d: _with(f"reopened todo {d.id}", d.reason),
    "todo.cancelled": lambda d: _with(f"cancelled todo {d.id}", d.reason),
    "gate.opened": _gate_opened,
    "gate.answered": _gate_answered,
    "gate.withdrawn": lambda d: _with(f"withdrew gate {d.id}{_replacing(d)}", d.reason),
    "evidence.recorded": _evidence,
    "evidence.remapped": lambda d: (
        f"remapped evidence for {_n(len(d.mappings), 'rewritten commit')}"
    ),
    "wake.set": _wake_set,
    "wake.cleared": lambda d: f"cleared wake {d.id}",
    "wake.fired": lambda d: f"acted on wake {d.id}; due again at {_hhmm(d.next)}",
    "quota.set": _quota("set"),
    "quota.spent": _quota("spent"),
    "effect.intended": lambda d: f"intends effect {d.id}: {d.action} on {d.target}",
    "effect.confirmed": lambda d: f"confirmed effect {d.id}: {d.receipt}",
    "effect.failed": lambda d: _with(
        f"effect {d.id} failed" + ("" if d.retryable else " (final)"), d.error
    ),
    "note.added": lambda d: f"noted {_quote(d.text)}" + (f" on {d.todo}" if d.todo else ""),
    "session.opened": lambda d: (
        f"opened session {d.id} on {d.workspace.host}: {_quote(d.task)}"
        + (f" for {d.todo}" if d.todo else "")
    ),
    "session.progress": lambda d: _with(f"session {d.id} progress", d.message),
    "session.responded": lambda d: _with(f"session {d.id} responded", d.response),
    "session.interjected": lambda d: _with(
        f"sent session {d.id} a {d.kind.replace('_', '-')}", d.message
    ),
    "session.checkpointed": lambda d: _with(
        f"checkpointed session {d.id} (#{d.number}, {d.transcript.bytes} bytes of transcript)",
        d.summary,
    ),
    "session.acked": lambda d: f"session {d.id} read {_n(len(d.interjections), 'interjection')}",
    "session.closed": lambda d: _with(f"closed session {d.id}: {d.reason}", d.note),
}


def describe(event: Union[Event, PlainEvent]) -> str:
    """One line saying what ``event`` does, in the ledger's terms (its text shown with
    :func:`loopx.model.inert.line`: it came from anywhere)."""
    if not event.known:
        return f"{event.type} (v{event.env.v}, a type this loopx does not know; kept)"
    if event.type not in _DESCRIBE:  # a type added without a description yet
        return f"{event.type} {getattr(event.data, 'id', '') or ''}".rstrip()
    return inert.line(_DESCRIBE[event.type](event.data))


# --- diff of two snapshots -----------------------------------------------------------------------


def diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What changed between two ``projection.snapshot`` results taken at the same ``now``
    (goals, todos with their leases, gates, evidence, sessions, new problems, the frontier)."""
    changes: list[dict[str, Any]] = []
    for kind, compare in _TABLES:
        old = {row["id"]: row for row in before.get(kind, [])}
        new = {row["id"]: row for row in after.get(kind, [])}
        for key in [k for k in new if k not in old]:
            changes.append(_change(kind, key, "added", compare(None, new[key])))
        for key in [k for k in new if k in old]:
            text = compare(old[key], new[key])
            if text:
                changes.append(_change(kind, key, "changed", text))
        for key in [k for k in old if k not in new]:
            changes.append(_change(kind, key, "removed", f"{kind[:-1]} {key} is gone"))
    changes += _problems(before, after)
    return {
        "changes": changes,
        "frontier": {"before": before["frontier"], "after": after["frontier"]},
        "events": {"before": before["ledger"]["events"], "after": after["ledger"]["events"]},
    }


def _change(kind: str, key: str, what: str, text: str) -> dict[str, Any]:
    return {
        "kind": kind[:-1] if kind.endswith("s") else kind,
        "id": key,
        "change": what,
        "text": text,
    }


def _goal(old: Optional[dict[str, Any]], new: dict[str, Any]) -> str:
    met = [c["id"] for c in new["acceptance"] if c["met"]]
    if old is None:
        crit = ", ".join(c["id"] + ("*" if c["met"] else "") for c in new["acceptance"])
        return f"goal {new['id']} {_quote(new['title'])} [{new['state']}]" + (
            f" criteria {crit}" if crit else ""
        )
    parts = []
    if old["state"] != new["state"]:
        parts.append(
            f"{old['state']} -> {new['state']}"
            + (f" ({_quote(new['reason'])})" if new["reason"] else "")
        )
    if old["title"] != new["title"]:
        parts.append(f"title {_quote(new['title'])}")
    was = {c["id"]: c for c in old["acceptance"]}
    parts += [
        f"criterion {c['id']} added {_quote(c['text'])}"
        for c in new["acceptance"]
        if c["id"] not in was
    ]
    parts += [f"criterion {c} now met" for c in met if c in was and not was[c]["met"]]
    parts += [
        f"criterion {c['id']} no longer met"
        for c in new["acceptance"]
        if c["id"] in was and was[c["id"]]["met"] and not c["met"]
    ]
    parts += [
        f"criterion {c['id']} revised to {_quote(c['text'])}"
        for c in new["acceptance"]
        if c["id"] in was and was[c["id"]]["text"] != c["text"]
    ]
    retired = {c["id"] for c in old.get("retired", [])}
    parts += [f"criterion {c['id']} retired" for c in new.get("retired", [])
              if c["id"] not in retired]
    return "; ".join(parts)


def _todo(old: Optional[dict[str, Any]], new: dict[str, Any]) -> str:
    if old is None:
        return f"todo {new['id']} on {new['goal']} {_quote(new['title'])} [{new['state']}]"
    parts = []
    if old["state"] != new["state"]:
        parts.append(f"{old['state']} -> {new['state']}")
        if new["state"] == "done" and new.get("no_evidence_reason"):
            parts.append(f"without passing evidence: {_quote(new['no_evidence_reason'])}")
    if old["claimed_by"] != new["claimed_by"] or old["lease_expires"] != new["lease_expires"]:
        parts.append(f"lease {_lease(old)} -> {_lease(new)}")
    if old.get("priority") != new.get("priority"):
        parts.append(f"priority {old.get('priority')} -> {new.get('priority')}")
    for field in ("depends_on", "gates", "evidence"):
        added = [x for x in new[field] if x not in old[field]]
        if added:
            parts.append(f"{field.replace('_', ' ')} + {', '.join(added)}")
    if old["why_not_ready"] != new["why_not_ready"] and new["state"] == old["state"] == "open":
        parts.append(f"now {new['why_not_ready'] or 'ready'}")
    return "; ".join(parts)


def _lease(todo: dict[str, Any]) -> str:
    return (
        f"{todo['claimed_by']} until {_hhmm(todo['lease_expires'])}"
        if todo["claimed_by"]
        else "none"
    )


def _gate(old: Optional[dict[str, Any]], new: dict[str, Any]) -> str:
    if old is None:
        asks = ", ".join(new["authority"])
        text = f"gate {new['id']} {_quote(new['question'])} asks {asks} [{new['state']}]"
    elif old["state"] != new["state"]:
        text = f"{old['state']} -> {new['state']}"
    elif any(old[k] != new[k] for k in ("decision", "answer", "comment", "answered_by")):
        # Two diverged branches, each with its own answer: say which one this side holds.
        text = f"answered differently (was {old['decision']} by {old['answered_by']})"
    else:
        return ""
    if new["decision"]:
        text += f": {new['decision']} by {new['answered_by']}"
        text += f" {_quote(new['answer'])}" if new["answer"] else ""
        text += f" — {_quote(new['comment'])}" if new["comment"] else ""
    return text


def _evidence_row(old: Optional[dict[str, Any]], new: dict[str, Any]) -> str:
    if old is not None:
        return ""
    result = (
        ""
        if new["exit_code"] is None
        else (" passed" if new["exit_code"] == 0 else f" failed ({new['exit_code']})")
    )
    where = f" at {new['commit'][:12]}" if new["commit"] else ""
    return f"{new['kind']} evidence {new['id']}{result}{where}" + (
        f" for {new['todo']}" if new["todo"] else ""
    )


def _session(old: Optional[dict[str, Any]], new: dict[str, Any]) -> str:
    if old is None:
        return f"session {new['id']} of {new['owner']} {_quote(new['task'])} [{new['state']}]"
    parts = [f"{old['state']} -> {new['state']}"] if old["state"] != new["state"] else []
    if new["checkpoints"] != old["checkpoints"]:
        parts.append(f"checkpoints {old['checkpoints']} -> {new['checkpoints']}")
    if len(new["inbox"]) != len(old["inbox"]):
        parts.append(f"inbox {len(old['inbox'])} -> {len(new['inbox'])} messages")
    return "; ".join(parts)


def _problems(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    seen = {(p["event"], p["reason"]) for p in before["problems"]}
    return [
        _change(
            "problems",
            p["event"],
            "added",
            f"{p['type']} by {p['actor']} not applied: {p['reason']}",
        )
        for p in after["problems"]
        if (p["event"], p["reason"]) not in seen
    ]


_TABLES: list[tuple[str, Callable[[Optional[dict[str, Any]], dict[str, Any]], str]]] = [
    ("goals", _goal),
    ("todos", _todo),
    ("gates", _gate),
    ("evidence", _evidence_row),
    ("sessions", _session),
]


def config_changes(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """Config keys whose value differs (who may answer what is config: reviewers must see it)."""
    keys = sorted(set(before) | set(after))
    return [
        _change("config", k, "changed", f"{k}: {_short(before.get(k))} -> {_short(after.get(k))}")
        for k in keys
        if before.get(k) != after.get(k)
    ]


def _plain(value: Any) -> str:
    """A config value as a reviewer reads it: ``maintainer = human:a, human:b``, not a repr."""
    if value is None or value in ({}, []):
        return "none"
    if isinstance(value, dict):
        return "; ".join(f"{k} = {_plain(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain(v) for v in value)
    return str(value)


def _short(value: Any) -> str:
    text = _plain(value)
    text = " ".join(text.split())
    return inert.clip(text, 60)
