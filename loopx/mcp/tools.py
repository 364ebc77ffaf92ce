"""The MCP server's tools: one pydantic model of each tool's arguments (its input schema) and a
body that calls the same operation as the matching `git loopx` command. No rule lives here;
results are the documents the CLI prints with ``--format json``.

Nothing here imports the MCP SDK: :mod:`loopx.mcp.server` wires these to the protocol.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field

from loopx.errors import UsageError
from loopx.ledger.book import Ledger
from loopx.model import clock
from loopx.model.events import ACTOR_PATTERN, ID_PATTERN
from loopx.model.ids import ULID_RE
from loopx.model.paths import TRANSCRIPT_MAX_BYTES
from loopx.ops import evidence, gates, ledgers, notes, quotas, sessions, status, todos, wakes

Ref = Annotated[str, Field(min_length=1, max_length=64, pattern=ID_PATTERN,
                           description="an id, or a unique prefix of one")]
Text = Annotated[str, Field(min_length=1, max_length=20_000)]
Duration = Annotated[Union[int, str], Field(
    description="seconds, or a duration like 45m, 2h30m, 1d")]
Refs = Annotated[list[Ref], Field(max_length=200)]


class Args(BaseModel):
    """Arguments every tool takes."""

    model_config = ConfigDict(extra="forbid")
    actor: Optional[str] = Field(default=None, pattern=ACTOR_PATTERN, description=(
        "who is acting: the server's identity (its --actor, the default) or a sub-identity "
        "under it, e.g. agent:claude@laptop/worker-2; any other name is refused"))


class WriteArgs(Args):
    event_id: Optional[str] = Field(default=None, pattern=ULID_RE.pattern, description=(
        "a ULID to make a retried write idempotent (same id and content: recorded once)"))


@dataclass(frozen=True)
class Context:
    """What a call runs against: the server's ledger and the one identity it acts as."""

    ledger: Ledger
    actor: str

    def who(self, args: Args) -> str:
        """The server's identity, or the sub-identity under it that the call names."""
        return ledgers.within(self.actor, args.actor)

    def maybe_who(self, args: Args) -> Optional[str]:
        return self.who(args)

    def write(self, args: Args, build: Callable[[Any], Any], *, sign: bool = False) -> Any:
        self.ledger.require()
        result, _ = self.ledger.write(build, actor=self.who(args), sign=sign)
        return result


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args: type[Args]
    body: Callable[[Context, Any], dict[str, Any]]
    read_only: bool = False


TOOLS: dict[str, Tool] = {}
A = TypeVar("A", bound=Args)


def tool(name: str, args: type[A], *, read_only: bool = False
         ) -> Callable[[Callable[[Context, A], dict[str, Any]]], Callable[[Context, A], dict[str, Any]]]:
    """Register ``body`` as tool ``name``; its docstring is the tool's description."""
    def register(body: Callable[[Context, A], dict[str, Any]]) -> Callable[[Context, A], dict[str, Any]]:
        description = " ".join((body.__doc__ or name).split())
        TOOLS[name] = Tool(name, description, args, body, read_only)
        return body
    return register


def seconds(value: Optional[Union[int, str]]) -> Optional[int]:
    """A duration argument in seconds (None stays None)."""
    if value is None or isinstance(value, int):
        return value
    try:
        return int(clock.parse_duration(value).total_seconds())
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def event(found: Any) -> dict[str, Any]:
    """A write's result: the event document, as `--format json` prints it."""
    return found.to_dict()  # type: ignore[no-any-return]


def plain(data: Any) -> Any:
    """JSON values only (what the CLI's ``json.dumps(default=str)`` would print)."""
    return json.loads(json.dumps(data, default=str))


# --- recovery ---------------------------------------------------------------------------------


class StatusArgs(Args):
    goal: Optional[Ref] = Field(default=None, description="only this goal")
    all: bool = Field(default=False, description="include achieved and abandoned goals")
    ci: bool = Field(default=True, description="ask CI about HEAD")
    offline: bool = Field(default=False, description="no network (CI from its cache only)")


