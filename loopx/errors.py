"""The one error hierarchy. Messages say what is wrong and what to do; the CLI picks exit codes."""

from __future__ import annotations

import os


class LoopxError(Exception):
    """Base of every error loopx raises on purpose; its message is shown to the user as is."""


class UsageError(LoopxError):
    """The user asked for something that cannot be done (unknown id, illegal transition, ...)."""


class ArgumentError(UsageError):
    """Arguments that do not go together, or one missing: a usage error (exit 2, as the
    command line's own parsing errors)."""


class NotFound(UsageError):
    """An id, ref or file that does not exist."""


class Ambiguous(UsageError):
    """An id prefix that matches more than one entity."""


class TransitionError(UsageError):
    """A write that the projection's rules refuse (e.g. claiming a todo that is done)."""


class CodecError(LoopxError):
    """A file that is not acceptable YAML (too big, aliases, tags, duplicate keys, ...)."""


class SchemaError(LoopxError):
    """A well-formed document that does not validate against the event model."""


class GitError(LoopxError):
    """A git command failed; carries the command, its exit code and stderr."""

    def __init__(self, argv: list[str], returncode: int, stderr: str) -> None:
        self.argv = argv
        self.returncode = returncode
        self.stderr = stderr
        detail = stderr.strip().splitlines()[-1] if stderr.strip() else "no error output"
        super().__init__(f"git {' '.join(argv[:3])} failed (exit {returncode}): {detail}")


class RefRaceError(LoopxError):
    """A compare-and-swap ref update lost a race; retrying from the new tip is safe."""

    retryable = True


class CheckedOut(UsageError):
    """The state branch is checked out in a work tree: writing under it could lose events."""


class DamagedLedger(LoopxError):
    """Objects the state branch needs are missing (pruned by `git gc`?): see `git loopx doctor`."""


class DamagedRef(DamagedLedger):
    """A ref that git cannot read, or that points at something other than a commit (``kind``:
    ``missing``, ``type``, ``unreadable`` or ``gone``): damage to name, never "no ledger"."""

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class ForeignStateDir(LoopxError):
    """The loopx folder is another repository's (a symlink or bind mount shared by two)."""


class NotAFile(OSError):
    """A fifo, a device, a folder or a symbolic link where loopx keeps a plain file of its own
    (a lock, a cache file): never waited on, read or written through."""

    def __init__(self, path: os.PathLike[str] | str) -> None:
        super().__init__(f"{os.fspath(path)}: not a plain file")
        self.filename = os.fspath(path)


class LockTimeout(LoopxError):
    """Another loopx writer held this clone's lock for longer than we were willing to wait."""


class ConflictError(LoopxError):
    """The same event id exists with different bytes (never silently overwritten)."""


class SyncError(LoopxError):
    """Fetching, merging or pushing the state branch failed."""


class Quarantined(SyncError):
    """A remote's state failed the incoming check; it was quarantined, local state untouched."""


class UnrelatedLedger(SyncError):
    """A remote's state shares no history with ours: another ledger, merged only on request."""


class ClaimLost(LoopxError):
    """Another actor's claim on the todo reached the shared state first."""


# What the machine says when it refuses a write (git's stderr and strerror alike), and what
# loopx says for it. A refused write is the machine's state, not a bug: exit 1, one line.
_REFUSALS = (
    ("No space left on device", "no space left on device"),
    ("Disk quota exceeded", "disk quota exceeded"),
    ("File too large", "file too large (the file-size limit, `ulimit -f`?)"),
    ("Read-only file system", "read-only file system"),
    ("Permission denied", "permission denied"),
    ("Operation not permitted", "operation not permitted (an immutable file? `lsattr`)"),
    # git's only words when renaming `<ref>.lock` over the ref's file fails (it drops errno)
    ("couldn't set 'refs/", "the ref's file could not be replaced (an immutable file? "
                            "`lsattr`; or not writable)"),
)
_REFUSED_ERRNOS = {28: 0, 122: 1, 27: 2, 30: 3, 13: 4, 1: 5}  # ENOSPC EDQUOT EFBIG EROFS EACCES EPERM
_SIGXFSZ = 25  # git killed for writing past the file-size limit
# Something of the wrong kind where loopx writes (a file where its folder goes, a folder
# where its file goes, a broken link): the machine's state too, named with its path.
_IN_THE_WAY = {20: "a file (not a folder) is in the way of this path",  # ENOTDIR
               21: "it is a folder, not a file",  # EISDIR
               17: "it is a file or a broken link, not a folder"}  # EEXIST


def refusal(text: str) -> str | None:
    """loopx's words for the refused write git's ``text`` (its stderr, or a line of it)
    names, or None when it names none."""
    for said, meaning in _REFUSALS:
        if said in text:
            return meaning
    return None


def refused_write(exc: BaseException) -> str | None:
    """One line for a write the machine refused (disk full, file too large, permission
    denied, read-only), or None when ``exc`` is something else."""
    if isinstance(exc, GitError):
        if exc.returncode == -_SIGXFSZ:
            return f"git {exc.argv[0]}: {_REFUSALS[2][1]}; nothing was changed"
        meaning = refusal(exc.stderr)
        return f"git {exc.argv[0]}: {meaning}; nothing was changed" if meaning else None
    if isinstance(exc, NotAFile):
        return (f"cannot write {exc.filename}: it is not a plain file (a fifo, a device, a "
                "link?) (move it aside); nothing was changed")
    if isinstance(exc, OSError) and exc.errno in _REFUSED_ERRNOS:
        where = f" {exc.filename}" if exc.filename else ""
        return (f"cannot write{where}: {_REFUSALS[_REFUSED_ERRNOS[exc.errno]][1]}; "
                "nothing was changed")
    if (isinstance(exc, OSError) and exc.errno in _IN_THE_WAY and exc.filename
            and not (exc.errno == 17 and os.path.isdir(exc.filename))):
        return (f"cannot write {exc.filename}: {_IN_THE_WAY[exc.errno]} (move it aside); "
                "nothing was changed")
    if any(cls.__module__ == "sqlite3" for cls in type(exc).__mro__):
        for said, meaning in _REFUSALS:
            if said.lower() in str(exc).lower() or (said == "No space left on device"
                                                     and "database or disk is full" in str(exc)):
                return f"the cache: {meaning}; nothing was changed"
    return None


def describe(exc: BaseException) -> tuple[str, str, int]:
    """``(kind, message, exit_code)`` of an error as every interface reports it (the CLI's
    ``--format json`` error and the MCP server's tool errors): the class name and the
    message of a loopx error (exit 1; a failed git call 3), ``WriteRefused`` for a write the
    machine refused (exit 1), ``unexpected`` for anything else."""
    refused = refused_write(exc)
    if refused is not None:
        return "WriteRefused", refused, 1
    if isinstance(exc, GitError):
        return "GitError", str(exc), 3
    if isinstance(exc, ArgumentError):
        return "UsageError", str(exc), 2
    if isinstance(exc, LoopxError):
        return type(exc).__name__, str(exc), 1
    return "unexpected", f"unexpected {type(exc).__name__}: {exc}", 3
