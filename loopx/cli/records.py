"""`git loopx evidence|wake|quota|effect|note ...`: the record-keeping commands."""

from __future__ import annotations

from typing import Any, Optional

import click

from loopx.cli.app import App, event_id_option, optional_duration, pass_app
from loopx.errors import NotFound
from loopx.model import plural
from loopx.ops import effects, evidence as evidence_ops, notes, notices, quotas, wakes

# --- evidence -------------------------------------------------------------------------------


@click.group()
def evidence() -> None:
    """Evidence bound to a commit and tree: tests, CI, reviews, receipts."""


@evidence.command("add")
@click.option("--kind", type=click.Choice(evidence_ops.KINDS), required=True)
@click.option("--todo", "todo_id", metavar="TODO", help="The todo it supports.")
@click.option("--goal", "goal_id", metavar="GOAL", help="The goal (implied by --todo).")
@click.option("--criterion", multiple=True, metavar="ID", help="Acceptance criterion it meets.")
@click.option("--commit", "rev", default=None, metavar="REV",
              help="Commit it vouches for (default HEAD, if any).")
@click.option("--command", help="The command that produced it.")
@click.option("--exit-code", type=int, help="That command's exit code (0 = passing).")
@click.option("--duration", "duration_s", type=float, help="Seconds it took.")
@click.option("--summary", help="One line on what it shows.")
@click.option("--url", help="Where to see it (CI run, review, receipt).")
@click.option("--digest", help="Digest of the output, e.g. sha256:...")
@click.option("--paths", "paths", multiple=True, metavar="GLOB",
              help="The paths it covers (repeatable, e.g. 'src/**'); changes elsewhere leave it "
              "fresh. Default: its criterion's paths, else the whole tree.")
@click.option("--check", metavar="NAME", help="The CI check it reports (kind ci).")
@click.option("--id", "ev_id", help="Id to use (default: a generated e-xxxxxx).")
@event_id_option
@pass_app
def evidence_add(app: App, kind: str, todo_id: Optional[str], goal_id: Optional[str],
                 criterion: tuple[str, ...], rev: Optional[str], command: Optional[str],
                 exit_code: Optional[int], duration_s: Optional[float], summary: Optional[str],
                 url: Optional[str], digest: Optional[str], paths: tuple[str, ...],
                 check: Optional[str], ev_id: Optional[str], event_id: Optional[str]) -> None:
    """Record evidence. It is bound to HEAD and the work tree as it is now (uncommitted changes
    and untracked files included), or to --commit's commit and tree."""
    try:
        bound = evidence_ops.binding(app.ledger, rev)
    except NotFound as exc:
        raise click.BadParameter(str(exc), param_hint="--commit") from None
    event = app.write(lambda txn: evidence_ops.add(
        txn, kind, bound=bound, todo=todo_id, goal=goal_id, criteria=criterion, command=command,
        exit_code=exit_code, duration_s=duration_s, summary=summary, url=url, digest=digest,
        paths=paths, check=check, id=ev_id, event_id=event_id))
    app.emit_event(event, f"recorded {kind} evidence {event.data.id}")


@evidence.command("list")
@click.option("--todo", "todo_id", metavar="TODO")
@click.option("--goal", "goal_id", metavar="GOAL")
@pass_app
def evidence_list(app: App, todo_id: Optional[str], goal_id: Optional[str]) -> None:
    """List evidence: the commit it points to now (after amends and rebases; the one it was
    recorded on in brackets when they differ), its result and how it stands now."""
    items = evidence_ops.listing(app.ledger, todo=todo_id, goal=goal_id, now=app.now)
    app.emit(items, lambda: _evidence_text(items))


def _evidence_text(items: list[dict[str, Any]]) -> str:
    if not items:
        return "no evidence"
    rows = [("ID", "KIND", "COMMIT", "RESULT", "NOW", "TODO", "SUMMARY")]
    rows += [(e["id"], e["kind"], _commit(e), _result(e), e["freshness"] or "-",
              e["todo"] or "-", e["summary"] or "") for e in items]
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[6]
                     for r in rows).rstrip()


