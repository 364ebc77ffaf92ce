"""An independent reader checks loopx's hand-built objects: GitPython with its pure-Python
object database (gitdb) reads the packs, trees and commits loopx writes without git's help.

loopx computes tree ids itself and writes batches as packs it assembles in memory
(loopx.storage.packfile); git accepting them is one check, a second implementation reading
them back byte for byte is another. This is where the project uses GitPython (see
docs/design.md, "Dependencies").
"""

from __future__ import annotations

from pathlib import Path

import io

import git as gitpython
import pytest

from loopx.ledger.book import Ledger
from loopx.ledger.draft import Draft
from loopx.ledger.txn import Txn
from loopx.model import codec
from loopx.model.paths import file_path
from loopx.storage.store import PACK_MIN_BLOBS, STATE_REF

ACTOR = "agent:oracle@test"
# GitPython deprecates its pure-Python object database as a backend for applications; here it
# is wanted for exactly that: a reader that shares no code with git.
pytestmark = pytest.mark.filterwarnings("ignore:GitDB is deprecated:DeprecationWarning")


def _files(tree: gitpython.Tree) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for item in tree.traverse():
        if item.type == "blob":
            found[item.path] = item.data_stream.read()
    return found


def _pure_python(repo: Path) -> gitpython.Repo:
    return gitpython.Repo(repo, odbt=gitpython.GitDB)


def test_a_packed_batch_reads_back_byte_for_byte_without_git(ledger: Ledger, repo: Path) -> None:
    count = PACK_MIN_BLOBS + 9  # large enough to go through loopx's own pack writer
    before = ledger.tip()

    def batch(txn: Txn) -> list[object]:
        return [txn.add(Draft("note.added", {"id": f"n-{i}", "text": f"note {i} é ✓"}))
                for i in range(count)]

    events, _ = ledger.write(batch, actor=ACTOR)
    gitpython.Repo(repo).git.gc("--quiet")  # nothing left loose: every object read from packs

    oracle = _pure_python(repo)
    commit = oracle.commit(STATE_REF)
    assert [p.hexsha for p in commit.parents] == [before]
    files = _files(commit.tree)
    for event in events:
        assert files[file_path(event.id, event.type)] == codec.dump(event.to_dict())


def test_trees_loopx_serialises_are_canonical_for_another_reader(ledger: Ledger,
                                                                 repo: Path) -> None:
    for n in range(5):
        ledger.append("note.added", {"id": f"n-{n}", "text": "x"}, actor=ACTOR)
    oracle = _pure_python(repo)
    commit = oracle.commit(STATE_REF)
    for tree in [commit.tree, *commit.tree.traverse(predicate=lambda i, d: i.type == "tree")]:
        # GitPython parses the tree loopx wrote (entry order, modes, names) and writes it out
        # again its own way: the bytes must be the same, and hash to the id loopx computed.
        raw = tree.data_stream.read()
        again = io.BytesIO()
        tree._serialize(again)
        assert again.getvalue() == raw
        assert ledger.store.hash_tree(again.getvalue()) == tree.hexsha


def test_each_append_is_one_commit_by_the_actor_on_top_of_the_last(ledger: Ledger,
                                                                    repo: Path) -> None:
    tips = [ledger.tip()]
    for n in range(3):
        ledger.append("note.added", {"id": f"n-{n}", "text": "x"}, actor=ACTOR)
        tips.append(ledger.tip())
    history = list(_pure_python(repo).iter_commits(STATE_REF, max_count=3))
    assert [c.hexsha for c in history] == tips[:0:-1]
    assert all(c.author.name == ACTOR and len(c.parents) == 1 for c in history)