@tool("status", StatusArgs, read_only=True)
def _status(ctx: Context, a: StatusArgs) -> dict[str, Any]:
    """The status document (exactly `git loopx status --format json`): goals, todos, the
    frontier, gates, evidence and its freshness, the environment, and every legal next action
    for you, most important first."""
    return status.status(ctx.ledger, actor=ctx.maybe_who(a), goal=a.goal, ci=a.ci,
                         offline=a.offline, include_closed=a.all)


class NextArgs(Args):
    claim: bool = Field(default=False, description=(
        "when working on a ready todo is the best action, claim it in the same call"))
    ttl: Optional[Duration] = Field(default=None, description="lease length for claim")
    ci: bool = True
    offline: bool = False


@tool("next", NextArgs)
def _next(ctx: Context, a: NextArgs) -> dict[str, Any]:
    """The single best action for you (`git loopx next --format json`): {action, next_wake,
    actions, claimed}; `action.kind` starting with wait_ means wait, null means nothing left."""
    actor = ctx.who(a) if a.claim else (ctx.maybe_who(a) or "")
    return status.next_action(ctx.ledger, actor=actor, claim=a.claim, ttl=seconds(a.ttl),
                              ci=a.ci, offline=a.offline).to_dict()


class PrimeArgs(Args):
    ci: bool = True
    offline: bool = False


@tool("prime", PrimeArgs, read_only=True)
def _prime(ctx: Context, a: PrimeArgs) -> dict[str, Any]:
    """A short Markdown primer for you (`git loopx prime`): what loopx is, the commands, your
    leases, the top of the frontier, gates waiting on you, your sessions' inboxes, stale
    evidence. Read it at the start of a session and after your context was compacted."""
    return status.prime(ctx.ledger, actor=ctx.maybe_who(a), ci=a.ci,
                        offline=a.offline).to_dict()


# --- todos ------------------------------------------------------------------------------------


class TodoAddArgs(WriteArgs):
    goal: Ref
    title: str = Field(min_length=1, max_length=500)
    id: Optional[Ref] = None
    after: Refs = Field(default_factory=list, description="todos this one waits for")
    gates: Refs = Field(default_factory=list, description="gates that must approve it first")
    criteria: Refs = Field(default_factory=list, description="acceptance criteria it serves")
    description: Optional[str] = Field(default=None, max_length=20_000)
    priority: Optional[int] = Field(default=None, ge=0, le=4, description="0 most urgent .. 4")
    discovered_from: Optional[Ref] = Field(default=None, description=(
        "the todo whose work turned this one up"))


@tool("todo_add", TodoAddArgs)
def _todo_add(ctx: Context, a: TodoAddArgs) -> dict[str, Any]:
    """Add a todo to a goal (`git loopx todo add`)."""
    return event(ctx.write(a, lambda txn: todos.add(
        txn, a.goal, a.title, id=a.id, after=a.after, gates=a.gates, criteria=a.criteria,
        description=a.description, priority=a.priority, discovered_from=a.discovered_from,
        event_id=a.event_id)))


class TodoListArgs(Args):
    goal: Optional[Ref] = None
    ready: bool = Field(default=False, description="only the frontier, in its order")
    all: bool = Field(default=False, description="include done and cancelled todos")
    priority: list[Annotated[int, Field(ge=0, le=4)]] = Field(default_factory=list, max_length=5)
    state: Optional[Literal["open", "claimed", "done", "blocked", "cancelled"]] = None
    claimed_by: Optional[str] = Field(default=None, pattern=ACTOR_PATTERN)
    mine: bool = Field(default=False, description="only todos you hold")


@tool("todo_list", TodoListArgs, read_only=True)
def _todo_list(ctx: Context, a: TodoListArgs) -> dict[str, Any]:
    """Todos with their state, priority and why each is not ready (`git loopx todo list`)."""
    found = todos.listing(ctx.ledger, goal=a.goal, ready=a.ready, include_closed=a.all,
                          priority=a.priority, state=a.state,
                          claimant=ctx.who(a) if a.mine else a.claimed_by)
    return {"todos": found}


class TodoArgs(Args):
    todo: Ref


@tool("todo_show", TodoArgs, read_only=True)
def _todo_show(ctx: Context, a: TodoArgs) -> dict[str, Any]:
    """One todo as status shows it (`git loopx todo show`)."""
    return todos.show(ctx.ledger, a.todo)


