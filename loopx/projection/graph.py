"""The plan as a picture: the todo graph of a status document, laid out in layers, and drawn
as Mermaid (for Markdown: `brief`, GitHub comments) or as SVG (the web page, offline).

One graph for both: :func:`plan` turns the snapshot's todos and gates into nodes and edges
(a todo is ready, claimed, waiting, done or cancelled; a dependency is an edge from the todo
waited for; a gate is a node whose edges go to the todos it blocks, labelled with its state),
:func:`layers` lays it out (longest path from the sources, then one barycentre pass to keep
crossings down), and :func:`mermaid` and :func:`svg` draw it. Every label came from an event:
it is written as data in both (Mermaid entity codes, XML escapes), never as markup.

Pure: plain values in, text out.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from loopx.model import inert

STATES = ("ready", "claimed", "waiting", "done", "cancelled", "gate")
MAX_LABEL = 48  # characters of a title shown in a node (the rest is in the status document)

# Fill and stroke of each state (the web page's legend uses the same).
COLOURS = {
    "ready": ("#e3f5e1", "#2e7d32"), "claimed": ("#e3ecfa", "#1f5fbf"),
    "waiting": ("#fdf1dc", "#b26a00"), "done": ("#eeeeee", "#757575"),
    "cancelled": ("#f7f7f7", "#b0b0b0"), "gate": ("#fbe4ec", "#ad1457"),
}


@dataclass(frozen=True)
class Node:
    id: str  # the todo's or gate's id
    label: str  # one visible line (inert.line), not yet escaped for any format
    state: str  # one of STATES


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    label: str = ""  # a gate's state on its edges


@dataclass
class Graph:
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)


def todo_state(todo: dict[str, Any]) -> str:
    """How a todo shows in the picture: done, cancelled, claimed, ready or waiting."""
    if todo["state"] in ("done", "cancelled"):
        return str(todo["state"])
    if todo["state"] == "claimed" or todo.get("claimed_by"):
        return "claimed"
    return "ready" if todo.get("ready") else "waiting"


def plan(snap: dict[str, Any], *, goal: str | None = None) -> Graph:
    """The todo graph of a status document (one goal's, with ``goal``): its todos, the gates
    that block them, and the edges between them that point at a node in the picture."""
    todos = [t for t in snap["todos"] if goal is None or t["goal"] == goal]
    ids = {t["id"] for t in todos}
    graph = Graph()
    for t in todos:
        graph.nodes.append(Node(t["id"], _short(f"{t['id']}: {t['title']}"), todo_state(t)))
        graph.edges += [Edge(dep, t["id"]) for dep in t["depends_on"] if dep in ids]
    for g in snap["gates"]:
        blocked = [b for b in g["blocks"] if b in ids]
        if not blocked or (g["state"] != "open" and all(
                _done(snap, b) for b in blocked)):
            continue  # a gate that blocks nothing left in the picture is noise
        graph.nodes.append(Node(g["id"], _short(f"{g['id']}: {g['question']}"), "gate"))
        label = g["decision"] or g["state"] if g["state"] != "open" else "open"
        graph.edges += [Edge(g["id"], b, str(label)) for b in blocked]
    return graph


def around(graph: Graph, ids: Iterable[str], *, most: int | None = None) -> Graph:
    """The part of ``graph`` that ``ids`` touch: those nodes and their direct neighbours (one
    edge away, either way), and the edges between the nodes kept; the nodes named first, in
    the graph's order, then their neighbours, at most ``most`` in all."""
    named = set(ids)
    near = {e.target for e in graph.edges if e.source in named}
    near |= {e.source for e in graph.edges if e.target in named}
    kept = ([n for n in graph.nodes if n.id in named]
            + [n for n in graph.nodes if n.id in near and n.id not in named])[:most]
    keys = {n.id for n in kept}
    return Graph(kept, [e for e in graph.edges if e.source in keys and e.target in keys])


def _done(snap: dict[str, Any], todo: str) -> bool:
    return any(t["id"] == todo and t["state"] in ("done", "cancelled") for t in snap["todos"])


def _short(text: str) -> str:
    return inert.clip(inert.line(text), MAX_LABEL)


def layers(graph: Graph) -> list[list[str]]:
    """The nodes in columns: a node sits one column right of the furthest node it waits on
    (cycles, which the ledger refuses, are broken where met); each column ordered by the mean
    row of what points at it, ties in ledger order."""
    order = {n.id: i for i, n in enumerate(graph.nodes)}
    incoming: dict[str, list[str]] = {n.id: [] for n in graph.nodes}
    for e in graph.edges:
        incoming[e.target].append(e.source)
    depth: dict[str, int] = {}

    def place(node: str, path: frozenset[str]) -> int:
        if node not in depth:
            above = [place(s, path | {node}) for s in incoming[node] if s not in path]
            depth[node] = 1 + max(above, default=-1)
        return depth[node]

    for n in graph.nodes:
        place(n.id, frozenset())
    columns: list[list[str]] = [[] for _ in range(1 + max(depth.values(), default=-1))]
    for n in graph.nodes:
        columns[depth[n.id]].append(n.id)
    row: dict[str, float] = {}
    for column in columns:
        column.sort(key=lambda n: (_mean([row[s] for s in incoming[n] if s in row]), order[n]))
        row.update({n: float(i) for i, n in enumerate(column)})
    return columns


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else -1.0


# --- Mermaid ----------------------------------------------------------------------------------

_MERMAID_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                          " ,.-_:?!/()+='@")


