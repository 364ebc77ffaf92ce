"""The declarations of what is recorded about the work: evidence and runs, wakes, the quota,
effects, sessions and the ledger's settings (see :mod:`loopx.ops.declare`)."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Optional

from loopx.errors import ArgumentError, NotFound, UsageError
from loopx.model.limits import (
    ACTOR_PATTERN, GRACE_MAX_S, LEASE_TTL_MAX_S, LEASE_TTL_MIN_S, LINK_PATTERN, MAX_EXIT,
    MAX_SECONDS, MIN_EXIT, READBACK_PATTERN, SESSION_IDLE_MIN_S, SESSION_SLOTS_MAX, TEXT_MAX,
    WAKE_EVERY_MAX_S, WAKE_EVERY_MIN_S,
)
from loopx.model.globs import GLOB_PATTERN
from loopx.model.paths import TRANSCRIPT_MAX_BYTES
from loopx.ops import config, effects, evidence, quotas, review, sessions, wakes
from loopx.ops.catalog_plan import ON_GOAL, ON_TODO
from loopx.ops.declare import (
    EVENT_ID, REFS_MAX, Call, Operation, Param, arg, opt, page, paged_note, paging, ref, text)

CRITERIA = ref("criterion", many=True, metavar="ID", help="Acceptance criterion it meets.")
PATHS = opt("paths", many=True, metavar="GLOB", pattern=GLOB_PATTERN, max_length=1_000,
            max_items=REFS_MAX, help=(
                "The paths it covers (repeatable, e.g. 'src/**'); changes elsewhere leave it "
                "fresh. Default: its criterion's paths, else the whole tree."))
FOR_TODO = ref("todo", dest="todo_id", metavar="TODO", help="The todo it supports.")
FOR_GOAL = ref("goal", dest="goal_id", metavar="GOAL", help="The goal (implied by --todo).")


@contextlib.contextmanager
def _output(c: Call) -> Iterator[tuple[Optional[IO[bytes]], Optional[IO[bytes]]]]:
    """Where a command's output goes: nowhere for a quiet call (MCP: stdout is the protocol;
    only the tail and digest are kept), else the caller's own stdout and stderr."""
    if not c.quiet:
        yield None, None
        return
    with open(os.devnull, "wb") as sink:
        yield sink, sink


def _comment(c: Call) -> Any:
    v = c.values
    if (v.body is None) == (v.state_diff is None):
        raise ArgumentError("give --body FILE or --state-diff BASE..HEAD (one of them)")
    if v.state_diff is not None:
        body = review.markdown(c.ledger, v.state_diff, now=c.now)
    else:
        body = v.body.decode("utf-8", "replace") if isinstance(v.body, bytes) else str(v.body)
    if v.code:
        fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", body)), default=0))
        body = f"{fence}text\n{body.rstrip()}\n{fence}"
    if v.record:
        c.ledger.require()
    return effects.github_comment(c.ledger, v.target, body, key=v.key, actor=c.who(),
                                  update=v.replace, record=v.record, goal=v.goal, todo=v.todo,
                                  now=c.now)


# --- evidence ----------------------------------------------------------------------------------


def _evidence_add(c: Call) -> Any:
    v = c.values
    try:
        bound = evidence.binding(c.ledger, v.commit)
    except NotFound as exc:
        raise ArgumentError(f"--commit: {exc}") from None
    return c.write(lambda txn: evidence.add(
        txn, v.kind, bound=bound, todo=v.todo, goal=v.goal, criteria=v.criterion,
        command=v.command, exit_code=v.exit_code, duration_s=v.duration, summary=v.summary,
        url=v.url, digest=v.digest, paths=v.paths, check=v.check, id=v.id,
        event_id=v.event_id))


def _run(c: Call) -> Any:
    v = c.values
    with _output(c) as (out, err):
        return evidence.run(c.ledger, v.argv, actor=c.who(), kind=v.kind, todo=v.todo,
                            goal=v.goal, criteria=v.criterion, paths=v.paths, summary=v.summary,
                            id=v.id, event_id=v.event_id, now=c.now, environ=c.environ,
                            env=v.env, cwd=Path(c.cwd) if c.cwd else None, stdout=out,
                            stderr=err)


