"""The root command group: every command of the click tree is a declared operation (its options,
MCP tool and batch line derived from :mod:`loopx.ops.declare`) or named in ``CLI_ONLY`` with
the reason it is the command line's own."""

from __future__ import annotations

from collections.abc import Iterator

import click

from loopx.cli import root
from loopx.ops import catalog


def _commands(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[str]:
    """Every command under ``command`` that runs (groups only hold them), hidden ones too."""
    if not isinstance(command, click.Group):
        yield " ".join(path)
        return
    ctx = click.Context(command)
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        assert sub is not None, name
        yield from _commands(sub, (*path, name))


def test_every_command_is_declared_or_cli_only_with_a_reason() -> None:
    commands = set(_commands(root.cli))
    declared = {op.name for op in catalog.operations()}
    assert sorted(commands - declared - set(root.CLI_ONLY)) == [], "declare it, or say why not"
    assert sorted(set(root.CLI_ONLY) - commands) == [], "no such command any more"
    assert sorted(set(root.CLI_ONLY) & declared) == [], "declared now: drop it from CLI_ONLY"
    assert sorted(declared - commands) == [], "a declared operation without its command"
    assert all(len(why) > 20 for why in root.CLI_ONLY.values())


def test_the_walk_finds_hidden_commands_and_commands_in_groups() -> None:
    commands = set(_commands(root.cli))
    assert {"hook", "ci record", "schema check", "todo add"} <= commands  # `hook` is hidden
    assert "todo" not in commands and "" not in commands

