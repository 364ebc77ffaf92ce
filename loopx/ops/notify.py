"""`git loopx notify`: tell a person what waits on them (gates their answer is asked for,
sessions awaiting their instruction) through the channels they configured, each send once.

Each send is an effect: ``effect.intended`` with an idempotency key made of the channel, the
person and what the nudge is about (the gate and its decisions so far; the session and its
last response), then the send, then ``confirmed`` with the channel's receipt or ``failed``.
The ledger refuses a second intent with a key already used by an effect that did not fail, so
a nudge goes out once whichever clone or process runs `notify`, however often; one whose
outcome was never recorded (a crash mid-send) is not sent again either, it is reported.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional

from loopx.errors import TransitionError, UsageError
from loopx.ledger.book import Ledger
from loopx.model import inert, typed
from loopx.ops import effects, ledgers, status
from loopx.recovery import notify as channels

KINDS = ("answer_gate", "session_waiting")


@dataclass(frozen=True)
class Nudge:
    """One thing that waits on the person: what it is about and the line that says so."""

    about: str  # "gate q-1", "session s-2"
    text: str
    version: str  # changes when the thing asks again (a new decision, a new response)
    goal: Optional[str] = None
    todo: Optional[str] = None


@dataclass
class Sent:
    channel: str
    about: str
    state: str  # sent | failed | skipped
    effect: Optional[str] = None
    detail: str = ""


@dataclass
class Report:
    """What `notify` did, one entry per channel and nudge."""

    actor: str
    channels: list[str]
    sends: list[Sent] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"actor": self.actor, "channels": self.channels,
                "sends": [vars(s) for s in self.sends]}


def nudges(snap: dict[str, Any]) -> list[Nudge]:
    """What waits on the actor the status document ``snap`` was made for."""
    gates = {g["id"]: g for g in snap["gates"]}
    sessions = {s["id"]: s for s in snap.get("sessions", [])}
    out = []
    for action in snap["actions"]:
        if action["kind"] == "answer_gate" and action.get("gate") in gates:
            gate = gates[action["gate"]]
            out.append(Nudge(f"gate {gate['id']}", action["reason"],
                             f"{gate['state']}/{len(gate.get('conflict') or [])}",
                             goal=gate["goal"]))
        elif action["kind"] == "session_waiting" and action.get("session") in sessions:
            s = sessions[action["session"]]
            out.append(Nudge(f"session {s['id']}", action["reason"],
                             f"{s.get('last_response') or ''}/{s.get('checkpoints')}",
                             goal=s.get("goal"), todo=s.get("todo")))
    return out


def key(channel: str, actor: str, nudge: Nudge) -> str:
    """The idempotency key of one nudge to one person through one channel."""
    digest = hashlib.sha256("\0".join((channel, actor, nudge.about, nudge.version)).encode())
    return f"notify:{nudge.about.replace(' ', ':')}:{digest.hexdigest()[:24]}"


@dataclass(frozen=True)
class Channels:
    """Where nudges go: a webhook URL (or none) and the desktop (or not)."""

    webhook: Optional[str] = None
    desktop: bool = False

    @property
    def names(self) -> list[str]:
        return (["webhook"] if self.webhook else []) + (["desktop"] if self.desktop else [])


def configured(*, webhook: Optional[str] = None, desktop: Optional[bool] = None,
               cwd: str = ".", flags: bool = True) -> Channels:
    """The channels to send through: ``webhook`` (a URL, default git's
    ``loopx.notify.webhook``) and ``desktop`` (default ``loopx.notify.desktop``); none is a
    UsageError that says how to name one (``flags``: --webhook and --desktop too)."""
    named = "--webhook" if webhook else "git config loopx.notify.webhook"
    webhook = webhook or ledgers.git_setting(cwd, "loopx.notify.webhook")
    if webhook and not channels.is_webhook(webhook):  # else recorded as a failed send
        raise UsageError(f"{named} {channels.NOT_A_WEBHOOK}")
    if desktop is None:
        desktop = (ledgers.git_setting(cwd, "loopx.notify.desktop") or "").lower() in (
            "true", "yes", "on", "1")
    chosen = Channels(webhook, desktop)
    if not chosen.names:
        raise UsageError("no channel to notify through: "
                         + ("give --webhook URL or --desktop, or " if flags else "")
                         + "set git config loopx.notify.webhook URL or loopx.notify.desktop true")
    return chosen


def notify(ledger: Ledger, *, actor: str, webhook: Optional[str] = None,
           desktop: Optional[bool] = None, cwd: str = ".",
           now: Optional[datetime] = None) -> Report:
    """Send each nudge for ``actor`` through each channel once: ``webhook`` (a URL, default
    git's ``loopx.notify.webhook``) and ``desktop`` (default ``loopx.notify.desktop``)."""
    ledger.require()
    chosen = configured(webhook=webhook, desktop=desktop, cwd=cwd)
    snap = status.status(ledger, actor=actor, ci=False, offline=True, now=now)
    return send(ledger, chosen, snap, actor=actor, now=now)


def send(ledger: Ledger, chosen: Channels, snap: status.StatusDoc, *, actor: str,
         now: Optional[datetime] = None) -> Report:
    """Send each nudge the status document ``snap`` (made for ``actor``) holds through each
    of the ``chosen`` channels, once: what `notify` does after looking, and what `watch
    --notify` does each time it looks."""
    report = Report(actor, chosen.names)
    found = nudges(typed.plain(snap))
    for channel in chosen.names:
        if channel == "desktop" and not channels.desktop_available():
            report.sends += [Sent(channel, n.about, "skipped", detail=(
                f"no desktop notifier here ({channels.NOTIFIER} is not installed)"))
                for n in found]
            continue
        for nudge in found:
            report.sends.append(_send(ledger, channel, actor, nudge, chosen.webhook, now))
    return report


def watcher(ledger: Ledger, chosen: Channels, *, actor: str,
            told: Callable[[Report], None]) -> Callable[[status.StatusDoc, datetime], None]:
    """What `watch --notify` does with each status document it looks at: :func:`send` its
    nudges and ``told`` the report, unless the state ref has moved only by this watcher's own
    writes since its last sends (their effects, the wakes it acknowledged): a failed send is
    tried again on the next move someone else makes."""
    ours: list[Optional[str]] = [None]

    def seen(snap: status.StatusDoc, now: datetime) -> None:
        tip = ledger.tip()
        if ours[0] is not None and not ledger.moved_by_others(ours[0], tip):
            return
        report = send(ledger, chosen, snap, actor=actor, now=now)
        ours[0] = tip  # what the sends wrote on it is this watcher's own
        told(report)
    return seen


def _send(ledger: Ledger, channel: str, actor: str, nudge: Nudge, webhook: Optional[str],
          now: Optional[datetime]) -> Sent:
    target = channels.webhook_target(webhook) if channel == "webhook" and webhook else channel
    idem = key(channel, actor, nudge)
    text = f"loopx: {inert.line(nudge.text)}"

    def deliver() -> str:
        if channel == "webhook" and webhook:
            return channels.send_webhook(webhook, text)
        return channels.send_desktop("loopx: waiting on you", inert.line(nudge.text))

    try:
        done = effects.perform(ledger, target, action="notify", key=idem, actor=actor,
                               write=deliver, todo=nudge.todo, goal=nudge.goal, again=False,
                               now=now)
    except TransitionError as exc:  # this nudge went out already (or may have: indeterminate)
        return Sent(channel, nudge.about, "skipped", detail=inert.line(str(exc)))
    except channels.SendFailed as exc:
        return Sent(channel, nudge.about, "failed", ledger.fold().effect_keys[idem], str(exc))
    return Sent(channel, nudge.about, "sent", done.id, done.receipt or "")
