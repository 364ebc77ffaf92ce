"""Any other agent: ``git loopx watch --host command -- CMD [ARG...]`` runs CMD with the
prompt on stdin (and in ``$LOOPX_PROMPT``); its exit code says how the turn ended."""

from __future__ import annotations

from collections.abc import Sequence

from loopx.agents.hosts import Adapter


def argv(prompt: str, extra: Sequence[str]) -> list[str]:
    return list(extra)


ADAPTER = Adapter("command", argv, stdin=True, doc="CMD [ARG...] (prompt on stdin and in "
                  "$LOOPX_PROMPT)")
