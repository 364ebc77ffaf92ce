"""Safe YAML in, canonical YAML out. Pure: bytes and plain values only.

Loading walks ruamel.yaml's *event* stream (its C parser when installed) and builds plain
Python values itself, so every limit is checked before anything is built: size, UTF-8, NUL
bytes, anchors and aliases, explicit tags, duplicate keys, nesting depth. Plain scalars are
resolved with the YAML 1.2 core schema (null, bool, int, float); everything else is a string,
timestamps included.

Dumping writes a small canonical subset of YAML (block style, keys in the order given, strings
plain only when unambiguous, otherwise double-quoted) so the same value always gives the same
bytes. Our own loader reads it back exactly; ``tests/test_codec.py`` checks that property.
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any, Callable, Optional

from loopx.errors import CodecError
from loopx.model.yamlevents import events

MAX_BYTES = 256 * 1024
MAX_DEPTH = 32
MAX_NODES = 20_000
# Every integer loopx stores fits a signed 64-bit field; a longer one (a 4,300-digit clock
# from a hostile remote) is refused while parsing, before any model sees it.
MAX_INT = 2**63 - 1

Value = Any  # None | bool | int | float | str | list[Value] | dict[str, Value]

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL_TRUE = re.compile(r"^(?:true|True|TRUE)$")
_BOOL_FALSE = re.compile(r"^(?:false|False|FALSE)$")
_INT = re.compile(r"^[-+]?[0-9]+$|^0o[0-7]+$|^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(
    r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$"
    r"|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$"
)
# Strings that may be written without quotes: start with a letter or digit-free safe char,
# contain no YAML indicators that matter in block context, and do not resolve to another type.
_PLAIN_SAFE = re.compile(r"^[A-Za-z_/][A-Za-z0-9_ ./@+=-]*(?::[A-Za-z0-9_./@+=-][A-Za-z0-9_ ./@+=-]*)*$")

# YAML 1.1 readers (PyYAML) would read these as booleans; quote them for every reader's sake.
_YAML11_WORDS = frozenset({"y", "n", "yes", "no", "on", "off"})
# The only texts _PLAIN_SAFE matches that the core schema reads as another type: it starts
# with a letter, "_" or "/", and every int and float starts with a sign, a digit or ".".
_CORE_WORDS = frozenset({"null", "Null", "NULL", "true", "True", "TRUE", "false", "False",
                         "FALSE"})


@functools.lru_cache(maxsize=8192)  # keys, types, actors and ids repeat across event files
def resolve_plain(text: str) -> Value:
    """The YAML 1.2 core-schema value of an unquoted scalar."""
    if _NULL.match(text):
        return None
    if _BOOL_TRUE.match(text):
        return True
    if _BOOL_FALSE.match(text):
        return False
    if _INT.match(text):
        if len(text) > 24:  # checked before int(): its cost grows with the digits
            raise ValueError(f"the integer {text[:12]}... ({len(text)} characters) is out of range")
        number = int(text, 0) if text[:2] in ("0o", "0x") else int(text)
        if abs(number) > MAX_INT:
            raise ValueError(f"the integer {number} is out of range (at most 2**63 - 1)")
        return number
    if _FLOAT.match(text):
        lowered = text.lower()
        if lowered.endswith("inf"):
            return -math.inf if text.startswith("-") else math.inf
        if lowered.endswith("nan"):
            return math.nan
        return float(text)
    return text


def load(data: bytes, name: str = "<input>") -> Value:
    """Parse one YAML document from ``data``; raise CodecError naming ``name`` on refusal."""
    if len(data) > MAX_BYTES:
        raise CodecError(f"{name}: {len(data)} bytes is over the {MAX_BYTES // 1024} KiB limit")
    if b"\x00" in data:
        raise CodecError(f"{name}: contains a NUL byte")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CodecError(f"{name}: not valid UTF-8 (byte {exc.start})") from None
    fast = _load_canonical(text)
    if fast is not _NO_KEY:
        return fast
    try:
        return _Builder(name).build(events(text))
    except CodecError:
        raise
    except RecursionError:
        raise CodecError(f"{name}: nested too deeply") from None
    except Exception as exc:  # ruamel's scanner/parser errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CodecError(f"{name}: not valid YAML: {first}") from None


class _Builder:
    """Builds values from parser events, enforcing the limits as it goes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes = 0

    def fail(self, why: str) -> CodecError:
        return CodecError(f"{self.name}: {why}")

    def build(self, events: Any) -> Value:
        stack: list[Any] = []  # open containers; dicts carry their pending key separately
        keys: list[Any] = []
        documents = 0
        root: Value = None
        for event in events:
            kind = type(event).__name__
            if kind in ("StreamStartEvent", "StreamEndEvent", "DocumentEndEvent"):
                continue
            if kind == "DocumentStartEvent":
                documents += 1
                if documents > 1:
                    raise self.fail("holds more than one YAML document")
                continue
            if kind == "AliasEvent":
                raise self.fail("uses an alias (*name); anchors and aliases are not allowed")
            if getattr(event, "anchor", None) is not None:
                raise self.fail(f"uses an anchor (&{event.anchor}); anchors are not allowed")
            tag = getattr(event, "tag", None)
            if tag is not None and tag not in ("!", "tag:yaml.org,2002:str"):
                raise self.fail(f"uses the tag {tag}; custom tags are not allowed")
            self.nodes += 1
            if self.nodes > MAX_NODES:
                raise self.fail(f"has more than {MAX_NODES} nodes")
            if kind == "ScalarEvent":
                plain = event.style in (None, "") and tag is None
                try:
                    value: Value = resolve_plain(event.value) if plain else event.value
                except ValueError as exc:
                    raise self.fail(str(exc)) from None
                root = self._add(stack, keys, value, root)
            elif kind in ("MappingStartEvent", "SequenceStartEvent"):
                if len(stack) >= MAX_DEPTH:
                    raise self.fail(f"nested deeper than {MAX_DEPTH} levels")
                container: Value = {} if kind == "MappingStartEvent" else []
                root = self._add(stack, keys, container, root)
                stack.append(container)
                keys.append(_NO_KEY)
            elif kind in ("MappingEndEvent", "SequenceEndEvent"):
                stack.pop()
                keys.pop()
        return root

    def _add(self, stack: list[Any], keys: list[Any], value: Value, root: Value) -> Value:
        if not stack:
            return value
        top = stack[-1]
        if isinstance(top, list):
            top.append(value)
        elif keys[-1] is _NO_KEY:
            if not isinstance(value, (str, int, float, bool)) and value is not None:
                raise self.fail("has a mapping key that is not a scalar")
            if value in top or (value is None and None in top):
                raise self.fail(f"has the key {value!r} twice")
            keys[-1] = value
        else:
            top[keys[-1]] = value
            keys[-1] = _NO_KEY
        return root