class ClaimArgs(WriteArgs):
    todo: Ref
    ttl: Optional[Duration] = Field(default=None, description="lease length (default 45m)")
    sync: bool = Field(default=False, description=(
        "count only once the remote has it; fails naming the winner if another claim got there"))


@tool("todo_claim", ClaimArgs)
def _todo_claim(ctx: Context, a: ClaimArgs) -> dict[str, Any]:
    """Claim a todo: a lease that expires unless renewed (`git loopx todo claim`)."""
    if a.sync:
        found, _ = todos.claim_synced(ctx.ledger, a.todo, actor=ctx.who(a), ttl=seconds(a.ttl),
                                      event_id=a.event_id)
        return event(found)
    return event(ctx.write(a, lambda txn: todos.claim(txn, a.todo, ttl=seconds(a.ttl),
                                                      event_id=a.event_id)))


class RenewArgs(WriteArgs):
    todo: Ref
    ttl: Optional[Duration] = None


@tool("todo_renew", RenewArgs)
def _todo_renew(ctx: Context, a: RenewArgs) -> dict[str, Any]:
    """Extend your lease on a todo (`git loopx todo renew`)."""
    return event(ctx.write(a, lambda txn: todos.renew(txn, a.todo, ttl=seconds(a.ttl),
                                                      event_id=a.event_id)))


class ReleaseArgs(WriteArgs):
    todo: Ref
    reason: Optional[str] = Field(default=None, max_length=20_000)


@tool("todo_release", ReleaseArgs)
def _todo_release(ctx: Context, a: ReleaseArgs) -> dict[str, Any]:
    """Give up your claim on a todo (`git loopx todo release`)."""
    return event(ctx.write(a, lambda txn: todos.release(txn, a.todo, reason=a.reason,
                                                        event_id=a.event_id)))


class DoneArgs(WriteArgs):
    todo: Ref
    evidence: Refs = Field(default_factory=list, description="ids of the evidence that shows it")
    summary: Optional[str] = Field(default=None, max_length=20_000)


@tool("todo_done", DoneArgs)
def _todo_done(ctx: Context, a: DoneArgs) -> dict[str, Any]:
    """Mark a todo done, citing evidence (`git loopx todo done`)."""
    return event(ctx.write(a, lambda txn: todos.done(txn, a.todo, evidence=a.evidence,
                                                     summary=a.summary, event_id=a.event_id)))


# --- evidence ---------------------------------------------------------------------------------


Paths = Annotated[list[Annotated[str, Field(min_length=1, max_length=1_000)]], Field(
    max_length=200, description="the paths it covers (globs); none: the whole tree")]


class EvidenceAddArgs(WriteArgs):
    kind: Literal["test", "ci", "commit", "review", "receipt", "note"]
    todo: Optional[Ref] = None
    goal: Optional[Ref] = None
    criteria: Refs = Field(default_factory=list)
    commit: Optional[str] = Field(default=None, min_length=1, max_length=200, description=(
        "the commit it vouches for (default HEAD with the work tree)"))
    command: Optional[str] = Field(default=None, max_length=10_000)
    exit_code: Optional[int] = Field(default=None, description="0 = passing")
    duration_s: Optional[float] = Field(default=None, ge=0)
    summary: Optional[str] = Field(default=None, max_length=20_000)
    url: Optional[str] = Field(default=None, max_length=2_000)
    digest: Optional[str] = Field(default=None, max_length=200)
    paths: Paths = Field(default_factory=list)
    check: Optional[str] = Field(default=None, min_length=1, max_length=200, description=(
        "the CI check it reports (kind ci)"))
    id: Optional[Ref] = None


@tool("evidence_add", EvidenceAddArgs)
def _evidence_add(ctx: Context, a: EvidenceAddArgs) -> dict[str, Any]:
    """Record evidence bound to HEAD's commit and tree, or to `commit` (`git loopx evidence
    add`)."""
    bound = evidence.binding(ctx.ledger, a.commit)
    return event(ctx.write(a, lambda txn: evidence.add(
        txn, a.kind, bound=bound, todo=a.todo, goal=a.goal, criteria=a.criteria,
        command=a.command, exit_code=a.exit_code, duration_s=a.duration_s, summary=a.summary,
        url=a.url, digest=a.digest, paths=a.paths, check=a.check, id=a.id,
        event_id=a.event_id)))