def mermaid_text(text: str) -> str:
    """A label as Mermaid reads data: every character but ASCII letters, digits, space and
    ``,.-_:?!/()+='@`` as an entity code (``#35;``), so no quote, bracket, brace, backtick,
    pipe, ``#``, ``;``, ``<`` or ``&`` in it means anything to Mermaid (inside the quotes every
    label gets) or to the Markdown fence around it."""
    return "".join(c if c in _MERMAID_SAFE else f"#{ord(c)};" for c in inert.line(text))


def mermaid(graph: Graph) -> str:
    """The graph as a Mermaid flowchart (left to right), node ids of its own (n0, n1, ...)."""
    key = {n.id: f"n{i}" for i, n in enumerate(graph.nodes)}
    out = ["flowchart LR"]
    for n in graph.nodes:
        label = mermaid_text(n.label)
        out.append(f'    {key[n.id]}{{{{"{label}"}}}}' if n.state == "gate"
                   else f'    {key[n.id]}["{label}"]')
    for e in graph.edges:
        arrow = f"-.->|{mermaid_text(e.label)}|" if e.label else "-->"
        out.append(f"    {key[e.source]} {arrow} {key[e.target]}")
    for state in STATES:
        members = [key[n.id] for n in graph.nodes if n.state == state]
        if members:
            fill, stroke = COLOURS[state]
            out += [f"    classDef {state} fill:{fill},stroke:{stroke}",
                    f"    class {','.join(members)} {state}"]
    return "\n".join(out)


MAX_NODES = 40  # drawn in Markdown: an answer stays a few KB whatever the plan's size


def capped(graph: Graph, most: int = MAX_NODES) -> tuple[Graph, int]:
    """At most ``most`` nodes of ``graph`` (open work and gates first, then finished work,
    each in ledger order) with the edges between them, and how many were left out."""
    if len(graph.nodes) <= most:
        return graph, 0
    ranked = sorted(range(len(graph.nodes)),
                    key=lambda i: (graph.nodes[i].state in ("done", "cancelled"), i))
    kept = sorted(ranked[:most])
    ids = {graph.nodes[i].id for i in kept}
    return Graph([graph.nodes[i] for i in kept],
                 [e for e in graph.edges if e.source in ids and e.target in ids]
                 ), len(graph.nodes) - most


def mermaid_block(graph: Graph, *, most: int = MAX_NODES) -> list[str]:
    """The graph as a fenced Mermaid block for Markdown (no lines when it has no nodes), of
    at most ``most`` nodes; a line after it says how many more were left out."""
    if not graph.nodes:
        return []
    shown, more = capped(graph, most)
    return ["```mermaid", mermaid(shown), "```"] + (
        [f"and {more} more not drawn (`git loopx todo list` lists every todo)"] if more else [])


# --- SVG --------------------------------------------------------------------------------------

BOX_W, BOX_H, GAP_X, GAP_Y, PAD = 210, 40, 46, 18, 12
BOX_CHARS = 31  # of a label inside a box (its whole label is the box's tooltip)


def svg(graph: Graph) -> str:
    """The graph as a standalone SVG picture (left to right), every label XML-escaped."""
    columns = layers(graph)
    at: dict[str, tuple[int, int]] = {}
    for c, column in enumerate(columns):
        for r, node in enumerate(column):
            at[node] = (PAD + c * (BOX_W + GAP_X), PAD + r * (BOX_H + GAP_Y))
    width = PAD * 2 + max(len(columns), 1) * (BOX_W + GAP_X) - GAP_X
    height = PAD * 2 + max((len(c) for c in columns), default=1) * (BOX_H + GAP_Y) - GAP_Y
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="plan" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="todo graph">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
           'fill="#555"/></marker></defs>']
    out += [_svg_edge(e, at) for e in graph.edges]
    out += [_svg_node(n, *at[n.id]) for n in graph.nodes]
    out.append("</svg>")
    return "\n".join(out)


def _svg_edge(edge: Edge, at: dict[str, tuple[int, int]]) -> str:
    (x1, y1), (x2, y2) = at[edge.source], at[edge.target]
    x1, y1, x2, y2 = x1 + BOX_W, y1 + BOX_H // 2, x2, y2 + BOX_H // 2
    mid = (x1 + x2) // 2
    dash = ' stroke-dasharray="5,4"' if edge.label else ""
    path = (f'<path class="edge" d="M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}" fill="none" '
            f'stroke="#555"{dash} marker-end="url(#arrow)"/>')
    if not edge.label:
        return path
    return path + (f'<text class="edge-label" x="{mid}" y="{(y1 + y2) // 2 - 4}" '
                   f'text-anchor="middle" font-size="11" fill="#ad1457">'
                   f"{html.escape(edge.label)}</text>")


def _svg_node(node: Node, x: int, y: int) -> str:
    fill, stroke = COLOURS[node.state]
    rx = 18 if node.state == "gate" else 6
    return (f'<g class="node {node.state}" data-id="{html.escape(node.id)}">'
            f'<title>{html.escape(node.label)} ({node.state})</title>'
            f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="{rx}" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="1.5"/>'
            f'<text x="{x + 10}" y="{y + 17}" font-size="12" font-family="sans-serif">'
            f"{html.escape(inert.clip(node.label, BOX_CHARS))}</text>"
            f'<text x="{x + 10}" y="{y + 32}" font-size="10" font-family="sans-serif" '
            f'fill="{stroke}">{node.state}</text></g>')
