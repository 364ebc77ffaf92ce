"""Effects through the library (loopx/ops/effects.py): an intent is indeterminate until its
outcome is recorded, an outcome is recorded once, and an idempotency key is free again only
after a failure."""

from __future__ import annotations

import pytest

from loopx.errors import NotFound, TransitionError
from loopx.ledger.book import Ledger
from loopx.ops import effects

AGENT = "agent:codex@devbox"


def _states(ledger: Ledger) -> dict[str, str]:
    return {e.id: e.state for e in effects.listing(ledger)}


def test_an_intent_is_indeterminate_until_confirmed_or_failed(ledger: Ledger) -> None:
    ledger.run(effects.intend, "github:o/r#1", action="comment", id="x1", actor=AGENT)
    ledger.run(effects.intend, "github:o/r#2", action="comment", id="x2", actor=AGENT)
    assert _states(ledger) == {"x1": "indeterminate", "x2": "indeterminate"}
    ledger.run(effects.confirm, "x1", receipt="https://example.com/c/1", actor=AGENT)
    ledger.run(effects.fail, "x2", error="HTTP 502", actor=AGENT)
    assert _states(ledger) == {"x1": "confirmed", "x2": "failed"}


def test_an_outcome_is_recorded_once_and_only_for_a_known_effect(ledger: Ledger) -> None:
    ledger.run(effects.intend, "repo#1", action="comment", id="x1", actor=AGENT)
    ledger.run(effects.confirm, "x1", receipt="done", actor=AGENT)
    tip = ledger.tip()
    with pytest.raises(TransitionError, match="effect x1 is already confirmed"):
        ledger.run(effects.fail, "x1", error="late", actor=AGENT)
    with pytest.raises(NotFound):
        ledger.run(effects.confirm, "x9", receipt="?", actor=AGENT)
    assert ledger.tip() == tip


def test_an_idempotency_key_is_reused_only_after_a_failure(ledger: Ledger) -> None:
    ledger.run(effects.intend, "repo#1", action="deploy", key="k-1", id="x1", actor=AGENT)
    with pytest.raises(TransitionError, match="idempotency key k-1 is already used by effect x1"):
        ledger.run(effects.intend, "repo#1", action="deploy", key="k-1", id="x2", actor=AGENT)
    ledger.run(effects.fail, "x1", error="timeout", actor=AGENT)
    ledger.run(effects.intend, "repo#1", action="deploy", key="k-1", id="x2", actor=AGENT)
    assert _states(ledger) == {"x1": "failed", "x2": "indeterminate"}