class RunArgs(WriteArgs):
    argv: list[Annotated[str, Field(max_length=10_000)]] = Field(
        min_length=1, max_length=500, description="the command and its arguments (no shell)")
    kind: Literal["test", "ci", "review", "receipt", "note"] = "test"
    todo: Optional[Ref] = None
    goal: Optional[Ref] = None
    criteria: Refs = Field(default_factory=list)
    paths: Paths = Field(default_factory=list)
    summary: Optional[str] = Field(default=None, max_length=20_000)
    id: Optional[Ref] = None
    env: dict[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")],
              Annotated[str, Field(max_length=10_000)]] = Field(
        default_factory=dict, max_length=100, description=(
            "variables to set for the command, on top of the server's environment (e.g. "
            "PYTHONPATH your shell sets); never recorded, their values redacted from the "
            "command and output"))


@tool("evidence_run", RunArgs)
def _evidence_run(ctx: Context, a: RunArgs) -> dict[str, Any]:
    """Run a command in the repository and record its result as evidence (`git loopx run`):
    exit code, duration, commit and tree, a digest and the last lines of its output (secrets
    redacted). It runs with the server's environment plus `env`. Without todo or goal the
    evidence goes to the one todo you hold. A command that cannot start (not found, not
    executable: exit 127 or 126) is an error, not evidence."""
    # stdout is the protocol: the output is not streamed, only its tail and digest are kept.
    with open(os.devnull, "wb") as sink:
        result = evidence.run(ctx.ledger, a.argv, actor=ctx.who(a), kind=a.kind, todo=a.todo,
                              goal=a.goal, criteria=a.criteria, paths=a.paths,
                              summary=a.summary, id=a.id, event_id=a.event_id, env=a.env,
                              stdout=sink, stderr=sink)
    outcome = result.outcome
    return {"exit_code": outcome.exit_code, "duration_s": outcome.duration_s,
            "output_tail": outcome.tail, "event": event(result.event) if result.event else None,
            "error": str(result.error) if result.error else None}


class RerunArgs(Args):
    stale: bool = Field(default=False, description=(
        "only evidence that went stale (not evidence that failed on this code)"))
    todo: Optional[Ref] = None
    criterion: Optional[str] = Field(default=None, max_length=130, description="[GOAL:]ID")
    goal: Optional[Ref] = Field(default=None, description="the goal of a criterion ID")
    dry_run: bool = Field(default=False, description="show the commands; run nothing")


@tool("evidence_rerun", RerunArgs)
def _evidence_rerun(ctx: Context, a: RerunArgs) -> dict[str, Any]:
    """Run again the recorded commands of evidence that went stale or failed and record the
    results (`git loopx rerun`): {reruns: [{evidence, why, command, exit_code, recorded,
    skipped, ...}]}. The commands come from the ledger: check them with dry_run first when
    others write to it."""
    with open(os.devnull, "wb") as sink:  # as evidence_run: stdout is the protocol
        plan = evidence.rerun(ctx.ledger, actor=ctx.who(a), stale_only=a.stale, todo=a.todo,
                              criterion=a.criterion, goal=a.goal, dry_run=a.dry_run,
                              stdout=sink, stderr=sink)
    return {"reruns": [item.to_dict() for item in plan]}


# --- gates ------------------------------------------------------------------------------------


class GateOpenArgs(WriteArgs):
    goal: Ref
    question: Text
    authority: list[Annotated[str, Field(pattern=ACTOR_PATTERN)]] = Field(
        min_length=1, max_length=50, description="who may answer: identities or role:NAME")
    blocks: Refs = Field(default_factory=list, description="todos that wait for its approval")
    id: Optional[Ref] = None


@tool("gate_open", GateOpenArgs)
def _gate_open(ctx: Context, a: GateOpenArgs) -> dict[str, Any]:
    """Ask a question of a named authority; the todos it blocks wait for approval (`git loopx
    gate open`). Ask instead of guessing."""
    return event(ctx.write(a, lambda txn: gates.open_(
        txn, a.goal, a.question, authority=a.authority, blocks=a.blocks, id=a.id,
        event_id=a.event_id)))