def _commit(ev: dict[str, Any]) -> str:
    if not ev["commit"]:
        return "-"
    now = (ev.get("current_commit") or ev["commit"])[:10]
    return now if now == ev["commit"][:10] else f"{now} (was {ev['commit'][:10]})"


def _result(ev: dict[str, Any]) -> str:
    if ev["exit_code"] is None:
        return "-"
    return "passed" if ev["exit_code"] == 0 else f"failed ({ev['exit_code']})"


@evidence.command("show")
@click.argument("evidence_id", metavar="ID")
@pass_app
def evidence_show(app: App, evidence_id: str) -> None:
    """Show one piece of evidence: what ran, its result and output, the commit and tree it
    vouches for, and whether it is still fresh (and if not, which files changed)."""
    found = evidence_ops.show(app.ledger, evidence_id, now=app.now)
    app.emit(found, lambda: _evidence_show_text(found))


def _evidence_show_text(ev: dict[str, Any]) -> str:
    judged = ev["judged"]
    lines = [f"evidence {ev['id']} ({ev['kind']}): {ev['summary'] or '-'}"]
    fields = [("result", _result(ev)), ("command", ev["command"]), ("ran in", ev.get("cwd")),
              ("took", f"{ev['duration_s']:.1f}s" if ev.get("duration_s") is not None else None),
              ("goal", ev["goal"]), ("todo", ev["todo"]),
              ("criteria", ", ".join(ev["criteria"]) or None), ("check", ev["check"]),
              ("url", ev["url"]), ("by", f"{ev['actor']} at {ev['at']}"),
              ("commit", _commit(ev) if ev["commit"] else None),
              ("tree", (ev["tree"] or "")[:12] + (" (uncommitted changes included)"
                                                  if ev["dirty"] else "") or None),
              ("scope", ", ".join(judged["paths"]) or "the whole tree"
               + (f" less {', '.join(judged['ignored'])}" if judged["ignored"] else "")),
              ("now", judged["state"] + (f": {judged['reason']}" if judged["reason"] else "")),
              ("changed", ", ".join(judged["changed"][:10]) or None),
              ("digest", ev.get("digest"))]
    lines += [f"  {name + ':':<9} {value}" for name, value in fields if value]
    if ev.get("output_tail"):
        lines += ["  output (last lines):"] + [f"    {line}" for line in
                                                ev["output_tail"].splitlines()]
    return "\n".join(lines)


# --- CI ---------------------------------------------------------------------------------------


@click.group()
def ci() -> None:
    """CI results as evidence (checks mapped to criteria with `config set --ci-criterion`)."""


@ci.command("record")
@click.option("--dry-run", is_flag=True, help="Show what would be recorded; record nothing.")
@click.option("--offline", is_flag=True, help="Use no network (CI from its cache only).")
@pass_app
def ci_record(app: App, dry_run: bool, offline: bool) -> None:
    """Record the finished CI checks for HEAD that are mapped to criteria, as evidence of kind
    ci (with each check's URL), so every clone sees them without asking the provider."""
    found = evidence_ops.record_ci(app.ledger, actor=app.actor, offline=offline,
                                   dry_run=dry_run, now=app.now)
    data = {"commit": found.commit, "ci": found.ci, "planned": found.planned,
            "recorded": [e.to_dict() for e in found.events], "pending": found.pending}
    app.emit(data, lambda: _ci_text(found, dry_run))


def _ci_text(found: evidence_ops.CiRecord, dry_run: bool) -> str:
    verb = "would record" if dry_run else "recorded"
    ids = [e.data.id for e in found.events] or ["-"] * len(found.planned)
    lines = [f"{verb} ci evidence {ev_id} for goal {p['goal']} ({', '.join(p['criteria'])}): "
             f"{p['check']} {p['state']}" + (f" {p['url']}" if p.get("url") else "")
             for ev_id, p in zip(ids, found.planned)]
    lines += [f"still running: {name}" for name in found.pending]
    if not found.planned:
        state = found.ci.get("state")
        detail = f" ({found.ci['detail']})" if found.ci.get("detail") else ""
        lines.append(f"nothing new to record for {found.commit[:12]}: CI is {state}{detail}")
    return "\n".join(lines)


