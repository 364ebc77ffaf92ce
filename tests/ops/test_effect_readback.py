"""Effects read back (loopx/ops/effects.py, loopx/recovery/effects.py): after its grace
period the owner's status reads an intent back, bounded in time, and records the confirmation
with its receipt or shows the evidence; anyone else only once the owner's hold is over."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from conftest import git
from githubkit import GitHubStandIn
from loopx.ledger.book import Ledger
from loopx.model import clock
from loopx.ops import effects, status
from loopx.recovery import githubapi as gh

OWNER = "agent:codex@devbox"
OTHER = "agent:claude@laptop"


def _intend(ledger: Ledger, readback: str, **kw: object) -> None:
    ledger.run(effects.intend, "github:acme/widget#7", action="comment", id="x1", key="k-1",
               readback=readback, grace=60, hold=1800, actor=OWNER, **kw)


def _state(ledger: Ledger) -> str:
    return {e.id: e.state for e in effects.listing(ledger)}["x1"]


def _kinds(doc: status.StatusDoc) -> list[str]:
    return [a.kind for a in doc.actions]


def test_the_owner_reads_back_after_the_grace_period_and_records_the_receipt(
        ledger: Ledger, repo: Path) -> None:
    start = clock.now()
    _intend(ledger, "cmd:echo https://example.com/c/1; touch ran")
    early = status.status(ledger, actor=OWNER, ci=False, now=start + timedelta(seconds=30))
    assert "read_back_effect" not in _kinds(early) and not (repo / "ran").exists()
    assert early.next_wake is not None  # the readback's moment: a minute after the intent
    assert timedelta(seconds=59) < clock.parse_ts(early.next_wake) - start < timedelta(seconds=62)
    doc = status.status(ledger, actor=OWNER, ci=False, now=start + timedelta(seconds=61))
    assert doc.environment.effects["x1"].state == "confirmed"
    assert doc.environment.effects["x1"].recorded is not None
    [effect] = doc.effects
    assert (effect.state, effect.receipt) == ("confirmed", "https://example.com/c/1")
    assert "read_back_effect" not in _kinds(doc)


def test_others_see_it_only_after_the_owners_hold(ledger: Ledger, repo: Path) -> None:
    start = clock.now()
    _intend(ledger, "cmd:touch ran; echo not there >&2; exit 3")
    held = status.status(ledger, actor=OTHER, ci=False, now=start + timedelta(minutes=5))
    assert "read_back_effect" not in _kinds(held) and not (repo / "ran").exists()
    doc = status.status(ledger, actor=OTHER, ci=False, now=start + timedelta(minutes=31))
    assert (repo / "ran").exists()
    seen = doc.environment.effects["x1"]
    assert (seen.state, seen.recorded) == ("indeterminate", None)
    assert seen.evidence == "readback command exited 3: not there"
    [action] = [a for a in doc.actions if a.kind == "read_back_effect"]
    assert "not there" in action.reason and action.effect == "x1"
    assert _state(ledger) == "indeterminate"


def test_a_readback_is_bounded_in_time(ledger: Ledger, repo: Path) -> None:
    git(repo, "config", "loopx.effect.timeout", "0.3")
    _intend(ledger, "cmd:sleep 5")
    found = effects.read_back(ledger, "x1", actor=OWNER)
    assert found.state == "indeterminate" and "timed out after 0.3s" in found.evidence


def test_an_http_readback_confirms_on_a_2xx(ledger: Ledger, github: GitHubStandIn) -> None:
    github.add_issue("acme/widget", 7)
    ledger.run(effects.intend, "release", action="publish", id="x2",
               readback=f"http:{github.url}/repos/acme/widget/issues/99", actor=OWNER)
    _intend(ledger, f"http:{github.url}/repos/acme/widget/issues/7")
    missing = effects.read_back(ledger, "x2", actor=OWNER)
    assert missing.state == "indeterminate" and "HTTP 404" in missing.evidence
    found = effects.read_back(ledger, "x1", actor=OWNER)
    assert found.state == "confirmed" and str(found.receipt).endswith("/issues/7")


def test_a_github_readback_finds_the_comment_by_its_key(ledger: Ledger,
                                                        github: GitHubStandIn) -> None:
    github.add_issue("acme/widget", 7)
    _intend(ledger, "github:acme/widget#7")
    assert effects.read_back(ledger, "x1", actor=OWNER).state == "indeterminate"
    receipt = gh.GitHub.configured({}).comment("acme/widget", 7, "hi", key="k-1")
    found = effects.read_back(ledger, "x1", actor=OWNER)
    assert (found.state, found.receipt) == ("confirmed", receipt.url)
    assert _state(ledger) == "confirmed"


def test_an_intent_without_readback_is_suggested_to_everyone_at_once(ledger: Ledger) -> None:
    ledger.run(effects.intend, "repo#1", action="deploy", id="x1", actor=OWNER)
    doc = status.status(ledger, actor=OTHER, ci=False)
    assert "read_back_effect" in _kinds(doc)


def test_offline_status_reads_nothing_back(ledger: Ledger, repo: Path) -> None:
    _intend(ledger, "cmd:touch ran")
    later = clock.now() + timedelta(minutes=2)
    doc = status.status(ledger, actor=OWNER, ci=False, offline=True, now=later)
    assert not (repo / "ran").exists() and doc.environment.effects == {}
    assert "read_back_effect" in _kinds(doc)