class GateAnswerArgs(WriteArgs):
    gate: Ref
    decision: Literal["approve", "reject", "answer"]
    answer: Optional[str] = Field(default=None, max_length=20_000, description="for answer")
    comment: Optional[str] = Field(default=None, max_length=20_000)
    sign: bool = Field(default=False, description="sign the commit (git's user.signingkey)")


@tool("gate_answer", GateAnswerArgs)
def _gate_answer(ctx: Context, a: GateAnswerArgs) -> dict[str, Any]:
    """Answer a gate; only its authority may (`git loopx gate answer`)."""
    return event(ctx.write(a, lambda txn: gates.answer(
        txn, a.gate, decision=a.decision, answer=a.answer, comment=a.comment,
        event_id=a.event_id), sign=a.sign))


class GateArgs(Args):
    gate: Ref


@tool("gate_show", GateArgs, read_only=True)
def _gate_show(ctx: Context, a: GateArgs) -> dict[str, Any]:
    """One gate: its question, authority, state and answer (`git loopx gate show`)."""
    return gates.show(ctx.ledger, a.gate)


# --- notes, wakes, quota ----------------------------------------------------------------------


class NoteArgs(WriteArgs):
    text: Text
    todo: Optional[Ref] = None
    goal: Optional[Ref] = None


@tool("note_add", NoteArgs)
def _note_add(ctx: Context, a: NoteArgs) -> dict[str, Any]:
    """Leave a note for whoever comes next, on a todo or goal (`git loopx note add`)."""
    return event(ctx.write(a, lambda txn: notes.add(txn, a.text, todo=a.todo, goal=a.goal,
                                                    event_id=a.event_id)))


class WakeSetArgs(WriteArgs):
    at: Optional[str] = Field(default=None, max_length=40, description="an RFC 3339 time")
    in_: Optional[Duration] = Field(default=None, alias="in", description="from now")
    on_gate: Optional[Ref] = None
    on_ci: Optional[str] = Field(default=None, min_length=1, max_length=200, description=(
        "a revision (sha, HEAD, branch), fixed to its full commit now"))
    on_todo: Optional[Ref] = None
    every: Optional[Duration] = Field(default=None, description="recur this long after each ack")
    goal: Optional[Ref] = None
    reason: Optional[str] = Field(default=None, max_length=2_000)
    id: Optional[Ref] = None


@tool("wake_set", WakeSetArgs)
def _wake_set(ctx: Context, a: WakeSetArgs) -> dict[str, Any]:
    """Set a wake: when to look again (`git loopx wake set`); `git loopx watch` and `wait`
    act on it."""
    return event(ctx.write(a, lambda txn: wakes.set_(
        txn, at=a.at, after=seconds(a.in_), on_gate=a.on_gate, on_ci=a.on_ci,
        on_todo=a.on_todo, every=seconds(a.every), goal=a.goal, reason=a.reason, id=a.id,
        event_id=a.event_id)))


class WakeArgs(WriteArgs):
    wake: Ref


@tool("wake_clear", WakeArgs)
def _wake_clear(ctx: Context, a: WakeArgs) -> dict[str, Any]:
    """Clear a wake (`git loopx wake clear`)."""
    return event(ctx.write(a, lambda txn: wakes.clear(txn, a.wake, event_id=a.event_id)))


@tool("wake_ack", WakeArgs)
def _wake_ack(ctx: Context, a: WakeArgs) -> dict[str, Any]:
    """Say a due wake was acted on: a one-shot wake is cleared, a recurring one re-armed
    (`git loopx wake ack`)."""
    return event(ctx.write(a, lambda txn: wakes.ack(txn, a.wake, event_id=a.event_id)))


class SpendArgs(WriteArgs):
    goal: Optional[Ref] = None
    todo: Optional[Ref] = None
    turns: int = Field(default=0, ge=0)
    tokens: int = Field(default=0, ge=0)
    cost: float = Field(default=0.0, ge=0)


@tool("quota_spend", SpendArgs)
def _quota_spend(ctx: Context, a: SpendArgs) -> dict[str, Any]:
    """Record what was spent, after the work (`git loopx quota spend`)."""
    return event(ctx.write(a, lambda txn: quotas.spend(
        txn, goal=a.goal, todo=a.todo, turns=a.turns, tokens=a.tokens, cost=a.cost,
        event_id=a.event_id)))


# --- sessions ---------------------------------------------------------------------------------