# --- wakes ----------------------------------------------------------------------------------


@click.group()
def wake() -> None:
    """Wake conditions: when to look again."""


@wake.command("set")
@click.option("--at", "at", metavar="TIME", help="An RFC 3339 time (UTC).")
@click.option("--in", "in_", metavar="DURATION", help="From now, e.g. 2h.")
@click.option("--on-gate", metavar="GATE", help="When this gate is answered.")
@click.option("--on-ci", metavar="REV", help="When CI finishes for this commit (a sha, HEAD, "
              "a branch: resolved to its full commit now).")
@click.option("--on-todo", metavar="TODO", help="When this todo is done.")
@click.option("--every", metavar="DURATION", help="Recur: due again this long after each time "
              "it is acted on (`wake ack`), e.g. 30m; first due --at/--in, else one DURATION "
              "from now.")
@click.option("--goal", "goal_id", metavar="GOAL")
@click.option("--reason")
@click.option("--id", "wake_id", help="Id to use (default: a generated w-xxxxxx).")
@event_id_option
@pass_app
def wake_set(app: App, at: Optional[str], in_: Optional[str], on_gate: Optional[str],
             on_ci: Optional[str], on_todo: Optional[str], every: Optional[str],
             goal_id: Optional[str], reason: Optional[str], wake_id: Optional[str],
             event_id: Optional[str]) -> None:
    """Set a wake condition (`wait` and `watch` act on it)."""
    after, seconds = optional_duration(in_), optional_duration(every)
    event = app.write(lambda txn: wakes.set_(txn, at=at, after=after, on_gate=on_gate,
                                             on_ci=on_ci, on_todo=on_todo, goal=goal_id,
                                             reason=reason, every=seconds, id=wake_id,
                                             event_id=event_id))
    app.emit_event(event, f"set wake {event.data.id}"
                   + (f" at {event.data.at}" if event.data.at else "")
                   + (f" on CI for {event.data.on_ci[:12]}" if event.data.on_ci else ""))


@wake.command("clear")
@click.argument("wake_id")
@event_id_option
@pass_app
def wake_clear(app: App, wake_id: str, event_id: Optional[str]) -> None:
    """Clear a wake condition."""
    event = app.write(lambda txn: wakes.clear(txn, wake_id, event_id=event_id))
    app.emit_event(event, f"cleared wake {event.data.id}")


@wake.command("ack")
@click.argument("wake_id")
@event_id_option
@pass_app
def wake_ack(app: App, wake_id: str, event_id: Optional[str]) -> None:
    """Say a due wake was acted on: a one-shot wake is cleared, a recurring one re-armed."""
    event = app.write(lambda txn: wakes.ack(txn, wake_id, event_id=event_id))
    next_at = getattr(event.data, "next", None)
    app.emit_event(event, f"wake {event.data.id} due again at {next_at}" if next_at
                   else f"cleared wake {event.data.id}")


@wake.command("list")
@pass_app
def wake_list(app: App) -> None:
    """List wake conditions."""
    found = wakes.listing(app.ledger, now=app.now)
    app.emit(found, lambda: "\n".join(
        f"{w['id']:<12} " + ", ".join(f"{k}={w[k]}" for k in ("at", "on_gate", "on_ci", "on_todo",
                                                             "every") if w[k])
        + (f"  ({w['reason']})" if w["reason"] else "") for w in found) or "no wakes")


# --- quota ----------------------------------------------------------------------------------


@click.group()
def quota() -> None:
    """Budgets of turns, tokens and cost (ledger-wide or per goal)."""


