"""A git pack stream of blobs, built in memory. Pure: bytes in, bytes out.

A batch of many events is written as one pack (``git index-pack --stdin``: one file, one
fsync) rather than as one loose object per event, which costs a file and an fsync each.
Format: https://git-scm.com/docs/pack-format (version 2, no deltas).
"""

from __future__ import annotations

import hashlib
import zlib
from typing import Callable

_BLOB = 3  # pack object type


def object_id(data: bytes, algo: Callable[..., "hashlib._Hash"]) -> str:
    """The id git gives a blob with these contents."""
    return algo(b"blob %d\0" % len(data) + data).hexdigest()


def _header(size: int) -> bytes:
    # Type and size in a little-endian base-128 varint; the first byte holds 4 size bits.
    out = bytearray()
    byte = (_BLOB << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte, size = size & 0x7F, size >> 7
    out.append(byte)
    return bytes(out)


def blobs(contents: list[bytes], algo: Callable[..., "hashlib._Hash"]) -> bytes:
    """A complete pack holding ``contents`` as blobs, with its trailing checksum."""
    parts = [b"PACK", (2).to_bytes(4, "big"), len(contents).to_bytes(4, "big")]
    for data in contents:
        # Level 1, git's own default for loose objects (core.looseCompression).
        parts += [_header(len(data)), zlib.compress(data, 1)]
    body = b"".join(parts)
    return body + algo(body).digest()
