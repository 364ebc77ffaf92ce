"""The one gateway to git: every git process loopx starts goes through :func:`run`.

It fixes the environment (``LC_ALL=C`` so messages can be matched, no prompts), disables the
repository's hooks and makes loopx's own writes durable (``core.fsync``) without touching the
user's configuration, logs argv under ``--debug`` and raises :class:`GitError` on failure.
:class:`ObjectReader` keeps one ``git cat-file --batch-command`` alive for all object reads, and
reads an object's size from its header before its contents.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, NewType

from loopx.errors import GitError, NotFound
from loopx.storage import batches, files, owner
from loopx.storage.batches import Oversize

Oid = NewType("Oid", str)
RefName = NewType("RefName", str)

DEBUG = bool(os.environ.get("LOOPX_DEBUG"))

# Applied to every git call loopx makes, never written to any config file.
#  - core.hooksPath=/dev/null: loopx's own writes run no repository hook, including
#    reference-transaction (git >= 2.28), which update-ref would otherwise run.
#  - core.fsync=committed: objects and refs are fsynced before the ref moves (git >= 2.36;
#    older gits ignore the unknown key and fall back to core.fsyncObjectFiles below).
#  - log.showSignature=false: a user's `true` prints a verification line before every
#    commit of a `git log`, whatever its --format (loopx.storage.commits parses that output:
#    it crashed on it); log.follow=false: a log of one path must not follow renames.
_SAFE_CONFIG = (
    "-c", f"core.hooksPath={os.devnull}",
    "-c", "core.fsync=committed",
    "-c", "core.fsyncMethod=fsync",
    "-c", "core.fsyncObjectFiles=true",
    "-c", "core.useReplaceRefs=false",
    "-c", "advice.graftFileDeprecated=false",
    "-c", "log.showSignature=false",
    "-c", "log.follow=false",
)


# The ledger is read as written (docs/reliability.md, "The ledger is read as written"):
# nothing inherited may change which objects or refs git shows loopx.
#  - GIT_NO_REPLACE_OBJECTS (and core.useReplaceRefs=false below): `git replace` refs would
#    swap a state commit or tree for another, and a write on it would drop events.
#  - GIT_GRAFT_FILE: an empty file instead of <git dir>/info/grafts, which would cut or
#    rewire a commit's parents (replace refs being off does not turn grafts off).
#  - dropped: variables that point git at other objects or refs than the repository's own
#    (a pre-receive hook's quarantine, a namespace, another replace-ref base, a shallow file,
#    another common dir). The repository's own settings (objects/info/alternates, shallow)
#    stand; GIT_DIR and GIT_WORK_TREE are pinned to the repository loopx discovered.
_PINNED_ENV = {"GIT_NO_REPLACE_OBJECTS": "1", "GIT_GRAFT_FILE": os.devnull}
_DROPPED_ENV = (
    "GIT_INDEX_FILE",  # a user's GIT_INDEX_FILE must never reach our plumbing
    "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_QUARANTINE_PATH",
    "GIT_NAMESPACE", "GIT_REPLACE_REF_BASE", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR",
)
# The repositories discover() found: their cwd -> (GIT_DIR, GIT_WORK_TREE or None). A later
# call in that cwd runs with exactly these, whatever the process inherited.
_DISCOVERED: dict[str, tuple[str, str | None]] = {}


def _env(extra: dict[str, str] | None, cwd: Path | str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    env["LANGUAGE"] = "C"
    env["GIT_TERMINAL_PROMPT"] = "0"
    for name in _DROPPED_ENV:
        env.pop(name, None)
    env.update(_PINNED_ENV)
    if cwd is not None:
        _pin_repo(env, str(cwd))
    if extra:
        env.update(extra)
    return env


# Whether a git process's files can be capped (Linux: prlimit(2) on a child).
CAN_LIMIT = sys.platform.startswith("linux")


def _run_limited(argv: list[str], cwd: Path | str, input: bytes | None,
                 stdout: IO[bytes] | None, env: dict[str, str], limit: int,
                 timeout: float | None) -> subprocess.CompletedProcess[bytes]:
    """:func:`run`'s ``file_limit``: git is started on an empty pipe, so it can write nothing
    before the limit is set; only then is its input written."""
    import resource  # (only the bulk reads cap a process)

    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE,
                            stdout=stdout or subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (limit, limit))
        resource.prlimit(proc.pid, resource.RLIMIT_CORE, (0, 0))  # (killed there: no core)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _pin_repo(env: dict[str, str], cwd: str) -> None:
    """GIT_DIR and GIT_WORK_TREE of the repository discovered at ``cwd``; elsewhere none, so
    that ``cwd`` alone says which repository git works on."""
    pinned = _DISCOVERED.get(cwd)
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    if pinned is not None:
        env["GIT_DIR"] = pinned[0]
        if pinned[1] is not None:
            env["GIT_WORK_TREE"] = pinned[1]


def run(
    cwd: Path | str,
    *args: str,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
    timeout: float | None = None,
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
    file_limit: int | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git <args>`` in ``cwd`` and return the completed process (stdout as bytes, or
    written to the open file ``stdout``; its input ``input``, or read from ``stdin``).

    ``file_limit`` caps every file git writes (its ``stdout`` file included) at that many
    bytes, by the kernel (RLIMIT_FSIZE, set before git reads its ``input``): git is killed
    when it would write past it. Only where :data:`CAN_LIMIT` says the system has it."""
    argv = ["git", *_SAFE_CONFIG, *args]
    started = time.perf_counter()
    try:
        if file_limit is not None:
            proc = _run_limited(argv, cwd, input, stdout, _env(env, cwd), file_limit, timeout)
        else:
            proc = subprocess.run(
                argv, cwd=cwd, input=input, stdin=stdin, stdout=stdout or subprocess.PIPE,
                stderr=subprocess.PIPE, env=_env(env, cwd), timeout=timeout
            )
    except FileNotFoundError as exc:
        if not os.path.isdir(cwd):
            raise NotFound(f"{cwd}: no such directory") from None
        raise GitError(list(args), 127, "git is not installed or not on PATH") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(list(args), 124, f"timed out after {timeout}s") from exc
    if DEBUG:
        ms = (time.perf_counter() - started) * 1000
        print(f"loopx: git {' '.join(args)} -> {proc.returncode} ({ms:.1f} ms)", file=sys.stderr)
    if check and proc.returncode != 0:
        raise GitError(list(args), proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc


def stream(cwd: Path | str, *args: str, sep: bytes = b"\0",
           block: int = 1 << 20) -> Iterator[bytes]:
    """Run ``git <args>`` and yield its stdout in blocks of whole records (each block ends
    just after a ``sep``; the last may lack it): a listing of a long ledger is never held
    whole. Raises GitError once the output is read, if git failed."""
    argv = ["git", *_SAFE_CONFIG, *args]
    with subprocess.Popen(argv, cwd=cwd, env=_env(None, cwd), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        rest = b""
        while data := proc.stdout.read(block):
            data = rest + data
            cut = data.rfind(sep) + 1
            if cut:
                yield data[:cut]
            rest = data[cut:]
        if rest:
            yield rest
        error = proc.stderr.read()
    if proc.returncode != 0:
        raise GitError(list(args), proc.returncode, error.decode("utf-8", "replace"))


def spawn(cwd: Path | str, *args: str) -> None:
    """Start ``git <args>`` in the background and do not wait for it (maintenance): it
    outlives us in its own session, with no terminal to write to."""
    if DEBUG:
        print(f"loopx: git {' '.join(args)} (in the background)", file=sys.stderr)
    # Not the fsync settings: a deprecation warning about core.fsyncObjectFiles (git >= 2.36)
    # would land in gc.log, and a gc.log stops every later `git gc --auto`, the user's too.
    try:
        subprocess.Popen(["git", "-c", f"core.hooksPath={os.devnull}",
                          "-c", "core.useReplaceRefs=false",
                          "-c", "advice.graftFileDeprecated=false", *args], cwd=cwd,
                         env=_env(None, cwd),
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        pass  # maintenance is an optimisation: the next write tries again


def out(cwd: Path | str, *args: str, **kwargs: object) -> str:
    """Run git and return stdout decoded, without the trailing newline."""
    return run(cwd, *args, **kwargs).stdout.decode("utf-8", "surrogateescape").rstrip("\n")  # type: ignore[arg-type]


@dataclass(frozen=True)
class Repo:
    """Where a repository lives: its per-worktree git dir, common dir and work tree."""

    git_dir: Path
    common_dir: Path
    work_tree: Path | None

    @property
    def cwd(self) -> Path:
        return self.work_tree or self.git_dir

    @property
    def loopx_dir(self) -> Path:
        """loopx's private files (lock, cache), shared by all worktrees of the repository,
        and by no other repository (see :mod:`loopx.storage.owner`)."""
        return owner.checked(self.common_dir / "loopx", self.common_dir)


def discover(path: Path | str = ".") -> Repo:
    """Find the repository containing ``path``; raises NotFound outside one."""
    # One process: rev-parse prints each answer in order, so where there is no work tree
    # (bare repo, inside .git) --show-toplevel fails last and the first three lines stand.
    # The inherited GIT_DIR and GIT_WORK_TREE count here (a git hook, `git --git-dir=...
    # loopx`), and are pinned for every later call in the repository found.
    env = _env(None)
    for name in ("GIT_DIR", "GIT_WORK_TREE"):
        if name in os.environ:
            env[name] = os.environ[name]
    argv = ["git", *_SAFE_CONFIG, "rev-parse", "--absolute-git-dir", "--path-format=absolute",
            "--git-common-dir", "--is-bare-repository", "--show-toplevel"]
    try:
        proc = subprocess.run(argv, cwd=path, capture_output=True, env=env)
    except FileNotFoundError:
        if not os.path.isdir(path):
            raise NotFound(f"{path}: no such directory") from None
        raise GitError(argv[len(_SAFE_CONFIG) + 1:], 127,
                       "git is not installed or not on PATH") from None
    lines = proc.stdout.decode().splitlines()
    if len(lines) < 3:
        if "GIT_DIR" in os.environ:  # the caller chose the repository; say which one failed
            raise NotFound(f"GIT_DIR={os.environ['GIT_DIR']} is not a git repository (it is "
                           "set in the environment)")
        raise NotFound(f"{Path(path).resolve()} is not inside a git repository (run `git init`)")
    git_dir, common, bare = lines[:3]
    top = lines[3] if len(lines) > 3 and bare != "true" else ""
    repo = Repo(Path(git_dir), Path(common).resolve(), Path(top) if top else None)
    _DISCOVERED[str(repo.cwd)] = (git_dir, top or None)
    return repo


def has_ref(repo: Repo, ref: str) -> bool | None:
    """Whether ``ref`` exists, read from the files backend without starting git (its commit
    is not looked at); None when that cannot be told so (a reftable repository)."""
    common = repo.common_dir
    if (common / "reftable").is_dir():
        return None
    if (common / ref).is_file():
        return True
    try:
        with open(common / "packed-refs", "rb") as packed:
            held = packed.read()
    except FileNotFoundError:
        return False
    return any(f" {ref}{end}".encode() in held for end in ("\n", "\r\n"))  # CRLF: damage


_KINDS = (b"commit", b"tree", b"blob", b"tag")
_LOOSE_MAX = 1 << 16  # bytes of a loose file read for its whole object (commits: small)


def loose_object(repo: Repo, oid: str, *, head_only: bool = False) -> tuple[str, bytes] | None:
    """(type, content) of object ``oid`` from its loose file (git writes it whole, by
    rename), read without starting git; only the type (content b"") with ``head_only``.
    None when there is no such file, it is bigger than 64 KiB, or it does not decode as the
    object it is named for (packed, in an alternate, damaged): then ask git, which names
    damage."""
    import zlib  # here: only these fast paths need it

    if not _OID.fullmatch(oid):
        return None
    raw = _read_regular(repo.common_dir / "objects" / oid[:2] / oid[2:],
                        256 if head_only else _LOOSE_MAX, prefix=head_only)
    if raw is None:
        return None
    try:  # at most 16 times the file (a zlib bomb: git's answer, not our memory)
        unpack = zlib.decompressobj()
        data = unpack.decompress(raw, 32 if head_only else 16 * _LOOSE_MAX)
    except zlib.error:
        return None
    header, nul, content = data.partition(b"\0")
    kind, space, size = header.partition(b" ")
    if not (nul and space and kind in _KINDS and size.isdigit()):
        return None
    if head_only:
        return kind.decode(), b""
    return (kind.decode(), content) if unpack.eof and len(content) == int(size) else None


def _read_regular(path: Path, most: int, *, prefix: bool = False) -> bytes | None:
    """:func:`files.read`, None where it raises: ask git then."""
    try:
        return files.read(path, most, prefix=prefix)
    except OSError:
        return None


# A ref shared by every worktree, whose loose file is <common dir>/<ref> (refs/bisect/,
# refs/worktree/ and refs/rewritten/ are per worktree: git reads those).
_PLAIN_REF = re.compile(r"refs/(?:heads|remotes|loopx|tags)(?:/[A-Za-z0-9_][A-Za-z0-9._-]*)+")
_OID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def loose_ref(repo: Repo, ref: str) -> str | None:
    """The object name in ``ref``'s loose file, read without starting git (git writes it by
    rename, so it is read whole); None for anything else (no such file, a packed or symbolic
    ref, reftable, a name git would not write there): then ask git."""
    if (not _PLAIN_REF.fullmatch(ref) or ref.endswith(".lock")
            or (repo.common_dir / "reftable").is_dir()):
        return None
    raw = _read_regular(repo.common_dir / ref, 80)
    held = raw.decode("ascii", "replace").strip() if raw is not None else ""
    return held if _OID.fullmatch(held) else None


class ObjectReader:
    """One long-lived ``git cat-file --batch-command`` process for all object reads of a
    command (git >= 2.36).

    Each chunk of names is asked for with ``info`` first (type and size from the object
    header) and only then, for objects within ``max_size``, with ``contents``: an object
    over the limit is never read into memory, here or by git.
    """

    # Requests are written in chunks small enough to fit in the pipe buffer, so git can never
    # block on its stdout while we block on its stdin.
    _CHUNK = 512
    # git keeps up to core.deltaBaseCacheLimit (96 MiB by default) of delta bases: reading a
    # fresh clone's tightly packed events, that made cat-file the largest process of a
    # command (94 MB at 100k events). Event files are small; 16 MiB reads them as fast.
    DELTA_CACHE = ("-c", "core.deltaBaseCacheLimit=16m")

    def __init__(self, cwd: Path | str) -> None:
        self.cwd = cwd
        self._proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                ["git", *_SAFE_CONFIG, *self.DELTA_CACHE, "cat-file", "--batch-command"],
                cwd=self.cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, env=_env(None, self.cwd), bufsize=1 << 18,
            )
        return self._proc

    def read_many(self, names: list[str]) -> list[tuple[str, bytes] | None]:
        """(type, content) for each name, or None where the object is missing."""
        return [found for found in self.read_capped(names, None)
                if not isinstance(found, Oversize)]

    def read_capped(self, names: list[str],
                    max_size: int | None) -> list[tuple[str, bytes] | Oversize | None]:
        """(type, content) for each name; None where the object is missing; an
        :class:`Oversize` where it is bigger than ``max_size`` bytes (not read)."""
        result: list[tuple[str, bytes] | Oversize | None] = []
        for start in range(0, len(names), self._CHUNK):
            chunk = names[start : start + self._CHUNK]
            for attempt in range(3):
                try:
                    result += self._read_chunk(chunk, max_size)
                    break
                except (batches.Died, OSError):
                    # cat-file dies when a `git gc` deletes a pack it was about to open
                    # ("packfile ... cannot be accessed"); reads are safe to ask again.
                    self._abandon()
                    if attempt == 2:
                        raise GitError(["cat-file", "--batch-command"], 1,
                                       "cat-file exited unexpectedly (git >= 2.36 is needed)"
                                       ) from None
        return result

    def _read_chunk(self, chunk: list[str],
                    max_size: int | None) -> list[tuple[str, bytes] | Oversize | None]:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        # A name is a path as listed (non-UTF-8 bytes kept as surrogates: the same bytes back).
        request = b"".join(b"info " + n.encode("utf-8", "surrogateescape") + b"\n" for n in chunk)
        if request.count(b"\n") != len(chunk):  # a line break in a name: two requests
            return self._read_each(chunk, max_size)
        proc.stdin.write(request)
        proc.stdin.flush()
        readline = proc.stdout.readline  # (bound once: a replay reads 100k objects twice)
        headers = [batches.info_header(readline()) for _ in chunk]
        wanted = [h for h in headers if h is not None and (max_size is None or h[2] <= max_size)]
        proc.stdin.write(b"".join(b"contents " + h[0] + b"\n" for h in wanted))
        proc.stdin.flush()
        read = proc.stdout.read
        contents = {h[0]: batches.contents(readline(), read) for h in wanted}
        return [None if header is None else contents[header[0]] if header[0] in contents
                else Oversize(header[1], header[2], header[0].decode()) for header in headers]

    def _read_each(self, chunk: list[str],
                   max_size: int | None) -> list[tuple[str, bytes] | Oversize | None]:
        """As :meth:`_read_chunk`, a name with a line break answered as missing: git reads one
        request a line, so no ``<rev>:<path>`` holding one can be asked (a forged tree's)."""
        found = iter(self._read_chunk([n for n in chunk if "\n" not in n], max_size))
        return [None if "\n" in n else next(found) for n in chunk]

    def _abandon(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream:
                    with contextlib.suppress(OSError):
                        stream.close()
            self._proc = None

    def read(self, name: str) -> tuple[str, bytes] | None:
        return self.read_many([name])[0]

    # A bulk read asks this many names of one `cat-file --batch-check`, and reads at most
    # this many bytes of answers through one `cat-file --batch`: what one chunk holds.
    BULK_NAMES = 16384
    BULK_BYTES = 32 << 20
    HEADER_BYTES = 128  # room for each object's header line in a capped answer (sha256's too)
    # Fewer names are asked of the long-lived process: two process starts cost more than
    # the pipe's hand-overs below about a thousand objects (measured, git 2.39).
    BULK_MIN = 1000
    # Chunks read at once, each by its own cat-file, where the machine has the cores: git's
    # inflating of a cold replay's blobs is most of its reading, and one process uses one
    # core (at 100k blobs, two halved git's wall time; its CPU is the same). A hostile
    # tree's answers take at most BULK_JOBS * BULK_BYTES of disk at once.
    BULK_JOBS = 2

    def read_bulk(self, names: list[str], *, kind: str = "blob",
                  max_size: int | None = None) -> list[bytes | Oversize]:
        """The contents of many objects of type ``kind``, or an :class:`Oversize` where one is
        over ``max_size`` bytes, through short-lived cat-file processes whose answers go to a
        temporary file, not a pipe (:mod:`loopx.storage.bulk`): for reads of a whole
        ledger (a cold replay). Raises :class:`DamagedLedger` naming the first object that is missing or of another
        type, and :class:`GitError` when git fails or its answer is cut short: never a
        partial list.
        """
        if len(names) < self.BULK_MIN:
            return [batches.checked(name, found, kind)
                    for name, found in zip(names, self.read_capped(names, max_size))]
        from loopx.storage import bulk  # (only a whole ledger's read needs it)

        return bulk.read(self, names, kind, max_size)

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.stdin:
                self._proc.stdin.close()
            self._proc.wait()
            if self._proc.stdout:
                self._proc.stdout.close()
            self._proc = None

    def __enter__(self) -> ObjectReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

