"""ObjectReader.read_bulk: many objects through short-lived cat-file processes whose answers
go to a temporary file (the cold replay's reads), against real git: the same bytes as the
long-lived reader, in order, chunked; a missing object, another type or a cut answer is one
error line and no partial result."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import git
from loopx import Ledger
from loopx.errors import DamagedLedger, GitError
from loopx.ledger import cache
from loopx.ledger.replay import Reader
from loopx.storage import gateway
from loopx.storage.gateway import ObjectReader, Oversize
from loopx.storage.store import STATE_REF


def _blob(repo: Path, data: bytes) -> str:
    return gateway.run(repo, "hash-object", "-w", "--stdin", input=data).stdout.decode().strip()


@pytest.fixture(params=["bulk", "long-lived"])
def reader(repo: Path, request: pytest.FixtureRequest,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[ObjectReader]:
    """A reader whose bulk reads go through short-lived processes (however few names) or,
    as for fewer than BULK_MIN, through the long-lived one: both answer alike."""
    monkeypatch.setattr(ObjectReader, "BULK_MIN", 0 if request.param == "bulk" else 10**9)
    with ObjectReader(repo) as objects:
        yield objects


@pytest.fixture
def bulk(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ObjectReader]:
    """A reader that reads in bulk whatever the count."""
    monkeypatch.setattr(ObjectReader, "BULK_MIN", 0)
    with ObjectReader(repo) as objects:
        yield objects


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder temporary files go to, empty."""
    where = tmp_path / "scratch"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def test_an_empty_list_reads_nothing_and_starts_no_git(reader: ObjectReader,
                                                       spawned: list[tuple[str, ...]]) -> None:
    assert reader.read_bulk([]) == []
    assert spawned == []


def test_one_object_reads_as_the_long_lived_reader_reads_it(repo: Path,
                                                            reader: ObjectReader) -> None:
    oid = _blob(repo, b"one: 1\n")
    assert reader.read_bulk([oid]) == [b"one: 1\n"] == [reader.read(oid)[1]]  # type: ignore[index]


def test_many_objects_come_back_in_order_across_chunks(repo: Path, bulk: ObjectReader,
                                                       spawned: list[tuple[str, ...]],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ObjectReader, "BULK_NAMES", 7)
    monkeypatch.setattr(ObjectReader, "BULK_BYTES", 100)
    contents = [b"", b"\n", b"no newline", b"\0binary\xff\n" * 5] + [
        f"event {i}\n".encode() * (i % 9) for i in range(40)]
    oids = [_blob(repo, data) for data in contents]
    spawned.clear()
    assert bulk.read_bulk(oids) == contents
    checks = [a for a in spawned if "--batch-check" in a]
    assert len(checks) == 7  # 44 names, 7 a chunk
    assert len([a for a in spawned if "--batch" in a]) > len(checks)  # split by bytes too


