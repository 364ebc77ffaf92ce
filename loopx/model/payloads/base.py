"""What every payload model shares: the base model, the patterns and bounds of fields.

Pure (no git, no I/O). Each family of event types has its own module beside this one, so a
command builds only the models of the events it writes or reads (start-up time).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from loopx.model.globs import GLOB_MAX, GLOB_PATTERN, MAX_GLOBS
from loopx.model.ids import ENTITY_ID_RE
from loopx.model import clock, limits

ACTOR_PATTERN = limits.ACTOR_PATTERN
ID_PATTERN = limits.ID_PATTERN
# A UTC time as loopx writes it, and exactly the ones that are real: ASCII digits only (\d
# would take any script's digits, which no date parser reads), months 01-12, each month's own
# days (29 February in leap years only), 00:00:00 to 23:59:59, years 0001 to 9999; a fraction
# of one to nine digits. So every value the schema lets through parses (clock.parse_ts): one
# event from a remote dated 2099-13-45 or in full-width digits stopped every command that
# read its time (tests/model/test_times.py).
TS_PATTERN = clock.TS_PATTERN
OID_PATTERN = r"^[0-9a-f]{40}([0-9a-f]{24})?$"
# Lengths are bounds of their fields, not repetitions in a pattern: pydantic compiles each
# pattern with Rust's regex, and `[^...]{1,1000}` of a class spanning Unicode compiled to a
# thousand copies of it (5 ms each time a model was built; a replay builds one per type).
REF_PATTERN = r"^refs/[^\x00-\x20\x7f~^:?*\[\\]+$"
REF_MAX = 5 + 1000  # "refs/" and at most a thousand characters
CHECK_PATTERN = r"^[^\x00-\x1f]+$"  # a CI check's name, as the provider reports it
CheckName = Annotated[str, Field(pattern=CHECK_PATTERN, max_length=200)]
_ID = ENTITY_ID_RE.pattern.strip("^$")
CRITERION_REF_PATTERN = f"^{_ID}:{_ID}$"  # GOAL:CRITERION

# An actor (human:alice@example.com, agent:codex@devbox) or a role (role:maintainer).
Identity = Annotated[str, Field(pattern=ACTOR_PATTERN)]
EntityId = Field(pattern=ID_PATTERN)
# An issue or pull request a goal or todo links to (recovery shows its state; v3 of each).
Link = Annotated[str, Field(pattern=limits.LINK_PATTERN, max_length=220)]
Links: Any = Field(default_factory=list, max_length=limits.LINKS_MAX,
              description="v3: issues and pull requests it links to, github:OWNER/REPO#N")
Text = Field(min_length=1, max_length=limits.TEXT_MAX)
# A field shown on one line (a title, a question): `git loopx` writes no line break or control
# or format character in it (loopx.model.events.one_line_rule). A rule of writing only: an
# event from elsewhere that has one is read as it is and shown inert (loopx.model.inert).
ONE_LINE: dict[str, Any] = {"x-loopx-one-line": True}
# A scope: globs of paths from the top of the repository (loopx.model.globs says how they match).
Glob = Annotated[str, Field(pattern=GLOB_PATTERN, max_length=GLOB_MAX)]
Globs = Field(default=None, max_length=MAX_GLOBS,
              description="path globs (docs/**, src/**/*.py); none: the whole tree")


# Bounds of the numbers events carry. Every numeric field has both ends, and floats must be
# finite: a value from another clone is data, and no data may stop a clone from writing.
MAX_CLOCK = 2**53 - 1  # exact in JSON readers that hold numbers as doubles
# (Written in loopx.model.limits, which the declarations of the operations share.)
MAX_COUNT = limits.MAX_COUNT  # turns and tokens
MAX_COST = limits.MAX_COST
MAX_SECONDS = limits.MAX_SECONDS  # ten years
MIN_EXIT, MAX_EXIT = limits.MIN_EXIT, limits.MAX_EXIT


class Model(BaseModel):
    # defer_build: only the payload models a command touches pay their schema build cost.
    model_config = ConfigDict(extra="forbid", defer_build=True, frozen=True, allow_inf_nan=False)