class SessionOpenArgs(WriteArgs):
    task: Text
    id: Optional[Ref] = None
    goal: Optional[Ref] = None
    todo: Optional[Ref] = None
    keep_open: bool = Field(default=True, description="keep it open for follow-ups")
    why: Optional[str] = Field(default=None, max_length=2_000)
    host: Optional[str] = Field(default=None, min_length=1, max_length=255)
    path: Optional[str] = Field(default=None, min_length=1, max_length=4_096, description=(
        "its workspace directory (default: the repository)"))


@tool("session_open", SessionOpenArgs)
def _session_open(ctx: Context, a: SessionOpenArgs) -> dict[str, Any]:
    """Open a session running a task; you own it (`git loopx session open`)."""
    path = a.path or str(Path(ctx.ledger.repo.work_tree or ctx.ledger.repo.cwd).resolve())
    return event(ctx.write(a, lambda txn: sessions.open_(
        txn, a.task, id=a.id, goal=a.goal, todo=a.todo, keep_open=a.keep_open, why=a.why,
        host=a.host, path=path, event_id=a.event_id)))


class SessionTextArgs(WriteArgs):
    session: Ref
    text: Text


@tool("session_progress", SessionTextArgs)
def _session_progress(ctx: Context, a: SessionTextArgs) -> dict[str, Any]:
    """Report progress: the session is still running (`git loopx session progress`)."""
    return event(ctx.write(a, lambda txn: sessions.progress(txn, a.session, a.text,
                                                            event_id=a.event_id)))


@tool("session_respond", SessionTextArgs)
def _session_respond(ctx: Context, a: SessionTextArgs) -> dict[str, Any]:
    """Finish a turn: the session now awaits input (`git loopx session respond`)."""
    return event(ctx.write(a, lambda txn: sessions.respond(txn, a.session, a.text,
                                                           event_id=a.event_id)))


@tool("session_send", SessionTextArgs)
def _session_send(ctx: Context, a: SessionTextArgs) -> dict[str, Any]:
    """Send a session a message: a correction while it runs, a follow-up while it waits
    (`git loopx session send`)."""
    return event(ctx.write(a, lambda txn: sessions.send(txn, a.session, a.text,
                                                        event_id=a.event_id)))


class InboxArgs(Args):
    session: Ref
    ack: bool = Field(default=False, description="also mark what is returned as consumed")


@tool("session_inbox", InboxArgs)
def _session_inbox(ctx: Context, a: InboxArgs) -> dict[str, Any]:
    """Messages the session has not consumed yet, oldest first (`git loopx session inbox`)."""
    if a.ack:
        items = ctx.write(a, lambda txn: sessions.take_inbox(txn, a.session))
    else:
        items = sessions.inbox(ctx.ledger, a.session)
    keys = ("event", "seq", "from", "at", "kind", "message")
    return {"messages": [{k: m[k] for k in keys} for m in items]}


class AckArgs(WriteArgs):
    session: Ref
    through: Optional[str] = Field(default=None, pattern=ULID_RE.pattern, description=(
        "consume up to and including this message's event id (default: all)"))


@tool("session_ack", AckArgs)
def _session_ack(ctx: Context, a: AckArgs) -> dict[str, Any]:
    """Mark inbox messages consumed (`git loopx session ack`)."""
    found = ctx.write(a, lambda txn: sessions.ack(txn, a.session, through=a.through,
                                                  event_id=a.event_id))
    return event(found) if found is not None else {"acked": []}


class CheckpointArgs(WriteArgs):
    session: Ref
    transcript: str = Field(max_length=TRANSCRIPT_MAX_BYTES, description=(
        "the transcript so far, stored byte-exact (UTF-8) on the state branch"))
    summary: Text = Field(description="the summary that replaces it in context")
    omitted: Optional[str] = Field(default=None, max_length=20_000)


@tool("session_checkpoint", CheckpointArgs)
def _session_checkpoint(ctx: Context, a: CheckpointArgs) -> dict[str, Any]:
    """Store the transcript with the summary that replaces it (`git loopx session
    checkpoint`)."""
    data = a.transcript.encode("utf-8")
    return event(ctx.write(a, lambda txn: sessions.checkpoint(
        txn, a.session, data, summary=a.summary, omitted=a.omitted, event_id=a.event_id)))

