"""`git loopx evidence|ci ...`, `git loopx run -- CMD` and `git loopx rerun`: evidence bound
to code, recorded by hand, by running a command, by re-running what went stale or
failed, and CI results recorded as evidence."""

from __future__ import annotations


import sys

import click

from loopx.cli import render, terminal
from loopx.cli.app import App, declared, pass_app
from loopx.ops import catalog, evidence
from loopx.ops.declare import Values
from loopx.model import inert
from loopx.model.inert import line

# --- evidence -------------------------------------------------------------------------------


@click.group("evidence")
def evidence_() -> None:
    """Evidence bound to a commit and tree: tests, CI, reviews, receipts."""


@evidence_.command("add")
@declared(catalog.find("evidence add"))
def evidence_add(app: App, v: Values) -> None:
    event = app.call(catalog.find("evidence add"), v)
    app.emit_event(event, f"recorded {v.kind} evidence {event.data.id}")


@evidence_.command("list")
@declared(catalog.find("evidence list"))
def evidence_list(app: App, v: Values) -> None:
    items = app.call(catalog.find("evidence list"), v)
    app.emit(catalog.find("evidence list").document(items),
             lambda: render.page_text(items, lambda: _evidence_text(items), "no evidence"))


def _evidence_text(items: list[evidence.Evidence]) -> str:
    rows = [("ID", "KIND", "COMMIT", "RESULT", "NOW", "TODO", "SUMMARY")]
    rows += [(e.id, e.kind, _commit(e), _result(e), e.freshness or "-",
              e.todo or "-", e.summary or "") for e in items]
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[6]
                     for r in rows).rstrip()


def _commit(ev: evidence.Evidence) -> str:
    if not ev.commit:
        return "-"
    now = (ev.current_commit or ev.commit)[:10]
    return now if now == ev.commit[:10] else f"{now} (was {ev.commit[:10]})"


def _result(ev: evidence.Evidence) -> str:
    if ev.exit_code is None:
        return "-"
    return "passed" if ev.exit_code == 0 else f"failed ({ev.exit_code})"


@evidence_.command("show")
@declared(catalog.find("evidence show"))
def evidence_show(app: App, v: Values) -> None:
    found = app.call(catalog.find("evidence show"), v)
    app.emit(found, lambda: _evidence_show_text(found))


def _evidence_show_text(ev: evidence.EvidenceShown) -> str:
    judged = ev.judged
    lines = [f"evidence {ev.id} ({ev.kind}): {line(ev.summary or '-')}"]
    fields = [("result", _result(ev)), ("command", ev.command), ("ran in", ev.cwd),
              ("took", f"{ev.duration_s:.1f}s" if ev.duration_s is not None else None),
              ("goal", ev.goal), ("todo", ev.todo),
              ("criteria", ", ".join(ev.criteria) or None), ("check", ev.check),
              ("url", ev.url), ("by", f"{ev.actor} at {ev.at}"),
              ("commit", _commit(ev) if ev.commit else None),
              ("tree", (ev.tree or "")[:12] + (" (uncommitted changes included)"
                                               if ev.dirty else "") or None),
              ("scope", ", ".join(judged.paths) or "the whole tree"
               + (f" less {', '.join(judged.ignored)}" if judged.ignored else "")),
              ("now", judged.state + (f": {judged.reason}" if judged.reason else "")),
              ("changed", ", ".join(judged.changed[:10]) or None),
              ("digest", ev.digest)]
    lines += [f"  {name + ':':<9} {line(str(value))}" for name, value in fields if value]
    if ev.output_tail:
        lines += ["  output (last lines):", inert.indented(ev.output_tail.rstrip("\n"))]
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
    found = evidence.record_ci(app.ledger, actor=app.actor, offline=offline,
                                   dry_run=dry_run, now=app.now)
    data = {"commit": found.commit, "ci": found.ci, "planned": found.planned,
            "recorded": [e.to_dict() for e in found.events], "pending": found.pending}
    app.emit(data, lambda: _ci_text(found, dry_run))


def _ci_text(found: evidence.CiRecord, dry_run: bool) -> str:
    verb = "would record" if dry_run else "recorded"
    ids = [e.data.id for e in found.events] or ["-"] * len(found.planned)
    lines = [f"{verb} ci evidence {ev_id} for goal {p.goal} ({', '.join(p.criteria)}): "
             f"{p.check} {p.state}" + (f" {p.url}" if p.url else "")
             for ev_id, p in zip(ids, found.planned)]
    lines += [f"still running: {name}" for name in found.pending]
    if not found.planned:
        state = found.ci.state
        detail = f" ({found.ci.detail})" if found.ci.detail else ""
        lines.append(f"nothing new to record for {found.commit[:12]}: CI is {state}{detail}")
    return "\n".join(lines)


# Not ignore_unknown_options: an option `run` does not know, before the command, is a usage
# error (exit 2), not the first word of the command to run.
@click.command("run", context_settings={"allow_interspersed_args": False})
@declared(catalog.find("run"))
def run(app: App, v: Values) -> None:
    # -C PATH: run as if started there, like git (the call's cwd)
    result = app.call(catalog.find("run"), v)
    if result.event is None:
        # The command's own failure is the more important exit code to pass on.
        terminal.echo(f"error: evidence not recorded: {result.error}", err=True)
    elif app.json:
        app.emit_event(result.event, "")
    else:  # stderr: the command's stdout stays exactly its own
        terminal.echo(f"loopx: recorded {v.kind} evidence {result.event.data.id}: "
                      f"{result.event.data.summary}", err=True)
    sys.exit(result.outcome.exit_code)


@click.command("rerun")
@declared(catalog.find("rerun"))
def rerun(app: App, v: Values) -> None:
    plan = app.call(catalog.find("rerun"), v)
    if app.json:
        app.emit([item.to_dict() for item in plan])
    else:  # stderr: the commands' own output is on stdout
        for line in _rerun_lines(plan, v.dry_run) or ["loopx: nothing to re-run"]:
            terminal.echo(line, err=True)
    codes = [i.result.outcome.exit_code for i in plan if i.result and i.result.outcome.exit_code]
    sys.exit(codes[0] if codes else (1 if any(i.skipped for i in plan) else 0))


def _rerun_lines(plan: list[evidence.Rerun], dry_run: bool) -> list[str]:
    lines = []
    for item in plan:
        why = "; ".join(item.why)
        if item.skipped:
            lines.append(f"loopx: cannot re-run {', '.join(item.evidence)} ({why}): {item.skipped}")
        elif dry_run:
            where = f" (in {item.cwd})" if item.cwd else ""
            lines.append(f"loopx: would re-run `{item.command}`{where} for {why}")
        elif item.result and item.result.event:
            lines.append(f"loopx: re-ran {', '.join(item.evidence)} ({why}): recorded "
                         f"{item.result.event.data.id}: {item.result.event.data.summary}")
        elif item.result:
            lines.append(f"loopx: re-ran {', '.join(item.evidence)} but could not record it: "
                         f"{item.result.error}")
    return lines
