"""Claude Code, headless: ``claude -p PROMPT [EXTRA...]`` (print mode: one turn, then exit;
its exit code says how the turn ended). Permissions are the user's to grant with EXTRA, e.g.
``git loopx watch --host claude -- --permission-mode acceptEdits``."""

from __future__ import annotations

from collections.abc import Sequence

from loopx.agents.hosts import Adapter


def argv(prompt: str, extra: Sequence[str]) -> list[str]:
    return ["claude", "-p", prompt, *extra]


ADAPTER = Adapter("claude", argv, doc="claude -p PROMPT [EXTRA...]")
