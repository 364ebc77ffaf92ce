"""Edits of JSON text in place: a member set or taken out of an object, an item put into or
taken out of an array, every other byte of the file left as it was (its layout, its key
order, its escapes). Used by `git loopx setup` on agent tools' config files
(:mod:`loopx.agents.setup`), where a file is the user's and one entry in it is loopx's.

An insertion follows the layout around it (one member a line at the siblings' indent, or
inline), and taking out what was inserted gives back the same bytes. The text must be valid
JSON (the caller parses it first); the caller parses the result again too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional

_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null|NaN|-?Infinity")


@dataclass
class Node:
    """Where one JSON value is in the text: [start, end), and its members or items."""

    start: int
    end: int
    keys: list[str] = field(default_factory=list)  # an object's keys, in order
    key_starts: list[int] = field(default_factory=list)  # where each key's string starts
    children: list[Node] = field(default_factory=list)  # member values, or array items

    def get(self, key: str) -> Optional[Node]:
        return self.children[self.keys.index(key)] if key in self.keys else None


def parse(text: str) -> Node:
    """The span tree of ``text``, a valid JSON document."""
    node, _ = _value(text, _WS.match(text, 0).end())  # type: ignore[union-attr]
    return node


def _value(text: str, at: int) -> tuple[Node, int]:
    if text[at] in "{[":
        return _container(text, at)
    found = _STRING.match(text, at) or _SCALAR.match(text, at)
    if found is None:
        raise ValueError(f"not JSON at offset {at}")
    return Node(at, found.end()), found.end()


def _container(text: str, at: int) -> tuple[Node, int]:
    node, close = Node(at, at), "}" if text[at] == "{" else "]"
    at = _skip(text, at + 1)
    while text[at] != close:
        if close == "}":
            key = _STRING.match(text, at)
            assert key is not None
            node.keys.append(json.loads(key[0]))
            node.key_starts.append(at)
            at = _skip(text, _skip(text, key.end()) + 1)  # past the colon
        child, at = _value(text, at)
        node.children.append(child)
        at = _skip(text, at)
        if text[at] == ",":
            at = _skip(text, at + 1)
    node.end = at + 1
    return node, node.end


def _skip(text: str, at: int) -> int:
    return _WS.match(text, at).end()  # type: ignore[union-attr]


# --- edits ---------------------------------------------------------------------------------------


def set_member(text: str, obj: Node, key: str, value: Any) -> str:
    """``text`` with ``obj[key] = value``: the value replaced where the key is, else the member
    added after the last one."""
    if key in obj.keys:
        old = obj.get(key)
        assert old is not None
        return text[:old.start] + _render(text, value, obj.key_starts[obj.keys.index(key)]) \
            + text[old.end:]
    member = f"{json.dumps(key, ensure_ascii=False)}: "
    return _insert(text, obj, [*obj.key_starts], len(obj.children), member, value)


def insert_item(text: str, array: Node, index: int, value: Any) -> str:
    """``text`` with ``value`` put into ``array`` before item ``index`` (at the end for its
    length)."""
    return _insert(text, array, [c.start for c in array.children], index, "", value)


def delete_member(text: str, obj: Node, key: str) -> str:
    index = obj.keys.index(key)
    return _delete(text, obj, obj.key_starts, index)


def delete_item(text: str, array: Node, index: int) -> str:
    return _delete(text, array, [c.start for c in array.children], index)


def _insert(text: str, node: Node, starts: list[int], index: int, prefix: str, value: Any) -> str:
    if not starts:  # an empty container: one entry on its own line, inside the braces
        base = _line_indent(text, node.start)
        indent = base + _unit(text)
        entry, nl = prefix + _render(text, value, None, indent), _newline(text)
        return f"{text[:node.start + 1]}{nl}{indent}{entry}{nl}{base}{text[node.end - 1:]}"
    inline = "\n" not in text[node.start:starts[0]]
    sep = " " if inline else _newline(text) + _line_indent(text, starts[0])
    entry = prefix + _render(text, value, None if inline else starts[0], inline=inline)
    if index == 0:
        return f"{text[:starts[0]]}{entry},{sep}{text[starts[0]:]}"
    after = node.children[index - 1].end  # what _delete takes out: the comma before it too
    return f"{text[:after]},{sep}{entry}{text[after:]}"


def _delete(text: str, node: Node, starts: list[int], index: int) -> str:
    """The reverse of :func:`_insert`: the entry and the separator it came with."""
    if len(starts) == 1:
        return text[:node.start + 1] + text[node.end - 1:]
    if index == 0:
        return text[:starts[0]] + text[starts[1]:]
    return text[:node.children[index - 1].end] + text[node.children[index].end:]


def _render(text: str, value: Any, at: Optional[int], indent: Optional[str] = None, *,
            inline: bool = False) -> str:
    """``value`` as it should read at offset ``at`` (or at ``indent``): on several lines in
    the file's indent unit, continuation lines indented like the line it starts on."""
    if inline:
        return json.dumps(value, ensure_ascii=False)
    base = indent if indent is not None else _line_indent(text, at or 0)
    unit = _unit(text)
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", _newline(text) + base)


def _newline(text: str) -> str:
    """The file's line ending (CRLF where it has one, else LF)."""
    return "\r\n" if "\r\n" in text else "\n"


def _line_indent(text: str, at: int) -> str:
    line = text[text.rfind("\n", 0, at) + 1:at]
    return line[:len(line) - len(line.lstrip(" \t"))]


def _unit(text: str) -> str:
    """The file's indent unit: that of its first indented line (two spaces when none is)."""
    found = re.search(r"^([ \t]+)\S", text, re.M)
    return found[1] if found else "  "
