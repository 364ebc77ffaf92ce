"""Terminal injection (issue 12, item 11): text from another clone never reaches the terminal
with control sequences or bidi overrides in it; JSON output stays exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_loopx
from loopx.cli import terminal
from syncutil import STATE, do_sync, seeded

OSC_TITLE = "\x1b]0;you have been pwned\x07"
OSC_CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x1b\\"
OSC_LINK = "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07"
CSI_OVERWRITE = "\x1b[1A\x1b[2K\x1b[8m"
C1_CSI = "\x9b2J"
BIDI = "\u202etxt.exe\u202c"
DANGEROUS = [OSC_TITLE, OSC_CLIPBOARD, OSC_LINK, CSI_OVERWRITE, C1_CSI, BIDI, "\x1bPq#0\x1b\\",
             "\r", "\x07", "\x1b", "\u2066x\u2069", "\u200f", "\x00"]
FORBIDDEN = ["\x1b", "\x9b", "\x9c", "\x07", "\r", "\x00", "\u202e", "\u202c", "\u2066", "\u2069",
             "\u200f"]


@pytest.mark.parametrize("sequence", DANGEROUS)
def test_safe_removes_every_control_sequence(sequence: str) -> None:
    out = terminal.safe(f"before {sequence}\nafter")
    assert out.startswith("before ") and out.endswith("\nafter")
    assert not any(c in out for c in FORBIDDEN), repr(out)


def test_safe_keeps_our_own_colours_tabs_and_newlines() -> None:
    import click

    styled = click.style("Ready:", fg="green", bold=True) + "\n\tx"
    assert terminal.safe(styled) == styled
    # ...beside text that is not ASCII too, and a bold word of one script stays itself.
    for word in ("Москва", "Café", "東京"):
        styled = click.style(word, bold=True) + " " + click.style("ready", fg="green")
        assert terminal.safe(styled) == styled


def test_json_text_is_exact_and_escapes_what_a_terminal_acts_on() -> None:
    value = {"title": "".join(DANGEROUS)}
    text = terminal.json_text(value)
    assert json.loads(text) == value
    assert not any(c in text for c in FORBIDDEN)


def _hostile_remote(tmp_path: Path) -> tuple[Path, Path]:
    """A remote whose state (built with plumbing) names a goal, a todo, a gate and a note
    with terminal sequences in their text; a clone that synced it."""
    from statekit import commit_files, file_of, foreign_event

    remote, (ours,) = seeded(tmp_path, 1)
    bad = "".join(DANGEROUS)
    events = [
        foreign_event("goal.created", {"id": "g-1", "title": f"Ship {OSC_TITLE}{BIDI}"},
                      clock=10),
        foreign_event("todo.added", {"id": "t-1", "goal": "g-1",
                                     "title": f"Do {CSI_OVERWRITE}it"}, clock=11),
        foreign_event("gate.opened", {"id": "q-1", "goal": "g-1",
                                      "question": f"Ok? {OSC_CLIPBOARD}",
                                      "authority": ["human:alice@example.com"],
                                      "blocks": ["t-1"]}, clock=12, goal="g-1"),
        foreign_event("note.added", {"id": "n-1", "text": f"note {bad}"}, clock=13),
    ]
    commit_files(remote, STATE, dict(file_of(e) for e in events), message="hostile text")
    do_sync(ours)
    return remote, ours


@pytest.mark.parametrize("args", [
    ("status",), ("status", "--all"), ("goal", "show", "g-1"), ("goal", "list"),
    ("todo", "list"), ("todo", "show", "t-1"), ("gate", "list"), ("gate", "show", "q-1"),
    ("log",), ("log", "--oneline"), ("next", "--offline"), ("brief",),
    ("todo", "claim", "t-1"),  # refused: the error names the gate's question
])
def test_text_from_a_remote_reaches_the_terminal_without_control_sequences(
        tmp_path: Path, args: tuple[str, ...]) -> None:
    _, ours = _hostile_remote(tmp_path)
    result = run_loopx(ours, *args)
    for stream in (result.out, result.err):
        leaked = [repr(c) for c in FORBIDDEN if c in stream]
        assert not leaked, f"{args}: {leaked} in {stream!r}"
    assert "Traceback" not in result.err


def test_json_output_keeps_the_remote_text_exactly(tmp_path: Path) -> None:
    _, ours = _hostile_remote(tmp_path)
    result = run_loopx(ours, "status", "--format", "json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["goals"][0]["title"] == f"Ship {OSC_TITLE}{BIDI}"
    assert doc["gates"][0]["question"] == f"Ok? {OSC_CLIPBOARD}"


@pytest.mark.parametrize("char", ["\u200b", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u3164",
                                  "\ue000", "\U000e0041", "\udcff"])
def test_safe_shows_an_invisible_character_as_an_escape(char: str) -> None:
    """An identity holding one (human:alice\u200b, which the actor pattern's \\S lets through)
    cannot pass for human:alice in gate list or a write's confirmation, which print through
    safe() and not inert.line."""
    out = terminal.safe(f"human:alice{char}@example.com\n\tok")
    assert char not in out and out.endswith("@example.com\n\tok")
    assert f"\\u{ord(char):04x}" in out or f"\\U{ord(char):08x}" in out


def test_an_invisible_character_in_an_authority_is_an_escape_in_gate_list(repo: Path) -> None:
    name = "human:alice\u200b@example.com"
    for args in (("init",), ("goal", "add", "G", "--id", "g1"),
                 ("gate", "open", "g1", "Ship it?", "--id", "q1", "--authority", name)):
        result = run_loopx(repo, *args)
        assert result.code == 0 and name not in result.out, result.out
    for args in (("gate", "list"), ("gate", "show", "q1"), ("status",)):
        out = run_loopx(repo, *args).out
        assert "human:alice\\u200b@example.com" in out and name not in out, (args, out)
