"""One commit being built: :class:`Draft` events are validated against the fold as they are
added to a :class:`Txn`, and :class:`loopx.ledger.book.Ledger` commits what it staged.

Imports the event models (pydantic): only the write path loads this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Optional

from loopx.errors import ConflictError, SchemaError, TransitionError
from loopx.ledger import layout
from loopx.ledger.draft import Draft
from loopx.model import clock, ids
from loopx.model.events import RETRY_VOLATILE, Event, free_text, make_event
from loopx.projection import authority, checks, entities, folding
from loopx.storage.gateway import Oid
from loopx.storage.trees import BLOB_MODE

if TYPE_CHECKING:
    from loopx.ledger.book import Ledger


@dataclass
class Txn:
    """One commit being built: events are validated against the fold as they are added."""

    ledger: Ledger
    fold: entities.Fold
    base: Optional[str]
    actor: str
    now: datetime
    events: list[Event] = field(default_factory=list)
    duplicates: list[Event] = field(default_factory=list)
    sign: bool = False  # set when an event needs a signed commit (see _claim_signature)
    # The allowed_signers texts the signed events are judged by, by digest (what
    # signatures.verify_own checks the commit against before the ref moves).
    signers: dict[str, str] = field(default_factory=dict)
    # The ref's own tip: None for a proposal ref that does not exist yet, whose first commit
    # forks from loopx/state (``base``) and creates the ref.
    expected: Optional[str] = None
    files: dict[str, Oid] = field(default_factory=dict)  # non-event path -> blob oid

    def attach(self, files: dict[str, bytes]) -> dict[str, Oid]:
        """Stage non-event files (session transcripts) for this commit; returns their blob oids.

        Only session transcript chunks are allowed, by the same rules sync and validate apply
        (:mod:`loopx.ledger.layout`): everything else on the state branch is an event. The
        blobs are written now (one process); they become reachable only if the commit is made.
        """
        for path, data in files.items():
            broken = layout.path_rule(path, BLOB_MODE) or layout.size_rule(path, len(data))
            if broken is not None or layout.is_event(path):
                why = broken.message if broken else "is an event path"
                raise SchemaError(f"{path}: not a path loopx stores beside events ({why})")
        oids = self.ledger.store.write_blobs(list(files.values()))
        staged = dict(zip(files, oids))
        # Files already on the base with the same content (a retried write) add nothing.
        self.files.update({path: oid for path, oid in staged.items()
                           if not self._on_base(path, oid)})
        return staged

    def _on_base(self, path: str, oid: str) -> bool:
        if self.base is None:
            return False
        directory, _, name = path.rpartition("/")
        found = self.ledger.store.read_tree(f"{self.base}:{directory}").get(name)
        return found is not None and found[1] == oid

    def add(self, draft: Draft) -> Event[Any]:
        """Validate ``draft`` against the state so far and stage it; raises TransitionError."""
        event_id = draft.event_id or ids.new_event_id()
        event = make_event(
            type=draft.type, data=self._scrubbed(draft), event_id=event_id,
            at=clock.format_ts(self.now), clock=self.fold.max_clock + 1, actor=self.actor,
            goal=draft.goal,
        )
        if draft.event_id is not None:
            earlier = self._earlier(event_id)
            if earlier is not None:
                return self._duplicate(earlier, event)
        self._claim_signature(event)
        reason = checks.check(self.fold, event)
        if reason is not None:
            raise TransitionError(reason)
        folding.apply_checked(self.fold, event)
        self.events.append(event)
        return event

    def _scrubbed(self, draft: Draft) -> dict[str, Any]:
        """The one place every free text of every event passes before anything is written
        (object, cache or fold): the ledger's scrub (secret redaction, set by
        :func:`loopx.ops.ledgers.open_ledger`) on each field :func:`events.free_text` names."""
        scrub = self.ledger.scrub
        if scrub is None:
            return draft.data
        data = dict(draft.data)
        for path in free_text(draft.type):
            _scrub_at(data, path, scrub)
        return data

    def scrub_bytes(self, data: bytes) -> bytes:
        """``data`` (a transcript) through the ledger's scrub, decoded as text where it is."""
        if self.ledger.scrub is None:
            return data
        text = data.decode("utf-8", "surrogateescape")
        done = self.ledger.scrub(text)
        return data if done == text else done.encode("utf-8", "surrogateescape")

    def _earlier(self, event_id: str) -> Optional[Event]:
        """The event with this id staged here or already on the base, if any (a retry)."""
        for event in self.events:
            if event.id == event_id:
                return event
        return self.ledger.find_event(self.base, event_id)

    def _claim_signature(self, event: Event) -> None:
        """An event that must be signed (authority.needs_signature): sign this commit and,
        until git has verified the signature (before the ref moves, in
        :func:`loopx.ledger.signatures.verify_own`), take the writer's word."""
        allowed = self.fold.config.get("allowed_signers")
        if not event.known or not allowed or not authority.needs_signature(self.fold, event):
            return
        self.sign = True
        digest = authority.signers_digest(allowed)
        self.signers[digest] = allowed
        signed = self.fold.extra.setdefault("signed", {})
        signed[event.id] = {digest: event.env.actor}

    def _duplicate(self, earlier: Event, event: Event) -> Event:
        if _meaning(earlier) != _meaning(event):
            raise ConflictError(
                f"event {event.id} already exists with different content; "
                "use a new id (or none) for a different event"
            )
        self.duplicates.append(earlier)
        return earlier


def _scrub_at(value: Any, path: tuple[str, ...], scrub: Callable[[str], str]) -> Any:
    """``value`` with the strings at ``path`` scrubbed (containers copied, never changed)."""
    if not path:
        return scrub(value) if isinstance(value, str) else value
    key, rest = path[0], path[1:]
    if key == "*" and isinstance(value, list):
        value[:] = [_scrub_copy(item, rest, scrub) for item in value]
    elif isinstance(value, dict) and key in value:
        value[key] = _scrub_copy(value[key], rest, scrub)
    return value


def _scrub_copy(value: Any, path: tuple[str, ...], scrub: Callable[[str], str]) -> Any:
    copied = dict(value) if isinstance(value, dict) else list(value) if isinstance(value, list) \
        else value
    return _scrub_at(copied, path, scrub)


def _meaning(event: Event) -> tuple[Any, ...]:
    """What a retry must repeat: type, actor, goal and data, less the clock-derived fields."""
    doc = event.to_dict()
    volatile = RETRY_VOLATILE.get(event.type, frozenset())
    data = {k: v for k, v in doc["data"].items() if k not in volatile}
    return (doc["type"], doc["actor"], doc.get("goal"), data)
