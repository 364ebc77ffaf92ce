"""`git loopx gate ...`"""

from __future__ import annotations

from typing import Optional

import click

from loopx.cli import render
from loopx.cli.app import App, event_id_option, pass_app
from loopx.ops import gates
from loopx.model.inert import line


@click.group()
def gate() -> None:
    """Gates: questions that wait on a named human authority."""


@gate.command("open")
@click.argument("goal_id")
@click.argument("question")
@click.option("--id", "gate_id", help="Id to use (default: a generated q-xxxxxx).")
@click.option("--authority", multiple=True, required=True, metavar="WHO",
              help="Who may answer: an identity (human:alice@example.com) or role:NAME.")
@click.option("--blocks", multiple=True, metavar="TODO", help="A todo that waits for approval.")
@event_id_option
@pass_app
def gate_open(app: App, goal_id: str, question: str, gate_id: Optional[str],
              authority: tuple[str, ...], blocks: tuple[str, ...], event_id: Optional[str]) -> None:
    """Ask QUESTION of an authority; the todos it blocks wait for approval."""
    event = app.write(lambda txn: gates.open_(txn, goal_id, question, authority=authority,
                                              blocks=blocks, id=gate_id, event_id=event_id))
    app.emit_event(event, f"opened gate {event.data.id}, waiting on {', '.join(authority)}")


@gate.command("answer")
@click.argument("gate_id")
@click.option("--approve", is_flag=True, help="Approve.")
@click.option("--reject", is_flag=True, help="Reject.")
@click.option("--answer", "answer", metavar="TEXT", help="A free answer.")
@click.option("--comment", help="A comment that goes with the decision.")
@click.option("--sign", is_flag=True, help="Sign the commit (git's user.signingkey); automatic "
              "when the ledger config requires signed answers.")
@click.option("--supersede", is_flag=True,
              help="Replace the decision(s) the gate already has (also resolves a conflict).")
@event_id_option
@pass_app
def gate_answer(app: App, gate_id: str, approve: bool, reject: bool, answer: Optional[str],
                comment: Optional[str], sign: bool, supersede: bool,
                event_id: Optional[str]) -> None:
    """Answer a gate (only its authority may): --approve, --reject or --answer TEXT.

    Two answers that did not see each other leave the gate conflicted (its todos wait);
    the authority resolves it by answering again with --supersede.
    """
    chosen = [name for name, given in (("approve", approve), ("reject", reject),
                                       ("answer", answer is not None)) if given]
    if len(chosen) != 1:
        raise click.UsageError("say exactly one of --approve, --reject or --answer TEXT")
    event = app.write(lambda txn: gates.answer(txn, gate_id, decision=chosen[0], answer=answer,
                                               comment=comment, supersede=supersede,
                                               event_id=event_id), sign=sign)
    app.emit_event(event, f"answered gate {event.data.id}: {chosen[0]}")


@gate.command("withdraw")
@click.argument("gate_id")
@click.option("--reason")
@click.option("--supersede", is_flag=True, help="Withdraw a gate that already has a decision.")
@event_id_option
@pass_app
def gate_withdraw(app: App, gate_id: str, reason: Optional[str], supersede: bool,
                  event_id: Optional[str]) -> None:
    """Withdraw a question that no longer needs an answer (its opener or authority only)."""
    event = app.write(lambda txn: gates.withdraw(txn, gate_id, reason=reason,
                                                 supersede=supersede, event_id=event_id))
    app.emit_event(event, f"withdrew gate {event.data.id}")


@gate.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include answered and withdrawn gates.")
@pass_app
def gate_list(app: App, show_all: bool) -> None:
    """List gates."""
    found = gates.listing(app.ledger, include_closed=show_all, now=app.now)
    app.emit(found, lambda: _list_text(found))


def _list_text(found: list[gates.Gate]) -> str:
    if not found:
        return "no open gates"
    return "\n".join(
        f"{g.id:<12} {g.state:<9} {line(g.question)}  "
        + (f"(asks {', '.join(g.authority)})" if g.state == "open"
           else f"({g.decision} by {g.answered_by})" if g.decision
           else "(" + ", ".join(f"{d.decision or 'withdraw'} by {d.actor}"
                                for d in g.conflict) + ")" if g.conflict else "")
        for g in found
    )


@gate.command("show")
@click.argument("gate_id")
@pass_app
def gate_show(app: App, gate_id: str) -> None:
    """Show one gate."""
    found = gates.show(app.ledger, gate_id, now=app.now)
    app.emit(found, lambda: render.fields_text(found))
