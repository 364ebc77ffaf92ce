"""The per-file rules of the state branch: the one set both checks of a change use.

Sync's incoming check (:mod:`loopx.incoming`, a fetched tip before merging) and
``git loopx validate`` (:mod:`loopx.validate`, a pull request's range) judge every file a
change brings with these functions, so a rule changed here changes both. Each rule returns a
:class:`Broken` (the rule's name and a message without the path) or None; each check maps it
to its own report (validate shows the rule name, the quarantine report the message).

The rules, by name:

- ``bad-path``: a normal relative path, no ``.git`` component, inside an area of
  :data:`AREAS` and matching its pattern; no two names equal under casefold in one directory.
- ``bad-mode``: a plain file (mode ``100644``): no symlink, gitlink or executable.
- ``too-big``: at most the area's size cap (judged from the object's size, before reading).
- ``bad-yaml``, ``schema``: an event file parses with the safe loader, validates against the
  model, and its name matches its id, type and date.
- ``modified``, ``deleted``: a change only adds files (event files are never changed).

Pure: no git here; callers read trees and blobs through the store.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from loopx.errors import CodecError, SchemaError
from loopx.model import codec
from loopx.model.paths import (CHECKPOINT_CHUNK_BYTES, CHECKPOINT_FILE_RE, PATH_RE,
                               SESSION_FILE_RE, TRANSCRIPT_CHUNK_BYTES, is_file_path)
from loopx.storage.batches import Oversize
from loopx.storage.trees import BLOB_MODE

if TYPE_CHECKING:
    from loopx.model.events import Event

# Top-level areas of the state tree: path pattern and size cap of the files each may hold.
AREAS: dict[str, tuple[re.Pattern[str], int]] = {
    "events": (PATH_RE, codec.MAX_BYTES),
    "sessions": (SESSION_FILE_RE, TRANSCRIPT_CHUNK_BYTES),  # transcript chunks (docs/sessions.md)
    # Derived rows of the projection (docs/design.md, "Checkpoints"); a chunk holds whole
    # lines, so a line a little longer than the chunk size makes a chunk that much longer.
    "checkpoints": (CHECKPOINT_FILE_RE, 2 * CHECKPOINT_CHUNK_BYTES),
}
_MODES = {"120000": "a symlink", "160000": "a gitlink (submodule)", "100755": "executable"}


@dataclass(frozen=True)
class Broken:
    """A rule a file breaks: the rule's name and why (the message does not repeat the path)."""

    rule: str
    message: str


def path_rule(path: str, mode: str) -> Optional[Broken]:
    """Why ``path`` (with git file ``mode``) may not be on the state branch, or None."""
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return Broken("bad-path", "not a normal relative path (absolute, empty or '..' component)")
    if any(p.lower().rstrip(". ") in (".git", "git~1") for p in parts):
        return Broken("bad-path", "names .git")
    area = AREAS.get(parts[0])
    if area is None:
        allowed = ", ".join(f"{a}/" for a in AREAS)
        return Broken("bad-path", f"is outside the state layout (allowed: {allowed})")
    if not area[0].fullmatch(path):
        return Broken("bad-path", "is not an event path (events/YYYY/MM/DD/[<id[:6]>/<id[6]>/<id[7]>/]<ulid>.<type>.yaml)"
                      if parts[0] == "events" else f"is not a valid {parts[0]}/ path")
    return mode_rule(mode)


def mode_rule(mode: str) -> Optional[Broken]:
    """State files are plain blobs: no symlinks, executables or submodules."""
    if mode == BLOB_MODE:
        return None
    what = f"is {_MODES[mode]}" if mode in _MODES else f"has mode {mode}"
    return Broken("bad-mode", f"{what}; only plain files (mode {BLOB_MODE}) are allowed")


def size_rule(path: str, size: int) -> Optional[Broken]:
    """The size cap of ``path``'s area (call :func:`path_rule` first: the path must be valid)."""
    cap = AREAS[path.split("/")[0]][1]
    if size <= cap:
        return None
    return Broken("too-big", f"{size} bytes is over the {cap // 1024} KiB cap")


