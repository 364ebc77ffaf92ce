"""Codex CLI, headless: ``codex exec [EXTRA...] -`` with the prompt on stdin (``exec`` runs
one turn non-interactively and exits; ``-`` reads the prompt from stdin, which keeps a long
primer out of argv). Sandbox and approvals are the user's EXTRA, e.g. ``--full-auto``."""

from __future__ import annotations

from collections.abc import Sequence

from loopx.agents.hosts import Adapter


def argv(prompt: str, extra: Sequence[str]) -> list[str]:
    return ["codex", "exec", *extra, "-"]


ADAPTER = Adapter("codex", argv, stdin=True, doc="codex exec [EXTRA...] - (prompt on stdin)")