def _ran(result: Any) -> dict[str, Any]:
    outcome = result.outcome
    return {"exit_code": outcome.exit_code, "duration_s": outcome.duration_s,
            "output_tail": outcome.tail, "event": result.event,
            "error": str(result.error) if result.error else None}


def _rerun(c: Call) -> Any:
    v = c.values
    with _output(c) as (out, err):
        return evidence.rerun(c.ledger, actor=c.who(), stale_only=v.stale, todo=v.todo,
                              criterion=v.criterion, goal=v.goal, dry_run=v.dry_run, now=c.now,
                              environ=c.environ, stdout=out, stderr=err)


EVIDENCE_OPS = [
    Operation("evidence add", "Record evidence. It is bound to HEAD and the work tree as it is "
              "now (uncommitted changes and untracked files included), or to --commit's commit "
              "and tree.", writes=True, run=_evidence_add, params=(
        opt("kind", "choice", choices=evidence.KINDS, required=True, help="What it is."),
        FOR_TODO, FOR_GOAL, CRITERIA,
        opt("commit", dest="rev", metavar="REV", min_length=1, max_length=200,
            help="Commit it vouches for (default HEAD, if any)."),
        text("command", most=10_000, help="The command that produced it."),
        opt("exit_code", "int", lo=MIN_EXIT, hi=MAX_EXIT, field="evidence.recorded:exit_code",
            help="That command's exit code (0 = passing)."),
        opt("duration", "float", dest="duration_s", lo=0, help="Seconds it took."),
        text("summary", help="One line on what it shows.", field="evidence.recorded:summary"),
        text("url", most=2_000, help="Where to see it (CI run, review, receipt)."),
        text("digest", most=200, help="Digest of the output, e.g. sha256:..."),
        PATHS,
        opt("check", metavar="NAME", min_length=1, max_length=200,
            help="The CI check it reports (kind ci)."),
        ref("id", dest="ev_id", help="Id to use (default: a generated e-xxxxxx)."),
        EVENT_ID)),
    Operation("evidence list", "List evidence: the commit it points to now (after amends and "
              "rebases; the one it was recorded on in brackets when they differ), its result "
              "and how it stands now; newest first, a page at a time.", wrap="evidence",
              agent_note=paged_note("evidence"), params=(
        ref("todo", dest="todo_id", metavar="TODO", help="Only the evidence of this todo."),
        ref("goal", dest="goal_id", metavar="GOAL", help="Only the evidence of this goal."),
        *paging("pieces of evidence")),
        run=lambda c: evidence.listing(c.ledger, todo=c.values.todo, goal=c.values.goal,
                                       now=c.now, page=lambda e: page(e[::-1], c.values))),
    Operation("evidence show", "Show one piece of evidence: what ran, its result and output, "
              "the commit and tree it vouches for, and whether it is still fresh (and if not, "
              "which files changed).", params=(
        ref("evidence", positional=True, dest="evidence_id", metavar="ID",
            help="The evidence (an id or a unique prefix)."),),
        run=lambda c: evidence.show(c.ledger, c.values.evidence, now=c.now)),
    Operation("run", "Run CMD (output streamed as usual) and record it as evidence; exits with "
              "CMD's code.\n\nWithout --todo or --goal, the evidence goes to the one todo you "
              "hold a lease on, if any.\n\nThe evidence holds the command, where it ran, exit "
              "code, duration, HEAD's commit, the tree of the work tree as it was when CMD "
              "started (uncommitted changes included), a sha256 of the output and its last "
              "lines. Secrets (credential-like environment values, token shapes) are redacted "
              "before anything is written. A command that could not start (not found, not "
              "executable: exit 127 or 126, from a shell too) is no evidence: nothing is "
              "recorded and run exits 1. What recording would refuse (an unknown todo or "
              "criterion, an id already taken) is refused before CMD starts.",
              tool="evidence_run", run=_run, batch=False,
              writes=True, shape=_ran, agent_note=(
                  "Answers {exit_code, duration_s, output_tail, event, error}; the output is "
                  "not streamed, only its tail and digest are kept. It runs with the server's "
                  "environment plus `env`."), params=(
        FOR_TODO, FOR_GOAL, CRITERIA,
        opt("kind", "choice", choices=("test", "ci", "review", "receipt", "note"),
            default="test", show_default=True, help="What it is."),
        text("summary", help="One line on what it shows (default: command, verdict, time).",
             field="evidence.recorded:summary"),
        PATHS,
        ref("id", dest="ev_id", help="Evidence id to use (default: a generated e-xxxxxx)."),
        EVENT_ID,
        Param("env", "env", max_length=10_000, max_items=100, help=(
            "Variables to set for the command, on top of the server's environment (e.g. "
            "PYTHONPATH your shell sets); never recorded, their values redacted from the "
            "command and output. (The command line runs with the shell's environment.)")),
        arg("argv", "argv", metavar="-- CMD [ARG]...", max_length=10_000, max_items=500,
            help="The command and its arguments (no shell)."))),
    Operation("rerun", "Run again the recorded commands of evidence that went stale or "
              "failed, and record the results (same todo, goal, criteria and paths) as `git "
              "loopx run` does.\n\nThe evidence re-run is the latest verdict of each criterion "
              "and open todo of the goals in play. Exits 0 when every command passed (or "
              "nothing needed it), else with the first failing command's code (1 when some "
              "could not be run). Commands come from the ledger: check them with --dry-run "
              "first when others write to it.", tool="evidence_rerun", run=_rerun, batch=False,
              writes=True, wrap="reruns", params=(
        opt("stale", "bool", dest="stale_only", help=(
            "Only evidence that went stale (not evidence that failed on this code).")),
        ref("todo", dest="todo_id", metavar="TODO", help="Only the evidence of this todo."),
        opt("criterion", metavar="[GOAL:]ID", max_length=130,
            help="Only the evidence of this criterion."),
        ref("goal", dest="goal_id", metavar="GOAL", help="The goal of --criterion ID."),
        opt("dry_run", "bool", help="Show the commands; run nothing."))),
]


