"""The canonical fast path of codec.load gives exactly what the full YAML loader gives."""

from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strategies
from loopx.model import codec, yamlevents
from loopx.model.events import EVENT_TYPES, parse_event

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**63 - 1), 2**63 - 1), st.text(max_size=30),
                    st.floats(allow_nan=False), st.sampled_from(["yes", "null", "1.5", "a: b", "- x"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=20)


def _full(data: bytes) -> object:
    return codec._Builder("t").build(yamlevents.events(data.decode()))


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=10), values, min_size=1, max_size=5))
def test_fast_path_matches_the_full_loader(doc: dict[str, object]) -> None:
    data = codec.dump(doc)
    fast = codec._load_canonical(data.decode())
    assert fast is not codec._NO_KEY
    assert fast == _full(data) == doc


def test_non_canonical_text_takes_the_full_path() -> None:
    for text in ("a:   1\n", "a: 1\na: 2\n", "{a: 1}\n", "a: &x 1\nb: *x\n", "a: !tag 1\n"):
        assert codec._load_canonical(text) is codec._NO_KEY


# Spellings of the same values that dump() would not write: each must take the full path.
NOT_DUMPS = [
    "a:   1\n", "a: 1\na: 2\n", "{a: 1}\n", "a: &x 1\nb: *x\n", "a: !tag 1\n",
    "a: 1 # comment\n", "a: 01\n", "a: +1\n", "a: 1.0e3\n", "a: 0x1f\n", "a: ~\n",
    "a: True\n", "a: \"plain\"\n", "a: 'single'\n", "a: b \n", "a:\n    b: 1\n",
    "a:\n- 1\n", "a:\n  -  1\n", "a:\n  - b: 1\n     c: 2\n", "a: \"x\\u0041\"\n",
    "a: |\n  text\n", "a: >\n  text\n", "\"a\": 1\n", "a: 1\n\n", "a: 1", "- a\n",
    "a: 1\n---\nb: 2\n", "a: [1, 2]\n", "a: {}\nb:\n", "a:\n", "a: b: c\n",
    "a:\tb\n", "a: \"tab\there\"\n",
    # Neighbours of the one-match shortcut for "key: value" lines (codec._SIMPLE).
    "on: 1\n", "a: 1.50\n", "a: \"true\"x\n", "a:  b\n", "a: \"b c\"\n", "a: b\u2028c\n",
    "a: \"x\"\"\n", "a: 007\n",
]


def test_other_spellings_of_the_same_values_take_the_full_path() -> None:
    for text in NOT_DUMPS:
        assert codec._load_canonical(text) is codec._NO_KEY, text


@pytest.mark.parametrize("text", ['a: "1"\n', 'a: ""\n', "true: 1\n", "null: x\n",
                                  'id: "01K742VAK0ZV3DHAA673N0J3SM"\n', "clock: 6\n"])
def test_what_the_shortcut_accepts_is_what_dump_writes(text: str) -> None:
    value = codec._load_canonical(text)
    assert value is not codec._NO_KEY and codec.dump(value).decode() == text
    assert value == _full(text.encode())


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=10), values, min_size=1, max_size=5),
       st.integers(min_value=0), st.sampled_from(list(" -:#\"'{}[]&*!|>\n\t0aZ.")))
def test_a_mutated_document_is_refused_or_read_as_dump_writes_it(doc: dict[str, object],
                                                                 where: int, char: str) -> None:
    # The fast path may only accept what dump() writes: so whatever it accepts, dump() of
    # the value it read must give back exactly the text it was given.
    text = codec.dump(doc).decode()
    at = where % (len(text) + 1)
    for mutated in (text[:at] + char + text[at:], text[:at] + text[at + 1:]):
        fast = codec._load_canonical(mutated)
        if fast is not codec._NO_KEY:
            assert codec.dump(fast).decode() == mutated


@pytest.mark.parametrize("text", ["a\ufffeb", "x\uffff", "c1\x85\x9f", "bom\ufeff",
                                  "ls\u2028ps\u2029"])
def test_every_non_printable_is_escaped_and_both_paths_read_it(text: str) -> None:
    """YAML refuses these raw (hypothesis found U+FFFE): dump() escapes each, and the fast
    path and the full loader read the same value back."""
    data = codec.dump({"k": text})
    assert data.isascii()  # every one of them written as an escape
    assert codec._load_canonical(data.decode()) == _full(data) == {"k": text}


