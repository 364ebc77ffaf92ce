"""The fold: events, ordered by ``(clock, id)``, into the ledger's state.

Never crashes on a ledger: an event that is illegal where it falls in the order is skipped and
reported with its reason. The same set of events gives the same state in any merge order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, cast

from loopx.projection import appliers, checks
from loopx.projection.entities import Fold, Problem

if TYPE_CHECKING:
    from loopx.model.events import Event, TodoClaimed

# A Lamport clock grows by at most one per event, so in a whole ledger an event's clock is at
# most 1 + the number of events ordered before it. Lost events (pruned, deleted) leave gaps:
# replay allows this much more. A clock beyond that is a problem event, and it never becomes
# the floor the next write's clock is counted from (docs/reliability.md).
MAX_CLOCK_LEAD = 100_000
# How many writers the fold remembers the latest-dated event of (Fold.clocks): the ones dated
# latest, which are the ones a clock running fast shows up as. A bound, so that a ledger with
# many writers does not make every write carry them all.
CLOCK_LEADERS = 16


def apply(fold: Fold, event: Event) -> Optional[str]:
    """Apply one event in order; returns the reason it was refused (listed under problems)."""
    env = event.env  # (replay applies every event: its fields read once)
    clock = env.clock
    ahead = clock_ahead(fold.events, clock)
    count(fold, event, floor=ahead is None)
    if ahead is not None:
        fold.problems.append(Problem(env.id, env.type, env.actor, clock, ahead))
        return ahead
    if not event.known:
        fold.unknown.append({"event": env.id, "type": env.type, "v": env.v})
        return None
    reason = checks.check(fold, event)
    if reason is not None:
        if _note_contest(fold, event):  # two claims crossed in a merge: this one lost
            reason += " (contested)"
        fold.problems.append(Problem(env.id, env.type, env.actor, clock, reason))
        return reason
    appliers.apply(fold, event)
    return None


def apply_checked(fold: Fold, event: Event) -> None:
    """Apply an event the caller has just checked (the write path: one check per event)."""
    count(fold, event)
    if event.known:
        appliers.apply(fold, event)


def count(fold: Fold, event: Event, *, floor: bool = True) -> None:
    """What every event adds to the fold, applied or not: its count, order key and (unless
    its clock is far ahead, ``floor`` False) the highest clock."""
    env = event.env  # (replay counts every event: its fields read once, no max() calls)
    fold.events += 1
    if floor and env.clock > fold.max_clock:
        fold.max_clock = env.clock
    key = event.sort_key()
    if key > fold.last_key:
        fold.last_key = key
    _note_date(fold, env.actor, env.at, env.id)


def _note_date(fold: Fold, actor: str, at: str, event_id: str) -> None:
    """Keep ``fold.clocks``: the latest-dated event (by ``at``, then id) of each of the
    CLOCK_LEADERS writers dated latest. The same events give the same entries in any order: a
    writer's entry only ever moves later, and one pushed out by later-dated writers could only
    come back with a date later than any it had."""
    held = fold.clocks.get(actor)
    if held is not None:
        # (_when(held[0]), held[1]) >= (_when(at), event_id), without building either
        when, held_when = _when(at), _when(held[0])
        if held_when > when or (held_when == when and held[1] >= event_id):
            return
    elif len(fold.clocks) >= CLOCK_LEADERS:
        lowest = min(fold.clocks, key=lambda a: (_when(fold.clocks[a][0]), a))
        if (_when(fold.clocks[lowest][0]), lowest) >= (_when(at), actor):
            return
        del fold.clocks[lowest]
    fold.clocks[actor] = [at, event_id]


def _when(at: str) -> str:
    """An order key of an envelope's ``at`` without parsing it (replay meets one per event):
    every ``at`` is UTC, fixed-width to the second and ends in ``Z`` (TS_PATTERN), so the text
    before the ``Z`` sorts as the time does (a fraction of a second sorts after none)."""
    return at[:-1]


def clock_ahead(events_before: int, clock: int) -> Optional[str]:
    """Why ``clock`` is too far ahead of a ledger with ``events_before`` events, or None."""
    limit = events_before + 1 + MAX_CLOCK_LEAD
    if clock <= limit:
        return None
    return (f"clock {clock} is far ahead of the ledger ({events_before} events before it; at "
            f"most {limit}): not applied, and not counted as the ledger's clock")


def _note_contest(fold: Fold, event: Event) -> bool:
    """A claim that lost to someone else's lease (two claims crossed in a merge): the todo
    shows who else wanted it. True when it was such a claim."""
    if event.type != "todo.claimed":
        return False
    todo = fold.todos.get(cast("TodoClaimed", event.data).id)
    if todo is None or not todo.holder or todo.holder == event.env.actor:
        return False
    if event.env.actor not in todo.contested_by:
        todo.contested_by.append(event.env.actor)
    return True


def replay(events: list[Event], fold: Optional[Fold] = None) -> Fold:
    """Fold events (in any order given) into a state; ``fold`` continues an earlier one."""
    fold = fold or Fold()
    for event in sorted(events, key=lambda event: event.sort_key()):
        apply(fold, event)
    return fold