# --- wakes, quota, effects ---------------------------------------------------------------------


def _quota_set(c: Call) -> Any:
    v = c.values
    if v.turns is None and v.tokens is None and v.cost is None:
        raise ArgumentError("give at least one of --turns, --tokens, --cost")
    return c.write(lambda txn: quotas.set_(txn, goal=v.goal, turns=v.turns, tokens=v.tokens,
                                           cost=v.cost, event_id=v.event_id))


WAKE = ref("wake", positional=True, dest="wake_id", help="The wake (an id or a unique prefix).")
SCOPE = ref("goal", dest="goal_id", metavar="GOAL", help="Per goal (default: ledger-wide).")

RECORD_OPS = [
    Operation("wake set", "Set a wake condition: when to look again (`wait` and `watch` act on "
              "it).", writes=True, params=(
        opt("at", metavar="TIME", max_length=40, help="An RFC 3339 time (UTC)."),
        opt("in", "duration", dest="in_", metavar="DURATION", help="From now, e.g. 2h."),
        ref("on_gate", metavar="GATE", help="When this gate is answered."),
        opt("on_ci", metavar="REV", min_length=1, max_length=200, help=(
            "When CI finishes for this commit (a sha, HEAD, a branch: resolved to its full "
            "commit now).")),
        ref("on_todo", metavar="TODO", help="When this todo is done."),
        opt("every", "duration", metavar="DURATION", lo=WAKE_EVERY_MIN_S, hi=WAKE_EVERY_MAX_S,
            field="wake.set:every", help=(
            "Recur: due again this long after each time it is acted on (`wake ack`), e.g. "
            "30m; first due --at/--in, else one DURATION from now.")),
        ref("goal", dest="goal_id", metavar="GOAL", help="The goal it is about."),
        text("reason", most=2_000, help="Why look again then."),
        ref("id", dest="wake_id", help="Id to use (default: a generated w-xxxxxx)."),
        EVENT_ID),
        run=lambda c: c.write(lambda txn: wakes.set_(
            txn, at=c.values.at, after=c.values["in"], on_gate=c.values.on_gate,
            on_ci=c.values.on_ci, on_todo=c.values.on_todo, goal=c.values.goal,
            reason=c.values.reason, every=c.values.every, id=c.values.id,
            event_id=c.values.event_id))),
    Operation("wake clear", "Clear a wake condition.", writes=True, params=(WAKE, EVENT_ID),
              run=lambda c: c.write(lambda txn: wakes.clear(txn, c.values.wake,
                                                            event_id=c.values.event_id))),
    Operation("wake ack", "Say a due wake was acted on: a one-shot wake is cleared, a recurring "
              "one re-armed.", writes=True, params=(WAKE, EVENT_ID),
              run=lambda c: c.write(lambda txn: wakes.ack(txn, c.values.wake,
                                                          event_id=c.values.event_id))),
    Operation("wake list", "List wake conditions.", wrap="wakes",
              run=lambda c: wakes.listing(c.ledger, now=c.now)),
    Operation("quota set", "Set a budget.", writes=True, run=_quota_set, params=(
        SCOPE,
        opt("turns", "int", lo=0, help="Turns allowed."),
        opt("tokens", "int", lo=0, help="Tokens allowed."),
        opt("cost", "float", lo=0, help="Cost allowed."),
        EVENT_ID)),
    Operation("quota spend", "Record what was spent (after the work); past the budget only "
              "with --force --reason.", writes=True, params=(
        ref("goal", dest="goal_id", metavar="GOAL", help="The goal it was spent on."),
        ref("todo", dest="todo_id", metavar="TODO", help="The todo it was spent on."),
        opt("turns", "int", lo=0, default=0, help="Turns spent."),
        opt("tokens", "int", lo=0, default=0, help="Tokens spent."),
        opt("cost", "float", lo=0, default=0.0, help="Cost spent."),
        opt("force", "bool", help="Record it although it goes past the budget."),
        text("reason", help="Why it went past the budget (needed with --force)."),
        EVENT_ID),
        run=lambda c: c.write(lambda txn: quotas.spend(
            txn, goal=c.values.goal, todo=c.values.todo, turns=c.values.turns,
            tokens=c.values.tokens, cost=c.values.cost, force=c.values.force,
            reason=c.values.reason, event_id=c.values.event_id))),
    Operation("quota show", "Budgets, spending and what is left.",
              run=lambda c: quotas.show(c.ledger, now=c.now)),
    Operation("effect intend", "Record the intent to write to TARGET, before making the call.",
              writes=True, params=(
        text("target", positional=True, most=2_000, help="What will be written to."),
        opt("action", required=True, max_length=200, help="What will be done, e.g. open-pr."),
        opt("key", max_length=500, help="Idempotency key (default: the effect id)."),
        ON_TODO, ON_GOAL,
        ref("id", dest="effect_id", help="Id to use (default: a generated x-xxxxxx)."),
        opt("readback", metavar="SPEC", max_length=2_000, pattern=READBACK_PATTERN,
            field="effect.intended:readback", help=(
                "How to check it happened: http:URL (a 2xx answer), github:OWNER/REPO#N (a "
                "comment there carrying the key), github:OWNER/REPO (an issue or pull request "
                "carrying it) or cmd:COMMAND (exit 0; its first line is the receipt).")),
        opt("owner", metavar="WHO", pattern=ACTOR_PATTERN, max_length=233, help=(
            "Who reads it back first (default: you).")),
        opt("grace", "duration", metavar="DURATION", lo=0, hi=GRACE_MAX_S,
            field="effect.intended:grace", help=(
            "How long after the intent the owner's status reads it back when no outcome is "
            "recorded (default 1m).")),
        opt("hold", "duration", metavar="DURATION", lo=0, hi=GRACE_MAX_S,
            field="effect.intended:hold", help=(
            "How long after the intent only the owner reads it back; anyone's status after "
            "(default 30m).")),
        EVENT_ID),
        run=lambda c: c.write(lambda txn: effects.intend(
            txn, c.values.target, action=c.values.action, key=c.values.key,
            todo=c.values.todo, goal=c.values.goal, id=c.values.id,
            readback=c.values.readback, owner=c.values.owner, grace=c.values.grace,
            hold=c.values.hold, event_id=c.values.event_id))),
    Operation("effect confirm", "Record that an intended effect happened.", writes=True, params=(
        ref("effect", positional=True, dest="effect_id", help="The effect."),
        text("receipt", required=True, help="Proof it happened, e.g. the URL created."),
        EVENT_ID),
        run=lambda c: c.write(lambda txn: effects.confirm(txn, c.values.effect,
                                                          receipt=c.values.receipt,
                                                          event_id=c.values.event_id))),
    Operation("effect fail", "Record that an intended effect did not happen.", writes=True,
              params=(
        ref("effect", positional=True, dest="effect_id", help="The effect."),
        text("error", required=True, help="What went wrong."),
        opt("final", "bool", help="Not worth retrying."), EVENT_ID),
        run=lambda c: c.write(lambda txn: effects.fail(txn, c.values.effect,
                                                       error=c.values.error,
                                                       final=c.values.final,
                                                       event_id=c.values.event_id))),
    Operation("effect readback", "Read an indeterminate effect back now, as its readback says "
              "(bounded by loopx.effect.timeout, 5s); record its confirmation when found.\n\n"
              "Status and watch do this by themselves once the effect is due: for its owner "
              "after the grace period, for anyone after the owner's hold.", writes=True,
              batch=False, params=(
        ref("effect", positional=True, dest="effect_id", help="The effect."),),
        agent_note="Answers {state: confirmed|indeterminate, receipt, evidence, recorded}.",
        run=lambda c: effects.read_back(c.ledger, c.values.effect, actor=c.who(), now=c.now)),
    Operation("effect comment", "Post BODY (or a range's state diff) as a comment on "
              "github:OWNER/REPO#N, once per key.\n\n"
              "A retry finds the comment by the key's hidden marker instead of posting again; "
              "with --update the comment with that key is kept up to date (a pull request's "
              "verdict). Recorded as an effect (intent, receipt URL, readback) unless "
              "--no-record. Token: $GITHUB_TOKEN; API: $LOOPX_GITHUB_API or loopx.github.api.",
              writes=True, batch=False, params=(
        arg("target", pattern=LINK_PATTERN, max_length=220,
            metavar="github:OWNER/REPO#N", help="The issue or pull request."),
        opt("body", "file", dest="body_file", max_length=60_000, help=(
            "The comment (Markdown), from a file ('-': stdin).")),
        opt("state_diff", metavar="BASE..HEAD", max_length=500, help=(
            "Instead of --body: the state change of this range of the state branch, as a pull "
            "request shows it (validate's verdict, the state diff, who wrote the events, a "
            "Mermaid graph of the todos it touches), e.g. origin/loopx/state..HEAD.")),
        opt("key", required=True, max_length=150, pattern=r"^[A-Za-z0-9._:/@+=-]+$", help=(
            "Idempotency key: one comment per key on the issue.")),
        opt("replace", "bool", flag="--update", help=(
            "Replace the body of the comment with this key (post it when there is none).")),
        opt("code", "bool", help=(
            "Show BODY as a code block (text from elsewhere, e.g. validate's report).")),
        opt("record", "bool", default=True, off="--no-record", help=(
            "Record it as an effect in the ledger (default).")),
        ON_TODO, ON_GOAL),
        agent_note="Answers {url, effect}.", run=_comment),
    Operation("effect list", "List effects; indeterminate ones must be read back before any "
              "retry.", wrap="effects", run=lambda c: effects.listing(c.ledger, now=c.now)),
]