def change_rule(status: str) -> Optional[Broken]:
    """A change that is not a pure addition; ``status`` is git's raw status letters (one per
    parent for a merge's combined diff)."""
    if set(status) == {"A"}:
        return None
    if "D" in status:
        return Broken("deleted", "deleted (the ledger is append-only: files are never deleted)")
    return Broken("modified", "modified (event files are never changed)")


def is_event(path: str) -> bool:
    """Whether ``path`` holds an event (else it is a session transcript chunk, plain text)."""
    return path.startswith("events/")


def read_event(path: str, data: Optional[bytes | Oversize]) -> Event:
    """The event in file ``path``; raises CodecError (not safe YAML, too big) or SchemaError."""
    found = read_events([(path, data)])[0]
    if isinstance(found, Exception):
        raise found
    return found


def read_events(files: list[tuple[str, Optional[bytes | Oversize]]]) -> list[
        Event | CodecError | SchemaError]:
    """The event in each file, or the error :func:`read_event` raises for it, in order.

    The steps run stage by stage over the whole list (every file's bytes loaded, then every
    document validated, then every name checked), not file by file: the same work, a sixth
    less CPU in a replay, which keeps each stage's code and data hot in the processor's
    caches instead of cycling the parser, pydantic's validator and the regexes per file."""
    found: list[Any] = [None] * len(files)
    loaded: list[tuple[int, str, object]] = []
    for n, (path, data) in enumerate(files):
        if PATH_RE.fullmatch(path) is None:
            found[n] = SchemaError(f"{path}: not an event path (events/YYYY/MM/DD/"
                                   "[<id[:6]>/<id[6]>/<id[7]>/]<ulid>.<type>.yaml)")
        elif data is None:
            found[n] = SchemaError(f"{path}: blob is missing from the object database")
        elif isinstance(data, Oversize):  # the store did not read it: its header told the size
            found[n] = CodecError(f"{path}: {data.size} bytes is over the "
                                  f"{codec.MAX_BYTES // 1024} KiB limit")
        else:
            try:
                loaded.append((n, path, codec.load(data, path)))
            except CodecError as exc:
                found[n] = exc
    parse = _parser()
    parsed: list[tuple[int, str, Event]] = []
    for n, path, doc in loaded:
        try:  # (the document is the event's now: nothing else holds it)
            parsed.append((n, path, parse(doc, path, owned=True)))
        except SchemaError as exc:
            found[n] = exc
    for n, path, event in parsed:
        found[n] = event if is_file_path(path, event.id, event.type) else SchemaError(
            f"{path}: file name does not match its id, type or date")
    return found


@functools.cache  # (an import statement per file was a tenth of a replay's parsing)
def _parser() -> Callable[..., Event]:
    """The event models' parse_event. Imported on first use: the path rules above serve warm
    commands too (adopting a clone, the write path's attach), which must not load the event
    models (pydantic) for them."""
    from loopx.model.events import parse_event

    return parse_event


def event_rule(path: str,
               data: Optional[bytes | Oversize]) -> tuple[Optional[Event], Optional[Broken]]:
    """The event in an event file, or why it is not one (``bad-yaml`` or ``schema``)."""
    try:
        return read_event(path, data), None
    except CodecError as exc:
        return None, Broken("bad-yaml", str(exc).removeprefix(f"{path}: "))
    except SchemaError as exc:
        return None, Broken("schema", str(exc).removeprefix(f"{path}: "))


def case_collisions(names: dict[str, set[str]]) -> list[tuple[str, Broken]]:
    """Names equal under casefold in one directory (``names``: directory -> the names it
    will hold) would collide on macOS and Windows checkouts: (path, Broken) for each."""
    found = []
    for directory, here in names.items():
        seen: dict[str, str] = {}
        where = f"{directory}/" if directory else ""
        for name in sorted(here):
            other = seen.setdefault(name.casefold(), name)
            if other != name:
                found.append((f"{where}{name}", Broken(
                    "bad-path", f"collides with {where}{other} on case-insensitive disks")))
    return found