def test_duplicates_each_get_the_contents_and_are_read_once(repo: Path, bulk: ObjectReader,
                                                            scratch: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    a, b = _blob(repo, b"a\n"), _blob(repo, b"b\n")
    asked: list[list[bytes]] = []
    real = gateway.parse_batch

    def seen(data: bytes, wanted: list[tuple[bytes, int]]) -> dict[bytes, bytes]:
        asked.append([line for line, _ in wanted])
        return real(data, wanted)

    monkeypatch.setattr(gateway, "parse_batch", seen)
    assert bulk.read_bulk([a, b, a, a, b]) == [b"a\n", b"b\n", b"a\n", b"a\n", b"b\n"]
    assert [len(group) for group in asked] == [2]


def test_a_large_blob_is_read_whole_and_one_over_the_limit_not_at_all(
        repo: Path, reader: ObjectReader, monkeypatch: pytest.MonkeyPatch) -> None:
    big = bytes(range(256)) * (6 * 4096)  # 6 MiB
    small = _blob(repo, b"small\n")
    oid = _blob(repo, big)
    assert reader.read_bulk([small, oid]) == [b"small\n", big]
    asked: list[list[tuple[bytes, int]]] = []
    real = gateway.parse_batch
    monkeypatch.setattr(gateway, "parse_batch",
                        lambda data, wanted: asked.append(wanted) or real(data, wanted))
    assert reader.read_bulk([small, oid], max_size=1 << 20) == [
        b"small\n", Oversize("blob", len(big), oid)]
    if ObjectReader.BULK_MIN == 0:
        assert [size for group in asked for _, size in group] == [6]  # the big one not asked


def test_a_missing_object_is_one_error_line_naming_it(repo: Path, reader: ObjectReader,
                                                      scratch: Path) -> None:
    here = _blob(repo, b"here\n")
    gone = "0123456789abcdef0123456789abcdef01234567"
    with pytest.raises(DamagedLedger) as caught:
        reader.read_bulk([here, gone, here])
    message = str(caught.value)
    assert "\n" not in message and gone in message and "missing" in message
    assert "git loopx doctor" in message
    assert list(scratch.iterdir()) == []  # nothing left behind


@pytest.mark.parametrize("kind", ["tree", "commit"])
def test_an_object_of_another_type_is_one_error_line_naming_it(repo: Path, reader: ObjectReader,
                                                               kind: str) -> None:
    other = git(repo, "rev-parse", f"HEAD^{{{kind}}}")
    with pytest.raises(DamagedLedger) as caught:
        reader.read_bulk([_blob(repo, b"x\n"), other])
    message = str(caught.value)
    assert "\n" not in message and other in message and f"is a {kind}, not a blob" in message


def test_other_kinds_are_read_when_asked_for(repo: Path, reader: ObjectReader) -> None:
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    assert reader.read_bulk([tree], kind="tree") == [reader.read(tree)[1]]  # type: ignore[index]


def test_an_answer_cut_short_or_padded_is_one_error_line_and_no_result(repo: Path) -> None:
    a, b = _blob(repo, b"first\n"), _blob(repo, b"second\n")
    wanted = [(f"{a} blob 6".encode(), 6), (f"{b} blob 7".encode(), 7)]
    whole = f"{a} blob 6\nfirst\n\n{b} blob 7\nsecond\n\n".encode()
    assert list(gateway.parse_batch(whole, wanted).values()) == [b"first\n", b"second\n"]
    second = whole.index(b"\n\n") + 2  # where the second object's answer starts
    for cut in (len(whole) - 1, len(whole) - 4, whole.index(b"second"), second, 50, 0):
        with pytest.raises(GitError, match="cut short") as caught:
            gateway.parse_batch(whole[:cut], wanted)
        assert "\n" not in str(caught.value) and (a if cut < second else b) in str(caught.value)
    with pytest.raises(GitError, match="bytes after the 2 objects"):
        gateway.parse_batch(whole + b"junk", wanted)
    with pytest.raises(GitError, match="cut short or damaged"):  # another object's answer
        gateway.parse_batch(whole.replace(a.encode(), b.encode()), wanted)


def test_a_few_names_are_asked_of_the_long_lived_process(repo: Path,
                                                         spawned: list[tuple[str, ...]]) -> None:
    oids = [_blob(repo, f"{n}\n".encode()) for n in range(3)]
    spawned.clear()
    with ObjectReader(repo) as objects:
        assert objects.read_bulk(oids) == [b"0\n", b"1\n", b"2\n"]
    assert spawned == []


def test_a_cold_replay_reads_in_bulk_and_still_names_a_lost_file(
        ledger: Ledger, repo: Path, spawned: list[tuple[str, ...]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ObjectReader, "BULK_MIN", 0)
    for n in range(5):
        ledger.append("note.added", {"id": f"n-{n}", "text": f"note {n}"},
                      actor="agent:x")
    tip = git(repo, "rev-parse", STATE_REF)
    spawned.clear()
    fold = Reader(ledger.store).rebuild(tip)
    assert any("--batch" in args for args in spawned)
    assert cache.content(fold) == cache.content(Reader(ledger.store).fold_at(tip))
    files = [line.split() for line in git(repo, "ls-tree", "-r", tip, "events").splitlines()]
    lost_oid, lost_path = files[2][2], files[2][3]
    (repo / ".git" / "objects" / lost_oid[:2] / lost_oid[2:]).unlink()
    damaged = Reader(ledger.store).rebuild(tip)
    assert [p.event for p in damaged.problems] == [lost_path]
    assert damaged.notes == fold.notes - 1