@quota.command("set")
@click.option("--goal", "goal_id", metavar="GOAL", help="Per goal (default: ledger-wide).")
@click.option("--turns", type=click.IntRange(min=0))
@click.option("--tokens", type=click.IntRange(min=0))
@click.option("--cost", type=click.FloatRange(min=0))
@event_id_option
@pass_app
def quota_set(app: App, goal_id: Optional[str], turns: Optional[int], tokens: Optional[int],
              cost: Optional[float], event_id: Optional[str]) -> None:
    """Set a budget."""
    if turns is None and tokens is None and cost is None:
        raise click.UsageError("give at least one of --turns, --tokens, --cost")
    event = app.write(lambda txn: quotas.set_(txn, goal=goal_id, turns=turns, tokens=tokens,
                                              cost=cost, event_id=event_id))
    app.emit_event(event, f"set quota for {event.env.goal or 'the ledger'}")


@quota.command("spend")
@click.option("--goal", "goal_id", metavar="GOAL")
@click.option("--todo", "todo_id", metavar="TODO")
@click.option("--turns", type=click.IntRange(min=0), default=0)
@click.option("--tokens", type=click.IntRange(min=0), default=0)
@click.option("--cost", type=click.FloatRange(min=0), default=0.0)
@click.option("--force", is_flag=True, help="Record it although it goes past the budget.")
@click.option("--reason", help="Why it went past the budget (needed with --force).")
@event_id_option
@pass_app
def quota_spend(app: App, goal_id: Optional[str], todo_id: Optional[str], turns: int, tokens: int,
                cost: float, force: bool, reason: Optional[str], event_id: Optional[str]) -> None:
    """Record what was spent (after the work); past the budget only with --force --reason."""
    event = app.write(lambda txn: quotas.spend(txn, goal=goal_id, todo=todo_id, turns=turns,
                                               tokens=tokens, cost=cost, force=force,
                                               reason=reason, event_id=event_id))
    app.emit_event(event, f"spent {turns} turns, {tokens} tokens, {cost} cost")


@quota.command("show")
@pass_app
def quota_show(app: App) -> None:
    """Budgets, spending and what is left."""
    found = quotas.show(app.ledger, now=app.now)
    app.emit(found, lambda: _quota_text(found))


def _quota_text(found: dict[str, Any]) -> str:
    lines = []
    for scope, q in found.items():
        parts = [f"{k} {q['spent'][k]}/{q[k] if q[k] is not None else '-'}"
                 for k in ("turns", "tokens", "cost")]
        lines.append(f"{scope:<12} {'  '.join(parts)}{'  EXHAUSTED' if q['exhausted'] else ''}")
    return "\n".join(lines) or "no quota set"


# --- effects --------------------------------------------------------------------------------


@click.group()
def effect() -> None:
    """External writes: intend before the call, confirm or fail after."""


@effect.command("intend")
@click.argument("target")
@click.option("--action", required=True, help="What will be done, e.g. open-pr.")
@click.option("--key", "key", help="Idempotency key (default: the effect id).")
@click.option("--todo", "todo_id", metavar="TODO")
@click.option("--goal", "goal_id", metavar="GOAL")
@click.option("--id", "effect_id", help="Id to use (default: a generated x-xxxxxx).")
@event_id_option
@pass_app
def effect_intend(app: App, target: str, action: str, key: Optional[str], todo_id: Optional[str],
                  goal_id: Optional[str], effect_id: Optional[str], event_id: Optional[str]) -> None:
    """Record the intent to write to TARGET, before making the call."""
    event = app.write(lambda txn: effects.intend(txn, target, action=action, key=key, todo=todo_id,
                                                 goal=goal_id, id=effect_id, event_id=event_id))
    app.emit_event(event, f"intend {action} on {target} as effect {event.data.id}")


