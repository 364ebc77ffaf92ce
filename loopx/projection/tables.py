"""The fold's tables when they are not all in memory: a mapping (and an append-only list)
over a *source* of stored values that the caller supplies, with every change kept here.

The fold a write is checked against reads only the entities its checks and appliers touch
(its cost must not grow with the ledger), so its tables load values on demand. What stores
them is not the fold's business: the source answers in values (an entity, a list of ids),
never in rows, queries or connections, and nothing is written back through it. The
changes — :attr:`Table.touched`, :attr:`Table.added`, :attr:`Table.gone`,
:attr:`Appended.new` — are read afterwards by whoever owns the store
(loopx.ledger.rows writes them to the projection cache).
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping, MutableSequence
from typing import Any, Optional, Protocol, overload


class Source(Protocol):
    """Stored values of one table, by id (what a :class:`Table` reads through)."""

    def get(self, key: str) -> Optional[Any]:
        """The value stored under ``key``, or None."""

    def ids(self) -> list[str]:
        """Every stored id, in the order they were first stored."""

    def count(self) -> int:
        """How many ids are stored."""

    def with_prefix(self, prefix: str, *, limit: int) -> list[str]:
        """Up to ``limit`` stored ids that start with ``prefix``, in id order."""

    def items(self) -> list[tuple[str, Any]]:
        """Every (id, value) stored, in the order of :meth:`ids` (one read, not one per id)."""


class Listed(Protocol):
    """Stored values of an append-only list (what an :class:`Appended` reads through)."""

    def all(self) -> list[Any]:
        """Every stored value, in order."""


class Table(MutableMapping[str, Any]):
    """One entity table of a fold over a :class:`Source`: values are read when first asked
    for, and every value read or written is kept in :attr:`touched` (appliers change
    entities in place, so a value read may have changed)."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.touched: dict[str, Any] = {}
        self.added: list[str] = []  # keys not in the source before, in insertion order
        self.gone: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        if key in self.touched:
            return self.touched[key]
        if key in self.gone or not isinstance(key, str):
            raise KeyError(key)
        value = self.source.get(key)
        if value is None:
            raise KeyError(key)
        self.touched[key] = value
        return value

    def __contains__(self, key: object) -> bool:
        if key in self.touched:
            return True
        return isinstance(key, str) and key not in self.gone and self.source.get(key) is not None

    def __setitem__(self, key: str, value: Any) -> None:
        if key in self.gone:  # stored, deleted, set again: an update of the stored one
            self.gone.discard(key)
        elif key not in self:
            self.added.append(key)
        self.touched[key] = value

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self.touched.pop(key, None)
        if key in self.added:
            self.added.remove(key)
        else:
            self.gone.add(key)

    def __iter__(self) -> Iterator[str]:
        yield from (key for key in self.source.ids() if key not in self.gone)
        yield from list(self.added)

    def __len__(self) -> int:
        return self.source.count() - len(self.gone) + len(self.added)

    def with_prefix(self, prefix: str, *, limit: int) -> list[str]:
        """Up to ``limit`` ids that start with ``prefix`` (the source's index, not a scan)."""
        found = self.source.with_prefix(prefix, limit=limit + len(self.gone))
        found += [key for key in self.added if key.startswith(prefix)]
        return [key for key in found if key not in self.gone][:limit]

    def values(self) -> Any:  # one read of the source for a scan, not one per id
        for key, value in self.source.items():
            if key not in self.touched and key not in self.gone:
                self.touched[key] = value
        return [self.touched[key] for key in self]

    def items(self) -> Any:
        return list(zip(list(self), self.values()))


class Appended(MutableSequence[Any]):
    """An append-only list of the fold (problems, unknown events) over a :class:`Listed`: a
    write appends to :attr:`new` without reading what is there; iterating reads it all."""

    def __init__(self, source: Listed, kind: str) -> None:
        self.source, self.kind = source, kind
        self.new: list[Any] = []
        self._stored: Optional[list[Any]] = None

    def _all(self) -> list[Any]:
        if self._stored is None:
            self._stored = self.source.all()
        return self._stored + self.new

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def insert(self, index: int, value: Any) -> None:
        if index < len(self):
            raise TypeError(f"{self.kind} of a stored fold are append-only")
        self.new.append(value)

    def __setitem__(self, index: Any, value: Any) -> None:
        raise TypeError(f"{self.kind} of a stored fold are append-only")

    def __delitem__(self, index: Any) -> None:
        raise TypeError(f"{self.kind} of a stored fold are append-only")
