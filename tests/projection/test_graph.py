"""The plan as a picture: nodes, edges and layers of the todo graph, and its labels kept as data
in Mermaid and SVG whatever the text."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from hypothesis import example, given, strategies as st

from loopx.projection import graph
from markdownkit import ATTACKS, structure


def _todo(id: str, *, state: str = "open", ready: bool = False, after: tuple[str, ...] = (),
          claimed_by: str | None = None, title: str = "") -> dict[str, Any]:
    return {"id": id, "goal": "g-1", "title": title or f"todo {id}", "state": state,
            "ready": ready, "depends_on": list(after), "claimed_by": claimed_by}


def _gate(id: str, blocks: list[str], *, state: str = "open", question: str = "ok?",
          decision: str | None = None) -> dict[str, Any]:
    return {"id": id, "goal": "g-1", "state": state, "question": question, "blocks": blocks,
            "decision": decision}


def _snap(todos: list[dict[str, Any]], gates: list[dict[str, Any]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    return {"todos": todos, "gates": list(gates)}


def test_each_todo_shows_as_ready_claimed_waiting_or_done() -> None:
    snap = _snap([_todo("t-1", state="done"), _todo("t-2", ready=True, after=("t-1",)),
                  _todo("t-3", state="claimed", claimed_by="agent:a@h"),
                  _todo("t-4", after=("t-2",)), _todo("t-5", state="cancelled")])
    states = {n.id: n.state for n in graph.plan(snap).nodes}
    assert states == {"t-1": "done", "t-2": "ready", "t-3": "claimed", "t-4": "waiting",
                      "t-5": "cancelled"}


def test_a_gate_is_a_node_whose_edges_carry_its_state() -> None:
    snap = _snap([_todo("t-1"), _todo("t-2", ready=True)],
                 [_gate("q-1", ["t-1"]), _gate("q-2", ["t-2"], state="answered",
                                                   decision="approve")])
    plan = graph.plan(snap)
    assert [(e.source, e.target, e.label) for e in plan.edges] == [
        ("q-1", "t-1", "open"), ("q-2", "t-2", "approve")]


def test_a_decided_gate_over_finished_work_is_left_out() -> None:
    snap = _snap([_todo("t-1", state="done")],
                 [_gate("q-1", ["t-1"], state="answered", decision="approve")])
    assert [n.id for n in graph.plan(snap).nodes] == ["t-1"]


def test_layers_put_each_todo_right_of_what_it_waits_on() -> None:
    snap = _snap([_todo("t-1"), _todo("t-2", after=("t-1",)), _todo("t-3", after=("t-1",)),
                  _todo("t-4", after=("t-2", "t-3")), _todo("t-5")], [_gate("q-1", ["t-4"])])
    assert graph.layers(graph.plan(snap)) == [["t-1", "t-5", "q-1"], ["t-2", "t-3"], ["t-4"]]


def test_one_goal_only_draws_its_own_todos() -> None:
    other = dict(_todo("t-9"), goal="g-2")
    snap = _snap([_todo("t-1"), dict(other, depends_on=["t-1"])])
    assert [n.id for n in graph.plan(snap, goal="g-1").nodes] == ["t-1"]
    assert graph.plan(snap, goal="g-1").edges == []


def test_around_keeps_the_named_nodes_and_their_direct_neighbours() -> None:
    snap = _snap([_todo("t-1"), _todo("t-2", after=("t-1",)), _todo("t-3", after=("t-2",)),
                  _todo("t-4", after=("t-3",)), _todo("t-5")], [_gate("q-1", ["t-2"])])
    near = graph.around(graph.plan(snap), ["t-2"])
    assert [n.id for n in near.nodes] == ["t-2", "t-1", "t-3", "q-1"]  # named first
    assert [(e.source, e.target) for e in near.edges] == [
        ("t-1", "t-2"), ("t-2", "t-3"), ("q-1", "t-2")]  # not t-3 -> t-4: t-4 is two away
    assert [n.id for n in graph.around(graph.plan(snap), ["t-2"], most=2).nodes] == [
        "t-2", "t-1"]
    assert graph.around(graph.plan(snap), []).nodes == []


def test_mermaid_draws_the_graph_with_ids_of_its_own() -> None:
    snap = _snap([_todo("t-1", ready=True), _todo("t-2", after=("t-1",))],
                 [_gate("q-1", ["t-2"])])
    text = graph.mermaid(graph.plan(snap))
    assert text.splitlines()[:6] == [
        "flowchart LR", '    n0["t-1: todo t-1"]', '    n1["t-2: todo t-2"]',
        '    n2{{"q-1: ok?"}}', "    n0 --> n1", "    n2 -.->|open| n1"]
    assert "    class n0 ready" in text and "    class n2 gate" in text


@given(st.text(max_size=80) | st.sampled_from(ATTACKS))
def test_a_mermaid_label_holds_nothing_mermaid_or_markdown_reads(text: str) -> None:
    label = graph.mermaid_text(text)
    assert re.fullmatch(r"(?:[A-Za-z0-9 ,.\-_:?!/()+='@]|#\d+;)*", label), label


def test_the_mermaid_block_stays_one_fence_whatever_the_titles() -> None:
    hostile = [_todo(f"t-{i}", title=attack) for i, attack in enumerate(ATTACKS)]
    plain = [_todo(f"t-{i}", title="plain words") for i in range(len(ATTACKS))]
    shown, quiet = ("\n".join(graph.mermaid_block(graph.plan(_snap(t)))) + "\n"
                    for t in (hostile, plain))
    assert structure(shown) == structure(quiet)


@given(st.text(max_size=120))
@example("\ufffe")  # a noncharacter: not allowed in XML (found by hypothesis)
@example("a\U0010ffff\ufdd0b")
def test_svg_is_well_formed_and_its_text_is_the_label(title: str) -> None:
    snap = _snap([_todo("t-1", title=title), _todo("t-2", after=("t-1",))],
                 [_gate("q-1", ["t-2"], question=title)])
    root = ET.fromstring(graph.svg(graph.plan(snap)))
    assert root.tag.endswith("svg")
    names = {el.tag.split("}")[1] for el in root.iter()}
    assert names <= {"svg", "defs", "marker", "path", "g", "title", "rect", "text"}
    assert not any(k.startswith("on") for el in root.iter() for k in el.attrib)
    titles = [el.text for el in root.iter() if el.tag.endswith("title")]
    assert titles[0] == f"{graph.plan(snap).nodes[0].label} (waiting)"


def test_an_empty_plan_draws_nothing_in_markdown() -> None:
    assert graph.mermaid_block(graph.plan(_snap([]))) == []
    assert ET.fromstring(graph.svg(graph.plan(_snap([])))).tag.endswith("svg")


def _parsed(block: list[str]) -> tuple[set[str], list[tuple[str, str]]]:
    """The nodes and edges of a Mermaid flowchart fenced in Markdown, read line by line."""
    block = "\n".join(block).splitlines()
    assert block[0] == "```mermaid" and block[1] == "flowchart LR"
    end = block.index("```", 1)
    nodes, edges = set(), []
    for line in block[2:end]:
        node = re.fullmatch(r' {4}(n\d+)(?:\["[^"]*"\]|\{\{"[^"]*"\}\})', line)
        edge = re.fullmatch(r" {4}(n\d+) (?:-->|-\.->\|[^|]*\|) (n\d+)", line)
        if node:
            nodes.add(node[1])
        elif edge:
            edges.append((edge[1], edge[2]))
        else:
            assert re.fullmatch(r" {4}class(?:Def)? .+", line), line
    return nodes, edges


def test_a_big_plan_is_drawn_capped_open_work_first_and_says_how_many_more() -> None:
    todos = [_todo(f"t-{i}", state="done") for i in range(60)]
    todos += [_todo(f"o-{i}", after=(f"o-{i - 1}",) if i else ()) for i in range(30)]
    block = graph.mermaid_block(graph.plan(_snap(todos)))
    nodes, edges = _parsed(block)
    assert len(nodes) == graph.MAX_NODES
    assert all(a in nodes and b in nodes for a, b in edges) and len(edges) == 29
    assert block[-1].startswith(f"and {90 - graph.MAX_NODES} more not drawn")
    assert len("\n".join(block)) < 4096
    labels = "\n".join(block)
    assert all(f"o-{i}: " in labels for i in range(30))  # every open todo is among them


def test_a_small_plan_is_drawn_whole() -> None:
    block = graph.mermaid_block(graph.plan(_snap([_todo("t-1"), _todo("t-2", after=("t-1",))])))
    assert _parsed(block) == ({"n0", "n1"}, [("n0", "n1")]) and block[-1] == "```"