def test_a_lone_surrogate_is_refused_on_write() -> None:
    """An undecodable byte in an argument (Python's surrogateescape) has no YAML spelling."""
    with pytest.raises(codec.CodecError, match="not valid Unicode"):
        codec.dump({"k": "bad \udcff byte"})


@pytest.mark.parametrize("raw", ['k: "a\ufffeb"\n', "k: a\uffffb\n", 'k: "\\ud800"\n'])
def test_a_raw_non_printable_is_a_codec_error(raw: str) -> None:
    with pytest.raises(codec.CodecError):
        codec.load(raw.encode(), "f.yaml")


def test_documents_never_share_an_empty_container() -> None:
    """Lines are cached: a `{}` or `[]` read from one must not be the one the next gets."""
    text = b"a: []\nb: {}\nc:\n  - []\n  - {}\n"
    first = codec.load(text)
    first["a"].append(1)
    first["b"]["x"] = 1
    first["c"][0].append(2)
    first["c"][1]["y"] = 2
    assert codec.load(text) == {"a": [], "b": {}, "c": [[], {}]}


# Envelopes as loopx writes them (the head codec._HEAD reads in one match), with any body.
ulids = st.from_regex(r"\A[0-7][0-9A-HJKMNP-TV-Z]{25}\Z")
envelopes = st.fixed_dictionaries({
    "id": ulids, "type": st.from_regex(r"\A[a-z][a-z0-9_]{0,8}\.[a-z][a-z0-9_]{0,8}\Z"),
    "v": st.integers(0, 10_000), "at": st.sampled_from(["2025-10-09T08:58:20Z", "1", "0:0",
                                                        "2025-10-09T08:58:20.123+00:00"]),
    "clock": st.integers(-5, 2**63 - 1)})
bodies = st.dictionaries(st.text(max_size=10), values, max_size=4)


@settings(max_examples=200, deadline=None)
@given(envelopes, bodies)
def test_an_event_head_is_read_as_the_full_loader_reads_it(head: dict[str, object],
                                                           body: dict[str, object]) -> None:
    doc = {**head, **{k: v for k, v in body.items() if k not in head}}
    data = codec.dump(doc)
    fast = codec._load_canonical(data.decode())
    assert fast is not codec._NO_KEY
    assert fast == _full(data) == doc
    assert list(fast) == list(doc)  # key order too


@settings(max_examples=300, deadline=None)
@given(envelopes, bodies, st.integers(min_value=0),
       st.sampled_from(list(" -:#\"'{}[]&*!|>\n\t0aZ.")))
def test_a_mutated_event_is_refused_or_read_as_dump_writes_it(
        head: dict[str, object], body: dict[str, object], where: int, char: str) -> None:
    text = codec.dump({**head, **{k: v for k, v in body.items() if k not in head}}).decode()
    at = where % 120  # the head's lines
    for mutated in (text[:at] + char + text[at:], text[:at] + text[at + 1:]):
        fast = codec._load_canonical(mutated)
        if fast is not codec._NO_KEY:
            assert codec.dump(fast).decode() == mutated


@pytest.mark.parametrize("text", [
    'id: "01K742VAK0ZV3DHAA673N0J3SM"\ntype: a.b\nv: 1\nat: "1"\nclock: 2\nid: x\n',
    'id: "01K742VAK0ZV3DHAA673N0J3SM"\ntype: a.b\nv: 1\nat: "1"\nclock: 2\n  x: 1\n',
    'id: "01K742VAK0ZV3DHAA673N0J3SM"\ntype: a.b\nv: 1\nat: "1"\nclock: 2\n\n',
    'id: "01K742VAK0ZV3DHAA673N0J3SM"\ntype: a.b\nv: 1\nat: "1"\nclock: 2\n- x\n'])
def test_a_head_followed_by_a_wrong_body_takes_the_full_path(text: str) -> None:
    assert codec._load_canonical(text) is codec._NO_KEY


