"""When this clone first saw each event whose meaning runs on a clock: the claim or renewal
behind a lease held now, the event that set a time wake, an open session's last activity.

Clocks disagree (docs/design.md, "Clocks"): a lease ends at most its ttl after this clone first
saw it, so a writer whose clock runs a year fast cannot hold a todo for a year, nor one a year
slow lose its lease at once. First sight is an observation of this clone by its own clock,
like ``now``: it is not part of the fold (which stays the same for the same events on every
clone), but a small file beside the projection cache, ``<ref>.seen``. It holds only the events
:func:`loopx.projection.views.timed_events` names, so it stays as small as the work in play.

Derived data: a file that is missing or does not parse is taken as empty, and an event not in
it is first seen now, which errs on the side of a live lease, for at most its ttl.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

from loopx.model import clock, ids
from loopx.storage import files

_MAGIC = "loopx-seen-1"
MOST = 1 << 25  # bytes: MAX_ENTRIES entries fit; a bigger file is not read
_TS = re.compile(clock.TS_PATTERN)  # a date that is not real is not kept
MAX_ENTRIES = 100_000  # a file that claims more is not ours to trust


def path_for(live_path: Path) -> Path:
    """The first-sight file beside a ref's live file (``<ref>.live`` -> ``<ref>.seen``)."""
    return live_path.with_suffix(".seen")


def load(path: Path) -> dict[str, str]:
    """event id -> first sight, from ``path``; {} when absent or not trustworthy."""
    try:
        doc = json.loads(files.read(path, MOST))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("format") != _MAGIC:
        return {}
    seen = doc.get("seen")
    if not isinstance(seen, dict) or len(seen) > MAX_ENTRIES:
        return {}
    return {k: v for k, v in seen.items()
            if isinstance(k, str) and ids.ULID_RE.fullmatch(k) and isinstance(v, str) and _TS.fullmatch(v)}


def observe(path: Path, events: Iterable[str], now: datetime, *,
            prune: bool = False) -> dict[str, str]:
    """First sight of each of ``events``: as recorded, or ``now`` for those seen for the first
    time (recorded then). A recorded time after ``now`` (this clock was set back) counts as
    ``now``, and is recorded no earlier than the event was written (its id's time): a
    clock wrong for one command (set back a century, a machine up before its clock is set,
    ``--now`` in the past) would otherwise stamp every lease in play as seen then, and once
    the clock is right those leases would have ended long ago for this clone, for good.
    ``prune``: ``events`` are all the timed events of the tip; forget the others.

    Such a clock (one behind a first sight this clone recorded) records no new first sight
    either: an event fetched now is seen now for this command only, and first seen for good
    by the next command whose clock has caught up with what was recorded."""
    recorded = load(path)
    stamp = clock.format_ts(now)
    found: dict[str, str] = {}
    kept = {} if prune else dict(recorded)
    new: list[str] = []
    behind = False
    for event in events:
        when = recorded.get(event)
        if when is None:
            found[event] = stamp
            new.append(event)
        elif clock.parse_ts(when) > now:
            found[event], kept[event] = stamp, _lowered(when, event, now)
            behind = True
        else:
            found[event] = kept[event] = when
    if not behind:
        kept.update(dict.fromkeys(new, stamp))
    if kept != recorded:
        _save(path, kept)
    return found


def _lowered(when: str, event: str, now: datetime) -> str:
    """What a first sight recorded at ``when``, after ``now``, is kept as: ``now``, but not
    before ``event`` was written (by its id), nor after ``when``."""
    floor = max(now.timestamp(), ids.ulid_ms(event) / 1000)
    if floor >= clock.parse_ts(when).timestamp():
        return when
    return clock.format_ts(datetime.fromtimestamp(floor, timezone.utc))


def _save(path: Path, seen: dict[str, str]) -> None:
    """Write atomically (temp file + rename); a failure only means "first seen" again later."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        files.replace(path, json.dumps({"format": _MAGIC, "seen": seen}, sort_keys=True).encode())
    except OSError:
        pass
