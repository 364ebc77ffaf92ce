"""Shell completion for `git-loopx` and `git loopx` in bash, zsh and fish.

Click generates the scripts; its name for them comes from the program, and "git loopx" has a
space (no shell function or `complete` can carry it), so completion runs as ``git-loopx`` with
``_GIT_LOOPX_COMPLETE``. Each script then adds the hook git's own completion calls for a
``git loopx ...`` command line (``_git_loopx`` in bash, ``_git-loopx`` in zsh, a condition on
``git`` in fish), which hands the words after ``loopx`` to the same function.
"""

from __future__ import annotations

from typing import Any

import click
from click.shell_completion import BashComplete, FishComplete, ZshComplete, add_completion_class

PROG = "git-loopx"
COMPLETE_VAR = "_GIT_LOOPX_COMPLETE"

# git-completion.bash calls _git_<command> with its own `words` and `cword`: "git" (and
# global options such as -C DIR), "loopx", then ours. Seen as git-loopx's words, they are
# completed by click's function.
_BASH_GIT = r"""
_git_loopx() {
    local i=1
    while [ "$i" -lt "$cword" ] && [ "${words[i]}" != loopx ]; do i=$((i + 1)); done
    local COMP_WORDS=(git-loopx "${words[@]:i+1}") COMP_CWORD=$((cword - i))
    %(complete_func)s git-loopx
}
"""
# zsh's _git calls _git-<command> with `words` starting at the command's name ("loopx").
_ZSH_GIT = r"""
_git-loopx() {
    words[1]=git-loopx
    %(complete_func)s
}
"""
_FISH_GIT = r"""
complete --no-files --command git --condition '__fish_seen_subcommand_from loopx' --arguments "(env %(complete_var)s=fish_complete COMP_WORDS=(commandline -cp | string replace -r '^.*?\bloopx\b' git-loopx) COMP_CWORD=(commandline -t) git-loopx)";
"""


class _Bash(BashComplete):
    def source(self) -> str:
        return super().source() + _BASH_GIT % self.source_vars()


class _Zsh(ZshComplete):
    def source(self) -> str:
        return super().source() + _ZSH_GIT % self.source_vars()


class _Fish(FishComplete):
    def source(self) -> str:
        return super().source() + _FISH_GIT % self.source_vars()


for _cls in (_Bash, _Zsh, _Fish):
    add_completion_class(_cls)  # replaces click's class of the same shell name


SHELLS = ("bash", "zsh", "fish")


def script(group: click.Group, shell: str) -> str:
    """The completion script for ``shell`` (what ``_GIT_LOOPX_COMPLETE=<shell>_source
    git-loopx`` prints)."""
    cls = {"bash": _Bash, "zsh": _Zsh, "fish": _Fish}[shell]
    ctx_args: dict[str, Any] = {}
    return cls(group, ctx_args, PROG, COMPLETE_VAR).source()
