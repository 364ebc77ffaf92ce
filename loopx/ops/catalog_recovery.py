"""The declarations of recovery (status, next, brief, prime), review (log, diff, validate)
and the exchange with the remote (sync, fetch, push); see :mod:`loopx.ops.declare`."""

from __future__ import annotations

import dataclasses
from typing import Any

from loopx.errors import ArgumentError
from loopx.ops import notify, review, status, sync
from loopx.ops.declare import DETAIL, LABEL_FILTER, LIMIT, Call, Operation, arg, opt, ref
from loopx.projection import compact

NO_CI = opt("ci", "bool", flag=None, off="--no-ci", default=True, help="Do not ask CI about HEAD.")
OFFLINE = opt("offline", "bool", help="Use no network (CI from its cache only).")
NO_PAGER = opt("no_pager", "bool", mcp=False, help="Do not page the text on a terminal.")
REMOTE = arg("remote", required=False, max_length=200, help=(
    "The remote (default: the current branch's upstream remote, else origin)."))
UNRELATED = opt("allow_unrelated", "bool", help=(
    "Merge REMOTE's ledger although it shares no history with ours."))


def _status(c: Call) -> Any:
    v = c.values
    return status.status(c.ledger, actor=c.who_or_none(), goal=v.goal, ci=v.ci,
                         offline=v.offline, include_closed=v.all, now=c.now,
                         detail=v.detail, top=v.limit or compact.TOP)


def _next(c: Call) -> Any:
    """The best action; with ``claim``, claim the top ready todo, syncing first when a sync is
    what stands before new work (after a local write with a remote configured), so an agent
    with nothing but this call gets from nothing claimed to claimed."""
    v = c.values
    if v.sync and not v.claim:
        raise ArgumentError("--sync goes with --claim")
    actor = c.who() if v.claim else (c.who_or_none() or "")

    def ask() -> status.Next:
        return status.next_action(c.ledger, actor=actor, claim=v.claim, ttl=v.ttl, ci=v.ci,
                                  offline=v.offline, now=c.now, synced=v.sync, labels=v.label)

    found = ask()
    if v.claim and found.claimed is None and found.action is not None \
            and found.action.kind == "sync" and not v.offline:
        sync.sync_(c.ledger, actor=actor)
        found = ask()
    return found


def _brief(c: Call) -> Any:
    v = c.values
    text, snap = status.brief(c.ledger, actor=c.who_or_none(), goal=v.goal, ci=v.ci,
                              offline=v.offline, now=c.now)
    return {"markdown": text, "status": snap}


NO_LEDGER = "This repository has no loopx ledger yet (`git loopx init` starts one).\n"


def _prime(c: Call) -> Any:
    if not c.ledger.exists():
        return {"markdown": NO_LEDGER, "primer": None}
    return status.prime(c.ledger, actor=c.who_or_none(), ci=c.values.ci,
                        offline=c.values.offline, now=c.now)


def _validate(c: Call) -> Any:
    return review.check_range(c.ledger, c.values.range)


def _notify(c: Call) -> Any:
    v = c.values
    return notify.notify(c.ledger, actor=c.who(), webhook=v.webhook,
                         desktop=True if v.desktop else None, cwd=c.cwd or ".", now=c.now)


