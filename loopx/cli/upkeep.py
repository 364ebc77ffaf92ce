"""`git loopx doctor|checkpoint|schema`: keeping a ledger healthy, and its generated schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

from loopx.cli import render
from loopx.cli.app import App, pass_app
from loopx.model import plural
from loopx.ops import upkeep
from loopx.ops import ledgers


@click.command("doctor")
@click.option("--repair", is_flag=True,
              help="Make loopx/state whole again, keeping every event still at hand (fetched "
              "back from the remotes, else a new commit of every readable event file).")
@click.option("--rollback", is_flag=True,
              help="Move loopx/state back to its newest healthy reflog entry (lists what it drops).")
@click.option("--verify", is_flag=True,
              help="Also replay every event and compare the cache and the checkpoints with it.")
@pass_app
def doctor(app: App, repair: bool, rollback: bool, verify: bool) -> None:
    """Check the state branch: objects (naming every event lost or deleted), files, reflog,
    locks, quarantines."""
    if repair and rollback:
        raise click.UsageError("--repair and --rollback are two ways on: choose one")
    result = upkeep.examine(app.cwd, ref=app.state_ref, rollback=rollback, repair=repair,
                            verify=verify, now=app.now)
    app.emit(result, lambda: _doctor_text(result))
    final = result.final
    if not final.ok:
        # The report above is the answer (a JSON reader has it whole); exit 1 says "unhealthy".
        hint = "" if rollback or repair else " (`git loopx doctor --repair` keeps every event it can)"
        click.echo(f"error: {final.ref} has {plural.counted(len(final.problems), 'problem')}; "
                   "see above" + hint, err=True)
        raise click.exceptions.Exit(1)


def _repair_text(done: upkeep.Repair) -> list[str]:
    if isinstance(done, upkeep.NotRepaired):
        return [done.reason]
    if isinstance(done, upkeep.Refetched):
        return [f"restored the missing objects from {', '.join(done.from_)}: nothing is lost"]
    lines = [f"repaired {render.short_oid(done.from_)} -> {render.short_oid(done.to)} on "
             f"{render.short_oid(done.base)}: {len(done.put_back)} file(s) put back"]
    lines += [f"  lost: event {e.id} ({e.type}), {e.path}" for e in done.lost]
    lines += [f"  lost: {what} (not listed anywhere at hand)" for what in done.unknown]
    if not done.lost and not done.unknown:
        lines.append("  nothing is lost")
    return lines


def _doctor_text(result: upkeep.Examined) -> str:
    health = result.health
    lines = [f"{health.ref} at {render.short_oid(health.tip)}: "
             + ("healthy" if health.ok else plural.counted(len(health.problems), 'problem'))]
    whole = "git loopx doctor --json lists them all"
    lines += render.capped([f"  problem: {p}" for p in health.problems], whole, 30)
    lines += render.capped([f"  warning: {w}" for w in health.warnings], whole)
    lines.append(f"  reflog: {plural.counted(health.reflog_entries, 'entry', 'entries')}")
    if result.verify is not None:
        lines.append(f"  verified against a replay of the events: {', '.join(result.verify.checked)}")
    for lock in health.locks:
        lines.append(f"  lock: {lock.lock}" + (f" (pid {lock.pid})" if lock.pid is not None else
                                               f" ({lock.age_seconds}s old)"))
    lines += render.capped([f"  quarantined: {q.ref} -> {render.short_oid(q.tip)} (report "
                            f"{q.report})" for q in reversed(health.quarantines)], whole, 5)
    lines += render.capped([f"  leftover proposal: {ref}" for ref in health.proposals], whole)
    for done in (result.repair, result.rollback):
        restored = getattr(done, "ref_restored", None)
        if restored is not None:
            lines.append(f"restored {health.ref} to {render.short_oid(restored.to)} from its reflog "
                         f"({restored.damage}); kept: {', '.join(restored.kept) or 'nothing'}")
    if result.repair is not None:
        lines += _repair_text(result.repair)
    rb = result.rollback
    if isinstance(rb, upkeep.NotRolledBack):
        lines.append(rb.reason)
    elif rb is not None:
        lines.append(f"rolled back {render.short_oid(rb.from_)} -> {render.short_oid(rb.to)}, dropping "
                     f"{plural.counted(len(rb.dropped), 'event file')}:")
        lines += render.capped([f"  {path}" for path in rb.dropped], whole)
    return "\n".join(lines)


@click.command("checkpoint")
@pass_app
def checkpoint(app: App) -> None:
    """Commit a checkpoint of the projection, signed with your key, so fresh clones start from
    it (writes and sync make one on their own at 2,000 events, then every fifth more, at most
    every 10,000, when they can sign it).

    A clone adopts only a checkpoint signed by a key in the ledger's allowed_signers (`git
    loopx signer add`); with no signing key configured (git's user.signingkey, gpg.format
    ssh), or one the ledger does not list, nothing is committed and the command fails (exit
    1) saying what to set: fresh clones then replay the events, slower and as correct."""
    made = upkeep.checkpoint(app.ledger, actor=app.actor)
    app.emit({"checkpoint": made}, f"checkpoint of {made[:12]} committed" if made
             else "the tip has a checkpoint already")


@click.group()
def schema() -> None:
    """The JSON Schemas in .loopx-schema/ (generated from the event model)."""


def _project_root(root: Optional[str]) -> Path:
    if root:
        return Path(root)
    return ledgers.work_tree(".") or Path(".")


@schema.command("export")
@click.option("--root", type=click.Path(file_okay=False), help="Where .loopx-schema/ goes.")
@pass_app
def schema_export(app: App, root: Optional[str]) -> None:
    """Write the schema files."""
    written = upkeep.export_schemas(_project_root(root))
    app.emit(written, lambda: "\n".join(f"wrote {p}" for p in written) or "schemas up to date")


@schema.command("check")
@click.option("--root", type=click.Path(file_okay=False), help="Where .loopx-schema/ is.")
@pass_app
def schema_check(app: App, root: Optional[str]) -> None:
    """Fail when the checked-in schema files differ from the model (a check for loopx's own
    sources, and for projects that keep an exported copy)."""
    problems = upkeep.stale_schemas(_project_root(root))
    app.emit({"ok": not problems, "problems": problems},
             lambda: "\n".join(problems) if problems else "schemas up to date")
    if problems:
        raise click.exceptions.Exit(1)