# --- sessions ----------------------------------------------------------------------------------

SESSION = ref("session", positional=True, dest="session_id", metavar="ID",
              help="The session (an id or a unique prefix).")
def _message(name: str, dest: str) -> Any:
    return text(name, positional=True, dest=dest, help="What it says (- reads stdin).")


def _session_open(c: Call) -> Any:
    v = c.values
    path = v.path or str(Path(c.cwd or ".").resolve())
    return c.write(lambda txn: sessions.open_(
        txn, v.task, id=v.id, goal=v.goal, todo=v.todo, keep_open=v.keep_open, why=v.why,
        host=v.host, path=path, event_id=v.event_id))


def _inbox(c: Call) -> Any:
    v = c.values
    if v.ack:
        items = c.write(lambda txn: sessions.take_inbox(txn, v.session))
    else:
        items = sessions.inbox(c.ledger, v.session)
    return items


def _checkpoint(c: Call) -> Any:
    v = c.values
    data = v.transcript if isinstance(v.transcript, bytes) else v.transcript.encode(
        "utf-8", "surrogateescape")
    return c.write(lambda txn: sessions.checkpoint(txn, v.session, data, summary=v.summary,
                                                   omitted=v.omitted, event_id=v.event_id))


def _session_show(c: Call) -> Any:
    v = c.values
    if v.checkpoint is not None and not v.transcript:  # else shown as if it were not given
        raise ArgumentError("--checkpoint N picks the transcript to print: give --transcript")
    if v.transcript:
        return sessions.transcript(c.ledger, v.session, v.checkpoint)
    return sessions.show(c.ledger, v.session, now=c.now)


