"""`git loopx setup TOOL`: write an agent tool's MCP entry (and its session-start hook, where
it has one) into the tool's own project files; `--check` says what is missing, `--remove`
takes out what loopx wrote. The meaning is in :mod:`loopx.agents.setup`."""

from __future__ import annotations

from typing import Any, Optional

import click

from loopx.cli.app import App, pass_app
from loopx.errors import UsageError
from loopx.agents import setup


@click.command("setup")
@click.argument("tool", type=click.Choice(sorted(setup.TOOLS)), metavar="TOOL")
@click.option("--actor", "as_actor", metavar="WHO",
              help="The identity the tool's server and hook act as (default: the one already "
              "set up, else the global --actor or $LOOPX_ACTOR, else agent:<tool>@<host>).")
@click.option("--check", is_flag=True,
              help="Change nothing; exit 1 naming each entry that is missing or out of date.")
@click.option("--remove", is_flag=True, help="Take out what setup wrote; keep everything else.")
@pass_app
def setup_(app: App, tool: str, as_actor: Optional[str], check: bool, remove: bool) -> None:
    """Set up TOOL (claude, codex, cursor, gemini, vscode) to use loopx in this repository.

    Writes the tool's project file: the MCP server `loopx` (`git loopx --actor WHO mcp`) in
    .mcp.json, .codex/config.toml, .cursor/mcp.json, .gemini/settings.json or .vscode/mcp.json,
    and for Claude Code, Codex CLI and Gemini CLI a session-start hook that injects `git loopx
    prime` (also after compaction, where the tool runs one then). Existing files are merged:
    only loopx's entry changes. Running it again changes nothing.
    """
    if check and remove:
        raise UsageError("--check and --remove do not go together")
    plan = setup.plan(tool, cwd=app.cwd, actor=as_actor, fallback=app.named_actor,
                        remove=remove)
    if check:
        _report_check(app, tool, plan)
        return
    setup.write(plan)
    files = [_file(change, remove) for change in plan.files]
    app.emit({"tool": tool, "actor": plan.actor, "removed": remove, "files": files,
              "changed": any(change.changed for change in plan.files),
              "notes": [] if remove else list(plan.tool.notes)},
             lambda: "\n".join(_lines(plan, files, remove)))


def _file(change: setup.FileChange, remove: bool) -> dict[str, Any]:
    if not change.changed:
        action = "unchanged"
    elif change.before is None:
        action = "created"
    elif change.after is None:
        action = "deleted"
    else:
        action = "updated"
    return {"path": change.shown, "action": action, "entries": list(change.parts)}


def _lines(plan: setup.Plan, files: list[dict[str, Any]], remove: bool) -> list[str]:
    lines = [f"{f['action']} {f['path']} ({', '.join(f['entries'])})" for f in files]
    changed = any(f["action"] != "unchanged" for f in files)
    title = plan.tool.title
    if remove:
        lines.append(f"{title}: loopx's entries removed" if changed
                     else f"{title}: nothing of loopx's to remove")
    else:
        lines.append(f"{title}: set up as {plan.actor}" if changed
                     else f"{title}: already set up as {plan.actor}; nothing changed")
        lines += [f"note: {note}" for note in plan.tool.notes]
    return lines


def _report_check(app: App, tool: str, plan: setup.Plan) -> None:
    title = plan.tool.title
    app.emit({"tool": tool, "actor": plan.actor, "ok": not plan.missing,
              "missing": list(plan.missing)},
             lambda: "\n".join([*plan.missing, f"{title}: run `git loopx setup {tool}` to write "
                                "them" if plan.missing else f"{title}: set up as {plan.actor}"]))
    if plan.missing:
        raise click.exceptions.Exit(1)
