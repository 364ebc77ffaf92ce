"""Path globs for the scope of evidence (``--paths``, a criterion's paths, the ledger's
``evidence_ignore``). Pure: strings in, booleans out.

A glob is matched against a path from the top of the repository, ``/``-separated:

- ``*`` matches any characters except ``/``; ``?`` one character except ``/``;
  ``[abc]``, ``[a-z]``, ``[!abc]`` a character class (never ``/``);
- ``**`` as a whole segment matches any number of segments, none included
  (``docs/**``, ``**/*.md``, ``src/**/test_*.py``);
- a glob also matches everything below a directory it matches: ``src`` and ``src/`` cover
  ``src/app/main.py`` as ``src/**`` does.

Patterns with no ``/`` are not special: ``*.md`` is a file at the top; use ``**/*.md`` for
any depth (unlike ``.gitignore``, a scope is read the same way everywhere).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

GLOB_PATTERN = r"^[^\x00\n\r]+$"  # what the event model accepts as one glob, of at most
GLOB_MAX = 500  # this many characters
MAX_GLOBS = 100  # globs per scope or ignore list, as the event model bounds them


@lru_cache(maxsize=1024)
def _compile(glob: str) -> re.Pattern[str]:
    segments = glob.strip("/").split("/")
    parts: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]*/)*")
        else:
            parts.append(_segment(segment) + ("" if last else "/"))
    try:  # anything below a matched directory matches too
        return re.compile("".join(parts) + "(?:/.*)?", re.DOTALL)
    except re.error:  # e.g. a reversed range [z-a]: the glob stands for itself
        return re.compile(re.escape(glob.strip("/")) + "(?:/.*)?", re.DOTALL)


def _segment(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := _class_end(segment, i)) > 0:
            body = segment[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            escaped = "".join("\\" + c if c in "\\[]^" else c for c in body)
            out.append(f"[^/{escaped}]" if negate else f"[{escaped}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _class_end(segment: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start``, or -1 (then ``[`` is literal)."""
    i = start + 1
    if i < len(segment) and segment[i] in "!^":
        i += 1
    if i < len(segment) and segment[i] == "]":  # a leading ] belongs to the class
        i += 1
    end = segment.find("]", i)
    return end


def matches(path: str, glob: str) -> bool:
    """Whether ``path`` (from the top of the repository) is ``glob`` or lies below it."""
    return _compile(glob).fullmatch(path) is not None


def any_match(path: str, globs: Iterable[str]) -> bool:
    return any(matches(path, glob) for glob in globs)


def in_scope(paths: Sequence[str], *, include: Sequence[str] = (),
             exclude: Sequence[str] = ()) -> list[str]:
    """The ``paths`` a scope covers: those matching some ``include`` glob (every path when
    there is none) and no ``exclude`` glob."""
    return [p for p in paths
            if (not include or any_match(p, include)) and not any_match(p, exclude)]