def _restyled(data: bytes) -> bytes:
    """The same document in other valid YAML: a comment line, and every string of the
    envelope single-quoted (dump() writes neither)."""
    lines = ["# written by hand"]
    for line in data.decode().splitlines():
        key, sep, rest = line.partition(": ")
        if sep and key in ("actor", "type") and rest and rest[0] not in "\"'":
            line = f"{key}: '{rest}'"
        lines.append(line)
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("type_name", sorted(EVENT_TYPES))
def test_every_event_file_reads_the_same_through_either_path(type_name: str) -> None:
    """For each event model: a file as loopx writes it takes the fast path and gives what
    the full YAML loader gives (and the same event); the same document in other valid YAML
    is refused by the fast path and read by the full loader as the same event."""
    model, version = EVENT_TYPES[type_name]

    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(strategies.envelopes(type_name, model, version))
    def both_paths(doc: dict[str, object]) -> None:
        written = codec.dump(parse_event(doc).to_dict())
        fast = codec._load_canonical(written.decode())
        assert fast is not codec._NO_KEY
        assert fast == _full(written)
        event = parse_event(fast)
        other = _restyled(written)
        assert codec._load_canonical(other.decode()) is codec._NO_KEY
        assert parse_event(codec.load(other, "x.yaml")).to_dict() == event.to_dict()

    both_paths()


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(alphabet="aeflnrstuNLTRUEFS01._/-+ :@~", max_size=6),
                 st.sampled_from(sorted(codec._CORE_WORDS))))
def test_a_plain_safe_text_resolves_to_itself_unless_a_core_word(text: str) -> None:
    # _plain_ok's shortcut: the core words stand for resolve_plain(text) == text.
    if codec._PLAIN_SAFE.fullmatch(text):
        assert (codec.resolve_plain(text) == text) == (text not in codec._CORE_WORDS)


def _rescalar(node: object, new: list[object]) -> object:
    """``node`` with its scalars, depth first, taken from ``new`` (while it lasts)."""
    if isinstance(node, dict):
        return {k: _rescalar(v, new) for k, v in node.items()}
    if isinstance(node, list):
        return [_rescalar(v, new) for v in node]
    return new.pop() if new else node


# Heads as loopx writes them (so that the body after them is read by shape).
written_heads = st.fixed_dictionaries({
    "id": ulids, "type": st.sampled_from(["todo.added", "note.added", "a.b"]),
    "v": st.integers(1, 9), "at": st.just("2026-01-01T00:00:00Z"),
    "clock": st.integers(1, 2**40)})


@settings(max_examples=300, deadline=None)
@given(written_heads, bodies.filter(bool),
       st.lists(st.one_of(scalars, st.just({}), st.just([])), max_size=12),
       st.integers(min_value=0), st.sampled_from(list(" -:#\"'{}[]&*!|>\n\t0aZ.")))
def test_a_body_read_by_its_shape_is_what_the_line_steps_read(
        head: dict[str, object], body: dict[str, object], new: list[object], where: int,
        char: str) -> None:
    """A body of a shape seen before (the same lines but for their scalars, codec._SHAPES)
    is read in one match; whatever it reads is what the full loader reads and what dump()
    writes back, and a document it cannot read takes the other steps."""
    codec._SHAPES.clear()
    first = {**{k: head[k] for k in ("id", "type", "v", "at", "clock")},  # (in their order)
             **{k: v for k, v in body.items() if k not in head}}
    learned = codec._load_canonical(codec.dump(first).decode())
    assert learned == first
    second = _rescalar(first, list(new))
    for key in head:  # (the head's own lines stay the head's)
        second[key] = first[key]  # type: ignore[index]
    text = codec.dump(second).decode()  # type: ignore[arg-type]
    fast = codec._load_canonical(text)
    assert fast is codec._NO_KEY or (fast == _full(text.encode()) == second
                                     and codec.dump(fast).decode() == text)
    shapes, codec._SHAPES = dict(codec._SHAPES), {}
    try:  # the line steps alone, for the same text
        assert fast is codec._NO_KEY or codec._load_canonical(text) == fast
    finally:
        codec._SHAPES = shapes
    at = len(text) - 1 - where % (len(text) - text.index("\nclock: "))  # within the body
    for mutated in (text[:at] + char + text[at:], text[:at] + text[at + 1:]):
        found = codec._load_canonical(mutated)  # a shape may fit it: only as dump() writes
        assert found is codec._NO_KEY or codec.dump(found).decode() == mutated


