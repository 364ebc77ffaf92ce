"""`batch`: lines of write commands applied in one commit, all or nothing. Each line is a
command's words as on the command line (``["todo", "add", "g-1", "Write tests"]``), parsed
against the operation's declaration (:mod:`loopx.ops.declare`), the same one the CLI's options
and the MCP tools are derived from; later lines see what earlier lines created.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Optional, Union

from loopx.errors import ArgumentError, LoopxError, UsageError
from loopx.ledger.book import Ledger
from loopx.model import limits
from loopx.ops import catalog, declare

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn

# Commands that run for as long as they like, or make a ledger: never one line of a commit.
NEVER = ("batch", "demo", "init", "mcp", "wait", "watch")


# A JSON value: what one line answers (its operation's document, the same an MCP call of it
# answers).
Json = Union[None, bool, int, float, str, list["Json"], dict[str, "Json"]]
# One checked argument of an operation, by the kinds of loopx.ops.declare.Param: a value, a
# duration in seconds, repeated values, the words of a command, pairs, command lines, an
# environment (tests/ops/test_batch.py checks that every declared parameter fits).
Argument = Union[None, bool, int, float, str, list[str], list[int], list[tuple[str, str]],
                 list[list[str]], dict[str, str]]


@dataclass(frozen=True)
class Line:
    """One parsed line: its number, its words, the operation it names (``catalog.find``
    looks it up) and its checked arguments."""

    number: int
    words: tuple[str, ...]
    command: str
    arguments: dict[str, Argument]


@dataclass(frozen=True)
class LineResult:
    """What one line of an applied batch answers: its operation's document."""

    number: int
    command: str
    answer: Json


def read(text: str) -> list[list[str]]:
    """The command lines of ``text``: one JSON array of strings a line (or an object with
    ``argv``); blank lines skipped."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"line {n}: not JSON ({exc.msg})") from None
        if isinstance(value, dict):
            value = value.get("argv")
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise UsageError(f'line {n}: expected a JSON array of strings, e.g. ["note", "add", '
                             '"hi"]')
        found.append(value)
    return found


def parse(lines: Sequence[Sequence[str]]) -> list[Line]:
    """Each line's operation and arguments; a UsageError names the first line that is not a
    write command it can honour."""
    if not lines:
        raise UsageError("nothing to apply: stdin held no command lines")
    return [_line(n, list(words)) for n, words in enumerate(lines, 1)]


def _line(n: int, words: list[str]) -> Line:
    if not words:
        raise UsageError(f"line {n}: an empty command")
    if words[0].startswith("-"):
        raise UsageError(f"line {n}: options such as {words[0]} apply to the whole batch "
                         "(`git loopx --actor WHO batch`), not to one line")
    if words[0] in NEVER:
        raise UsageError(f"line {n}: `{words[0]}` cannot run inside a batch")
    op, taken = catalog.lookup(words)
    if op is None:
        raise UsageError(f"line {n}: no such command: {' '.join(words[:2])}")
    if not op.writes:
        raise UsageError(f"line {n}: `{' '.join(words[:2])}` writes nothing; a batch takes "
                         "write commands only")
    if not op.in_batch:
        raise UsageError(f"line {n}: `{op.name}` cannot run inside a batch")
    try:
        values = declare.validate(op, declare.parse(op, words[taken:]), what=op.name)
    except LoopxError as exc:
        raise UsageError(f"line {n}: {exc}") from None
    return Line(n, tuple(words), op.name, dict(values))


def _run(c: declare.Call) -> list[LineResult]:
    c.standalone("batch")
    return apply(c.ledger, parse(c.values.lines), actor=c.principal, message=c.values.message,
                 now=c.now, cwd=c.cwd)


BATCH = declare.Operation(
    "batch", "Apply JSON lines of commands from stdin in one commit (all or nothing).\n\nEach "
    "line is a JSON array of arguments, e.g. [\"todo\", \"add\", \"g-1\", \"Write tests\"]. "
    "Later lines see what earlier lines created.", run=_run, writes=True, batch=False,
    wrap="results", shape=lambda results: [r.answer for r in results], agent_note=(
        "lines: a list of command lines, each the words of a write command as on the command "
        "line, e.g. [[\"todo\", \"add\", \"g-1\", \"Tests\", \"--priority\", \"1\"], "
        "[\"note\", \"add\", \"planned\"]]; answers each line's result in order."),
    params=(declare.Param("lines", "lines", required=True, max_items=10_000, help=(
                "The command lines (the command line reads them from stdin, one JSON array a "
                "line).")),
            declare.opt("message", short="-m", max_length=limits.TEXT_MAX,
                        help="Commit message for the batch.")))
OPERATIONS = [BATCH]


def apply(ledger: Ledger, lines: Sequence[Line], *, actor: Callable[[], str],
          message: Optional[str] = None, now: Optional[datetime] = None,
          cwd: Optional[str] = None) -> list[LineResult]:
    """Run every line in one transaction, as ``actor``; what each answers, in order. Nothing is
    written unless every line succeeds."""
    ledger.require()

    def build(txn: Txn) -> list[LineResult]:
        results = []
        for line in lines:
            op = catalog.find(line.command)
            staged = len(txn.events) + len(txn.duplicates)
            call = declare.Call(declare.Values(line.arguments), ledger, actor, now=now, txn=txn,
                                cwd=cwd)
            try:
                result = op.run(call)
            except ArgumentError as exc:
                raise UsageError(f"line {line.number}: {exc}") from None
            except LoopxError as exc:
                raise type(exc)(f"line {line.number}: {exc}") from None
            if len(txn.events) + len(txn.duplicates) == staged:
                raise UsageError(f"line {line.number}: `{' '.join(line.words[:2])}` writes "
                                 "nothing; a batch takes write commands only")
            results.append(LineResult(line.number, op.name, op.document(result)))
        return results

    results, _ = ledger.write(build, actor=actor(), message=message, now=now)
    return results
