"""Effects: external writes, intended before the call and confirmed or failed after. An
intent with no outcome is indeterminate: read the target back before retrying."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Optional

from loopx.errors import LoopxError, UsageError
from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.model import clock, typed
from loopx.model.ids import new_short_id
from loopx.ops import lookup
from loopx.projection import answers, environment, views
from loopx.recovery import readback

if TYPE_CHECKING:
    from loopx.ledger.txn import Txn
    from loopx.model.events import (
        Event, EffectConfirmed, EffectFailed, EffectIntended,
    )


DEFAULT_GRACE_S = 60  # a write is usually visible within a minute of the call
DEFAULT_HOLD_S = 30 * 60  # then the owner has half an hour before anyone else reads it back


def intend(txn: Txn, target: str, *, action: str, key: Optional[str] = None,
           todo: Optional[str] = None, goal: Optional[str] = None, id: Optional[str] = None,
           readback: Optional[str] = None, owner: Optional[str] = None,
           grace: Optional[int] = None, hold: Optional[int] = None,
           event_id: Optional[str] = None) -> Event[EffectIntended]:
    """Record the intent to write to ``target``, before making the call.

    With a ``readback``, its ``owner`` (default: the writer) reads it back ``grace`` seconds
    after the intent when no outcome is recorded by then, and anyone may once ``hold`` has
    passed too (:func:`read_back`)."""
    tid = lookup.optional(txn.fold.todos, todo, "todo")
    xid = id or new_short_id("x", event_id)
    data: dict[str, Any] = {"id": xid, "target": target, "action": action,
                            "idempotency_key": key or xid, "todo": tid}
    if readback is not None or owner is not None or grace is not None or hold is not None:
        grace = DEFAULT_GRACE_S if grace is None else grace
        data.update(readback=readback, owner=owner, grace=grace,
                    hold=max(grace, DEFAULT_HOLD_S if hold is None else hold))
    return txn.add(Draft("effect.intended", data, lookup.goal_of(txn.fold, goal, tid), event_id))


def confirm(txn: Txn, effect: str, *, receipt: str, event_id: Optional[str] = None) -> Event[EffectConfirmed]:
    """Record that an intended effect happened, with proof (e.g. the URL created)."""
    return lookup.about(txn, "effects", effect, "effect", "effect.confirmed",
                        {"receipt": receipt}, event_id)


def fail(txn: Txn, effect: str, *, error: str, final: bool = False,
         event_id: Optional[str] = None) -> Event[EffectFailed]:
    """Record that an intended effect did not happen (``final``: not worth retrying)."""
    return lookup.about(txn, "effects", effect, "effect", "effect.failed",
                        {"error": error, "retryable": not final}, event_id)


def listing(ledger: Ledger, *, now: Optional[datetime] = None) -> list[answers.Effect]:
    """Every effect with its state (indeterminate, confirmed or failed)."""
    ledger.require()
    return [typed.build(answers.Effect, e)
            for e in views.snapshot(ledger.fold(), now or clock.now())["effects"]]


def read_back(ledger: Ledger, effect: str, *, actor: str,
              now: Optional[datetime] = None) -> environment.ReadBack:
    """Read ``effect`` back now (bounded in time) and record ``effect.confirmed`` with its
    receipt when found; otherwise it stays indeterminate. What was seen:
    ``{state, receipt, evidence, recorded}`` (``recorded``: the confirmation's event id)."""
    fold = ledger.fold()
    found_id = views.resolve_id(fold.effects, effect, "effect")
    view = views.effect_view(fold.effects[found_id])
    if view["state"] != "indeterminate":
        raise UsageError(f"effect {found_id} is already {view['state']}")
    if not view.get("readback"):
        raise UsageError(f"effect {found_id} has no readback: confirm or fail it by hand "
                         "after looking at its target")
    return typed.build(environment.ReadBack, _read_back_one(ledger, view, actor=actor, now=now))


def _read_back_one(ledger: Ledger, view: dict[str, Any], *, actor: str,
                   now: Optional[datetime]) -> dict[str, Any]:
    # Imported on the first readback: every command loads this module (the catalog), and
    # the network modules are its start-up time.
    from loopx.recovery import effects as readbacks

    found = readbacks.read_back(view, repo=ledger.repo,
                                config=readback.read_config(ledger.repo)).as_dict()
    found["recorded"] = None
    if found["state"] == "confirmed":
        event = ledger.run(confirm, view["id"], receipt=found["receipt"], actor=actor, now=now)
        found["recorded"] = event.id
    return found


def read_back_due(ledger: Ledger, effects: list[dict[str, Any]], *, actor: Optional[str],
                  now: datetime) -> dict[str, environment.ReadBack]:
    """Read back every effect of a status snapshot due for ``actor``
    (:func:`loopx.projection.views.effect_due`): effect id -> what was seen. Status and watch call it; a confirmation found is recorded."""
    seen: dict[str, environment.ReadBack] = {}
    for view in effects:
        if actor and views.effect_due(view, actor, now):
            seen[view["id"]] = typed.build(environment.ReadBack,
                                           _read_back_one(ledger, view, actor=actor, now=now))
    return seen


def perform(ledger: Ledger, target: str, *, action: str, key: str, actor: str,
            write: Callable[[], str], readback: Optional[str] = None,
            todo: Optional[str] = None, goal: Optional[str] = None,
            again: bool = True, now: Optional[datetime] = None) -> answers.Effect:
    """Make an external write as an effect: intent, the call, then its outcome. A retry with
    the same ``key`` makes no second call once the first is confirmed; while it is
    indeterminate, the call is made again: ``write`` must find what an earlier call made (as
    :class:`loopx.recovery.githubapi.GitHub`'s writes do, by the key's marker) and answers with
    the receipt (the URL made or found). ``again`` False, for a write that cannot find an
    earlier one (a webhook): a key used before and not failed is refused (TransitionError)."""
    fold = ledger.fold()
    earlier = fold.effect_keys.get(key)
    if again and earlier is not None and fold.effects[earlier].state == "confirmed":
        return _listed(ledger, earlier)
    if not again or earlier is None or fold.effects[earlier].state == "failed":
        xid = ledger.run(intend, target, action=action, key=key, todo=todo, goal=goal,
                         readback=readback, actor=actor, now=now).data.id
    else:
        xid = earlier
    try:
        receipt = write()
    except LoopxError as exc:  # a GitHubError (loopx.recovery.githubapi), or any refusal
        final = getattr(exc, "code", None) in (401, 403, 404, 422)  # asking again cannot help
        ledger.run(fail, xid, error=str(exc), final=final, actor=actor, now=now)
        raise
    ledger.run(confirm, xid, receipt=receipt, actor=actor, now=now)
    return _listed(ledger, xid)


def _listed(ledger: Ledger, xid: str) -> answers.Effect:
    return typed.build(answers.Effect, views.effect_view(ledger.fold().effects[xid]))


def github_comment(ledger: Ledger, target: str, body: str, *, key: str, actor: str,
                   update: bool = False, record: bool = True, goal: Optional[str] = None,
                   todo: Optional[str] = None, now: Optional[datetime] = None) -> environment.Posted:
    """Post ``body`` as a comment on ``target`` (github:OWNER/REPO#N), once per ``key``: a
    retry finds the comment by the key's hidden marker instead of posting again; ``update``
    replaces the body of the comment with that key (one comment kept up to date, e.g. a
    pull request's verdict). ``record``: as an effect in the ledger, read back on GitHub.

    The token comes from ``$GITHUB_TOKEN`` and goes nowhere but the request's header."""
    # Imported on use: every command loads this module, and the network is its start-up time.
    from loopx.recovery import githubapi

    slug, number = githubapi.parse(target)
    if number is None:
        raise UsageError(f"{target} names no issue or pull request: github:OWNER/REPO#N")
    client = githubapi.GitHub.configured(readback.read_config(ledger.repo))
    effect_key = f"{key}:{hashlib.sha256(body.encode()).hexdigest()[:16]}" if update else key
    text = f"{body}\n{githubapi.marker(effect_key)}" if update else body

    def write() -> str:
        return client.comment(slug, number, text, key=key, update=update).url

    if not record:
        return environment.Posted(write(), None)
    effect = perform(ledger, f"github:{slug}#{number}", action="comment", key=effect_key,
                     actor=actor, write=write, readback=f"github:{slug}#{number}", goal=goal,
                     todo=todo, now=now)
    return environment.Posted(str(effect.receipt), effect.id)