def _reap(c: Call) -> Any:
    v = c.values
    if v.dry_run:
        c.ledger.require()
        return {"expired": sessions.reapable(c.ledger, idle=v.idle, now=c.now), "dry_run": True}
    return {"expired": c.write(lambda txn: sessions.reap(txn, idle=v.idle)), "dry_run": False}


def _text(verb: str) -> Any:
    fn = getattr(sessions, verb)
    return lambda c: c.write(lambda txn: fn(txn, c.values.session, c.values.text,
                                            event_id=c.values.event_id))


SESSION_OPS = [
    Operation("session open", "Open a session running TASK; you (the actor) are its owner and "
              "it takes one slot.", writes=True, run=_session_open, params=(
        text("task", positional=True, help="What it is to do."),
        ref("id", dest="session_id", help="Id to use (default: a generated s-xxxxxx)."),
        ref("goal", dest="goal_id", metavar="GOAL", help="The goal it serves."),
        ref("todo", dest="todo_id", metavar="TODO", help="The todo it serves (implies its goal)."),
        opt("keep_open", "bool", off="--one-shot", default=True, show_default=True, help=(
            "Keep it open for follow-ups after it responds, or close it after one result.")),
        text("why", most=2_000, help=(
            "Why it is kept open (or not): the judgement `session stats` tunes.")),
        opt("host", min_length=1, max_length=255,
            help="Host its workspace is on (default: this machine)."),
        opt("path", dest="ws_path", min_length=1, max_length=4_096,
            help="Its workspace directory (default: the current one)."),
        EVENT_ID)),
    Operation("session progress", "Report progress: the session is still running (owner only; "
              "MESSAGE - reads stdin).", writes=True, run=_text("progress"),
              params=(SESSION, _message("text", "message"), EVENT_ID)),
    Operation("session respond", "Finish a turn: the session is now awaiting input (owner "
              "only; RESPONSE - reads stdin). It stays open until closed or reaped; a "
              "--one-shot session closes as done.", writes=True, run=_text("respond"),
              params=(SESSION, _message("text", "response"), EVENT_ID)),
    Operation("session send", "Send MESSAGE to a session, running or awaiting input alike "
              "(MESSAGE - reads stdin).\n\nRecorded as a correction if the session is running, "
              "as a follow-up if it was awaiting input; either way it is running again and the "
              "message waits in its inbox.", writes=True, run=_text("send"),
              params=(SESSION, _message("text", "message"), EVENT_ID)),
    Operation("session inbox", "Messages the session's executor has not consumed yet, oldest "
              "first (poll this).", wrap="messages", run=_inbox, writes=True, params=(
        SESSION, opt("ack", "bool", dest="and_ack", help=(
            "Also mark what is shown as consumed, in the same write (owner only).")))),
    Operation("session ack", "Mark inbox messages as consumed by the session's executor (owner "
              "only).\n\nA loop should pass --through with the last message it read, so a "
              "message that arrived since is not consumed unseen.", writes=True,
              shape=lambda found: found if found is not None else {"acked": []}, params=(
        SESSION, opt("through", metavar="EVENT", max_length=26, help=(
            "Consume up to and including this message (default: the whole inbox).")),
        EVENT_ID),
        run=lambda c: c.write(lambda txn: sessions.ack(txn, c.values.session,
                                                       through=c.values.through,
                                                       event_id=c.values.event_id))),
    Operation("session checkpoint", "Store the transcript on the state branch with the summary "
              "that replaces it (owner only).", writes=True, run=_checkpoint, params=(
        SESSION,
        opt("transcript", "file", dest="transcript_file", required=True,
            max_length=TRANSCRIPT_MAX_BYTES, help=(
                "The transcript so far (- for stdin); stored byte-exact, chunked. (MCP: the "
                "text itself.)")),
        text("summary", required=True, help="The summary that replaces it in context."),
        text("omitted", help="What the summary leaves out."),
        EVENT_ID)),
    Operation("session show", "One session: state, owner, workspace, last response, inbox, "
              "checkpoints.", run=_session_show, shape=lambda found: {
                  "transcript": found.decode("utf-8", "replace")} if isinstance(
                      found, bytes) else found, params=(
        SESSION,
        opt("transcript", "bool", dest="want_transcript",
            help="Print a checkpointed transcript, byte-exact, instead."),
        opt("checkpoint", "int", dest="number", lo=1,
            help="Which checkpoint (default: the latest)."))),
    Operation("session list", "Running, awaiting input (with idle time) and closed sessions; "
              "slots in use.", params=(
        opt("state", "choice", choices=("running", "awaiting_input", "closed", "open"),
            help="Only sessions in this state (open = running or awaiting input)."),
        opt("owner", metavar="ACTOR", pattern=ACTOR_PATTERN, help="Only this owner's sessions.")),
        run=lambda c: sessions.listing(c.ledger, state=c.values.state, owner=c.values.owner,
                                       now=c.now)),
    Operation("session close", "Close a session and free its slot. Sessions never close on "
              "their own.", writes=True, params=(
        SESSION,
        opt("reason", "choice", choices=sessions.CLOSE_REASONS, help=(
            "Why (default: done for its owner, stopped for anyone else).")),
        text("note", help="A word on how it ended."),
        EVENT_ID),
        run=lambda c: c.write(lambda txn: sessions.close(
            txn, c.values.session, reason=c.values.reason, note=c.values.note,
            event_id=c.values.event_id))),
    Operation("session reap", "Close sessions awaiting input past their idle limit, as expired "
              "(one commit).", writes=True, run=_reap, params=(
        opt("idle", "duration", metavar="DURATION", help=(
            "Close sessions awaiting input this long (default: ledger config "
            "session_idle_seconds, else 24h).")),
        opt("dry_run", "bool", help="Only say what would be closed."))),
    Operation("session stats", "How sessions ended: follow-ups to kept-open sessions, unused "
              "ones, missed keep-opens.", params=(
        opt("window", "duration", default="1h", show_default=True, metavar="DURATION", help=(
            "A one-shot session followed by a new one on its goal within this is a missed "
            "keep-open.")),),
        run=lambda c: sessions.stats(c.ledger, window=c.values.window)),
]