def test_files_of_one_type_that_differ_in_their_values_share_a_shape() -> None:
    codec._SHAPES.clear()
    base = {"id": "01K742VAK0ZV3DHAA673N0J3SM", "type": "todo.added", "v": 1,
            "at": "2026-01-01T00:00:00Z", "clock": 3, "actor": "agent:a@b", "goal": "g-1"}
    first = {**base, "data": {"id": "t-1", "depends_on": ["t-0"], "gates": [], "n": 1}}
    second = {**base, "data": {"id": "a: b", "depends_on": ["yes"], "gates": [], "n": None}}
    third = {**base, "data": {"id": "t-3", "depends_on": ["x: y"], "gates": [], "n": 2}}
    assert codec._load_canonical(codec.dump(first).decode()) == first
    assert len(codec._SHAPES["todo.added"]) == 1
    text = codec.dump(second).decode()
    pattern = codec._SHAPES["todo.added"][0][0]
    assert pattern.fullmatch(text, text.index("actor:")) is not None  # read by its shape
    assert codec._load_canonical(text) == second == _full(text.encode())
    # An item that reads as "- key: value" is another shape: the line steps read it.
    assert codec._load_canonical(codec.dump(third).decode()) is codec._NO_KEY or \
        codec._load_canonical(codec.dump(third).decode()) == third
    assert codec.load(codec.dump(third)) == third


def test_shapes_stay_bounded_whatever_files_come() -> None:
    """Files of many types, many shapes per type and long bodies: what is remembered stays
    within its bounds, and every file still reads as written."""
    codec._SHAPES.clear()
    head = {"id": "01K742VAK0ZV3DHAA673N0J3SM", "v": 1, "at": "2026-01-01T00:00:00Z",
            "clock": 1}
    docs = [{**head, "type": f"t{n % 300}.x", f"k{n % 7}": n} for n in range(3000)]
    docs += [{**head, "type": "long.x", "k": "v" * 5000}, {**head, "type": "long.x", "k": 1}]
    for doc in docs:
        doc = {k: doc[k] for k in ("id", "type", "v", "at", "clock")} | doc
        assert codec._load_canonical(codec.dump(doc).decode()) == doc
    assert sum(map(len, codec._SHAPES.values())) <= codec.SHAPES_MAX
    assert all(len(v) <= codec.SHAPES_PER_TYPE for v in codec._SHAPES.values())
    assert all(len(p.pattern) < 2 * codec.SHAPE_CHARS + 1000
               for v in codec._SHAPES.values() for p, _ in v)


@pytest.mark.parametrize("body, items", [("a:\n", "  - 1\n"), ("a:\n", "  - b: 1\n"),
                                         ("", "k{n}: 1\n"), ("a:\n", "  -\n    - 1\n")])
def test_a_canonical_document_over_the_node_limit_is_refused_as_the_full_loader_does(
        body: str, items: str) -> None:
    """The line steps counted no nodes: 30,000 list items in dump()'s own form, refused by the
    full loader ("more than 20000 nodes"), were read; each side of the limit agrees (the full
    loader counts a scalar once, a container twice: its start and end)."""
    per_line = {"  - 1\n": 1, "  - b: 1\n": 4, "k{n}: 1\n": 2, "  -\n    - 1\n": 3}[items]
    extra = 3 if body else 0
    for nodes in range(codec.MAX_NODES - 4, codec.MAX_NODES + 5):
        count = (nodes - 2 - extra) // per_line
        text = body + "".join(items.format(n=n) for n in range(count))
        total = 2 + extra + count * per_line
        try:
            codec.load(text.encode(), "f.yaml")
            fast_ok = True
        except codec.CodecError as exc:
            fast_ok = False
            assert "nodes" in str(exc)
        assert fast_ok == (total <= codec.MAX_NODES), (nodes, total)
        full = None
        try:
            full = _full(text.encode())
        except codec.CodecError:
            pass
        assert (full is not None) == fast_ok


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=10), values, min_size=1, max_size=5))
def test_the_line_steps_count_nodes_as_the_full_loader_does(doc: dict[str, object]) -> None:
    data = codec.dump(doc)
    builder = codec._Builder("t")
    builder.build(yamlevents.events(data.decode()))
    lines = [codec._line(line) for line in data.decode()[:-1].split("\n")]
    room = codec.MAX_NODES - (builder.nodes - 2)  # nodes before the lines that just fit
    assert not codec._over_nodes(lines, room) and codec._over_nodes(lines, room + 1)
