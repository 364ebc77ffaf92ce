"""What `git loopx setup TOOL` writes into an agent tool's own config files: the MCP server
entry that starts `git loopx mcp`, and, where the tool has session-start hooks, the hook that
injects `git loopx prime` (docs/agents.md, "Setting up an agent tool").

Each tool is described by the files and formats its documentation gives, project-level ones
only (the repository's work tree), so a setup can be committed and shared. In each file loopx
owns exactly one thing: the server named ``loopx`` in the MCP map, or the hook whose command
is ``git loopx ... prime``. Everything else is kept as it was: other keys and their order, and
in TOML the comments and layout (loopx's table is written as text, then the whole file is parsed
back and compared with what was meant). A file that does not parse, or holds the owned entry in
a shape loopx does not edit, is refused with one line and nothing is written; a file is written
whole, through a temporary file and a rename.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from loopx.errors import UsageError
from loopx.agents import jsonedit
from loopx.recovery.readback import local_host
from loopx.model.payloads.base import ACTOR_PATTERN
from loopx.storage import gateway

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 reads TOML with the same parser's backport
    import tomli as tomllib

NAME = "loopx"  # the server's name in every MCP map
SESSION_START = "SessionStart"


@dataclass(frozen=True)
class Server:
    """The MCP server entry of a JSON file: ``{KEY: {"loopx": {...}}}``."""

    path: str  # relative to the top of the work tree
    key: str  # the map of servers: mcpServers, or VS Code's servers
    extra: tuple[tuple[str, str], ...] = ()  # fields before command (Claude Code's "type")
    pin: bool = False  # the tool may start servers outside the repository: -C ${workspaceFolder}

    what = "MCP server loopx"


@dataclass(frozen=True)
class TomlServer:
    """The ``[mcp_servers.loopx]`` table of a TOML file (Codex CLI)."""

    path: str

    what = "MCP server loopx"


@dataclass(frozen=True)
class Hook:
    """A session-start hook in a JSON file: ``{"hooks": {EVENT: [{matcher, hooks: [...]}]}}``."""

    path: str
    matcher: Optional[str]  # None: the tool matches lifecycle events exactly; left out = all
    name: Optional[str] = None  # a name field, where the tool's format has one

    what = "SessionStart hook (git loopx prime)"


Part = Server | TomlServer | Hook


@dataclass(frozen=True)
class Tool:
    """An agent tool: its files, and what setup cannot do for it."""

    title: str
    agent: str  # the default actor's name: agent:<agent>@<host>
    parts: tuple[Part, ...]
    notes: tuple[str, ...] = ()  # what setup cannot do for this tool, said after it ran


_COMPACT = "startup|resume|clear|compact"  # `compact`: after the context was compacted
TOOLS: dict[str, Tool] = {
    "claude": Tool("Claude Code", "claude", (
        Server(".mcp.json", "mcpServers", (("type", "stdio"),)),
        # SessionStart with source `compact` runs once compaction is done, and its output is
        # added to the context; PreCompact's output is not (only shown to the user), so the
        # primer goes in after compaction through SessionStart, not before it.
        Hook(".claude/settings.json", _COMPACT))),
    "codex": Tool("Codex CLI", "codex", (
        TomlServer(".codex/config.toml"), Hook(".codex/hooks.json", _COMPACT)), (
        "Codex reads .codex/ only in a project you trust, and runs a new hook only once you "
        "approve it in /hooks (with the hooks feature on: `codex features list`)",)),
    "cursor": Tool("Cursor", "cursor", (Server(".cursor/mcp.json", "mcpServers", pin=True),), (
        "Cursor has no session-start hook that adds to the context: tell it to run "
        "`git loopx prime` in a rule (.cursor/rules) or read the loopx://prime resource",)),
    "gemini": Tool("Gemini CLI", "gemini", (
        Server(".gemini/settings.json", "mcpServers"),
        # Gemini matches lifecycle events by exact name; without a matcher the hook runs at
        # startup, resume and clear. Its PreCompress hook cannot add to the context.
        Hook(".gemini/settings.json", None, name="loopx-prime")), (
        "Gemini CLI reads .gemini/settings.json only in a folder you trust, and runs no hook "
        "after compressing its context: ask for `git loopx prime` (or loopx://prime) then",)),
    "vscode": Tool("VS Code", "copilot", (Server(".vscode/mcp.json", "servers", (("type", "stdio"),),
                                                 pin=True),), (
        "VS Code has no session-start hook: put \"run `git loopx prime` first\" in "
        ".github/copilot-instructions.md, or read the loopx://prime resource",)),
}


@dataclass(frozen=True)
class FileChange:
    """One config file: its text before and after (None: the file does not exist)."""

    path: Path
    shown: str  # the path as printed: relative to the top of the work tree
    before: Optional[str]
    after: Optional[str]
    parts: tuple[str, ...]  # what loopx owns in it, e.g. "MCP server loopx"

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class Plan:
    """What `setup` would write for one tool, and as whom."""

    tool: Tool
    actor: str
    files: tuple[FileChange, ...]
    missing: tuple[str, ...]  # for --check: "<file>: <part> is missing|out of date"


# --- the plan ----------------------------------------------------------------------------------


def plan(name: str, *, cwd: Path | str, actor: Optional[str], remove: bool = False,
         fallback: Optional[str] = None) -> Plan:
    """What setting up (or with ``remove``, taking out) tool ``name`` changes, file by file;
    reads the files and writes nothing. Without ``actor``, the one an existing loopx entry
    names is kept, else ``fallback`` (the process's own actor), else ``agent:<tool>@<host>``:
    an agent's shell with $LOOPX_ACTOR set does not turn a setup made for another actor
    stale."""
    tool = TOOLS[name]
    top = _top(cwd)
    texts = {part.path: _read(top, part.path) for part in tool.parts}
    actor = actor or _existing_actor(tool, texts) or fallback or \
        f"agent:{tool.agent}@{local_host()}"
    if not remove and not re.fullmatch(ACTOR_PATTERN, actor):  # removing needs no identity
        raise UsageError(f"--actor {actor!r} is not an identity like agent:{tool.agent}@laptop")
    files, missing = [], []
    for path in dict.fromkeys(part.path for part in tool.parts):
        parts = [part for part in tool.parts if part.path == path]
        before = after = texts[path]
        for part in parts:
            edited = _edit(part, after, actor, remove, shown=path)
            if not remove and edited != after:
                state = "missing" if _edit(part, after, actor, True, shown=path) == after \
                    else "out of date"
                missing.append(f"{path}: {part.what} is {state}")
            after = edited
        files.append(FileChange(top / path, path, before, after, tuple(p.what for p in parts)))
    return Plan(tool, actor, tuple(files), tuple(missing))


def write(changes: Plan) -> None:
    """Write every changed file of ``changes`` (each through a temporary file and a rename;
    a file left empty by a removal is deleted, and its folder too when nothing else is in it)."""
    for change in changes.files:
        if not change.changed:
            continue
        if change.after is None:
            change.path.unlink()
            if change.path.parent.name.startswith(".") and not any(change.path.parent.iterdir()):
                change.path.parent.rmdir()
            continue
        change.path.parent.mkdir(parents=True, exist_ok=True)
        _replace(change.path, change.after, existed=change.before is not None)


def _replace(path: Path, text: str, *, existed: bool) -> None:
    """Write ``path`` whole: a new file beside it (created exclusively, so nothing planted
    at its name is followed), then a rename; the old file's mode, or the umask's for a new one."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".loopx-tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        if existed:
            mode = path.stat().st_mode & 0o7777
        else:
            umask = os.umask(0o022)  # reading the umask sets it: put it straight back
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(name, mode)
        os.replace(name, path)
    finally:
        if os.path.exists(name):
            os.unlink(name)


def _top(cwd: Path | str) -> Path:
    repo = gateway.discover(cwd)
    if repo.work_tree is None:
        raise UsageError("setup writes into a work tree; this repository has none (bare?)")
    return repo.work_tree


def _read(top: Path, relative: str) -> Optional[str]:
    """The file's text, or None when it does not exist; refuses what setup must not write
    through (a symlink, a folder leading out of the work tree, a file that is not UTF-8)."""
    path = top / relative
    for step in [*reversed(path.relative_to(top).parents[:-1]), path.relative_to(top)]:
        if (top / step).is_symlink():
            raise UsageError(f"{step} is a symbolic link; setup writes only files in the work "
                             "tree itself: replace the link, or edit the file by hand")
    if not path.exists():
        return None
    if not path.is_file():
        raise UsageError(f"{relative} is not a file")
    try:
        with path.open(encoding="utf-8", newline="") as file:  # as it is: CRLF stays CRLF
            return file.read()
    except UnicodeDecodeError:
        raise UsageError(f"{relative} is not UTF-8 text; setup leaves it alone") from None


def _existing_actor(tool: Tool, texts: dict[str, Optional[str]]) -> Optional[str]:
    """The actor the loopx server entry already names (so a re-run keeps it)."""
    for part in tool.parts:
        text = texts[part.path]
        if text is None or isinstance(part, Hook):
            continue
        try:
            doc = _toml_load(text, part.path) if isinstance(part, TomlServer) \
                else _json_load(text, part.path)
        except UsageError:
            return None  # the edit itself says what is wrong with the file
        servers = doc.get("mcp_servers" if isinstance(part, TomlServer) else part.key)
        entry = servers.get(NAME) if isinstance(servers, dict) else None
        args = entry.get("args") if isinstance(entry, dict) else None
        if isinstance(args, list) and "--actor" in args[:-1]:
            value = args[args.index("--actor") + 1]
            return value if isinstance(value, str) else None
    return None


def _edit(part: Part, text: Optional[str], actor: str, remove: bool, *, shown: str) -> Optional[str]:
    if isinstance(part, TomlServer):
        return toml_server(text, None if remove else server_entry(actor), shown=shown)
    if isinstance(part, Server):
        return json_server(text, part.key, None if remove else server_entry(actor, part),
                           shown=shown)
    return json_hook(text, None if remove else hook_group(part, actor), shown=shown)


# --- what loopx writes -------------------------------------------------------------------------


def server_entry(actor: str, part: Optional[Server] = None) -> dict[str, Any]:
    """The server entry: `git loopx --actor ACTOR mcp`, pinned to the workspace where the tool
    may start servers elsewhere (``${workspaceFolder}`` is the tool's own variable)."""
    pin = ["-C", "${workspaceFolder}"] if part is not None and part.pin else []
    extra = dict(part.extra) if part is not None else {}
    return {**extra, "command": "git", "args": [*pin, "loopx", "--actor", actor, "mcp"]}


def prime_command(actor: str) -> str:
    """The hook's shell command: the primer as a session-start hook answers (JSON with
    ``additionalContext``, which Claude Code, Codex CLI and Gemini CLI all read), offline so
    the hook never waits on the network."""
    return f"git loopx --actor {shlex.quote(actor)} prime --offline --as-hook"


def hook_group(part: Hook, actor: str) -> dict[str, Any]:
    hook: dict[str, Any] = {"type": "command", "command": prime_command(actor)}
    if part.name:
        hook = {"name": part.name, **hook}
    group: dict[str, Any] = {"hooks": [hook]}
    return {"matcher": part.matcher, **group} if part.matcher is not None else group


def is_prime_hook(hook: Any) -> bool:
    """Is this hook entry loopx's: a command that runs `git loopx ... prime`?"""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        argv = shlex.split(hook["command"])
    except ValueError:
        return False
    return argv[:2] == ["git", "loopx"] and "prime" in argv[2:]


# --- JSON ---------------------------------------------------------------------------------------


def json_server(text: Optional[str], key: str, entry: Optional[dict[str, Any]], *,
                shown: str) -> Optional[str]:
    """``text`` with ``{key: {"loopx": entry}}`` set in place (or, for None, taken out)."""
    doc = _json_load(text, shown) if text is not None else {}
    servers = doc.get(key)
    if servers is not None and not isinstance(servers, dict):
        raise UsageError(f"{shown}: {key!r} is not an object; setup leaves the file alone")
    if (servers or {}).get(NAME) == entry and (entry is not None or NAME not in (servers or {})):
        return text
    rest = {k: v for k, v in (servers or {}).items() if k != NAME}
    want = {**rest, NAME: entry} if entry is not None else rest
    expected = {**doc, key: want} if want else {k: v for k, v in doc.items() if k != key}
    if text is None or not text.strip():
        return _json_new(expected)
    root = jsonedit.parse(text)
    node = root.get(key)
    if entry is None:
        after = jsonedit.delete_member(text, root, key) if not rest else \
            jsonedit.delete_member(text, node, NAME)  # type: ignore[arg-type]
    elif node is None:
        after = jsonedit.set_member(text, root, key, {NAME: entry})
    else:
        after = jsonedit.set_member(text, node, NAME, entry)
    return _json_checked(after, expected, shown)


def json_hook(text: Optional[str], group: Optional[dict[str, Any]], *,
              shown: str) -> Optional[str]:
    """``text`` with loopx's SessionStart hook group in place of any hook of loopx's (where
    the first one was, else last), or, for None, with loopx's hooks taken out."""
    doc = _json_load(text, shown) if text is not None else {}
    hooks = doc.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise UsageError(f"{shown}: 'hooks' is not an object; setup leaves the file alone")
    groups = (hooks or {}).get(SESSION_START)
    if groups is not None and not (isinstance(groups, list)
                                   and all(isinstance(g, dict) for g in groups)):
        raise UsageError(f"{shown}: hooks.{SESSION_START} is not a list of objects; setup "
                         "leaves the file alone")
    groups = groups or []
    if group is not None and [g for g in groups if _has_prime(g)] == [group]:
        return text
    at, kept = _without_prime(groups)
    if group is None and kept == groups:
        return text
    want = [*kept[:len(kept) if at is None else at], *([group] if group else []),
            *kept[len(kept) if at is None else at:]]
    others = {k: v for k, v in (hooks or {}).items() if k != SESSION_START}
    new_hooks = {**(hooks or {}), SESSION_START: want} if want else others
    expected = {**doc, "hooks": new_hooks} if new_hooks else \
        {k: v for k, v in doc.items() if k != "hooks"}
    if text is None or not text.strip():
        return _json_new(expected)
    after = _strip_prime(text)
    if group is not None:
        after = _put_group(after, group, at)
    return _json_checked(after, expected, shown)


def _strip_prime(text: str) -> str:
    """``text`` with each hook of loopx's taken out, one edit at a time (offsets move), and
    the containers those leave empty."""
    while True:
        root = jsonedit.parse(text)
        hooks = root.get("hooks")
        groups = hooks.get(SESSION_START) if hooks is not None else None
        doc = json.loads(text)
        found = next(((i, j) for i, g in enumerate(doc.get("hooks", {}).get(SESSION_START) or [])
                      for j, h in enumerate(g.get("hooks") or []) if is_prime_hook(h)), None)
        if found is None or hooks is None or groups is None:
            return text
        i, j = found
        entries = groups.children[i].get("hooks")
        assert entries is not None
        if len(entries.children) > 1:
            text = jsonedit.delete_item(text, entries, j)
        elif len(groups.children) > 1:
            text = jsonedit.delete_item(text, groups, i)
        elif len(hooks.children) > 1:
            text = jsonedit.delete_member(text, hooks, SESSION_START)
        else:
            text = jsonedit.delete_member(text, root, "hooks")


def _put_group(text: str, group: dict[str, Any], at: Optional[int]) -> str:
    root = jsonedit.parse(text)
    hooks = root.get("hooks")
    if hooks is None:
        return jsonedit.set_member(text, root, "hooks", {SESSION_START: [group]})
    groups = hooks.get(SESSION_START)
    if groups is None:
        return jsonedit.set_member(text, hooks, SESSION_START, [group])
    return jsonedit.insert_item(text, groups, len(groups.children) if at is None else at, group)


def _has_prime(group: dict[str, Any]) -> bool:
    return any(is_prime_hook(h) for h in group.get("hooks") or [] if isinstance(h, dict))


def _without_prime(groups: list[dict[str, Any]]) -> tuple[Optional[int], list[dict[str, Any]]]:
    """The groups with loopx's hooks taken out (a group left with none goes), and where the
    first group of loopx's alone was."""
    at: Optional[int] = None
    kept: list[dict[str, Any]] = []
    for group in groups:
        hooks = group.get("hooks")
        if not isinstance(hooks, list) or not any(is_prime_hook(h) for h in hooks):
            kept.append(group)
            continue
        others = [h for h in hooks if not is_prime_hook(h)]
        if others:
            kept.append({**group, "hooks": others})
        elif at is None:
            at = len(kept)
    return at, kept


def _json_load(text: str, shown: str) -> dict[str, Any]:
    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            twice = next(k for k in keys if keys.count(k) > 1)
            raise UsageError(f"{shown}: the key {twice!r} appears twice; setup leaves the file "
                             "alone (the tools read only one of them)")
        return dict(pairs)

    try:
        doc = json.loads(text, object_pairs_hook=no_duplicates) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise UsageError(f"{shown}: not valid JSON ({exc.msg} at line {exc.lineno}); setup "
                         "edits plain JSON only (no comments): fix the file and run it "
                         "again") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{shown}: not a JSON object; setup leaves the file alone")
    return doc


def _json_new(doc: dict[str, Any]) -> Optional[str]:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n" if doc else None


def _json_checked(after: str, expected: dict[str, Any], shown: str) -> Optional[str]:
    """The edited text, once it reads back as what was meant; None for a file left empty
    (an empty object: only loopx's entries were in it)."""
    if json.loads(after) != expected:  # pragma: no cover - a bug of the edit, never written
        raise UsageError(f"{shown}: setup could not edit this file's layout safely; nothing "
                         "was written (edit it by hand)")
    return None if not expected else after


# --- TOML ---------------------------------------------------------------------------------------

MARKER = "# Written by `git loopx setup codex` (`--remove` takes it out)."
# A table header of loopx's: [mcp_servers.loopx] or a table under it ([mcp_servers.loopx.env]),
# the name bare or quoted. Anything else that starts a line with `[` ends loopx's table.
_OURS = re.compile(r"""^[ \t]*\[[ \t]*mcp_servers[ \t]*\.[ \t]*(?:loopx|"loopx"|'loopx')[ \t]*"""
                   r"""(?:\.[^\]\n]*)?\][ \t]*(?:#[^\r\n]*)?\r?$""")
_HEADER = re.compile(r"^[ \t]*\[")


def toml_server(text: Optional[str], entry: Optional[dict[str, Any]], *,
                shown: str) -> Optional[str]:
    """``text`` with the table ``[mcp_servers.loopx]`` set to ``entry`` (None: taken out),
    written as text where the table was (else at the end); comments and every other line
    stay as they are. The result is parsed back and must mean the old file with only that
    table changed, else the file is refused. None: no file (nothing is left in it)."""
    old = _toml_load(text, shown) if text is not None else {}
    servers = old.get("mcp_servers")
    if (servers.get(NAME) if isinstance(servers, dict) else None) == entry:
        return text
    lines = (text or "").splitlines(keepends=True)
    spans = _toml_spans(lines)
    nl = "\r\n" if "\r\n" in (text or "") else "\n"  # the file's line ending
    block = _toml_block(entry, nl) if entry is not None else []
    if not spans:
        out = list(lines)
        if out and not out[-1].endswith("\n"):
            out[-1] += nl
        out += [nl, *block] if out else block
    else:
        out = lines[:spans[0][0]]
        if entry is None and out and not out[-1].strip() and spans[-1][1] == len(lines):
            out.pop()  # the blank line setup put before the table it appended
        out += block
        for (_, end), (begin, _) in zip(spans, spans[1:]):
            out += lines[end:begin]
        out += lines[spans[-1][1]:]
    after = "".join(out)
    try:
        reads = _without_empty(tomllib.loads(after))
    except tomllib.TOMLDecodeError:  # e.g. a second definition of the table it already has
        reads = None
    if reads != _without_empty(_with_server(old, entry)):
        raise UsageError(f"{shown}: mcp_servers.{NAME} is written in a form setup does not "
                         f"edit (an inline table or dotted keys): make it a [mcp_servers."
                         f"{NAME}] table, or edit it by hand")
    return None if entry is None and not after.strip() else after


def _toml_spans(lines: list[str]) -> list[tuple[int, int]]:
    """[start, end) of each run of lines that is loopx's: a header of its table (with the
    marker comment just before it) up to the next other header, less trailing blank lines."""
    spans: list[tuple[int, int]] = []
    index = 0
    while index < len(lines):
        if not _OURS.match(lines[index]):
            index += 1
            continue
        start = index - 1 if index and lines[index - 1].rstrip("\r\n") == MARKER else index
        index += 1
        while index < len(lines) and (not _HEADER.match(lines[index]) or _OURS.match(lines[index])):
            index += 1
        end = index
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1
        spans.append((start, end))
    return spans


def _toml_block(entry: dict[str, Any], nl: str) -> list[str]:
    values = [f"{key} = {_toml_value(value)}{nl}" for key, value in entry.items()]
    return [f"{MARKER}{nl}", f"[mcp_servers.{NAME}]{nl}", *values]


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        escaped = "".join(c if c not in '"\\' and 0x20 <= ord(c) != 0x7F else
                          ("\\" + c if c in '"\\' else f"\\u{ord(c):04x}") for c in value)
        return f'"{escaped}"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r} here")


def _toml_load(text: str, shown: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{shown}: not valid TOML ({exc}); fix the file and run setup "
                         "again") from None


def _with_server(doc: dict[str, Any], entry: Optional[dict[str, Any]]) -> dict[str, Any]:
    """The parsed file as it should read: the same, with only mcp_servers.loopx changed."""
    servers = {k: v for k, v in (doc.get("mcp_servers") or {}).items() if k != NAME}
    return {**doc, "mcp_servers": {**servers, **({NAME: entry} if entry is not None else {})}}


def _without_empty(doc: dict[str, Any]) -> dict[str, Any]:
    """An empty mcp_servers table is the same as none (a removal leaves one only where a
    [mcp_servers] header of the user's stays)."""
    return {k: v for k, v in doc.items() if k != "mcp_servers" or v}
