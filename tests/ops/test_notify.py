"""`git loopx notify`: each nudge (a gate waiting on you) goes out once per channel, as an
effect with a receipt, to a real webhook server on 127.0.0.1 and to the desktop's notifier."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from conftest import git, invoke
from webhookkit import Hook

ME = "human:test@example.com"


def _plan(repo: Path) -> None:
    for args in (("init",), ("goal", "add", "Ship", "--id", "g-1", "--accept", "works"),
                 ("todo", "add", "g-1", "release", "--id", "t-1"),
                 ("gate", "open", "g-1", "Release <now>?", "--authority", ME, "--blocks", "t-1",
                  "--id", "q-1")):
        assert invoke(repo, *args).code == 0


def _effects(repo: Path) -> list[dict[str, Any]]:
    found = invoke(repo, "effect", "list", "--format", "json").json()
    assert isinstance(found, list)
    return found


def test_a_gate_waiting_on_you_is_posted_once(repo: Path, hook: Hook) -> None:
    _plan(repo)
    first = invoke(repo, "notify", "--webhook", hook.url, "--format", "json")
    assert first.code == 0, first.err
    assert [s["state"] for s in first.json()["sends"]] == ["sent"]  # type: ignore[index]
    assert len(hook.received) == 1
    assert "gate q-1 asks you: Release <now>?" in hook.received[0]["text"]
    again = invoke(repo, "notify", "--webhook", hook.url)
    assert again.code == 0 and again.out.startswith("skipped  webhook  gate q-1")
    assert len(hook.received) == 1  # never twice
    [effect] = _effects(repo)
    assert (effect["state"], effect["action"], effect["target"]) == (
        "confirmed", "notify", "webhook:127.0.0.1")
    assert effect["receipt"] == "HTTP 200 from 127.0.0.1: ok"
    assert "secret" not in json.dumps(effect)  # the webhook's path stays out of the ledger


def test_a_failed_send_is_recorded_and_retried_next_time(repo: Path, hook: Hook) -> None:
    _plan(repo)
    hook.status = 500
    git(repo, "config", "loopx.notify.webhook", hook.url)
    failed = invoke(repo, "notify")
    assert failed.code == 0 and failed.out.startswith("failed   webhook  gate q-1")
    assert [e["state"] for e in _effects(repo)] == ["failed"]
    hook.status = 200
    assert invoke(repo, "notify").out.startswith("sent     webhook  gate q-1")
    assert [e["state"] for e in _effects(repo)] == ["failed", "confirmed"]
    assert len(hook.received) == 2


def test_a_new_question_is_a_new_nudge_and_an_answered_one_none(repo: Path, hook: Hook) -> None:
    _plan(repo)
    assert invoke(repo, "notify", "--webhook", hook.url).code == 0
    assert invoke(repo, "gate", "answer", "q-1", "--approve").code == 0
    assert invoke(repo, "gate", "open", "g-1", "And docs?", "--authority", ME,
                  "--id", "q-2").code == 0
    out = invoke(repo, "notify", "--webhook", hook.url).out
    assert out.startswith("sent     webhook  gate q-2") and "q-1" not in out
    assert len(hook.received) == 2


def test_the_desktop_gets_it_through_notify_send(repo: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _plan(repo)
    bindir = tmp_path / "desktop"
    bindir.mkdir()
    said = tmp_path / "said.txt"
    (bindir / "notify-send").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {said}\n')
    (bindir / "notify-send").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{__import__('os').environ['PATH']}")
    assert invoke(repo, "notify", "--desktop").out.startswith("sent     desktop  gate q-1")
    assert invoke(repo, "notify", "--desktop").out.startswith("skipped  desktop  gate q-1")
    shown = said.read_text().splitlines()
    assert shown[:3] == ["--app-name=loopx", "--", "loopx: waiting on you"]
    assert shown[3].startswith("gate q-1 asks you") and len(shown) == 4


def test_no_desktop_notifier_is_said_and_nothing_is_recorded(repo: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _plan(repo)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # git, and no notify-send (not on this machine)
    import shutil

    if shutil.which("notify-send"):
        pytest.skip("this machine has notify-send")
    out = invoke(repo, "notify", "--desktop").out
    assert out.startswith("skipped  desktop  gate q-1") and "not installed" in out
    assert _effects(repo) == []


def test_without_a_channel_notify_says_how_to_name_one(repo: Path) -> None:
    _plan(repo)
    result = invoke(repo, "notify")
    assert result.code == 1 and result.err.count("\n") == 1 and "--webhook" in result.err


@pytest.mark.parametrize("url", ["hooks.slack.com/services/T0/B0/secretpath",  # no scheme
                                 "ftp://hooks.example/secretpath", "https:///secretpath",
                                 "http://[hooks/secretpath"])
@pytest.mark.parametrize("given", ["flag", "config"])
def test_a_webhook_that_is_no_url_is_refused_unquoted_and_nothing_recorded(
        repo: Path, url: str, given: str) -> None:
    """Pasted without its https://, the whole webhook (its secret path) was the 'scheme' the
    failed send quoted, and that failure went into the ledger as an effect, pushed with it."""
    _plan(repo)
    if given == "config":
        git(repo, "config", "loopx.notify.webhook", url)
    before = git(repo, "rev-parse", "refs/heads/loopx/state")
    for args in (["notify"], ["watch", "--notify", "--timeout", "0", "--", "true"]):
        if args[0] == "watch" and given == "flag":
            continue  # watch --notify reads git config only
        result = invoke(repo, *args, *(["--webhook", url] if given == "flag" else []))
        named = "--webhook" if given == "flag" else "git config loopx.notify.webhook"
        assert result.code == 1 and result.err.count("\n") == 1, result.err
        assert result.err.startswith(f"error: {named} is not an http(s) URL with a host")
        assert "secretpath" not in result.err + result.out
    assert git(repo, "rev-parse", "refs/heads/loopx/state") == before
    assert _effects(repo) == []


def test_a_session_awaiting_your_instruction_is_a_nudge_per_response(repo: Path,
                                                                    hook: Hook) -> None:
    _plan(repo)
    agent = "agent:codex@devbox"
    assert invoke(repo, "gate", "answer", "q-1", "--approve").code == 0
    assert invoke(repo, "session", "open", "port the parser", "--id", "s-1", actor=agent).code == 0
    assert invoke(repo, "session", "respond", "s-1", "first draft\nready", actor=agent).code == 0
    assert invoke(repo, "notify", "--webhook", hook.url).out.startswith(
        "sent     webhook  session s-1")
    assert invoke(repo, "notify", "--webhook", hook.url).out.startswith("skipped")
    assert invoke(repo, "session", "send", "s-1", "use the new API").code == 0
    assert invoke(repo, "session", "respond", "s-1", "second draft", actor=agent).code == 0
    assert invoke(repo, "notify", "--webhook", hook.url).out.startswith(
        "sent     webhook  session s-1")
    assert len(hook.received) == 2
    assert "session s-1 (port the parser) is waiting" in hook.received[0]["text"]


def test_the_watcher_tries_a_failed_send_again_only_when_someone_else_moves_the_state(
        repo: Path, hook: Hook) -> None:
    from loopx import Ledger
    from loopx.ops import notify, status, wakes

    _plan(repo)
    hook.status = 500
    reports: list[notify.Report] = []
    with Ledger.open(repo) as ledger, Ledger.open(repo) as other:
        seen = notify.watcher(ledger, notify.Channels(webhook=hook.url), actor=ME,
                              told=reports.append)

        def look() -> None:
            seen(status.status(ledger, actor=ME, ci=False, offline=True), datetime.now(timezone.utc))

        look()
        assert len(hook.received) == 1  # the first look sends; the failure is recorded
        look()
        ledger.run(wakes.set_, at="2020-01-01T00:00:00Z", id="w-1", actor=ME)
        assert wakes.ack_due(ledger, ["w-1"], actor=ME) == ["w-1"]
        look()  # moved by its own writes only: the failed effect, the wake, its ack
        assert len(hook.received) == 1 and len(reports) == 1
        other.run(wakes.set_, at="2020-01-01T00:00:00Z", id="w-2", actor=ME)
        ledger.run(wakes.ack, "w-2", actor=ME)  # its own write on top of someone else's
        look()
        assert len(hook.received) == 2 and len(reports) == 2
        hook.status = 200
        look()  # its own failed effect moved it: still no reason to try again
        assert len(hook.received) == 2
        other.run(wakes.set_, at="2020-01-01T00:00:00Z", id="w-3", actor=ME)
        look()
    assert len(hook.received) == 3
    assert [e["state"] for e in _effects(repo)] == ["failed", "failed", "confirmed"]