OPERATIONS = [
    Operation("status", "Goals, acceptance, frontier, gates, leases, the work tree and what to "
              "do next.\n\nOn a terminal the text goes through your pager, as git's does "
              "(GIT_PAGER, core.pager, PAGER, else less with LESS=FRX: one screen prints as "
              "is); never with --json or when stdout is not a terminal.", run=_status,
              agent_note=(
                  "The status document (exactly `git loopx status --format json`): goals, "
                  "todos, the frontier, gates, evidence and its freshness, the environment, "
                  "and the legal next actions for you, most important first. Compact by "
                  "default (your own work, the top `limit` of the frontier, counts for the "
                  "rest under `omitted`); detail=true for everything."), params=(
        ref("goal", dest="goal_id", help="Only this goal."),
        opt("all", "bool", dest="show_all", help=(
            "Include achieved and abandoned goals with their todos, gates and evidence.")),
        DETAIL, dataclasses.replace(LIMIT, help=(
            f"Show the first N todos of the frontier (default {compact.TOP}; not with "
            "--detail).")),
        NO_PAGER, NO_CI, OFFLINE)),
    Operation("next", "The single best action for you (exit 0 do it, 10 wait, 20 nothing "
              "left).", run=_next, writes=True, batch=False, agent_note=(
                  "Answers {action, next_wake, actions, claimed}; `action.kind` starting with "
                  "wait_ means wait, null means nothing left. With claim, a sync that stands "
                  "before new work is done first."), params=(
        opt("claim", "bool", help=(
            "Claim the top frontier todo in the same call, when working on it is the best "
            "action (syncing first when a sync stands before new work).")),
        opt("ttl", "duration", metavar="DURATION", help="Lease length for --claim."),
        opt("sync", "bool", dest="synced", help=(
            "With --claim: the claim counts only once the remote has it (agents on several "
            "hosts).")),
        dataclasses.replace(LABEL_FILTER, help=(
            "New work only among todos that carry this label (repeatable: every one given).")),
        NO_CI, OFFLINE)),
    Operation("brief", "A Markdown handoff packet a new agent can start from with nothing "
              "else.", run=_brief, params=(ref("goal", dest="goal_id", help="Only this goal."),
                                           NO_CI, OFFLINE)),
    Operation("prime", "A short Markdown primer for an agent starting a session (or after "
              "compaction): what loopx is, the commands it needs, and what matters to you now. "
              "Made for session-start hooks: in a repository without a ledger it says so and "
              "exits 0.", run=_prime, params=(
        opt("as_hook", "bool", mcp=False, help=(
            "Print it as a session-start hook's answer, the JSON {hookSpecificOutput: "
            "{hookEventName: SessionStart, additionalContext: MARKDOWN}} that Claude Code, "
            "Codex CLI and Gemini CLI add to the context (`git loopx setup` writes such "
            "hooks).")),
        NO_CI, OFFLINE)),
    Operation("log", "The ledger's history in state terms, newest first, with the commit each "
              "change came in.\n\nRANGE is a revision (default: the state ref) or A..B, as for "
              "`git log`. On a terminal the text goes through your pager, as git's does "
              "(GIT_PAGER, core.pager, PAGER, less).", wrap="commits", params=(
        arg("range", dest="spec", required=False, metavar="[RANGE]", max_length=500,
            help="A revision or A..B."),
        opt("max_count", "int", short="-n", lo=1, help="Show at most N commits."),
        opt("oneline", "bool", mcp=False,
            help="One line per event: commit, actor, what changed."),
        NO_PAGER),
        run=lambda c: review.log(c.ledger, c.values.range, max_count=c.values.max_count)),
    Operation("diff", "What changed in the ledger's state between two commits of a state or "
              "proposal branch.\n\nGoals, acceptance, todos, gates, evidence, leases, config "
              "and the frontier, before and after. A alone compares A with the state ref's tip. "
              "With no argument: what is not pushed yet (origin's state branch..here), else "
              "the last state commit.", params=(
        arg("range", dest="spec", required=False, metavar="[A..B]", max_length=500,
            help="A..B, or A alone."),),
        run=lambda c: review.diff(c.ledger, c.values.range, now=c.now)),
    Operation("validate", "Check a range of state commits before it is merged (CI on pull "
              "requests).\n\nEvery added file is a valid event at a valid path; nothing is "
              "modified or deleted; clocks never go back; every event is legal when replayed; "
              "gate answers come from the gate's authority (signed when the config says so). "
              "Exit 1 on any failure.", run=_validate, params=(
        opt("range", dest="span", metavar="BASE..HEAD", max_length=500, help=(
            "The commits to check, e.g. origin/loopx/state..HEAD (default: a proposal against "
            "loopx/state; loopx/state against origin's, or its whole history).")),)),
    Operation("sync", "Fetch, check and merge REMOTE's loopx/state, then push ours (never "
              "forced).\n\nREMOTE defaults to the current branch's upstream remote, else "
              "origin. A remote state that fails the incoming check is quarantined (see `git "
              "loopx doctor`); local state is untouched. A remote ledger that shares no history "
              "with ours is refused unless --allow-unrelated.", writes=True, batch=False,
              params=(
        REMOTE,
        opt("retries", "int", lo=0, hi=1000, help=(
            "At most this many times fetch, merge and push again when someone pushed first "
            "(default: as often as --patience allows).")),
        opt("patience", "float", lo=0, hi=3600, default=sync.PATIENCE_S, show_default=True,
            help=("Seconds to keep trying while others push first; then give up (our tip "
                  "waits on the remote for the next sync of any clone).")),
        UNRELATED),
        run=lambda c: sync.sync_(c.ledger, remote=c.values.remote,
                                     retries=c.values.retries, patience=c.values.patience,
                                     actor=c.who_or_none(),
                                     allow_unrelated=c.values.allow_unrelated)),
    Operation("fetch", "Fetch, check and merge REMOTE's loopx/state (no push).", writes=True,
              batch=False, params=(REMOTE, UNRELATED),
              run=lambda c: sync.fetch(c.ledger, remote=c.values.remote,
                                           actor=c.who_or_none(),
                                           allow_unrelated=c.values.allow_unrelated)),
    Operation("push", "Push loopx/state to REMOTE, fast-forward only (run `sync` if the remote "
              "moved).", writes=True, batch=False, params=(REMOTE,),
              run=lambda c: sync.push(c.ledger, remote=c.values.remote)),
    Operation("notify", "Tell you what waits on you (gates asking for your answer, sessions "
              "awaiting your instruction) through a webhook or the desktop, each once.\n\n"
              "Each send is an effect (intended, then confirmed with the channel's receipt or "
              "failed): a nudge already sent, or whose outcome is unknown, is not sent again; a "
              "failed one is retried on the next run. Channels default to git config "
              "loopx.notify.webhook (a Slack-compatible URL: JSON {\"text\": ...}) and "
              "loopx.notify.desktop (true: notify-send, where installed).", run=_notify,
              writes=True, batch=False, tool=None, params=(
        opt("webhook", metavar="URL", max_length=2_000, help=(
            "POST each nudge here as Slack-compatible JSON (default: loopx.notify.webhook).")),
        opt("desktop", "bool", help=(
            "Show each nudge as a desktop notification (notify-send; default: "
            "loopx.notify.desktop)."))),
    ),
]
