"""The bounds and patterns of what a user gives, written once: the event payload models use
them for the fields they validate, and the declarations of the operations
(:mod:`loopx.ops.declare`) for the parameters that fill those fields, so the CLI's options, the
MCP tools' schemas and batch lines refuse what the event would refuse.

Plain values only (no pydantic): a warm read loads the declarations, and with them this module.
"""

from __future__ import annotations

from loopx.model.globs import GLOB_PATTERN
from loopx.model.ids import ENTITY_ID_RE

ACTOR_PATTERN = r"^[a-z][a-z0-9_-]{0,31}:\S{1,200}$"
ID_PATTERN = ENTITY_ID_RE.pattern
# A todo's label (area:cli, good-first, v2.1): letters, digits and . _ : / - (at most 64).
LABEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}$"
LABELS_MAX = 20  # labels on one todo

PRIORITY_MIN, PRIORITY_MAX = 0, 4  # 0 most urgent .. 4 least
TITLE_MAX = 500  # a goal's or a todo's title
TEXT_MAX = 20_000  # free text: descriptions, reasons, summaries, questions, notes

MAX_COUNT = 10**15  # turns and tokens
MAX_COST = 1e12
MAX_SECONDS = 10 * 366 * 86400  # ten years
MIN_EXIT, MAX_EXIT = -(2**31), 2**32 - 1  # signed POSIX statuses, unsigned Windows ones

# An effect's readback (effect.intended v2): how to check that it happened.
READBACK_PATTERN = r"^(http:https?://\S+|github:[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(#[1-9][0-9]*)?|cmd:.+)$"
LINK_PATTERN = r"^github:[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}#[1-9][0-9]{0,9}$"
LINKS_MAX = 20  # links one goal or todo carries
# What a pattern means, for messages a person can act on (the CLI's options and the events'
# schema say the same words; loopx.model.events adds its own patterns').
PATTERN_MEANS = {
    ACTOR_PATTERN: "an identity like human:alice@example.com, agent:codex@devbox or role:NAME",
    ID_PATTERN: "an id of letters, digits, '-' and '_' (at most 64)",
    LABEL_PATTERN: "a label of letters, digits and . _ : / - (at most 64), e.g. area:cli",
    LINK_PATTERN: "a GitHub issue or pull request like github:owner/repo#12",
    READBACK_PATTERN: "a readback like http:https://..., github:owner/repo#12 or cmd:COMMAND",
    GLOB_PATTERN: "a path glob like 'src/**' (one line, not empty)",
}
GRACE_MAX_S = 7 * 24 * 3600  # an effect's grace period and its owner's hold, at most
LEASE_TTL_MIN_S, LEASE_TTL_MAX_S = 10, 30 * 86400  # the ledger's default lease length
SESSION_IDLE_MIN_S = 60  # how long a session may await input before `session reap`, at least
SESSION_SLOTS_MAX = 10_000  # open sessions per owner
WAKE_EVERY_MIN_S, WAKE_EVERY_MAX_S = 60, 366 * 86400  # a recurring wake's period
