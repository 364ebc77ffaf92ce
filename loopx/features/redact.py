"""Secret redaction for anything loopx copies from a command into git. Pure (no I/O).

Two sources of secrets: the *values* of environment variables whose names look like
credentials (``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``DB_PASSWORD`` ...), and text that
has the *shape* of a credential whatever its origin (GitHub and Slack tokens, AWS access
keys, ``Bearer`` tokens, ``Authorization:`` headers, ``password=...``, private key blocks).

Redaction is line-oriented so that output can be fed through it as it streams;
:class:`Redactor` keeps the one piece of state that spans lines (inside a private key block).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

MIN_SECRET_LEN = 6  # shorter values ("1", "true", "dev") would mangle ordinary text

# Environment variable names whose values are treated as secrets.
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|_KEY$|^KEY$|CREDENTIAL|^AWS_|AUTH(?!OR)|"
    r"COOKIE",
    re.IGNORECASE,
)
# Names that match the pattern above but hold a location or a setting, not a secret.
_NOT_SECRET = re.compile(r"_(SOCK|PATH|DIR|FILE)$|^AWS_(REGION|DEFAULT_REGION|PROFILE)$", re.I)
# An argument after one of these options is a secret (`--password hunter2`, `--token X`).
_SECRET_OPTION = re.compile(r"^--?[\w-]*(password|passwd|token|secret|api-?key)$", re.I)

# Shapes of credentials. Each pattern's group "keep" (if any) is kept; the rest is replaced.
_SHAPES = [
    r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,255}\b",
    r"\bgithub_pat_[A-Za-z0-9_]{20,255}\b",
    r"\bglpat-[A-Za-z0-9_-]{20,}\b",
    r"\bxox[baprs]-[A-Za-z0-9-]{10,}\b",
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    r"\bsk-[A-Za-z0-9_-]{20,}\b",
    r"(?P<keep>(?i:aws_secret_access_key|aws_session_token)[\"']?\s*[:=]\s*[\"']?)"
    r"[A-Za-z0-9/+=]{16,}",
    r"(?P<keep>(?i:authorization)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;]+(?:\s+[^\s\"',;]+)?",
    r"(?P<keep>(?i:bearer|token)\s+)[A-Za-z0-9._~+/=-]{8,}",
    r"(?P<keep>(?i:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|token)"
    r"[\"']?\s*[:=]\s*[\"']?)[^\s\"'&;,]{4,}",
    r"(?P<keep>[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(?=@)",  # user:password@host in URLs
]
_SHAPE_RE = re.compile("|".join(f"(?:{p})" for p in _SHAPES).replace("(?P<keep>", "(?:"))
_SHAPE_RES = [re.compile(p) for p in _SHAPES]
_KEY_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
_KEY_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")

MARK = "[REDACTED]"


def secret_values(environ: Mapping[str, str]) -> dict[str, str]:
    """value -> variable name, for the environment variables that look like credentials."""
    found: dict[str, str] = {}
    for name, value in environ.items():
        if _NOT_SECRET.search(name) or not _SECRET_NAME.search(name):
            continue
        value = value.strip()
        if len(value) >= MIN_SECRET_LEN:
            found.setdefault(value, name)
    return found


class Redactor:
    """Redacts lines of text; one instance per stream (it remembers open key blocks)."""

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        # Longest first, so a secret that contains another is replaced whole.
        self._secrets = sorted((secrets or {}).items(), key=lambda kv: -len(kv[0]))
        self._in_key = False

    def line(self, text: str) -> str:
        """One line (with or without its newline), redacted."""
        if self._in_key:
            end = _KEY_END.search(text)
            if end is None:
                return ""
            self._in_key = False
            return self._inline(text[end.start():])
        begin = _KEY_BEGIN.search(text)
        if begin is not None:
            end = _KEY_END.search(text, begin.end())
            if end is None:
                self._in_key = True
                return text[: begin.end()] + f" {MARK}\n"
            text = text[: begin.end()] + f" {MARK} " + text[end.start():]
        return self._inline(text)

    def _inline(self, text: str) -> str:
        if _SHAPE_RE.search(text) is not None:  # one scan first: most lines have nothing
            for pattern in _SHAPE_RES:
                text = pattern.sub(_replace, text)
        for value, name in self._secrets:
            if value in text:
                text = text.replace(value, f"[REDACTED:{name}]")
        return text

    def text(self, text: str) -> str:
        """A whole text, redacted (line by line, keeping line ends)."""
        return "".join(self.line(part) for part in text.splitlines(keepends=True))


def _replace(match: re.Match[str]) -> str:
    keep = match.groupdict().get("keep") or ""
    return keep + MARK


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with secret-looking environment values and credential shapes replaced."""
    return Redactor(secret_values(environ or {})).text(text)


def redact_argv(argv: Iterable[str], environ: Mapping[str, str] | None = None) -> list[str]:
    """Each argument redacted (``--password=...``, ``-H 'Authorization: ...'``, tokens)."""
    redactor = Redactor(secret_values(environ or {}))
    result: list[str] = []
    for arg in argv:
        after_option = bool(result) and _SECRET_OPTION.match(result[-1]) is not None
        result.append(MARK if after_option else redactor.text(arg))
    return result
