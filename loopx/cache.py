"""The projection cache: the fold of one state tip, saved under the common git dir.

Keyed by the tip, loopx's schema version and the Python version (``marshal`` is
version-specific). The payload carries a SHA-256 of itself: a cache that is truncated,
corrupt or from another version is discarded and rebuilt, never trusted.
"""

from __future__ import annotations

import dataclasses
import hashlib
import marshal
import os
import sys
from pathlib import Path
from typing import Any, Optional

from loopx import projection
from loopx.model import SCHEMA_VERSION

_MAGIC = b"LOOPXC1\n"
_KEY = f"{SCHEMA_VERSION}:{sys.version_info[:2]}".encode()

# Dataclasses stored inside Fold's dict fields, by the field they live in.
_TABLES: dict[str, type] = {
    "goals": projection.Goal, "todos": projection.Todo, "gates": projection.Gate,
    "evidence": projection.Evidence, "wakes": projection.Wake, "effects": projection.Effect,
    "quotas": projection.Quota, "sessions": projection.Session,
}


def _fold_to_data(fold: projection.Fold) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for f in dataclasses.fields(fold):
        value = getattr(fold, f.name)
        if f.name in _TABLES:
            value = {k: dataclasses.astuple(v) for k, v in value.items()}
        elif f.name == "problems":
            value = [dataclasses.astuple(p) for p in value]
        data[f.name] = value
    return data


def _fold_from_data(data: dict[str, Any]) -> projection.Fold:
    fold = projection.Fold()
    for f in dataclasses.fields(fold):
        value = data[f.name]
        if f.name in _TABLES:
            cls = _TABLES[f.name]
            value = {k: cls(*v) for k, v in value.items()}
        elif f.name == "problems":
            value = [projection.Problem(*p) for p in value]
        elif f.name == "last_key":
            value = tuple(value)
        setattr(fold, f.name, value)
    return fold


def path_for(cache_dir: Path, ref: str) -> Path:
    return cache_dir / (hashlib.sha1(ref.encode()).hexdigest()[:16] + ".fold")


def load(path: Path) -> Optional[tuple[str, projection.Fold]]:
    """(tip, fold) from the cache file, or None when absent or not trustworthy."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    try:
        if not raw.startswith(_MAGIC):
            return None
        digest, body = raw[len(_MAGIC) : len(_MAGIC) + 32], raw[len(_MAGIC) + 32 :]
        if hashlib.sha256(body).digest() != digest:
            return None
        key, tip, data = marshal.loads(body)
        if key != _KEY:
            return None
        return tip, _fold_from_data(data)
    except Exception:  # any decoding trouble means: rebuild
        return None


def save(path: Path, tip: str, fold: projection.Fold) -> None:
    """Write atomically (temp file + rename); a failure only costs a rebuild later."""
    try:
        body = marshal.dumps((_KEY, tip, _fold_to_data(fold)))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(_MAGIC + hashlib.sha256(body).digest() + body)
        os.replace(tmp, path)
    except (OSError, ValueError):
        pass
