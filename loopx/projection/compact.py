"""Answers that fit an agent's context: the status document cut to what a next decision needs
(the actor's own work, the top of the frontier, the actions about them, counts for the rest),
and pages of a long listing. Pure: plain values in, plain values out.

A compact status keeps every field of the full one (docs/status.md), each list shortened, and
adds ``omitted``: what was left out, counted, and the commands that show it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Optional, TypeVar

T = TypeVar("T")

TOP = 10  # frontier todos a compact status shows
CAP = 10  # items of any other list it shows (gates, evidence, sessions, problems ...)
GOALS = 5  # goals it shows (each with its criteria judged)
ACTIONS = 20  # actions it shows, most important first
WAITS = 3  # of them, things to wait for (another's lease, a gate, CI), when nothing else
BLOCKS = 5  # todos a gate's ``blocks`` lists
PAGE = 15  # items of a listing (`note list`, `evidence list`) a page holds unless asked
TODO_PAGE = 12  # todos (larger documents) a page of `todo list` holds: within 8 KB as JSON
# Lists cut to CAP, keeping their order (the snapshot's own, most relevant first or ledger order).
_CAPPED = ("problems", "unknown_events", "wakes")


class Page(list[T]):
    """One page of a listing: its items, and where it sits in the whole (``total`` items,
    this page starting at ``offset``; ``next_offset`` None when it is the last)."""

    def __init__(self, items: Sequence[T], *, total: int, offset: int) -> None:
        super().__init__(items)
        self.total, self.offset = total, offset

    @property
    def next_offset(self) -> Optional[int]:
        end = self.offset + len(self)
        return end if end < self.total else None


def page(items: Sequence[T], *, limit: Optional[int] = PAGE, offset: int = 0) -> Page[T]:
    """Items ``offset`` .. ``offset + limit`` (``limit`` None: to the end)."""
    start = max(offset, 0)
    return Page(items[start:] if limit is None else items[start:start + limit],
                total=len(items), offset=start)


def status(snap: dict[str, Any], *, actor: Optional[str], top: int = TOP) -> dict[str, Any]:
    """The status document ``snap`` (plain values, every list whole) cut to fit a context:
    ``actor``'s claimed todos whole, the first ``top`` of the frontier (ids, and an action
    each), the todos the other actions name; goals, gates, evidence and the rest capped;
    ``omitted`` counts what is not shown and says how to see it."""
    frontier = snap["frontier"][:top]
    actions = _actions(snap["actions"], set(frontier))
    todos = _todos(snap["todos"], actor, actions)
    shown = {t["id"] for t in todos}
    gates = _gates(snap["gates"])
    evidence = _evidence(snap, todos)
    out = dict(snap, todos=todos, frontier=frontier, actions=actions, gates=gates,
               goals=snap["goals"][:GOALS], evidence=evidence,
               sessions=_sessions(snap["sessions"], actor),
               effects=[e for e in snap["effects"] if e["state"] != "confirmed"][:CAP],
               environment=_environment(snap["environment"], {e["id"] for e in evidence}),
               **{key: snap[key][:CAP] for key in _CAPPED})
    left = [t for t in snap["todos"] if t["id"] not in shown]
    whole = {g["id"]: g for g in snap["gates"]}
    out["omitted"] = {
        "todos": len(left), "frontier": len(snap["frontier"]) - len(frontier),
        "by_state": dict(sorted(Counter(t["state"] for t in left).items())),
        "waiting": sum(1 for t in left if t["state"] == "open" and not t["ready"]),
        "actions": len(snap["actions"]) - len(actions),
        "gates": len(snap["gates"]) - len(gates),
        "blocks": sum(len(whole[g["id"]]["blocks"]) - len(g["blocks"]) for g in gates),
        "goals": len(snap["goals"]) - len(out["goals"]),
        "evidence": len(snap["evidence"]) - len(evidence),
        "more": "git loopx status --detail; git loopx todo list --offset N; "
                "git loopx todo show ID",
    }
    return out


def _actions(actions: list[dict[str, Any]], frontier: set[str]) -> list[dict[str, Any]]:
    """The actions, most important first, without work on todos past the frontier shown;
    things to wait for only when there is nothing else to do (the first few; else counted)."""
    doing = [a for a in actions if not a["kind"].startswith("wait_")
             and (a["kind"] != "work" or a.get("todo") in frontier)]
    waits = [a for a in actions if a["kind"].startswith("wait_")]
    return doing[:ACTIONS] if doing else waits[:WAITS]


def _todos(todos: list[dict[str, Any]], actor: Optional[str],
           actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Own work (held, or held until the lease ran out) whole, then the todos the kept
    actions other than new work and waiting are about. The frontier shown needs no more than its work
    actions say (id, title, goal, the command that claims it)."""
    by_id = {t["id"]: t for t in todos}
    own = [t["id"] for t in todos if actor and actor in (t["claimed_by"], t["expired_claim_by"])]
    named = [a["todo"] for a in actions if a.get("todo") in by_id
             and a["kind"] != "work" and not a["kind"].startswith("wait_")]
    order = list(dict.fromkeys([*own, *named[:CAP]]))
    return [by_id[tid] for tid in order]


def _evidence(snap: dict[str, Any], todos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The evidence the shown todos and the criteria's latest verdicts point to that failed or
    no longer holds for the code (a fresh pass is in its criterion's ``freshness``, and a
    todo lists its evidence's ids)."""
    wanted = {e for t in todos for e in t["evidence"]}
    wanted |= {c["latest"] for g in snap["goals"][:GOALS] for c in g["acceptance"] if c["latest"]}
    return [e for e in snap["evidence"] if e["id"] in wanted and (
        e.get("freshness") != "fresh" or e["exit_code"] not in (0, None))][-CAP:]


def _gates(gates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The gates still waiting for a decision, each with the first few todos it blocks."""
    return [dict(g, blocks=g["blocks"][:BLOCKS]) for g in gates
            if g["state"] in ("open", "conflicted")][:CAP]


def _sessions(sessions: list[dict[str, Any]], actor: Optional[str]) -> list[dict[str, Any]]:
    mine = [s for s in sessions if s["owner"] == actor]
    return (mine + [s for s in sessions if s["owner"] != actor and s["state"] != "closed"])[:CAP]


def _environment(env: dict[str, Any], evidence: set[str]) -> dict[str, Any]:
    """The environment with freshness for the shown evidence only, and the criteria whose
    verdict no longer holds (the goals' criteria carry each one's ``freshness`` already)."""
    return dict(env, evidence={k: v for k, v in env["evidence"].items() if k in evidence},
                criteria={k: v for k, v in env["criteria"].items()
                          if v["state"] in ("stale", "unknown")})
