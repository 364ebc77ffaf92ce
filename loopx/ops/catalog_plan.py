"""The declarations of planning: goals, todos, gates, notes and notices (see
:mod:`loopx.ops.declare`; every interface derives its part from these)."""

from __future__ import annotations

from typing import Any

from loopx.errors import ArgumentError, LoopxError
from loopx.model.limits import (
    ACTOR_PATTERN, LINK_PATTERN, LINKS_MAX, PRIORITY_MAX, PRIORITY_MIN, TITLE_MAX,
)
from loopx.ops import gates, goals, notes, notices, todos
from loopx.ops.declare import (
    EVENT_ID, LABEL_FILTER, REFS_MAX, Call, Operation, Param, arg, labels, opt, page, paged_note,
    paging, ref, text,
)
from loopx.projection import compact

TODO = ref("todo", positional=True, dest="todo_id", help="The todo (an id or a unique prefix).")
GOAL = ref("goal", positional=True, dest="goal_id", help="The goal (an id or a unique prefix).")
GATE = ref("gate", positional=True, dest="gate_id", help="The gate (an id or a unique prefix).")
ON_TODO = ref("todo", dest="todo_id", metavar="TODO", help="The todo it is about.")
ON_GOAL = ref("goal", dest="goal_id", metavar="GOAL", help="The goal it is about.")
REASON = text("reason", help="Why (shown in history).")
ALL = opt("all", "bool", dest="show_all", help="Include the closed ones.")


def priority(help: str, field: str) -> Param:
    return opt("priority", "int", lo=PRIORITY_MIN, hi=PRIORITY_MAX,
               metavar=f"{PRIORITY_MIN}-{PRIORITY_MAX}", help=help, field=field)


# --- goals -------------------------------------------------------------------------------------