_NO_KEY = object()

# Outside YAML's printable set (or a line break to some readers): written as \u escapes. json
# escapes the C0 controls itself; the rest are C1 and U+FFFE/U+FFFF (a reader refuses them
# raw). A lone surrogate has no spelling in YAML at all: dump() refuses it.
_UNPRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def _quote(text: str) -> str:
    quoted = json.dumps(text, ensure_ascii=False)
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def _scalar(value: Value) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    if isinstance(value, str):
        return value if _plain_ok(value) else _quote(value)
    raise CodecError(f"cannot write a value of type {type(value).__name__}")


@functools.lru_cache(maxsize=8192)
def _plain_ok(value: str) -> bool:
    """May ``value`` be written without quotes (and read back as the same string)?"""
    return bool(
        _PLAIN_SAFE.fullmatch(value)  # match() would pass "a\n" (re: $ before \n)
        and not value.endswith(" ")
        and value.lower() not in _YAML11_WORDS
        and value not in _CORE_WORDS  # resolve_plain(value) == value, without its five matches
    )


def _emit(value: Value, indent: str, out: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            head = f"{indent}{_scalar(key)}:"
            _emit_item(head, item, indent, out)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and item:
                # "- first: 1" then the other keys aligned under it.
                start = len(out)
                _emit(item, indent + "  ", out)
                out[start] = f"{indent}- {out[start][len(indent) + 2:]}"
            else:
                _emit_item(f"{indent}-", item, indent, out)
    else:  # pragma: no cover - guarded by callers
        out.append(f"{indent}{_scalar(value)}")


def _emit_item(head: str, item: Value, indent: str, out: list[str]) -> None:
    if isinstance(item, dict) and item:
        out.append(head)
        _emit(item, indent + "  ", out)
    elif isinstance(item, list) and item:
        out.append(head)
        _emit(item, indent + "  ", out)
    elif isinstance(item, dict):
        out.append(f"{head} {{}}")
    elif isinstance(item, list):
        out.append(f"{head} []")
    else:
        out.append(f"{head} {_scalar(item)}")


def dump(value: dict[str, Value]) -> bytes:
    """Canonical YAML bytes for a mapping: block style, UTF-8, one document, trailing newline."""
    if not isinstance(value, dict):
        raise CodecError("only a mapping can be written as an event document")
    out: list[str] = []
    _emit(value, "", out)
    if not out:
        out.append("{}")
    try:
        data = ("\n".join(out) + "\n").encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CodecError(f"cannot write text that is not valid Unicode: {exc.reason}") from None
    if len(data) > MAX_BYTES:
        raise CodecError(f"event is {len(data)} bytes, over the {MAX_BYTES // 1024} KiB limit")
    return data


# --- the fast path for files in our own canonical form -------------------------------------------
# Nearly every event file was written by dump() above. For those, a line parser is many times
# faster than a YAML event stream. It accepts exactly the forms dump() writes and nothing else:
# the block layout (two-space indents, "- " items, "{}"/"[]" for empty containers) and, per
# scalar, the one spelling dump() would give its value (a string is plain only when
# _plain_ok says so, and quoted only when it must be, with json's escapes; an int in str()'s
# spelling, a float in repr()'s). So a document it accepts is one dump() reproduces byte for
# byte, and its value is the one the full loader builds (load(dump(v)) == v is the codec's
# tested round-trip property; tests/model/test_codec_fast.py checks that mutated documents
# are either refused here or read exactly as dump() would write them). Anything else —
# hand-written files, other styles, comments, over the limits — takes the full path.

# Characters json.dumps (ensure_ascii=False) or _quote escape: a quoted scalar without any of
# them and without a backslash is its own inner text.
_ESCAPED = re.compile('[\x00-\x1f"\\\\\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]')


class _NotCanonical(Exception):
    """Raised inside the fast path: not dump()'s output, take the full path."""


def _load_canonical(text: str) -> Value:
    """The value of a canonical document, or ``_NO_KEY`` when it is not one."""
    if not text.endswith("\n") or text[:1] in ("", " ", "-"):
        return _NO_KEY
    if text == "{}\n":
        return {}
    head = _HEAD.match(text)
    try:
        if head is None:
            lines = list(map(_line, text[:-1].split("\n")))
            value, end = _mapping(lines, 0, 0, 1)  # (over the node limit: the full loader says so)
            return value if end == len(lines) and value and not _over_nodes(lines, 2) else _NO_KEY
        body = head.end()
        event_id, event_type, v, at, clock = head.groups()
        rest = _by_shape(_SHAPES.get(event_type), text, body)
        if rest is None:
            raw = text[body:-1].split("\n") if len(text) > body else []
            lines = list(map(_line, raw))
            rest, end = _mapping(lines, 0, 0, 1) if lines else ({}, 0)
            if end != len(lines) or not _HEAD_KEYS.isdisjoint(rest) or _over_nodes(lines, 12):
                return _NO_KEY  # a key twice, or not canonical: the full path says which
            _learn(event_type, raw, lines, rest)
        return {"id": event_id, "type": event_type, "v": int(v), "at": at, "clock": int(clock),
                **rest}
    except (_NotCanonical, ValueError, IndexError, RecursionError):
        return _NO_KEY


_NODES = {"entry": 2, "open": 3, "item": 1, "list": 2, "first": 4}


def _over_nodes(lines: list[_Line], start: int) -> bool:
    """Whether ``start`` nodes and those of ``lines`` pass MAX_NODES as the full loader counts
    (a scalar 1, a container 2: start, end; _NODES by form, +1 an empty or "- key:" opening one)."""
    return start + 5 * len(lines) > MAX_NODES and start + sum(_NODES[f] + (v.__class__ in (
        dict, list) or (f == "first" and v is _OPEN)) for f, _, _, v in lines) > MAX_NODES


# Shapes: the bodies of event files that differ only in their scalars. Files of one type
# mostly share their lines but for values (a todo's id, a lease's time), so a body the line
# steps read is remembered as a shape: one regular expression, its lines as written with
# each scalar a group, and a function that builds the value from the groups. A body that
# matches a shape is read in one match: each scalar by the line steps' own reading of a
# line holding it alone (_entry_value, _item_value), and everything else (keys, nesting,
# empty containers, line forms) exactly the lines the line steps read before. Anything else
# takes the line steps (tests/model/test_codec_fast.py checks both agree).
_Shape = tuple["re.Pattern[str]", Callable[[tuple[str, ...]], Value]]
_SHAPES: dict[str, list[_Shape]] = {}
SHAPES_PER_TYPE, SHAPES_MAX, SHAPE_LINES, SHAPE_CHARS = 4, 256, 48, 4096  # (memory: bounded)


def _by_shape(shapes: Optional[list[_Shape]], text: str, body: int) -> Optional[Value]:
    for n, (pattern, build) in enumerate(shapes or ()):
        found = pattern.fullmatch(text, body)
        if found is not None:
            if n and shapes is not None:  # the last one that fitted is tried first
                shapes.insert(0, shapes.pop(n))
            return build(found.groups())
    return None


@functools.lru_cache(maxsize=8192)
def _entry_value(text: str) -> Value:
    """The scalar of a line ``key: <text>``, as _line reads it (for any key and indent: the
    value after ": " is _inline's)."""
    value = _inline(" " + text)
    if value.__class__ in (dict, list):
        raise _NotCanonical
    return value


@functools.lru_cache(maxsize=8192)
def _item_value(text: str) -> Value:
    """The scalar of a line ``- <text>``, as _line reads it (an item, not "- key: ...")."""
    if text[:1] == " " or _starts_entry(text):
        raise _NotCanonical
    return _entry_value(text)


def _learn(event_type: str, raw: list[str], lines: list[_Line], value: dict[Any, Value]) -> None:
    """Remember the shape of a body the line steps read (``raw`` lines, read as ``lines``,
    giving ``value``), within the bounds above."""
    shapes = _SHAPES.get(event_type)
    if not raw or len(raw) > SHAPE_LINES or sum(map(len, raw)) > SHAPE_CHARS or len(
            shapes or ()) >= SHAPES_PER_TYPE or sum(map(len, _SHAPES.values())) >= SHAPES_MAX:
        return
    parts: list[str] = []
    readers: list[str] = []  # which reader reads each group
    for text, (form, _, _, scalar) in zip(raw, lines):
        if scalar is _OPEN or scalar.__class__ in (dict, list) or form == "list":
            parts.append(re.escape(text))
            continue
        spelling = _scalar(scalar)
        prefix = text[: len(text) - len(spelling)]
        if not text.endswith(spelling) or not prefix.endswith((": ", "- ")):
            return
        parts.append(re.escape(prefix) + "([^\n]+)")
        readers.append("I" if form == "item" else "E")  # _item_value, _entry_value
    keys: list[Any] = []
    slots = iter(range(len(readers)))

    def source(node: Value) -> str:  # the value as an expression of the groups, depth first
        if isinstance(node, dict):
            keys.extend(node)
            first = len(keys) - len(node)
            return "{" + ", ".join(f"K[{first + n}]: {source(item)}"
                                   for n, item in enumerate(node.values())) + "}"
        if isinstance(node, list):
            return "[" + ", ".join(source(item) for item in node) + "]"
        n = next(slots)
        return f"{readers[n]}(G[{n}])"

    body = source(value)
    if next(slots, None) is not None:  # (a scalar line the value does not hold: never)
        return
    build = eval(f"lambda G: {body}", {"K": tuple(keys), "E": _entry_value,  # noqa: S307
                                       "I": _item_value})  # (indices and the two readers only)
    pattern = re.compile("\n".join(parts) + "\n")
    _SHAPES.setdefault(event_type, []).append((pattern, build))


# The five lines every event file written by dump() starts with, each in the one spelling
# dump() gives it: the ULID and the timestamp quoted (they start with a digit) and free of
# escapes, the type plain (dotted lowercase words resolve to no other YAML type), the two
# integers in str()'s spelling. One match for the lines unique to each file, which would
# otherwise each miss _line's cache; what it yields is what the line steps below yield for
# them (tests/model/test_codec_fast.py). Any other head takes the general steps.
_HEAD = re.compile('id: "([0-7][0-9A-HJKMNP-TV-Z]{25})"\n'
                   'type: ([a-z][a-z0-9_]*\\.[a-z][a-z0-9_]*)\n'
                   'v: ([1-9][0-9]{0,17})\n'
                   'at: "([0-9][0-9:.TZ+-]*)"\n'
                   'clock: ([1-9][0-9]{0,17})\n')
_HEAD_KEYS = frozenset({"id", "type", "v", "at", "clock"})


# A line, classified: (form, indent, key, value). Forms: "entry" (key: scalar, or {} / []),
# "open" (key: and a container below), "item" (- scalar), "list" (- and a list below),
# "first" (- key: ...: a mapping item; key and value as for an entry, or value _OPEN).
_Line = tuple[str, int, Any, Value]
_OPEN = object()


# The commonest line, "key: value" with a plain key and a one-line value, in one match (a
# shortcut, not a rule: whatever it returns is what the general steps below return for the
# line; anything else falls through to them). Group 3 is a quoted value without escapes,
# group 4 a plain one (neither "{}" nor "[]" nor quoted).
_SIMPLE = re.compile('((?:  )*)([a-z_][a-z0-9_]*): (?:"([^"\\\\\x00-\x1f\x7f-\x9f\u2028\u2029'
                     '\ufeff\ufffe\uffff]*)"|([^"{\\[\\s][^\x00-\x1f]*))')


@functools.lru_cache(maxsize=8192)  # most lines repeat across event files: types, actors, keys
def _line(line: str) -> _Line:
    simple = _SIMPLE.fullmatch(line)
    if simple is not None and _plain_ok(simple[2]):
        quoted = simple[3]
        if quoted is None:
            return ("entry", len(simple[1]), simple[2], _plain(simple[4]))
        if _plain_ok(quoted):
            raise _NotCanonical  # dump() would have written it plain
        return ("entry", len(simple[1]), simple[2], quoted)
    indent = len(line) - len(line.lstrip(" "))
    if indent == len(line) or indent % 2:
        raise _NotCanonical
    if line[indent] != "-":
        key, value = _entry(line, indent)
        return ("entry" if value is not _OPEN else "open", indent, key, value)
    rest = line[indent + 1:]
    if not rest:
        return ("list", indent, None, None)
    if rest[0] != " " or rest[1:2] in (" ", ""):
        raise _NotCanonical
    if _starts_entry(rest[1:]):
        key, value = _entry(rest[1:], 0)
        return ("first", indent, key, value)
    return ("item", indent, None, _inline(rest))


def _mapping(lines: list[_Line], i: int, indent: int, depth: int) -> tuple[dict[Any, Value], int]:
    """The mapping whose entries sit at ``indent`` from line ``i`` (a "first" line included)."""
    if depth > MAX_DEPTH:
        raise _NotCanonical
    out: dict[Any, Value] = {}
    n = len(lines)
    while i < n:
        form, at, key, value = lines[i]
        if (at != indent or form not in ("entry", "open")) and not (
                form == "first" and not out and at + 2 == indent):  # "- key: ..." opens an item
            break
        if key in out:
            raise _NotCanonical
        if value is _OPEN:
            out[key], i = _nested(lines, i + 1, indent + 2, depth)
        else:
            # Lines are cached (_line): an empty {} or [] on one is shared, so copy it.
            out[key] = value if value.__class__ not in (dict, list) else value.__class__()
            i += 1
    return out, i


def _nested(lines: list[_Line], i: int, indent: int, depth: int) -> tuple[Value, int]:
    """The non-empty container that starts on line ``i`` at ``indent`` (after "key:" or "-")."""
    form, at = lines[i][0], lines[i][1]
    if at != indent:
        raise _NotCanonical
    if form in ("entry", "open"):
        return _mapping(lines, i, indent, depth + 1)
    return _sequence(lines, i, indent, depth + 1)


def _sequence(lines: list[_Line], i: int, indent: int, depth: int) -> tuple[list[Value], int]:
    if depth > MAX_DEPTH:
        raise _NotCanonical
    out: list[Value] = []
    n = len(lines)
    while i < n:
        form, at, _, value = lines[i]
        if at != indent or form not in ("item", "list", "first"):
            break
        if form == "item":
            out.append(value if value.__class__ not in (dict, list) else value.__class__())
            i += 1
        elif form == "list":
            item, i = _nested(lines, i + 1, indent + 2, depth)
            if not isinstance(item, list):
                raise _NotCanonical
            out.append(item)
        else:
            mapping, i = _mapping(lines, i, indent + 2, depth + 1)
            out.append(mapping)
    return out, i


def _starts_entry(text: str) -> bool:
    """Whether an item's text is "key:" or "key: value" rather than a scalar."""
    if text[:1] == '"':
        _, end = _JSON.raw_decode(text)
        return text[end:end + 1] == ":"
    return ": " in text or text.endswith(":")


_JSON = json.JSONDecoder()


def _entry(line: str, indent: int) -> tuple[Any, Value]:
    """The key of the entry ``line`` and its inline value (``_OPEN`` for one below)."""
    if line[indent] == '"':
        _, end = _JSON.raw_decode(line, indent)
        key = _quoted(line[indent:end])
    else:
        end = line.find(": ", indent)
        if end < 0:
            end = len(line) - 1
        key = _plain(line[indent:end])
    if line[end:end + 1] != ":":
        raise _NotCanonical
    rest = line[end + 1:]
    if not rest:
        return key, _OPEN
    if rest[0] != " " or len(rest) < 2:
        raise _NotCanonical
    return key, _inline(rest)


def _inline(rest: str) -> Value:
    """The value after "key:" or "-" on the same line: " {}", " []" or " <scalar>"."""
    text = rest[1:]
    if text == "{}":
        return {}
    if text == "[]":
        return []
    if text[:1] == '"':
        return _quoted(text)
    return _plain(text)


def _plain(text: str) -> Value:
    """The value of a plain scalar in dump()'s spelling (raises _NotCanonical otherwise)."""
    if _plain_ok(text):
        return text
    value = resolve_plain(text)
    if isinstance(value, str) or _scalar(value) != text:
        raise _NotCanonical
    return value


def _quoted(text: str) -> str:
    """The string of a double-quoted scalar in dump()'s spelling."""
    if len(text) < 2 or text[-1] != '"':
        raise _NotCanonical
    inner = text[1:-1]
    if _ESCAPED.search(inner) is None:
        value = inner
    else:
        value = json.loads(text)
        if not isinstance(value, str) or _quote(value) != text:
            raise _NotCanonical
    if _plain_ok(value):  # dump() would have written it plain
        raise _NotCanonical
    return value
