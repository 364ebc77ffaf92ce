"""Operations: one typed function per thing a user can do. Every interface calls these.

Write operations take the transaction first and return the event they staged::

    from loopx.ops import goals, ledgers, todos

    ledger = ledgers.open_ledger(".")
    ledger.run(goals.add, "Add --format json", id="json", accept=["text output unchanged"],
               actor="human:alice@example.com")
    event = ledger.run(todos.claim, "output", actor="agent:codex@devbox")

Several operations in one commit: ``ledger.write(lambda txn: [...], actor=...)``. Read
operations take the ledger (``status.status(ledger, actor=...)``). Errors are
:class:`loopx.errors.LoopxError` subclasses whose message says what to do. See docs/library.md.
"""
