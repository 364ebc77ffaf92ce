"""Which work trees have a branch checked out: loopx never moves a branch one of them has
checked out (an ordinary commit there would commit the stale index and delete the events
added meanwhile; docs/reliability.md)."""

from __future__ import annotations

from pathlib import Path

from loopx.storage import gateway


def checked_out(repo: gateway.Repo, ref: str) -> list[str]:
    """The work trees that have branch ``ref`` checked out. Moving a branch under a work
    tree leaves its index behind: the next ordinary commit there deletes every file the
    branch gained meanwhile. Reads the HEAD files first; asks git only if one names it."""
    if not ref.startswith("refs/heads/"):
        return []
    common = repo.common_dir
    admin = [common, *sorted(p.parent for p in (common / "worktrees").glob("*/HEAD"))]
    rebasing = [d for d in admin if any(first_line(d / r / "head-name") == ref
                                        for r in ("rebase-merge", "rebase-apply"))]
    if rebasing:  # git counts a branch being rebased as checked out, and so do we
        return [_work_tree_of(d, repo) for d in rebasing]
    if not any(first_line(d / "HEAD") == f"ref: {ref}" for d in admin):
        return []
    found, path, branch, bare = [], "", "", False
    listing = gateway.out(repo.cwd, "worktree", "list", "--porcelain")
    for line in [*listing.splitlines(), ""]:
        key, _, value = line.partition(" ")
        if key == "worktree":
            path, branch, bare = value, "", False
        elif key == "branch":
            branch = value
        elif key == "bare":
            bare = True
        elif not line and path:
            if branch == ref and not bare:
                found.append(path)
            path = ""
    return found


def _work_tree_of(admin: Path, repo: gateway.Repo) -> str:
    """The work tree whose git dir is ``admin`` (a linked one names it in its gitdir file)."""
    gitdir = first_line(admin / "gitdir")
    if gitdir:
        return str(Path(gitdir).parent)
    return str(repo.work_tree if repo.git_dir == admin else admin.parent)


def first_line(path: Path) -> str:
    """The first line of a small file, stripped; empty when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.readline().strip()
    except OSError:
        return ""
