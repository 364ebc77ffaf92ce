"""The environment part of the status document (what :mod:`loopx.recovery.readback` inspects:
the checkout, CI, evidence judged, links, effects read back, this host), as types;
:mod:`loopx.projection.answers` holds the rest and the document itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

from loopx.model.typed import optional

EvidenceState = Literal["fresh", "stale", "unknown", "unbound"]
CriterionState = Literal["fresh", "stale", "unknown", "unmet"]
Verdict = Literal["pass", "fail"]


@dataclass(frozen=True)
class Check:
    """One CI check: its name, state and where to see it."""

    name: str
    state: str
    url: Optional[str] = optional()
    evidence: Optional[str] = optional()  # the ci evidence it comes from (the ledger provider)


# --- the environment (loopx.recovery.readback) -------------------------------------------------


@dataclass(frozen=True)
class Upstream:
    name: str
    ahead: int
    behind: int


@dataclass(frozen=True)
class StateBranch:
    """The state branch against its remote-tracking branch."""

    ref: str
    remote: str
    tracking: Optional[str]
    unpushed: int
    unmerged: int
    quarantined: Optional[str]


@dataclass(frozen=True)
class Tool:
    """A tool a todo needs, as found on this host's PATH."""

    found: bool
    version: Optional[str]
    path: Optional[str]


@dataclass(frozen=True)
class Reach:
    """Whether the state remote answered (None: not asked, or no such remote)."""

    name: str
    reachable: Optional[bool]


@dataclass(frozen=True)
class Capabilities:
    """What this host can do for the next turn: the tools the ledger's todos need, the
    remote, free disk, the agent runtime when known; probed at ``probed_at`` (``cached``: not
    probed again for this status)."""

    tools: dict[str, Tool]
    remote: Reach
    disk_free_mb: Optional[int]
    runtime: Optional[str]
    probed_at: str
    cached: bool


@dataclass(frozen=True)
class CiStatus:
    """CI for HEAD through the configured provider."""

    provider: Optional[str]
    state: Literal["success", "failure", "pending", "unknown"]
    checks: list[Check]
    detail: Optional[str]


@dataclass(frozen=True)
class Freshness:
    """How one piece of evidence compares with the code being judged, on its own scope."""

    state: EvidenceState
    commit: Optional[str]  # the commit it vouches for, after following remaps
    changed: list[str]
    reason: Optional[str]
    tree: Optional[str]
    paths: list[str]
    ignored: list[str]
    outside_scope: int


@dataclass(frozen=True, kw_only=True)
class Judged:
    """How one criterion in force stands now: its latest verdict judged on its scope."""

    state: CriterionState
    evidence: Optional[str]
    verdict: Optional[Verdict]
    source: Literal["ledger", "ci"]
    changed: list[str]
    reason: Optional[str]
    evidence_state: Optional[EvidenceState] = optional()
    scope: Optional[list[str]] = optional()  # the globs it was judged on
    checks: Optional[list[Check]] = optional()
    url: Optional[str] = optional()


@dataclass(frozen=True)
class SetAside:
    entry: str
    reason: str


@dataclass(frozen=True)
class HookQueue:
    """The git hooks' queue: entries waiting, and those set aside with the reason."""

    queued: int
    set_aside: list[SetAside]


@dataclass(frozen=True)
class LinkState:
    """An issue or pull request goals and todos link to, as GitHub reports it now (cached)."""

    state: Literal["open", "closed", "merged", "review requested", "unknown"]
    kind: Optional[Literal["issue", "pull"]]
    title: Optional[str]
    url: Optional[str]
    detail: Optional[str]
    by: list[str]  # the goals and todos that link to it


@dataclass(frozen=True)
class Posted:
    """A write made on GitHub (or found made by an earlier try of its key): what a person
    opens, and the effect that records it (None: not recorded)."""

    url: str
    effect: Optional[str]


@dataclass(frozen=True)
class ReadBack:
    """What reading an effect back saw: confirmed (with its receipt, and the event that
    recorded it) or still indeterminate (with the evidence)."""

    state: Literal["confirmed", "indeterminate"]
    receipt: Optional[str]
    evidence: str
    recorded: Optional[str]


@dataclass(frozen=True)
class Environment:
    """The world as readback inspected it for this status (docs/recovery.md)."""

    head: Optional[str]
    tree: Optional[str]
    branch: Optional[str]
    detached: bool
    dirty: list[str]
    untracked: list[str]
    in_progress: Optional[Literal["merge", "rebase", "cherry-pick", "revert", "bisect"]]
    upstream: Optional[Upstream]
    state: StateBranch
    ci: CiStatus
    host: str
    worktree: Optional[str]
    evidence: dict[str, Freshness]
    judged_tree: Optional[str]
    criteria: dict[str, Judged]  # GOAL:CRITERION -> how it stands
    hooks: HookQueue
    links: dict[str, LinkState]  # github:OWNER/REPO#N -> its state now
    effects: dict[str, ReadBack]  # EFFECT -> what reading it back saw this time
    capabilities: Optional[Capabilities] = optional()  # what this host can do (recovery.host)