@effect.command("confirm")
@click.argument("effect_id")
@click.option("--receipt", required=True, help="Proof it happened, e.g. the URL created.")
@event_id_option
@pass_app
def effect_confirm(app: App, effect_id: str, receipt: str, event_id: Optional[str]) -> None:
    """Record that an intended effect happened."""
    event = app.write(lambda txn: effects.confirm(txn, effect_id, receipt=receipt,
                                                  event_id=event_id))
    app.emit_event(event, f"confirmed effect {event.data.id}")


@effect.command("fail")
@click.argument("effect_id")
@click.option("--error", required=True, help="What went wrong.")
@click.option("--final", is_flag=True, help="Not worth retrying.")
@event_id_option
@pass_app
def effect_fail(app: App, effect_id: str, error: str, final: bool, event_id: Optional[str]) -> None:
    """Record that an intended effect did not happen."""
    event = app.write(lambda txn: effects.fail(txn, effect_id, error=error, final=final,
                                               event_id=event_id))
    app.emit_event(event, f"effect {event.data.id} failed")


@effect.command("list")
@pass_app
def effect_list(app: App) -> None:
    """List effects; indeterminate ones must be read back before any retry."""
    found = effects.listing(app.ledger, now=app.now)
    app.emit(found, lambda: "\n".join(
        f"{e['id']:<12} {e['state']:<13} {e['action']} {e['target']}" for e in found)
        or "no effects")


# --- notes ----------------------------------------------------------------------------------


@click.group()
def note() -> None:
    """Free-form notes in the ledger."""


@note.command("add")
@click.argument("text")
@click.option("--todo", "todo_id", metavar="TODO")
@click.option("--goal", "goal_id", metavar="GOAL")
@event_id_option
@pass_app
def note_add(app: App, text: str, todo_id: Optional[str], goal_id: Optional[str],
             event_id: Optional[str]) -> None:
    """Add a note."""
    event = app.write(lambda txn: notes.add(txn, text, todo=todo_id, goal=goal_id,
                                            event_id=event_id))
    app.emit_event(event, f"noted {event.data.id}")


@note.command("list")
@click.option("--todo", "todo_id", metavar="TODO", help="Only the notes on this todo.")
@click.option("--goal", "goal_id", metavar="GOAL", help="Only the notes on this goal.")
@pass_app
def note_list(app: App, todo_id: Optional[str], goal_id: Optional[str]) -> None:
    """List notes, oldest first."""
    found = notes.listing(app.ledger, todo=todo_id, goal=goal_id)
    app.emit(found, lambda: "\n".join(
        f"{n['id']:<12} {n['at']}  {n['actor']}" + (f"  (on {n['todo'] or n['goal']})"
                                                   if n["todo"] or n["goal"] else "")
        + f"\n    {n['text']}" for n in found) or "no notes")




# --- notices --------------------------------------------------------------------------------


@click.group()
def notice() -> None:
    """Your events that were not applied (a claim that lost a race); dismiss them once read."""


@notice.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include dismissed notices.")
@pass_app
def notice_list(app: App, show_all: bool) -> None:
    """Your events that were not applied, and why (dismissed ones with --all)."""
    found = notices.listing(app.ledger, actor=app.actor, include_dismissed=show_all)
    app.emit(found, lambda: "\n".join(
        f"{n['event']}  {n['type']:<16} {n['reason']}" + ("  (dismissed)" if n["dismissed"] else "")
        for n in found) or "no notices")


@notice.command("dismiss")
@click.argument("events", nargs=-1, metavar="EVENT...")
@click.option("--all", "every", is_flag=True, help="Dismiss all your notices still showing.")
@event_id_option
@pass_app
def notice_dismiss(app: App, events: tuple[str, ...], every: bool, event_id: Optional[str]) -> None:
    """Dismiss notices (by the id, or a unique prefix, of the event that was not applied): they
    leave `status` and `next`. The events stay in the ledger, listed under problems."""
    if events and every:
        raise click.UsageError("give EVENT ids or --all, not both")
    event = app.write(lambda txn: notices.dismiss(txn, events, every=every, event_id=event_id))
    app.emit_event(event, f"dismissed {plural.counted(len(event.data.events), 'notice')}")
