"""The channels `git loopx notify` sends a nudge through: a Slack-compatible webhook (a JSON
``{"text": ...}`` POSTed through :mod:`loopx.recovery.rest`) and the desktop's notifier (``notify-send``, where one
is installed). Each send returns a one-line receipt or raises :class:`SendFailed`; recording
the send as an effect (intended before, confirmed or failed after) is :mod:`loopx.ops.notify`'s.
"""

from __future__ import annotations

import shutil
import subprocess

from loopx.errors import LoopxError
from loopx.recovery import rest

TIMEOUT_S = 10.0
NOTIFIER = "notify-send"


class SendFailed(LoopxError):
    """A channel refused or did not answer; the message says how."""


def webhook_target(url: str) -> str:
    """What the ledger records of a webhook: its host only (a Slack webhook's path is its
    secret)."""
    return "webhook:" + ((rest.split(url).hostname if is_webhook(url) else None) or "?")


NOT_A_WEBHOOK = ("is not an http(s) URL with a host, like https://hooks.slack.com/services/... "
                 "(not shown: a webhook's path is its secret)")


def is_webhook(url: str) -> bool:
    """Whether ``url`` is one a webhook can be POSTed to: http(s) and a host. A message that
    refuses one never quotes it: pasted without its scheme, all of it is the secret path."""
    try:
        parts = rest.split(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # an unclosed [ in the host
        return False


def send_webhook(url: str, text: str, *, timeout: float = TIMEOUT_S) -> str:
    """POST ``{"text": text}`` to ``url``; the receipt names the answer's status."""
    if not is_webhook(url):
        raise SendFailed(f"the webhook {NOT_A_WEBHOOK}")
    try:
        answer = rest.request("POST", url, headers={}, timeout=timeout, body={"text": text})
    except rest.Trouble as exc:
        if exc.code is not None:
            raise SendFailed(f"the webhook answered HTTP {exc.code}") from None
        if str(exc).startswith("timed out"):
            raise SendFailed(f"the webhook did not answer within {timeout:g}s") from None
        raise SendFailed("the webhook could not be reached") from None
    # One line for the receipt, whatever the server said.
    said = " ".join(answer.body[:200].decode("utf-8", "replace").split())
    return f"HTTP {answer.status} from {webhook_target(url)[8:]}" + (f": {said}" if said else "")


def desktop_available() -> bool:
    """Whether this machine has a desktop notifier loopx can call."""
    return shutil.which(NOTIFIER) is not None


def send_desktop(title: str, text: str, *, timeout: float = TIMEOUT_S) -> str:
    """Show a desktop notification; the receipt says it was handed to the notifier."""
    notifier = shutil.which(NOTIFIER)
    if notifier is None:
        raise SendFailed(f"no desktop notifier here ({NOTIFIER} is not installed)")
    try:
        proc = subprocess.run([notifier, "--app-name=loopx", "--", title, text],
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SendFailed(f"{NOTIFIER} did not return within {timeout:g}s") from None
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SendFailed(f"{NOTIFIER} failed (exit {proc.returncode})"
                         + (f": {err[0]}" if err else ""))
    return f"{NOTIFIER}: shown"
