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
import io
import json
import math
import re
from typing import Any

from loopx.errors import CodecError

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

_yaml: Any = None


def _parser() -> Any:
    global _yaml
    if _yaml is None:
        from ruamel.yaml import YAML

        try:
            _yaml = YAML(typ="safe", pure=False)  # C parser when ruamel.yaml.clib is present
        except Exception:  # pragma: no cover - clib missing or broken
            _yaml = YAML(typ="safe", pure=True)
    return _yaml


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
    fast = _load_canonical(text, data)
    if fast is not _NO_KEY:
        return fast
    try:
        return _Builder(name).build(_parser().parse(io.StringIO(text)))
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

# Characters YAML cannot carry unescaped inside double quotes (C0/C1 controls, DEL, the line
# and paragraph separators, BOM) beyond what json.dumps already escapes.
_UNPRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff]")


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
        and resolve_plain(value) == value
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
#
# Nearly every event file was written by dump() above. For those, a small line parser is many
# times faster than a YAML event stream. It needs no care about YAML's corners: its result is
# used only when dump() gives back exactly the same bytes, and load(dump(v)) == v is the
# codec's tested round-trip property, so the value is the one the full loader would build.
# Anything else (hand-written files, other styles, over the limits) takes the full path.


def _load_canonical(text: str, data: bytes) -> Value:
    """The value of a canonical document, or ``_NO_KEY`` when it is not one."""
    try:
        lines = text.split("\n")
        if lines[-1] != "" or not lines[0] or lines[0][0] in " -":
            return _NO_KEY
        value, end = _block(lines, 0, 0, 1)
        if end != len(lines) - 1 or dump(value) != data:
            return _NO_KEY
        return value
    except (ValueError, IndexError, KeyError, TypeError, CodecError, RecursionError):
        return _NO_KEY


def _block(lines: list[str], i: int, indent: int, depth: int) -> tuple[Value, int]:
    if depth > MAX_DEPTH:
        raise ValueError("too deep for the fast path")
    if lines[i].startswith("-", indent):
        return _seq(lines, i, indent, depth)
    out: dict[str, Value] = {}
    while i < len(lines) - 1 and _indent(lines[i]) == indent and not lines[i].startswith("-", indent):
        key, rest = _split_key(lines[i][indent:])
        out[key], i = _value(lines, i, rest, indent, depth)
    return out, i


def _seq(lines: list[str], i: int, indent: int, depth: int) -> tuple[Value, int]:
    out: list[Value] = []
    while i < len(lines) - 1 and _indent(lines[i]) == indent and lines[i].startswith("-", indent):
        rest = lines[i][indent + 1:]
        if rest.startswith(" ") and _is_key(rest[1:]):
            # "- key: ..." opens a mapping whose keys sit two columns further in.
            lines[i] = " " * (indent + 2) + rest[1:]
            item, i = _block(lines, i, indent + 2, depth + 1)
        else:
            item, i = _value(lines, i, rest.strip() if rest else None, indent, depth)
        out.append(item)
    return out, i


def _value(lines: list[str], i: int, rest: str | None, indent: int, depth: int) -> tuple[Value, int]:
    if rest is None or rest == "":
        return _block(lines, i + 1, indent + 2, depth + 1)
    return _scalar_value(rest), i + 1


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_key(text: str) -> bool:
    if text.startswith('"'):
        _, end = json.JSONDecoder().raw_decode(text)
        return text[end:end + 1] == ":"
    return ": " in text or text.endswith(":")


def _split_key(text: str) -> tuple[str, str | None]:
    if text.startswith('"'):
        key, end = json.JSONDecoder().raw_decode(text)
    else:
        end = text.index(": ") if ": " in text else len(text) - 1
        key = resolve_plain(text[:end])
    if text[end] != ":":
        raise ValueError("not a mapping entry")
    rest = text[end + 1:]
    return key, (rest[1:] if rest.startswith(" ") else None if not rest else rest)


def _scalar_value(text: str) -> Value:
    if text.startswith('"'):
        return json.loads(text)
    if text == "{}":
        return {}
    if text == "[]":
        return []
    return resolve_plain(text)
