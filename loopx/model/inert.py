"""Text from events, shown as data: it can never become structure in what loopx renders.

Titles, questions, notes, run output and reasons come from any clone (or a pull request), and
the documents loopx renders from them (``brief``, ``prime``, MCP text, ``status``) are read
by agents as instructions and by people on GitHub. So every value that came from an event is
passed through one of these before it is put in a line:

- :func:`line`: one line of visible text. Line breaks become `` ↵ ``, tabs spaces, terminal
  control sequences go, and every other invisible or format character (C0/C1 controls, bidi
  embeddings, overrides and isolates, zero-width characters, BOM, private use) is written as
  a ``\\uXXXX`` escape, so what is shown is what is there; so is a Cyrillic or Greek letter
  that looks Latin in a word that mixes those scripts (a lookalike name). For plain text output.
- :func:`md`: the same line, made inert in Markdown (CommonMark and GitHub's dialect): left as
  it is when it holds only letters, digits, spaces and punctuation that starts nothing
  (``Fix the trailing newline``), otherwise a code span whose fence is longer than any run of
  backticks in it, where nothing (heading, list, quote, fence, link, autolink, HTML, emphasis,
  table) is read. It stays inert wherever it is put on a line, the start included. (One
  GitHub quirk reaches into code spans: ``[x]`` on the line of a task list item ticks it, so
  its bracket is written ``\\u005b`` there.)
- :func:`code`: always a code span (a command to run).
- :func:`indented`: several lines, each a :func:`line` under an indent (a note in a listing).
- :func:`json_text`: JSON, exact, with those characters written as escapes.

JSON carries the text exactly.
Pure: strings in, strings out.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from loopx.model import typed

# Terminal control sequences (shared with loopx.cli.terminal, which removes them too).
SEQUENCE = (
    r"\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI: parameters, intermediates, final byte
    # OSC, DCS, SOS, PM, APC strings (to their terminator; never past a line: the introducer
    # is gone, so what is left of an unterminated one is plain text)
    r"|\x1b[\]PX^_][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"  # other escapes, and a lone ESC
)
_SEQUENCE = re.compile(SEQUENCE)
_BREAK = re.compile("(?:\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029])+")
_BREAK_ONE = re.compile("\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
BREAK_MARK = " \u21b5 "  # " ↵ "
# Invisible characters that are letters or marks to Unicode: the combining grapheme joiner,
# Hangul fillers, the Mongolian vowel separator (a format character in newer Unicode).
_INVISIBLE = frozenset("\u034f\u115f\u1160\u180e\u3164\uffa0")
# Text left as it is: letters, digits, spaces and the punctuation that starts nothing inline.
_PLAIN = re.compile(r"(?:[^\W_]|[ ,.;:?!'\"()/%+=-])+")
_STARTS = re.compile(r"[-+=]|\d+[.)]|\s")  # a list item, setext line, ordered item, indent
_LINKY = re.compile(r"://|www\.", re.IGNORECASE)  # GitHub's bare autolinks
_TICKS = re.compile("`+")
_TICKED = re.compile(r"\[[xX]\]")
# Cc controls, Cf format (bidi, zero-width, BOM, tags), Cs lone surrogates (from bytes decoded
# with surrogateescape), Co private use, Zl/Zp separators.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})


def _hidden(char: str) -> bool:
    """Whether ``char`` is not shown as itself: a hidden category, an invisible filler, or a
    noncharacter (U+FDD0..U+FDEF and U+xFFFE/U+xFFFF: not for interchange, and not XML)."""
    point = ord(char)
    return (unicodedata.category(char) in _HIDDEN or char in _INVISIBLE
            or 0xFDD0 <= point <= 0xFDEF or point & 0xFFFE == 0xFFFE)


def line(text: str) -> str:
    """``text`` as one line of visible characters (see the module docstring)."""
    text = _BREAK.sub(BREAK_MARK, _SEQUENCE.sub("", text)).replace("\t", " ")
    if not text.isprintable() or _INVISIBLE.intersection(text):
        text = "".join(_visible(c) for c in text)
    return unmixed(text)


# Letters that look like Latin ones: Cyrillic а and Latin a, Greek Ο and Latin O, Armenian օ,
# Cherokee Ꭺ, fullwidth ａ, mathematical 𝐚. In a word that mixes these scripts each is shown as
# an escape, as a browser shows such a host name as punycode: "human:\u0430lice" cannot pass
# for "human:alice", nor "human:\uff41lice" (fullwidth ａ) for it, nor "\u03a1\u0391YPAL" for
# PAYPAL. Words of one script ("Москва", "Ελληνικά", "ＡＢＣ") stay as they are, and so does a
# word of only lookalikes: telling it apart needs the name it imitates. Of Cyrillic and Greek
# only the letters listed look Latin; every Armenian and Cherokee letter is counted (a word
# mixing them with Latin has no other reading), and so is each fullwidth or mathematical
# Latin letter or digit (Unicode's compatibility forms of ASCII ones).
_COMPATIBLE = "\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\U0001d400-\U0001d7ff"
_ARMENIAN = "\u0531-\u058f\ufb13-\ufb17"
_CHEROKEE = "\u13a0-\u13ff\uab70-\uabbf"
_LOOKALIKES = ("авеіјкмнорсѕтухһԁԛԝүӏАВЕІЈКМНОРСЅТХҮ" "οιρνυΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"
               + _ARMENIAN + _CHEROKEE + _COMPATIBLE)
_LOOKALIKE = re.compile(f"[{_LOOKALIKES}]")
# A word holding one (from a word's start only: a scan stays linear in the text's length).
_LOOKALIKE_WORD = re.compile(f"(?<!\\S)\\S*[{_LOOKALIKES}]\\S*")
# Each script's letters, by block (a regex scan per word, not a name lookup per letter).
_SCRIPTS = (re.compile("[A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff]"),
            re.compile("[\u0400-\u052f]"), re.compile("[\u0370-\u03ff\u1f00-\u1fff]"),
            re.compile(f"[{_ARMENIAN}]"), re.compile(f"[{_CHEROKEE}]"),
            re.compile(f"[{_COMPATIBLE}]"))


def clip(text: str, most: int) -> str:
    """``text`` cut to ``most`` characters, an ellipsis for what is cut: a text from
    elsewhere (a path, a label, a finding) kept to a bounded length where it is shown."""
    return text if len(text) <= most else text[: most - 1] + "…"


ERROR_CHARS = 1200  # an error message's bound (it may quote a value given, or read elsewhere)


def bounded(text: str, most: int = ERROR_CHARS) -> str:
    """``text`` at most ``most`` characters long (and ``most`` at least 40), its start and its
    end kept (an error's end says what to do) and the middle counted: an error that quotes a
    100 KB value, or a hostile path, stays one short line."""
    if len(text) <= most:
        return text
    head, tail = most * 2 // 3, most // 4
    return f"{text[:head]} … ({len(text) - head - tail} characters not shown) … {text[-tail:]}"


def unmixed(text: str) -> str:
    """``text`` with the lookalike letters of each word that mixes Latin, Cyrillic, Greek,
    Armenian, Cherokee and the compatibility forms of Latin written as ``\\uXXXX`` escapes
    (see _LOOKALIKES): for :func:`line` and the terminal."""
    return text if text.isascii() else _LOOKALIKE_WORD.sub(_unmixed, text)


def _unmixed(word: re.Match[str]) -> str:
    text = word.group()
    bare = _SEQUENCE.sub("", text)  # the terminal's colour codes are no letters of the word
    if sum(script.search(bare) is not None for script in _SCRIPTS) < 2:
        return text
    return _LOOKALIKE.sub(lambda m: _escape(m.group()), text)


def _escape(char: str) -> str:
    point = ord(char)
    return f"\\u{point:04x}" if point <= 0xFFFF else f"\\U{point:08x}"


def _visible(char: str) -> str:
    category = unicodedata.category(char)
    if category == "Zs":  # no-break, ideographic, en and em spaces: a space
        return " "
    if not _hidden(char):
        return char
    return _escape(char)


def indented(text: str, prefix: str = "    ") -> str:
    """Several lines of ``text`` (a note, a message), each a :func:`line` under ``prefix``:
    none can start a line of the output."""
    return "\n".join(prefix + line(part) for part in _BREAK_ONE.split(text))


# What json.dumps leaves raw (it escapes U+0000-U+001F itself): C1 controls, bidi embeddings,
# overrides, isolates and marks, zero-width characters, the BOM, the Unicode line separators;
# and lone surrogates (a forged file name that is not UTF-8, as git listed it), which no
# output stream can encode.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069"
                          "\u2028\u2029\ufeff\ud800-\udfff]")


def json_text(data: Any, **options: Any) -> str:
    """``data`` as JSON, exact, with every character a terminal or a reader acts on (or
    cannot see) written as a ``\\uXXXX`` escape: the same strings, decoded."""
    text = json.dumps(data, ensure_ascii=False, default=typed.json_default, **options)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def escaped(text: str) -> str:
    """``text`` with each character :func:`line` writes as an escape (a zero-width or format
    character, a soft hyphen, a Hangul filler, private use, a lone surrogate) so written, its
    tabs and line breaks kept: for the terminal, which prints a renderer's whole output, so an
    identity ``human:alice\\u200b`` cannot pass for ``human:alice`` in a listing. ESC stays:
    the terminal removed every sequence but its own colour codes before."""
    if text.isascii():  # ASCII's hidden characters are controls, which the terminal removes
        return text
    return "".join(_escape(c) if c not in "\t\n\x1b" and _hidden(c) else c for c in text)


def encodable(text: str) -> str:
    """``text`` with its lone surrogates (see _JSON_UNSAFE) as ``\\uXXXX`` escapes, printable
    on any stream: in JSON text (json.dumps with ensure_ascii=False leaves them raw) the same
    JSON."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def unicode_only(data: Any) -> Any:
    """``data`` (plain JSON values), or a copy with each lone surrogate U+FFFD where it holds
    any: a value a protocol must send as UTF-8 (an MCP result's structured content)."""
    raw = json.dumps(data, ensure_ascii=False, default=typed.json_default)
    return data if _SURROGATE.search(raw) is None else json.loads(unicode_text(raw))


def unicode_text(text: str) -> str:
    """``text`` with each lone surrogate U+FFFD: text that can be sent as UTF-8."""
    return _SURROGATE.sub("\ufffd", text)


def first_hidden(text: str) -> str | None:
    """The first character of ``text`` that :func:`line` hides (a line break, a tab, a
    control or format character), if any; a lookalike letter it escapes is a character."""
    if text.isprintable() and not _INVISIBLE.intersection(text):
        return None
    return next((c for c in text if _hidden(c)), None)


def md(text: str) -> str:
    """``text`` as one line that Markdown reads as nothing but text."""
    shown = line(text)
    if not shown or _plain(shown):
        return shown
    return _span(shown)


def code(text: str) -> str:
    """``text`` as one line in a code span (empty text: nothing)."""
    shown = line(text)
    return _span(shown) if shown else ""


def _plain(shown: str) -> bool:
    if not shown.isascii():  # decomposed accents (e\u0301) are letters too
        shown = unicodedata.normalize("NFC", shown)
    return (_PLAIN.fullmatch(shown) is not None and _STARTS.match(shown) is None
            and not shown.endswith(" ") and _LINKY.search(shown) is None)


def _span(shown: str) -> str:
    # CommonMark: a code span closes at the first run of backticks as long as the one that
    # opened it, and one space is stripped from each end when both ends have one.
    fence = "`" * (max((len(run) for run in _TICKS.findall(shown)), default=0) + 1)
    # cmark-gfm ticks a task list item "- [ ] ..." if "[x]" is anywhere on its line, code
    # spans included: that bracket is written as an escape.
    shown = _TICKED.sub(lambda m: "\\u005b" + m.group()[1:], shown)
    if (shown[0] in "` " or shown[-1] in "` ") and shown.strip(" "):
        shown = f" {shown} "
    return f"{fence}{shown}{fence}"