# --- settings ----------------------------------------------------------------------------------


def _config_set(c: Call) -> Any:
    v = c.values
    try:
        roles = config.parse_roles(v.role)
    except UsageError as exc:
        raise ArgumentError(f"--role: {exc}") from None
    config.check_roles(roles)
    try:
        ci_map = config.parse_ci_criteria(v.ci_criterion)
    except UsageError as exc:
        raise ArgumentError(f"--ci-criterion: {exc}") from None
    if v.evidence_ignore and v.no_evidence_ignore:
        raise ArgumentError("give --evidence-ignore or --no-evidence-ignore, not both")
    if v.evidence_scope and v.no_evidence_scope:
        raise ArgumentError("give --evidence-scope or --no-evidence-scope, not both")
    signers = _decoded(v.allowed_signers)
    return c.write(lambda txn: config.set_(
        txn, roles=roles, lease_ttl=v.lease_ttl, session_slots=v.session_slots,
        session_idle=v.session_idle,
        signed_answers=config.parse_signed_answers(v.signed_answers)
        if v.signed_answers else None,
        allowed_signers=signers,
        evidence_ignore=[] if v.no_evidence_ignore else (list(v.evidence_ignore) or None),
        evidence_scope=[] if v.no_evidence_scope else (list(v.evidence_scope) or None),
        ci_criteria=ci_map))


