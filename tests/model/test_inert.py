"""Text from events shown as data (loopx.model.inert): whatever it holds, Markdown readers see a
line of text where it is put, and what it says is all still there to read."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopx.model import inert
from markdownkit import CORPUS, INVISIBLE, github_tags, structure, tokens

# Where loopx puts a value: alone on a line, in a list item, a heading, bold, between two
# values, before one of its own code spans.
PLACES = ["{}", "- t-1: {}", "## Goal g-1: {} (active)", "1. **kind**: {} — `git loopx next`",
          "- {}: {} (asks {})", "- [ ] **a1** {} — unmet", "~~a3~~ {} — retired"]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("text", CORPUS)
def test_no_attack_makes_structure_anywhere_loopx_puts_text(place: str, text: str) -> None:
    n = place.count("{}")
    document = f"# brief\n\n{place.format(*[inert.md(text)] * n)}\n\n- after\n"
    plain = f"# brief\n\n{place.format(*['word'] * n)}\n\n- after\n"
    assert structure(document) == structure(plain), document


@pytest.mark.parametrize("text", CORPUS)
def test_what_is_shown_is_one_visible_line(text: str) -> None:
    for shown in (inert.line(text), inert.md(text), inert.code(text)):
        assert "\n" not in shown and "\r" not in shown
        assert not [c for c in INVISIBLE if c in shown], repr(shown)
        assert shown.isprintable()


def test_hidden_characters_are_written_out_not_dropped() -> None:
    assert inert.line("a\u202eb\u200bc") == "a\\u202eb\\u200bc"
    assert inert.line("tag\U000e0041") == "tag\\U000e0041"
    assert inert.line("one\ntwo\r\n\r\nthree\tfour") == "one ↵ two ↵ three four"
    assert inert.line("\x1b[31mred\x1b[0m \x1b]0;title\x07ok") == "red ok"


@pytest.mark.parametrize("text", ["Fix the trailing newline", "Add --format json to hello-cli",
                                  "Are the JSON field names stable?", "2030-01-01T09:00:00Z",
                                  "Café (déjà vu), 50% done; ok!", "e\u0301tude"])
def test_plain_text_stays_as_it_is(text: str) -> None:
    assert inert.md(text) == text


@pytest.mark.parametrize("text, shown", [
    ("## x", "`## x`"), ("a `b` c", "``a `b` c``"), ("`", "`` ` ``"),
    ("``x``", "``` ``x`` ```"), (" x", "`  x `"), ("see https://e.x", "`see https://e.x`"),
    ("a\n- b", "`a ↵ - b`"), ("", ""),
    ("done [x] or [X]", "`done \\u005bx] or \\u005bX]`"),  # GitHub would tick "- [ ] ..."
])
def test_anything_else_is_a_code_span_that_keeps_the_text(text: str, shown: str) -> None:
    assert inert.md(text) == shown


def test_a_command_is_always_code() -> None:
    assert inert.code("git loopx status") == "`git loopx status`"
    assert inert.code("") == ""


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("#>-+*_=~`[]()<>!|\\&:/@.1 \n\tax\u202e")),
               max_size=30))
def test_any_mix_of_markdown_characters_stays_text(text: str) -> None:
    document = f"- t-1: {inert.md(text)} (goal g)\n"
    assert tokens(document) == tokens("- t-1: word (goal g)\n"), document
    assert github_tags(document) == ["ul", "li"], document


def test_noncharacters_are_shown_as_escapes() -> None:
    # U+FFFE, U+FFFF of every plane and U+FDD0..U+FDEF are not for interchange (and not XML).
    for char in ("\ufffe", "\uffff", "\ufdd0", "\ufdef", "\U0001fffe", "\U0010ffff"):
        assert char not in inert.line(f"a{char}b")
        assert inert.first_hidden(f"a{char}b") == char
    assert inert.line("a\ufdcfb") == "a\ufdcfb"  # a neighbour that is a character


@pytest.mark.parametrize("text, shown", [
    ("human:\u0430lice@example.com", "human:\\u0430lice@example.com"),  # Cyrillic а
    ("\u03a1\u0391YPAL", "\\u03a1\\u0391YPAL"),  # Greek Ρ, Α
    ("agent:bot@l\u0430ptop/w\u043erker", "agent:bot@l\\u0430ptop/w\\u043erker"),
    ("ok human:\u0430lice", "ok human:\\u0430lice"),  # only the mixed word
    ("human:\uff41lice", "human:\\uff41lice"),  # fullwidth ａ
    ("human:\U0001d41alice", "human:\\U0001d41alice"),  # mathematical bold 𝐚
    ("human:\u0585scar", "human:\\u0585scar"),  # Armenian օ
    ("\u13aaDMIN", "\\u13aaDMIN"),  # Cherokee Ꭺ
])
def test_a_word_mixing_lookalike_scripts_shows_its_lookalikes_as_escapes(text: str,
                                                                       shown: str) -> None:
    """A name made of letters that look Latin but are not (Cyrillic а, Greek Ρ) cannot pass
    for the one it imitates in anything loopx renders: an identity, a title, an authority."""
    assert inert.line(text) == shown
    assert inert.md(text) == f"`{shown}`"


@pytest.mark.parametrize("text", ["Москва", "Ελληνικά", "α-helix", "human:josé@example.com",
                                  "Café déjà vu", "Fix Москва bug", "ΑΒΓ test",
                                  "ＡＢＣ社", "Հայերեն", "ᏣᎳᎩ"])
def test_words_of_one_script_stay_as_they_are(text: str) -> None:
    assert inert.line(text) == text


def test_a_word_in_colour_is_judged_by_its_letters() -> None:
    """The terminal's own colour codes (``\\x1b[1m``) hold Latin letters: a bold "Москва" was
    taken as a word mixing scripts and shown as escapes."""
    assert inert.unmixed("\x1b[1mМосква\x1b[0m") == "\x1b[1mМосква\x1b[0m"
    assert inert.unmixed("\x1b[32mhuman:\u0430lice\x1b[0m") == "\x1b[32mhuman:\\u0430lice\x1b[0m"
