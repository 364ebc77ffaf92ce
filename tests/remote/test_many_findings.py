"""A tip refused many times over (session 36, hostile fleet): a hub tip of 300,000 junk files
took every clone's sync a minute and 300 MB, and left a 27 MB quarantine report, because
every file was listed, judged and reported. The check stops at ``MAX_FINDINGS`` and says
so; the listing is read a block at a time. Real git, a bare hub, the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, invoke
from statekit import run

from loopx.model.ids import new_event_id
from loopx.remote import incoming

STATE = "refs/heads/loopx/state"
MANY = 3000


def _plant(repo: Path, where: str) -> None:
    """A commit on loopx/state adding MANY junk files under ``where``, pushed to the hub."""
    tip = run(repo, "rev-parse", STATE)
    blob = run(repo, "hash-object", "-w", "--stdin", input=b"x\n")
    index = repo / ".git" / "junk-index"
    env = {"GIT_INDEX_FILE": str(index)}
    run(repo, "read-tree", tip, env=env)
    names = ([f"{where}/f{n:05d}.yaml" for n in range(MANY)] if where != "garbage" else
             [f"events/2026/11/29/{new_event_id()}.note.added.yaml" for _ in range(MANY)])
    lines = "".join(f"100644 {blob}\t{name}\n" for name in names)
    run(repo, "update-index", "--index-info", input=lines.encode(), env=env)
    tree = run(repo, "write-tree", env=env)
    index.unlink()
    commit = run(repo, "commit-tree", tree, "-p", tip, "-m", "junk")
    git(repo, "push", "-q", "origin", f"{commit}:{STATE}")


@pytest.fixture
def hub(repo: Path, tmp_path: Path) -> Path:
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    git(repo, "remote", "add", "origin", str(hub))
    for args in (["init"], ["note", "add", "hello"]):
        assert invoke(repo, *args).code == 0
    assert invoke(repo, "sync").code == 0
    return hub


def _judged(report: Path) -> list[str]:
    return [line for line in report.read_text().splitlines() if line.startswith("  ")]


# junk beside the layout, bad names in it, and event paths of the right shape that hold garbage
@pytest.mark.parametrize("where", ["junk", "events/2026/11/29", "garbage"])
def test_a_tip_refused_many_times_over_is_judged_and_reported_up_to_a_bound(
        repo: Path, tmp_path: Path, hub: Path, where: str) -> None:
    pusher = tmp_path / "pusher"
    git(tmp_path, "clone", "-q", str(hub), str(pusher))
    git(pusher, "fetch", "-q", "origin", f"{STATE}:{STATE}")
    _plant(pusher, where)
    tip = run(repo, "rev-parse", STATE)
    synced = invoke(repo, "sync")
    assert synced.code == 1 and len(synced.err.strip().splitlines()) == 1, synced.err
    assert run(repo, "rev-parse", STATE) == tip
    fresh = tmp_path / "fresh"  # and a clone with no state of its own, judging the whole tip
    git(tmp_path, "clone", "-q", str(hub), str(fresh))
    shown = invoke(fresh, "status")
    assert shown.code == 1 and "was not adopted" in shown.err
    for clone in (repo, fresh):
        reports = list((clone / ".git" / "loopx" / "quarantine" / "origin").glob("*.txt"))
        assert len(reports) == 1
        judged = _judged(reports[0])
        assert len(judged) == incoming.MAX_FINDINGS + 1, len(judged)
        assert judged[-1].endswith(f"the check stops at {incoming.MAX_FINDINGS} findings")
