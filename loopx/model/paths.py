"""Where things live on the state branch: event file paths and session transcript chunks.

Pure and free of pydantic, so readers of the state (the fold's checks, the per-file rules)
need not load the event models.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime, timezone

from loopx.model.ids import ulid_ms


def event_dir(event_id: str) -> str:
    """Where an event is written: ``events/YYYY/MM/DD/<id[:6]>/<id[6]>/<id[7]>``, all from the
    ULID's own timestamp, so an id always maps to one directory (a retried append finds its
    earlier copy there) and the files list in id order. The fan-out under the day keeps every
    directory an append rewrites small however many events a day holds (invariant 10): a day
    holds at most 85 directories of about 17 minutes, each at most 32 of 33 seconds, each at
    most 32 of about one second."""
    return f"{_day_dir(ulid_ms(event_id) // _DAY_MS)}/{event_id[:6]}/{event_id[6]}/{event_id[7]}"


def legacy_event_dir(event_id: str) -> str:
    """``events/YYYY/MM/DD``: where loopx before the fan-out wrote an event. Still read (a
    retried append looks here too), never written."""
    return _day_dir(ulid_ms(event_id) // _DAY_MS)


def event_dirs(event_id: str) -> tuple[str, str]:
    """Every directory an event with this id may be in, newest layout first."""
    return event_dir(event_id), legacy_event_dir(event_id)


_DAY_MS = 86_400_000


@functools.lru_cache(maxsize=4096)  # a replay meets each day's directory thousands of times
def _day_dir(day: int) -> str:
    return f"events/{datetime.fromtimestamp(day * 86_400, tz=timezone.utc):%Y/%m/%d}"


def file_path(event_id: str, event_type: str) -> str:
    """``events/YYYY/MM/DD/<id[:6]>/<id[6]>/<id[7]>/<id>.<type>.yaml``: where it is written."""
    return f"{event_dir(event_id)}/{event_id}.{event_type}.yaml"


def file_paths(event_id: str, event_type: str) -> tuple[str, str]:
    """Every path an event may have: the layout written now, then the one before the fan-out
    (``events/YYYY/MM/DD/<id>.<type>.yaml``); a file anywhere else is not that event."""
    return tuple(f"{d}/{event_id}.{event_type}.yaml" for d in event_dirs(event_id))  # type: ignore[return-value]


def is_file_path(path: str, event_id: str, event_type: str) -> bool:
    """Whether ``path`` is one of :func:`file_paths` (one date computed, not four)."""
    day = legacy_event_dir(event_id)
    if not path.startswith(day) or path[len(day):len(day) + 1] != "/":
        return False
    name = path[len(day) + 1:]
    tail = f"{event_id}.{event_type}.yaml"
    return name == tail or name == f"{event_id[:6]}/{event_id[6]}/{event_id[7]}/{tail}"


# Both layouts: the fan-out is optional here; that it matches the id is checked with the event
# (layout.read_event: its path must be one of file_paths).
PATH_RE = re.compile(
    r"^events/([0-9]{4})/([0-9]{2})/([0-9]{2})/(?:[0-7][0-9A-HJKMNP-TV-Z]{5}/[0-9A-HJKMNP-TV-Z]/[0-9A-HJKMNP-TV-Z]/)?"
    r"([0-7][0-9A-HJKMNP-TV-Z]{25})\.([a-z][a-z0-9_]*\.[a-z][a-z0-9_]*)\.yaml$"
)

# A task that outlives its first result keeps its transcript beside the events.
TRANSCRIPT_CHUNK_BYTES = 192 * 1024
TRANSCRIPT_MAX_BYTES = 64 * 1024 * 1024
# Non-event files on the state branch: transcript chunks of checkpointed sessions, written in
# the same commit as their `session.checkpointed` event. Sync must accept exactly these.
SESSION_FILE_RE = re.compile(
    r"^sessions/([A-Za-z0-9][A-Za-z0-9_-]{0,63})/transcript-([1-9][0-9]{0,5})/([0-9]{4})\.txt$"
)


def transcript_chunk_path(session: str, number: int, index: int) -> str:
    """``sessions/<session>/transcript-<number>/<index:04d>.txt``."""
    return f"sessions/{session}/transcript-{number}/{index:04d}.txt"


# Checkpoints of the projection (loopx.ledger.checkpoints): derived data beside the events,
# a manifest and chunks of rows per state commit whose events they fold.
CHECKPOINT_CHUNK_BYTES = 1024 * 1024
CHECKPOINT_FILE_RE = re.compile(
    r"^checkpoints/([0-9a-f]{40}|[0-9a-f]{64})/(manifest\.json|rows-[0-9]{4}\.tsv)$"
)


def checkpoint_path(commit: str, name: str) -> str:
    """``checkpoints/<commit>/<name>``: a file of the checkpoint of ``commit``'s events."""
    return f"checkpoints/{commit}/{name}"
