"""The ledger: the one write path (validate -> append -> project), replay and the cache."""

from loopx.ledger.book import Ledger

__all__ = ["Ledger"]
