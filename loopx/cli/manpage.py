"""The man page (``git-loopx.1``) and the CLI reference (``docs/cli.md``), generated from the
click command tree so that they can never drift from the CLI.

    python -m loopx.cli.manpage           # rewrite them
    python -m loopx.cli.manpage --check   # exit 1 if one is stale (CI)

It also writes ``loopx/data/help.txt``, the text of ``git loopx -h``.

``git loopx --help`` is turned into ``git help loopx`` by git itself, which runs a man viewer:
the page is installed to ``share/man/man1`` next to the ``bin`` folder holding ``git-loopx``,
where ``man`` looks, and ships in the package, where the viewer that ``init`` and ``hooks
install`` configure finds it (or prints the built-in help when ``man`` cannot).
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click

from loopx.version import __version__

MAN_PATH = Path("loopx/man/git-loopx.1")
CLI_DOC_PATH = Path("docs/cli.md")
HELP_PATH = Path("loopx/data/help.txt")


@dataclass(frozen=True)
class Entry:
    """One command of the tree: its full name, usage, help and option records."""

    name: str
    usage: str
    help: str
    options: list[tuple[str, str]]
    is_group: bool


def walk(command: click.Command, ctx: click.Context) -> Iterator[Entry]:
    """Every visible command under ``command`` (itself first), depth first, sorted by name."""
    yield _entry(command, ctx)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from walk(sub, click.Context(sub, info_name=name, parent=ctx))


def _entry(command: click.Command, ctx: click.Context) -> Entry:
    records = [p.get_help_record(ctx) for p in command.get_params(ctx)]
    options = [r for r in records if r is not None and "--help" not in r[0].split(", ")]
    usage = " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])
    text = inspect.cleandoc(command.help or "")
    text = "\n".join(line for line in text.splitlines() if line.strip() != "\b")
    return Entry(ctx.command_path, usage, text, options, isinstance(command, click.Group))


def entries() -> list[Entry]:
    """The whole tree of `git loopx`."""
    from loopx.cli.root import cli

    # With the root's context settings (-h/--help): click caches each command's help option
    # on first use, so a context without them would break `git loopx -h` in this process.
    ctx = click.Context(cli, info_name="git loopx", **cli.context_settings)
    return list(walk(cli, ctx))


# --- roff ------------------------------------------------------------------------------------


def _roff(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line
                     for line in text.splitlines())


def _roff_paragraphs(text: str) -> list[str]:
    out: list[str] = []
    for para in text.split("\n\n"):
        if para.strip():
            out += [".PP", _roff(para.strip())]
    return out


_PREAMBLE = f"""\
.TH GIT\\-LOOPX 1 "" "loopx {__version__}" "Git Manual"
.SH NAME
git\\-loopx \\- durable goals, todos, gates and evidence for long\\-running agent work
.SH SYNOPSIS
.B git loopx
[\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...
.br
.B git loopx \\-h\\fR | \\fBgit loopx help\\fR [\\fICOMMAND\\fR]...
"""

_TRAILER = """\
.SH EXIT STATUS
0 ok; 1 a user error (one clear line on stderr); 2 a usage error; 3 unexpected (rerun with
\\fB\\-\\-debug\\fR). \\fBgit loopx run\\fR exits with the command's own status.
.SH ENVIRONMENT
.TP
.B LOOPX_ACTOR
Who is acting, e.g. agent:codex@devbox (default human:<git user.email>).
.TP
.B LOOPX_STATE_REF
The state branch to read and write instead of loopx/state.
.TP
.B LOOPX_DEBUG
Log every git call and show tracebacks.
.SH CONFIGURATION
.TP
.B loopx.pushState
pre\\-push also pushes the state branch (default true).
.TP
.B loopx.hooks.strict
A loopx failure inside a hook stops the git command (default false: hooks fail open).
.SH FILES
State lives on \\fIrefs/heads/loopx/state\\fR as one YAML file per event,
\\fIevents/YYYY/MM/DD/<ulid>.<type>.yaml\\fR. Hooks: see \\fBgit loopx hooks status\\fR.
.SH SEE ALSO
\\fBgit\\fR(1), \\fBgithooks\\fR(5); docs/cli.md, docs/hooks.md in the loopx sources.
"""


def render_man(items: list[Entry]) -> str:
    """The man page text."""
    root, commands = items[0], items[1:]
    lines = [_PREAMBLE.rstrip("\n"), ".SH DESCRIPTION", *_roff_paragraphs(root.help)[1:],
             ".PP", "\\fBgit loopx \\-\\-help\\fR shows this page (or, where man cannot, the "
             "built\\-in help); \\fBgit loopx \\-h\\fR and \\fBgit loopx help\\fR "
             "[\\fICOMMAND\\fR] print usage. Global options go before the command. Every "
             "\\fBlist\\fR prints a JSON list with \\fB\\-\\-json\\fR. Shell completion: "
             "\\fBgit loopx completion\\fR \\fISHELL\\fR.",
             ".SH OPTIONS", *_roff_options(root.options), ".SH COMMANDS"]
    for item in commands:
        lines += [f'.SS "{_roff(item.name)}"', ".B " + _roff(item.usage),
                  *_roff_paragraphs(item.help), *_roff_options(item.options)]
    return "\n".join(lines) + "\n" + _TRAILER


def _roff_options(options: list[tuple[str, str]]) -> list[str]:
    lines: list[str] = []
    for names, text in options:
        lines += [".TP", "\\fB" + _roff(names) + "\\fR", _roff(text) or "\\&"]
    return lines


# --- markdown --------------------------------------------------------------------------------

_CONVENTIONS = """\
## Conventions

- **Help.** `git loopx --help` opens the man page; git hands it to a man viewer, and where
  `man` is missing or cannot show the page, the viewer `git loopx init` and `hooks install`
  set up in the repository (`git config man.viewer loopx`) prints the built-in help instead;
  `git loopx help --install-viewer global` sets it up for every repository (outside them,
  without it, git says "no man viewer handled the request"). `git loopx -h` and
  `git loopx help [COMMAND]` always print usage.
- **Global options go before the command**: `git loopx --actor agent:me todo claim t`
  (`-C`, `--actor`, `--debug`, `--now`; given after the command, they are a usage error that
  says so). `--now TIME` (or `$LOOPX_NOW`, RFC 3339) pins the clock, for tests and scripted
  histories; it is hidden from `-h`.
- **Durations** (`--ttl`, `--in`, `--every`, `--idle`, `--lease-ttl`) take a unit: `90s`,
  `45m`, `2h30m`, `1d`; a bare number other than 0 is a usage error (is `45` minutes?), and
  so is one outside the bounds of the setting it fills, said in units (`--lease-ttl`: at least
  10s, not 0s; `--every` 1m to 366d; `--grace`, `--hold` at most 7d). `wait` and `watch` take `--timeout` and `--backoff` in seconds (`0.5`) or with a unit.
- **JSON.** Every command but `help` and `completion` (usage, a shell script: text only) takes
  `--format json` (or `--json`), before or after the command
  name. Every `list` prints a JSON
  list of objects (`session list` included: the slots in use are in `session stats`), but
  the listings shown a page at a time (`todo list`, `note list`, `evidence list`): they print
  `{todos|notes|evidence: [...], total, next_offset}` (`next_offset` null on the last page;
  the text says `(1-15 of 40; 25 more: --offset 15)` under the rows when more follow); a
  write prints the event it recorded; `status` prints the documented status document
  (docs/status.md), `next` `{action, next_wake, actions, claimed, not_claimed}` (`actions` is
  a count), `brief` `{markdown, status}`. `status` and `brief` print compact JSON to a
  program and indented JSON to a terminal; the other commands print it indented. An error
  is also printed on stdout as `{"error": {"message", "kind", "exit_code"}}`.
- **Paging.** On a terminal, `status` and `log` go through your pager, as git's output does
  (`GIT_PAGER`, `core.pager`, `PAGER`, else `less` with `LESS=FRX`); `--no-pager` (or
  `git --no-pager loopx ...`) prints straight; never with `--json` or into a pipe.
- **Completion** for bash, zsh and fish, of `git-loopx` and of `git loopx` (through git's own
  completion): `git loopx completion SHELL` prints the script, e.g.
  `eval "$(git loopx completion bash)"` in `~/.bashrc` (after git's completion is loaded),
  `eval "$(git loopx completion zsh)"` in `~/.zshrc` (after `compinit`),
  `git loopx completion fish > ~/.config/fish/completions/git-loopx.fish`. It is click's
  (`_GIT_LOOPX_COMPLETE=bash_source git-loopx` prints the same).
- **Exit codes.** 0 ok; 1 a user error (one clear line on stderr); 2 a usage error; 3
  unexpected (rerun with `--debug`); `next` 0/10/20 (do, wait, nothing left); `run` and
  `rerun` the command's own.
- **Notices.** Your events the projection did not apply (a claim that lost a race in a
  merge) show as `notice` actions until you dismiss them: `git loopx notice list`,
  `git loopx notice dismiss EVENT|--all`.
"""


def render_markdown(items: list[Entry]) -> str:
    """docs/cli.md: the same tree as a page."""
    root = items[0]
    out = ["# CLI reference", "",
           "<!-- Generated by `python -m loopx.cli.manpage` from the click commands; do not edit. -->",
           "", root.help, "", *_CONVENTIONS.splitlines(), "", "## Global options", "",
           *_md_options(root.options)]
    for item in items[1:]:
        level = "#" * min(item.name.count(" "), 4)  # `git loopx todo` is ##, `... todo add` ###
        out += [f"{level} `{item.name}`", "", "```", item.usage, "```", "", item.help, "",
                *_md_options(item.options)]
    return "\n".join(out).rstrip("\n") + "\n"


def _md_options(options: list[tuple[str, str]]) -> list[str]:
    if not options:
        return []
    return [*(f"- `{names}`: {text}" if text else f"- `{names}`" for names, text in options), ""]


# --- files -----------------------------------------------------------------------------------


def outputs(root: Path) -> dict[Path, str]:
    """Generated file -> expected content, under the source tree ``root``."""
    items = entries()
    return {root / MAN_PATH: render_man(items), root / CLI_DOC_PATH: render_markdown(items),
            root / HELP_PATH: render_help()}


def render_help() -> str:
    """What `git loopx -h` prints (from a file, so that it needs no click: loopx.cli.launch)."""
    from loopx.cli.root import cli

    ctx = click.Context(cli, info_name="git loopx", **cli.context_settings)
    return cli.get_help(ctx) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loopx.cli.manpage",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a generated file is stale")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="source tree (default: cwd)")
    args = parser.parse_args(argv)
    stale = []
    for path, text in outputs(args.root).items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    for path in stale:
        print(f"{path} is stale: run `python -m loopx.cli.manpage` and commit the result",
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
