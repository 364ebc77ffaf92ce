"""Secret shapes a regex alone cannot tell (issue 22), for loopx.redaction.redact: the value
after a secret-named command-line flag unless it is prose, and base64 that decodes to
``user:password``."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable


# `--password hunter2`, `--db-token X`: the next word, unless it is prose ("the --token option").
_FLAG_VALUE = re.compile(
    r"(?:^|[\s\"'=(])--?[\w-]*?(?i:password|passwd|passphrase|pwd|pass|token|secret"
    r"|api-?key|access-?key|auth-?key)[ \t]+(?P<v>(?!-)(?!\[REDACTED)[^\s\"'|;&<>]{3,})"
)
_PROSE_AFTER_FLAG = {"option", "options", "flag", "flags", "argument", "arg", "and", "or", "to",
                     "the", "is", "are", "was", "when", "if", "prompt", "from", "file", "env",
                     "stdin", "instead", "only", "value", "parameter", "with", "without", "for",
                     "in", "on", "not", "none", "takes", "given", "set", "unset", "must", "can"}
# Base64 of `user:password`: after `Basic` (any length), or bare (16+ characters).
_BASIC = re.compile(r"(?i:\bbasic)\s+(?P<v>[A-Za-z0-9+/]{6,}={0,2})(?![\w+/=])"
                    r"|(?<![\w+/=.-])(?P<b>[A-Za-z0-9+/]{16,}={0,2})(?![\w+/=.-])")
_USER_PASS = re.compile(r"[^\s:]{1,64}:[^\s]{3,}")


def flag_spans(text: str) -> Iterable[tuple[int, int]]:
    """The values after secret-named flags (`--password X`) in ``text``."""
    for m in _FLAG_VALUE.finditer(text):
        if m.group("v").lower().rstrip(".,:") not in _PROSE_AFTER_FLAG:
            yield m.span("v")


def basic_spans(text: str) -> Iterable[tuple[int, int]]:
    """The base64 runs of ``text`` that decode to printable ``user:password``."""
    for m in _BASIC.finditer(text):
        group = "v" if m.group("v") else "b"
        value = m.group(group)
        try:
            raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        except (binascii.Error, ValueError):
            continue
        if raw.isascii() and raw.decode().isprintable() and _USER_PASS.fullmatch(raw.decode()):
            yield m.span(group)