def _decoded(data: Any) -> Optional[str]:
    if data is None or isinstance(data, str):
        return data
    return bytes(data).decode("utf-8", errors="replace")


def _config_show(c: Call) -> Any:
    return config.effective(c.ledger)


def _signer_add(c: Call) -> Any:
    v = c.values
    key_text = _decoded(v.key) or ""
    event, first = c.write(lambda txn: config.add_signer(txn, v.identity, key_text,
                                                           event_id=v.event_id))
    return {"event": event, "first": first,
            "fingerprint": config.Signer(v.identity, config.public_key(key_text)).fingerprint}


IDENTITY = arg("identity", pattern=ACTOR_PATTERN, help="Whose key it is.")

SETTINGS_OPS = [
    Operation("config set", "Change ledger settings.", writes=True, run=_config_set, params=(
        opt("role", many=True, dest="roles", metavar="NAME=ACTOR[,ACTOR]", max_items=50, help=(
            "Who holds a role, e.g. maintainer=human:alice@example.com (replaces it).")),
        opt("lease_ttl", "duration", metavar="DURATION", lo=LEASE_TTL_MIN_S, hi=LEASE_TTL_MAX_S,
            field="config.set:lease_ttl_seconds", help="Default lease length, e.g. 45m."),
        opt("session_slots", "int", lo=1, hi=SESSION_SLOTS_MAX, field="config.set:session_slots",
            help="Open sessions per owner."),
        opt("session_idle", "duration", metavar="DURATION", lo=SESSION_IDLE_MIN_S, hi=MAX_SECONDS,
            field="config.set:session_idle_seconds", help=(
            "How long a session may await input before `session reap` closes it.")),
        opt("signed_answers", metavar="all|off|GATE,...", max_length=TEXT_MAX, help=(
            "Require signed commits for gate answers (all, off, or gate ids).")),
        opt("allowed_signers", "file", dest="signers_file", max_length=1_000_000, help=(
            "An ssh allowed_signers file whose keys may sign answers. (MCP: its text.)")),
        opt("evidence_ignore", many=True, dest="ignore", metavar="GLOB", max_items=REFS_MAX,
            pattern=GLOB_PATTERN,
            help=("Paths whose changes leave evidence fresh unless it (or its criterion) names "
                  "its own paths, e.g. 'docs/**' (repeatable; replaces the list).")),
        opt("no_evidence_ignore", "bool", dest="no_ignore", help="Clear the evidence ignore list."),
        opt("evidence_scope", many=True, dest="scope", metavar="GLOB", max_items=REFS_MAX,
            pattern=GLOB_PATTERN,
            help=("The repository's default evidence scope: the paths evidence is judged on "
                  "when neither it nor its criterion names its own, e.g. 'src/**' (repeatable; "
                  "replaces the list). Default: the whole tree.")),
        opt("no_evidence_scope", "bool", dest="no_scope",
            help="Judge unscoped evidence on the whole tree again."),
        opt("ci_criterion", many=True, dest="ci_specs", metavar="CHECK=GOAL:CRITERION",
            max_items=REFS_MAX, help=(
                "A CI check whose result meets (or un-meets) a criterion (repeatable; CHECK= "
                "removes the check's mapping).")))),
    Operation("config show", "Show ledger settings.", run=_config_show),
    Operation("signer add", "List IDENTITY's ssh key in the ledger's allowed signers.\n\nThe "
              "first key is trusted on first use (nothing vouches for it: check it is theirs) "
              "and turns signing on: from then on every authority act (gate decisions, "
              "overrides, finishing gated work, changes to roles, signers or policy) counts "
              "only in a commit signed by its actor's listed key, and later `signer "
              "add`/`remove` are themselves signed.", writes=True, run=_signer_add,
              shape=lambda done: done["event"], params=(
        IDENTITY,
        opt("key", "file", dest="key_file", required=True, max_length=100_000, help=(
            "IDENTITY's ssh public key (the .pub file), e.g. ~/.ssh/id_ed25519.pub. (MCP: its "
            "text.)")),
        EVENT_ID)),
    Operation("signer remove", "Take IDENTITY's keys off the ledger's allowed signers (a signed "
              "change).", writes=True, params=(IDENTITY, EVENT_ID),
              run=lambda c: c.write(lambda txn: config.remove_signer(
                  txn, c.values.identity, event_id=c.values.event_id))),
    Operation("signer list", "The listed keys: identity, key type and fingerprint.",
              wrap="signers", run=lambda c: [
                  {"identity": s.identity, "key": s.key, "fingerprint": s.fingerprint}
                  for s in config.signers(config.effective(c.ledger).allowed_signers)]),
]

OPERATIONS = EVIDENCE_OPS + RECORD_OPS + SESSION_OPS + SETTINGS_OPS
