"""The gitleaks default rules, as a second maintained shape set beside detect-secrets.

``loopx/data/gitleaks.json`` holds the ``[[rules]]`` and global allowlist of gitleaks'
``config/gitleaks.toml`` (MIT licence, ``loopx/data/gitleaks-LICENSE``), with its version and
commit; ``python -m loopx.redaction.gitleaks FILE.toml --version TAG --commit SHA`` rewrites it
from a newer gitleaks release (needs Python 3.11 for ``tomllib``; the package reads JSON).

The patterns are Go RE2; they are converted to Python ``re`` when the file is first needed
(``(?i)`` in mid-pattern becomes a scoped group, POSIX classes are spelled out, ``\\z`` is
``\\Z``), and each one that still does not compile is skipped and counted (:func:`stats`).
As in gitleaks, a rule runs only on text that holds one of its keywords (lower case), and a
hit counts only if its secret reaches the rule's entropy and no allowlist excuses it.

Loaded once, on the first text the redactor's cheap gate cannot clear (a few ms): an
ordinary line never reads the file.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "gitleaks.json")
SOURCE = "https://github.com/gitleaks/gitleaks/blob/{version}/config/gitleaks.toml"
# Rules a line-oriented redactor cannot use: a file name (not text) decides them.
_PATH_ONLY = "path-only"
# Go RE2 POSIX classes, spelled out for Python (inside a bracket expression).
_POSIX = {"alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "digit": "0-9", "xdigit": "0-9a-fA-F",
          "upper": "A-Z", "lower": "a-z", "space": r"\s", "word": r"\w", "punct": r"!-/:-@\[-`{-~",
          "blank": r" \t", "cntrl": r"\x00-\x1f\x7f", "print": r" -~", "graph": r"!-~"}


@dataclass(frozen=True)
class Allow:
    """One allowlist: the hit is excused if its target matches a regex or holds a stopword."""

    regexes: tuple[re.Pattern[str], ...]
    stopwords: tuple[str, ...]
    target: str = "secret"  # "secret", "match" or "line", as gitleaks' regexTarget
    all_of: bool = False  # condition = "AND": every criterion given must hold

    def excuses(self, secret: str, match: str, line: str) -> bool:
        text = {"match": match, "line": line}.get(self.target, secret)
        checks = []
        if self.regexes:
            checks.append(any(rx.search(text) for rx in self.regexes))
        if self.stopwords:
            checks.append(any(map(secret.lower().__contains__, self.stopwords)))
        if not checks:
            return False
        return all(checks) if self.all_of else any(checks)


@dataclass
class Rule:
    id: str
    pattern: str  # RE2; converted and compiled on the first text with one of the keywords
    keywords: tuple[str, ...]
    entropy: float = 0.0
    group: int = 0  # 0: the first non-empty group, else the whole match
    allows: tuple[Allow, ...] = ()
    _regex: re.Pattern[str] | None = None

    @property
    def regex(self) -> re.Pattern[str]:
        # Compiling all 221 patterns takes ~65 ms; a run's text needs a handful of them.
        if self._regex is None:
            self._regex = _compile(convert(self.pattern))
        return self._regex


@dataclass
class RuleSet:
    rules: list[Rule]
    allow: Allow
    version: str = ""
    skipped: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        # The keyword prefilter (gitleaks uses Aho-Corasick): each distinct keyword is looked
        # for once per text (a C-level substring search each), and only the rules of the
        # keywords found are run.
        self._keywords = sorted({k for r in self.rules for k in r.keywords})
        self._always = [i for i, r in enumerate(self.rules) if not r.keywords]
        self._by_keyword: dict[str, list[int]] = {}
        for i, rule in enumerate(self.rules):
            for word in rule.keywords:
                self._by_keyword.setdefault(word, []).append(i)

    def _candidates(self, low: str) -> list[Rule]:
        picked = set(self._always)
        for word in filter(low.__contains__, self._keywords):
            picked.update(self._by_keyword[word])
        return [self.rules[i] for i in sorted(picked)]

    def spans(self, line: str) -> Iterator[tuple[int, int]]:
        """The spans of the secrets these rules find in ``line``."""
        for rule in self._candidates(line.lower()):
            regex = self._regex(rule)
            for m in regex.finditer(line) if regex else ():
                span = _secret_span(m, rule.group)
                secret = line[span[0]:span[1]]
                if not secret or (rule.entropy and shannon(secret) < rule.entropy):
                    continue
                if self.allow.excuses(secret, m.group(0), line) or any(
                    a.excuses(secret, m.group(0), line) for a in rule.allows
                ):
                    continue
                yield span


    def _regex(self, rule: Rule) -> re.Pattern[str] | None:
        try:
            return rule.regex
        except (ValueError, re.error, FutureWarning, DeprecationWarning) as exc:
            self.rules.remove(rule)
            self.skipped[f"{rule.id}: {exc}"] += 1
            self.__post_init__()  # the keyword index points into self.rules
            return None

    def compile_all(self) -> None:
        """Compile every rule now (each one that does not compile is dropped and counted)."""
        for rule in list(self.rules):
            self._regex(rule)


def _secret_span(m: re.Match[str], group: int) -> tuple[int, int]:
    if group and m.start(group) != -1:
        return m.span(group)
    for i in range(1, (m.re.groups or 0) + 1):
        if m.start(i) != -1 and m.end(i) > m.start(i):
            return m.span(i)
    return m.span()


def shannon(text: str) -> float:
    """Shannon entropy in bits per character, as gitleaks computes it."""
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values()) if n else 0.0


# --------------------------------------------------------------------------- RE2 -> re
_FLAGS = re.compile(r"\(\?([imsU-]+)\)")
_POSIX_CLASS = re.compile(r"\[:(\^?)(\w+):\]")

def convert(pattern: str) -> str:
    """A Go RE2 pattern in Python ``re`` syntax (raises ``ValueError`` for what has none).

    ``(?i)`` after the start applies, in RE2, to the rest of its group, across ``|``: it
    becomes ``(?i:...)`` closed before each ``|`` and at the group's end, reopened after.
    """
    out: list[str] = []
    open_flags: list[list[str]] = [[]]  # per group depth: flag scopes opened in it
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            esc = pattern[i:i + 2]
            if esc in ("\\z", "\\Q", "\\C") or esc.startswith("\\p") or esc.startswith("\\P"):
                if esc != "\\z":
                    raise ValueError(f"no Python equivalent for {esc}")
                esc = "\\Z"
            out.append(esc)
            i += 2
        elif c == "[":
            j, cls = _bracket(pattern, i)
            out.append(cls)
            i = j
        elif c == "(":
            flags = _FLAGS.match(pattern, i)
            if flags:
                if "U" in flags.group(1):
                    raise ValueError("ungreedy flag")
                if i == 0:
                    out.append(flags.group(0))
                else:
                    out.append(f"(?{flags.group(1)}:")
                    open_flags[-1].append(flags.group(1))
                i += len(flags.group(0))
                continue
            out.append(c)
            open_flags.append([])
            i += 1
        elif c == ")":
            out.append(")" * len(open_flags.pop()) + ")")
            if not open_flags:
                raise ValueError("unbalanced parenthesis")
            i += 1
        elif c == "|":
            scopes = open_flags[-1]
            out.append(")" * len(scopes) + "|" + "".join(f"(?{f}:" for f in scopes))
            i += 1
        else:
            out.append(c)
            i += 1
    out.append(")" * len(open_flags[0]))
    return "".join(out)


def _bracket(pattern: str, i: int) -> tuple[int, str]:
    """The bracket expression at ``pattern[i]``: (end index, Python text)."""
    j = i + 1
    parts = ["["]
    if j < len(pattern) and pattern[j] == "^":
        parts.append("^")
        j += 1
    first = True
    while j < len(pattern):
        c = pattern[j]
        if c == "]" and not first:
            parts.append("]")
            return j + 1, "".join(parts)
        first = False
        if c == "\\":
            parts.append(pattern[j:j + 2])
            j += 2
            continue
        posix = _POSIX_CLASS.match(pattern, j)
        if posix:
            if posix.group(1) or posix.group(2) not in _POSIX:
                raise ValueError(f"POSIX class {posix.group(0)}")
            parts.append(_POSIX[posix.group(2)])
            j += len(posix.group(0))
            continue
        # Python warns (and may one day change meaning) on "[", "--", "&&", "~~", "||" in a set.
        parts.append("\\" + c if c in "[&~|" or (c == "-" and pattern[j + 1:j + 2] == "-") else
                     ("]" if c == "]" else c))
        j += 1
    raise ValueError("unterminated bracket expression")


def _compile(converted: str) -> re.Pattern[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a FutureWarning means the meaning may differ
        return re.compile(converted, re.ASCII)  # RE2's \w \d \s \b are ASCII


def _allow(raw: dict[str, Any]) -> Allow | None:
    """An allowlist entry, or None when it needs a path (which a line of text has not)."""
    if raw.get("paths") and raw.get("condition", "OR").upper() == "AND":
        return None  # every criterion must hold, and the path cannot
    regexes = tuple(_compile(convert(p)) for p in raw.get("regexes", ()))
    stopwords = tuple(w.lower() for w in raw.get("stopwords", ()))
    if not regexes and not stopwords:
        return None
    return Allow(regexes, stopwords, raw.get("regexTarget", "secret"),
                 raw.get("condition", "OR").upper() == "AND")


def _rule(raw: dict[str, Any]) -> Rule:
    if "regex" not in raw:
        raise LookupError(_PATH_ONLY)
    allows = tuple(a for a in (_allow(x) for x in raw.get("allowlists", ())) if a)
    return Rule(raw["id"], raw["regex"], tuple(k.lower() for k in raw.get("keywords", ())),
                float(raw.get("entropy", 0.0)), int(raw.get("secretGroup", 0)), allows)


def build(doc: dict[str, Any]) -> RuleSet:
    """The rule set of a gitleaks.json document; each rule that cannot be used is counted."""
    rules: list[Rule] = []
    skipped: Counter[str] = Counter()
    for raw in doc["rules"]:
        try:
            rules.append(_rule(raw))
        except LookupError as exc:
            skipped[str(exc.args[0])] += 1
        except (ValueError, re.error, FutureWarning, DeprecationWarning) as exc:
            skipped[f"{raw['id']}: {exc}"] += 1
    allow = _allow(doc.get("allowlist", {})) or Allow((), ())
    return RuleSet(rules, allow, doc.get("version", ""), skipped)


_RULES: RuleSet | None = None


def rules() -> RuleSet:
    """The packaged rule set, read and compiled on first use."""
    global _RULES
    if _RULES is None:
        with open(DATA, encoding="utf-8") as fh:
            _RULES = build(json.load(fh))
    return _RULES


def stats() -> dict[str, Any]:
    """Version, rules in the file, loaded, and skipped (with reasons) of the packaged set."""
    ruleset = rules()
    ruleset.compile_all()
    return {"version": ruleset.version, "loaded": len(ruleset.rules),
            "skipped": sum(ruleset.skipped.values()), "reasons": dict(ruleset.skipped)}


# --------------------------------------------------------------------------- update
def document(toml: dict[str, Any], version: str, commit: str) -> dict[str, Any]:
    """The gitleaks.json document for a parsed gitleaks.toml (descriptions dropped)."""
    keep = ("id", "regex", "keywords", "entropy", "secretGroup", "allowlists", "path")
    return {
        "source": SOURCE.format(version=version), "version": version, "commit": commit,
        "licence": "MIT, Copyright (c) 2019 Zachary Rice: loopx/data/gitleaks-LICENSE",
        "allowlist": {k: v for k, v in toml.get("allowlist", {}).items() if k != "description"},
        "rules": [{k: r[k] for k in keep if k in r} for r in toml["rules"]],
    }


def main(argv: Sequence[str]) -> int:
    """``FILE.toml --version TAG --commit SHA``: rewrite loopx/data/gitleaks.json."""
    import argparse
    import tomllib  # Python 3.11+; only this maintenance step needs it

    parser = argparse.ArgumentParser(prog="python -m loopx.redaction.gitleaks")
    parser.add_argument("toml", help="config/gitleaks.toml of a gitleaks release")
    parser.add_argument("--version", required=True, help="its tag, e.g. v8.30.1")
    parser.add_argument("--commit", required=True, help="the commit of that tag")
    args = parser.parse_args(argv)
    with open(args.toml, "rb") as fh:
        doc = document(tomllib.load(fh), args.version, args.commit)
    ruleset = build(doc)
    ruleset.compile_all()
    with open(DATA, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    print(f"gitleaks {args.version}: {len(ruleset.rules)} rules loaded, "
          f"{sum(ruleset.skipped.values())} skipped {dict(ruleset.skipped)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