def _scopes(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for crit, glob in pairs:
        found.setdefault(crit, []).extend([glob] if glob else [])  # '' clears the scope
    return found


def _goal_update(c: Call) -> Any:
    v = c.values
    revised = dict(v.revise)
    if len(revised) != len(v.revise):
        raise ArgumentError("revise each criterion once (--revise)")
    return c.write(lambda txn: goals.update(
        txn, v.goal, title=v.title, description=v.description, accept=v.accept, state=v.state,
        revise=revised, retire=v.retire, scope=_scopes(v.scope), links=v.link,
        event_id=v.event_id))


def _goal_close(c: Call) -> Any:
    v = c.values
    if v.outcome is None:
        raise ArgumentError("say --achieved or --abandoned")
    return c.write(lambda txn: goals.close(txn, v.goal, outcome=v.outcome, reason=v.reason,
                                           override=v.override, event_id=v.event_id))


# An issue or pull request, its state shown by status (environment.links), never recorded.
LINK = opt("link", many=True, max_items=LINKS_MAX, metavar="github:OWNER/REPO#N",
           pattern=LINK_PATTERN, max_length=220, help=(
               "An issue or pull request it is about (repeatable); status shows its state "
               "(open, closed, merged, review requested)."))


GOAL_OPS = [
    Operation("goal add", "Create a goal with acceptance criteria.", writes=True, params=(
        text("title", positional=True, most=TITLE_MAX, field="goal.created:title",
             help="The goal's title."),
        ref("id", dest="goal_id", help="Id to use (default: a generated g-xxxxxx)."),
        text("accept", many=True, max_items=REFS_MAX, metavar="TEXT", help=(
            "An acceptance criterion (repeatable); ids a1, a2, ... in order.")),
        opt("scope", "pair", many=True, max_items=REFS_MAX, metavar="CRITERION GLOB", help=(
            "A path its evidence is judged on (repeatable), e.g. --scope a1 'src/**'.")),
        text("description", help="Longer text.", field="goal.created:description"),
        LINK, EVENT_ID),
        run=lambda c: c.write(lambda txn: goals.add(
            txn, c.values.title, id=c.values.id, accept=c.values.accept,
            scope=_scopes(c.values.scope), description=c.values.description,
            links=c.values.link, event_id=c.values.event_id))),
    Operation("goal update", "Change a goal's title, description or state; add, revise, retire "
              "or scope criteria.", writes=True, run=_goal_update, params=(
        GOAL,
        text("title", most=TITLE_MAX, help="A new title.", field="goal.updated:title"),
        text("description", help="A new description.", field="goal.updated:description"),
        text("accept", many=True, max_items=REFS_MAX, metavar="TEXT",
             help="Add an acceptance criterion."),
        opt("revise", "pair", many=True, max_items=REFS_MAX, metavar="CRITERION TEXT", help=(
            "New text for a criterion; evidence recorded before no longer counts for it.")),
        ref("retire", many=True, metavar="CRITERION",
            help="A criterion that no longer needs evidence."),
        opt("scope", "pair", many=True, max_items=REFS_MAX, metavar="CRITERION GLOB", help=(
            "The paths a criterion's evidence is judged on (repeatable; replaces them; '' "
            "clears them: the whole tree less the ledger's evidence_ignore).")),
        opt("state", "switch", switches=(("--pause", "paused", "Pause the goal."),
                                         ("--resume", "active", "Resume a paused goal.")),
            help="paused or active"),
        LINK, EVENT_ID)),
    Operation("goal close", "Close a goal as achieved or abandoned.", writes=True,
              run=_goal_close, params=(
        GOAL,
        opt("outcome", "switch", switches=(
            ("--achieved", "achieved", "Every criterion is met."),
            ("--abandoned", "abandoned", "Give the goal up.")), help="achieved or abandoned"),
        text("reason", help="Why (shown in history; needed with --override).",
             field="goal.closed:reason"),
        opt("override", "bool", help=(
            "Achieved although criteria lack fresh passing evidence (a human decision, with "
            "--reason).")),
        EVENT_ID)),
    Operation("goal list", "List goals.", wrap="goals", params=(
        opt("all", "bool", dest="show_all", help="Include achieved and abandoned goals."),),
        run=lambda c: goals.listing(c.ledger, include_closed=c.values.all, now=c.now)),
    Operation("goal show", "Show one goal: criteria with evidence, its todos and gates.",
              params=(GOAL,), run=lambda c: goals.show(c.ledger, c.values.goal, now=c.now)),
]


# --- todos -------------------------------------------------------------------------------------

TTL = opt("ttl", "duration", metavar="DURATION", help=(
    "Lease length, e.g. 45m (default: ledger config, else 45m)."))


def _todo_update(c: Call) -> Any:
    v = c.values
    if not (v.title or v.description or v.after or v.gate or v.priority is not None):
        raise ArgumentError("nothing to change: give --title, --description, --priority, --after "
                         "or --gate")
    return c.write(lambda txn: todos.update(
        txn, v.todo, title=v.title, description=v.description, after=v.after, gates=v.gate,
        priority=v.priority, event_id=v.event_id))


def _todo_claim(c: Call) -> Any:
    v = c.values
    if v.sync:
        c.standalone("todo claim --sync")
        found, _ = todos.claim_synced(c.ledger, v.todo, actor=c.who(), ttl=v.ttl, now=c.now,
                                      event_id=v.event_id)
        return found
    return c.write(lambda txn: todos.claim(txn, v.todo, ttl=v.ttl, event_id=v.event_id))


def _todo_list(c: Call) -> Any:
    v = c.values
    found = todos.listing(c.ledger, goal=v.goal, ready=v.ready, include_closed=v.all,
                          priority=v.priority, state=v.state,
                          claimant=c.who() if v.mine else v.claimed_by, labels=v.label,
                          assignee=v.assigned_to, now=c.now)
    return page(found, v)


def _todo_assign(c: Call) -> Any:
    v = c.values
    if (v.who is None) == (not v["clear"]):  # v.clear is dict.clear
        raise ArgumentError("give WHO to assign the todo to, or --clear (not both)")
    return c.write(lambda txn: todos.assign(txn, v.todo, v.who, event_id=v.event_id))


def _todo_label(c: Call) -> Any:
    v = c.values
    if not (v.add or v.remove):
        raise ArgumentError("nothing to change: give --add LABEL or --remove LABEL")
    return c.write(lambda txn: todos.label(txn, v.todo, add=v.add, remove=v.remove,
                                           event_id=v.event_id))


IDENTITY_HELP = "An identity: human:alice@example.com, agent:codex@devbox (not a role)."


def _release(verb: str) -> Any:
    fn = getattr(todos, verb)
    return lambda c: c.write(lambda txn: fn(txn, c.values.todo, reason=c.values.reason,
                                            event_id=c.values.event_id))


TODO_OPS = [
    Operation("todo add", "Add a todo to GOAL_ID.", writes=True, params=(
        GOAL,
        text("title", positional=True, most=TITLE_MAX, field="todo.added:title",
             help="The todo's title."),
        ref("id", dest="todo_id", help="Id to use (default: a generated t-xxxxxx)."),
        ref("after", many=True, metavar="TODO", help="A todo this one waits for."),
        ref("gate", many=True, metavar="GATE", help="A gate that must be approved first."),
        ref("criterion", many=True, metavar="ID", help="An acceptance criterion it serves."),
        text("description", help="Longer text.", field="todo.added:description"),
        priority("0 most urgent .. 4 least (default 2); orders the frontier and `next`.",
                 "todo.added:priority"),
        ref("discovered_from", metavar="TODO", help="The todo whose work turned this one up."),
        labels("label", "A label to filter by (repeatable), e.g. area:cli."),
        LINK,
        text("needs", many=True, most=200, max_items=20, metavar="TOOL[>=VERSION],...", help=(
            "Tools the host that works on it must have on PATH (python>=3.11,docker; "
            "repeatable); `next` offers it only on a host that has them.")),
        EVENT_ID),
        run=lambda c: c.write(lambda txn: todos.add(
            txn, c.values.goal, c.values.title, id=c.values.id, after=c.values.after,
            gates=c.values.gate, criteria=c.values.criterion,
            description=c.values.description, priority=c.values.priority,
            discovered_from=c.values.discovered_from, labels=c.values.label,
            links=c.values.link,
            needs=c.values.needs,
            event_id=c.values.event_id))),
    Operation("todo update", "Change a todo's title, description or priority, or add "
              "dependencies and gates.", writes=True, run=_todo_update, params=(
        TODO,
        text("title", most=TITLE_MAX, help="A new title.", field="todo.updated:title"),
        text("description", help="A new description.", field="todo.updated:description"),
        ref("after", many=True, metavar="TODO", help="Also wait for this todo (refuses cycles)."),
        ref("gate", many=True, metavar="GATE", help="Also require this gate's approval."),
        priority("A new priority: 0 most urgent .. 4 least.", "todo.updated:priority"),
        EVENT_ID)),
    Operation("todo depend", "Make a todo wait for other todos (refuses cycles); same as `todo "
              "update --after`.", writes=True, tool=None, params=(
        TODO, ref("on", many=True, metavar="TODO", required=True, help="Todo to wait for."),
        EVENT_ID),
        run=lambda c: c.write(lambda txn: todos.update(txn, c.values.todo, after=c.values.on,
                                                       event_id=c.values.event_id))),
    Operation("todo label", "Add labels to a todo or take them off.", writes=True,
              run=_todo_label, params=(
        TODO, labels("add", "A label to add (repeatable)."),
        labels("remove", "A label to take off (repeatable)."), EVENT_ID)),
    Operation("todo assign", "Say who is meant to do a todo: `next` offers it to them first "
              "and to nobody else. Takes no lease (`todo handoff` moves one).", writes=True,
              run=_todo_assign, params=(
        TODO, arg("who", required=False, pattern=ACTOR_PATTERN, max_length=233,
                  metavar="WHO", help=IDENTITY_HELP),
        opt("clear", "bool", help="Assign it to nobody in particular."), EVENT_ID)),
    Operation("todo handoff", "Hand your lease on a todo to WHO: they hold it from now (and "
              "are its assignee), you no longer do. A human may hand on anyone's lease.",
              writes=True, params=(
        TODO, opt("to", required=True, pattern=ACTOR_PATTERN, max_length=233, metavar="WHO",
                  help=IDENTITY_HELP),
        text("note", field="todo.handed_off:note", help="What the new holder should know."),
        TTL, EVENT_ID),
        run=lambda c: c.write(lambda txn: todos.handoff(
            txn, c.values.todo, c.values.to, note=c.values.note, ttl=c.values.ttl,
            event_id=c.values.event_id))),
    Operation("todo release", "Give up your claim on a todo.", writes=True,
              run=_release("release"),
              params=(TODO, text("reason", field="todo.released:reason"), EVENT_ID)),
    Operation("todo done", "Mark a todo done, on passing evidence that still vouches for the "
              "code (cited, else the latest recorded for it), or with --reason saying why not.",
              writes=True, params=(
        TODO, ref("evidence", many=True, metavar="ID", help="Evidence id (repeatable)."),
        text("summary", field="todo.done:summary", help="What was done."),
        text("reason", metavar="TEXT", help=(
            "Why it is done without passing, fresh evidence (recorded and shown).")),
        EVENT_ID),
        run=lambda c: c.write(lambda txn: todos.done(
            txn, c.values.todo, evidence=c.values.evidence, summary=c.values.summary,
            reason=c.values.reason, event_id=c.values.event_id))),
    Operation("todo ack", "Acknowledge decisions made since you claimed a todo: you have "
              "re-planned with them.", writes=True, params=(
        TODO, ref("gate", many=True, dest="gates", metavar="GATE", help=(
            "The decision to acknowledge (repeatable; default: all of them).")), EVENT_ID),
        run=lambda c: c.write(lambda txn: todos.ack(txn, c.values.todo, gates=c.values.gate,
                                                    event_id=c.values.event_id))),
    Operation("todo block", "Mark a todo blocked, with the reason.", writes=True, params=(
        TODO, text("reason", required=True, field="todo.blocked:reason",
                   help="Why it cannot go on."), EVENT_ID),
        run=lambda c: c.write(lambda txn: todos.block(txn, c.values.todo,
                                                      reason=c.values.reason,
                                                      event_id=c.values.event_id))),
    Operation("todo reopen", "Reopen a done, blocked or cancelled todo.", writes=True,
              run=_release("reopen"),
              params=(TODO, text("reason", field="todo.reopened:reason"), EVENT_ID)),
    Operation("todo cancel", "Cancel a todo.", writes=True, run=_release("cancel"),
              params=(TODO, text("reason", field="todo.cancelled:reason"), EVENT_ID)),
    Operation("todo claim", "Claim a todo: a lease that expires unless renewed.", writes=True,
              run=_todo_claim, params=(
        TODO, TTL,
        opt("sync", "bool", dest="synced", help=(
            "Count only once the remote has it; fails if someone else's claim got there "
            "first.")),
        EVENT_ID)),
    Operation("todo renew", "Extend your lease on a todo.", writes=True,
              params=(TODO, TTL, EVENT_ID),
              run=lambda c: c.write(lambda txn: todos.renew(txn, c.values.todo,
                                                            ttl=c.values.ttl,
                                                            event_id=c.values.event_id))),
    Operation("todo list", "List todos with their state and why they are not ready (ledger "
              "order), a page at a time.", agent_note=paged_note("todos"), wrap="todos", run=_todo_list, params=(
        ref("goal", dest="goal_id", help="Only this goal's todos."),
        opt("ready", "bool", help="Only the frontier (ready to work on), in its order."),
        opt("all", "bool", dest="show_all", help="Include done and cancelled todos."),
        opt("priority", "int", many=True, lo=PRIORITY_MIN, hi=PRIORITY_MAX, max_items=5,
            metavar=f"{PRIORITY_MIN}-{PRIORITY_MAX}",
            help="Only todos of this priority (repeatable)."),
        opt("state", "choice", choices=todos.STATES, help="Only todos in this state."),
        opt("claimed_by", dest="claimant", metavar="ACTOR", pattern=ACTOR_PATTERN,
            help="Only todos this actor holds."),
        opt("mine", "bool", help="Only todos you hold (same as --claimed-by YOU)."),
        LABEL_FILTER,
        opt("assigned_to", metavar="ACTOR", pattern=ACTOR_PATTERN,
            help="Only todos assigned to this actor."),
        *paging("todos", compact.TODO_PAGE))),
    Operation("todo show", "Show one todo.", params=(TODO,),
              run=lambda c: todos.show(c.ledger, c.values.todo, now=c.now)),
]


# --- gates -------------------------------------------------------------------------------------


def _gate_open(c: Call) -> Any:
    v = c.values
    target = None
    if v.notify:  # where to comment is told first: bad input writes nothing
        c.standalone("gate open --notify")
        target = gates.notify_target(c.ledger.fold(), v.goal, v.blocks, v.notify)
    event = c.write(lambda txn: gates.open_(
        txn, v.goal, v.question, authority=v.authority, blocks=v.blocks, id=v.id,
        event_id=v.event_id))
    if target is not None:
        try:
            gates.notify_github(c.ledger, event.data.id, target=target, actor=c.who(), now=c.now)
        except LoopxError as exc:
            raise LoopxError(f"gate {event.data.id} is open, but asking on {target} failed: "
                             f"{exc} (retry: git loopx effect comment, or answer it here)") from None
    return event


def _gate_answer(c: Call) -> Any:
    v = c.values
    chosen = [name for name, given in (("approve", v.approve), ("reject", v.reject),
                                       ("answer", v.answer is not None)) if given]
    if len(chosen) != 1:
        raise ArgumentError("say exactly one of --approve, --reject or --answer TEXT")
    return c.write(lambda txn: gates.answer(
        txn, v.gate, decision=chosen[0], answer=v.answer, comment=v.comment,
        supersede=v.supersede, event_id=v.event_id), sign=v.sign)


GATE_OPS = [
    Operation("gate open", "Ask QUESTION of an authority; the todos it blocks wait for "
              "approval. Ask instead of guessing.", writes=True, params=(
        GOAL, text("question", positional=True, field="gate.opened:question",
                   help="What the authority is asked."),
        ref("id", dest="gate_id", help="Id to use (default: a generated q-xxxxxx)."),
        opt("authority", many=True, required=True, metavar="WHO", pattern=ACTOR_PATTERN,
            max_items=50, help=(
                "Who may answer: an identity (human:alice@example.com) or role:NAME.")),
        ref("blocks", many=True, metavar="TODO", help="A todo that waits for approval."),
        opt("notify", metavar="github[:OWNER/REPO#N]", max_length=220,
            pattern=r"^github(:[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+#[1-9][0-9]*)?$", help=(
                "Also ask it as a comment on GitHub, mentioning the authority: on the issue or "
                "pull request named, or (github) the first one the blocked todos or the goal "
                "link to. An effect: a retry never posts twice. Token: $GITHUB_TOKEN.")),
        EVENT_ID), run=_gate_open),
    Operation("gate answer", "Answer a gate (only its authority may): --approve, --reject or "
              "--answer TEXT.\n\nTwo answers that did not see each other leave the gate "
              "conflicted (its todos wait); the authority resolves it by answering again with "
              "--supersede.", writes=True, run=_gate_answer, params=(
        GATE, opt("approve", "bool", help="Approve."), opt("reject", "bool", help="Reject."),
        text("answer", metavar="TEXT", help="A free answer.", field="gate.answered:answer"),
        text("comment", help="A comment that goes with the decision.",
             field="gate.answered:comment"),
        opt("sign", "bool", help=(
            "Sign the commit (git's user.signingkey); automatic when the ledger config "
            "requires signed answers.")),
        opt("supersede", "bool", help=(
            "Replace the decision(s) the gate already has (also resolves a conflict).")),
        EVENT_ID)),
    Operation("gate withdraw", "Withdraw a question that no longer needs an answer (its opener "
              "or authority only).", writes=True, params=(
        GATE, text("reason", field="gate.withdrawn:reason", help="Why it is withdrawn."),
        opt("supersede", "bool", help="Withdraw a gate that already has a decision."),
        EVENT_ID),
        run=lambda c: c.write(lambda txn: gates.withdraw(
            txn, c.values.gate, reason=c.values.reason, supersede=c.values.supersede,
            event_id=c.values.event_id))),
    Operation("gate list", "List gates.", wrap="gates", params=(
        opt("all", "bool", dest="show_all", help="Include answered and withdrawn gates."),),
        run=lambda c: gates.listing(c.ledger, include_closed=c.values.all, now=c.now)),
    Operation("gate show", "Show one gate: its question, authority, state and answer.",
              params=(GATE,), run=lambda c: gates.show(c.ledger, c.values.gate, now=c.now)),
]


# --- notes and notices ------------------------------------------------------------------------


def _dismiss(c: Call) -> Any:
    v = c.values
    if v.events and v.all:
        raise ArgumentError("give EVENT ids or --all, not both")
    return c.write(lambda txn: notices.dismiss(txn, v.events, every=v.all,
                                               event_id=v.event_id))


NOTE_OPS = [
    Operation("note add", "Add a note: for whoever comes next, on a todo or goal.",
              writes=True, params=(
        text("text", positional=True, help="The note."), ON_TODO, ON_GOAL, EVENT_ID),
        run=lambda c: c.write(lambda txn: notes.add(txn, c.values.text, todo=c.values.todo,
                                                    goal=c.values.goal,
                                                    event_id=c.values.event_id))),
    Operation("note list", "List notes, newest first, a page at a time.", wrap="notes",
              agent_note=paged_note("notes"), params=(
        ref("todo", dest="todo_id", metavar="TODO", help="Only the notes on this todo."),
        ref("goal", dest="goal_id", metavar="GOAL", help="Only the notes on this goal."),
        *paging("notes")),
        run=lambda c: page(notes.listing(c.ledger, todo=c.values.todo,
                                         goal=c.values.goal)[::-1], c.values)),
    Operation("notice list", "Your events that were not applied, and why (dismissed ones with "
              "--all).", wrap="notices", params=(
        opt("all", "bool", dest="show_all", help="Include dismissed notices."),),
        run=lambda c: notices.listing(c.ledger, actor=c.who(),
                                      include_dismissed=c.values.all)),
    Operation("notice dismiss", "Dismiss notices (by the id, or a unique prefix, of the event "
              "that was not applied): they leave `status` and `next`. The events stay in the "
              "ledger, listed under problems.", writes=True, run=_dismiss, params=(
        arg("events", many=True, required=False, metavar="EVENT...", max_length=26,
            max_items=REFS_MAX, help="The events whose notices go."),
        opt("all", "bool", dest="every", help="Dismiss all your notices still showing."),
        EVENT_ID)),
]

OPERATIONS = GOAL_OPS + TODO_OPS + GATE_OPS + NOTE_OPS
