"""ObjectReader.read_bulk: many objects through short-lived cat-file processes whose answers
go to a temporary file (the cold replay's reads), against real git: the same bytes as the
long-lived reader, in order, chunked, whether a chunk is read at once (its answer capped by
the kernel) or the checked way (sizes first); a missing object, another type or a cut answer
is one error line and no partial result."""

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
from loopx.storage import batches, gateway
from loopx.storage import bulk as bulk_reads
from loopx.storage.batches import Oversize
from loopx.storage.gateway import ObjectReader
from loopx.storage.store import STATE_REF


def _blob(repo: Path, data: bytes) -> str:
    return gateway.run(repo, "hash-object", "-w", "--stdin", input=data).stdout.decode().strip()


@pytest.fixture(params=["at once", "checked", "long-lived"])
def reader(repo: Path, request: pytest.FixtureRequest,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[ObjectReader]:
    """A reader whose bulk reads go through short-lived processes (however few names), each
    chunk at once or, as where the system cannot cap a process's files, the checked way;
    or, as for fewer than BULK_MIN, through the long-lived one: all answer alike."""
    monkeypatch.setattr(ObjectReader, "BULK_MIN", 10**9 if request.param == "long-lived" else 0)
    if request.param == "checked":
        monkeypatch.setattr(gateway, "CAN_LIMIT", False)
    with ObjectReader(repo) as objects:
        yield objects


@pytest.fixture(params=["at once", "checked"])
def bulk(repo: Path, request: pytest.FixtureRequest,
         monkeypatch: pytest.MonkeyPatch) -> Iterator[ObjectReader]:
    """A reader that reads in bulk whatever the count, at once or the checked way."""
    monkeypatch.setattr(ObjectReader, "BULK_MIN", 0)
    if request.param == "checked":
        monkeypatch.setattr(gateway, "CAN_LIMIT", False)
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
    batches_run = [a for a in spawned if "--batch" in a]
    if gateway.CAN_LIMIT:  # each chunk of 7 in one process: its headers say the sizes
        assert (len(checks), len(batches_run)) == (0, 7)
    else:  # 44 names, 7 a chunk, and split by bytes too
        assert len(checks) == 7 and len(batches_run) > len(checks)


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_chunks_read_side_by_side_answer_as_one_at_a_time(repo: Path, scratch: Path,
                                                           jobs: int,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """BULK_JOBS cat-files at once: the same bytes in the order asked, the first missing
    object in that order named (not whichever chunk failed first), no answer file left."""
    monkeypatch.setattr(ObjectReader, "BULK_MIN", 0)
    monkeypatch.setattr(ObjectReader, "BULK_NAMES", 5)
    monkeypatch.setattr(ObjectReader, "BULK_JOBS", jobs)
    contents = [f"chunked {n}\n".encode() * (n % 4 + 1) for n in range(23)]
    oids = [_blob(repo, data) for data in contents]
    gone = ["0123456789abcdef0123456789abcdef0123456" + str(n) for n in range(2)]
    with ObjectReader(repo) as objects:
        assert objects.read_bulk(oids[::-1] + oids) == contents[::-1] + contents
        with pytest.raises(DamagedLedger) as caught:  # chunks 2 and 4 each lack one
            objects.read_bulk(oids[:12] + [gone[0]] + oids[12:18] + [gone[1]] + oids[18:])
    assert gone[0] in str(caught.value) and gone[1] not in str(caught.value)
    assert list(scratch.iterdir()) == []


@pytest.mark.skipif(not gateway.CAN_LIMIT, reason="no prlimit(2) here")
def test_a_chunk_over_the_cap_among_chunks_read_side_by_side_is_read_again_alone(
        repo: Path, spawned: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ObjectReader, "BULK_MIN", 0)
    monkeypatch.setattr(ObjectReader, "BULK_NAMES", 3)
    monkeypatch.setattr(ObjectReader, "BULK_BYTES", 4096)
    huge = _blob(repo, b"\0" * (8 << 20))
    small = [_blob(repo, f"small {n}\n".encode()) for n in range(8)]
    spawned.clear()
    with ObjectReader(repo) as objects:  # chunks: 3 small, 2 small and the huge one, 3 small
        assert objects.read_bulk([*small[:5], huge, *small[5:]], max_size=1 << 20) == [
            *(f"small {n}\n".encode() for n in range(5)), Oversize("blob", 8 << 20, huge),
            *(f"small {n}\n".encode() for n in range(5, 8))]
    assert [a[-1] for a in spawned].count("--batch-check") == 1  # only that chunk, again


def test_duplicates_each_get_the_contents_and_are_read_once(repo: Path, bulk: ObjectReader,
                                                            scratch: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    a, b = _blob(repo, b"a\n"), _blob(repo, b"b\n")
    asked: list[list[object]] = []
    answers = batches.parse_answers
    monkeypatch.setattr(batches, "parse_answers", lambda data, names, *rest: asked.append(
        list(names)) or answers(data, names, *rest))
    assert bulk.read_bulk([a, b, a, a, b]) == [b"a\n", b"b\n", b"a\n", b"a\n", b"b\n"]
    assert [len(group) for group in asked] == [2]


def test_a_large_blob_is_read_whole_and_one_over_the_limit_is_its_size(
        repo: Path, reader: ObjectReader) -> None:
    big = bytes(range(256)) * (6 * 4096)  # 6 MiB
    small = _blob(repo, b"small\n")
    oid = _blob(repo, big)
    assert reader.read_bulk([small, oid]) == [b"small\n", big]
    assert reader.read_bulk([small, oid], max_size=1 << 20) == [
        b"small\n", Oversize("blob", len(big), oid)]


def test_checked_the_blob_over_the_limit_is_never_asked_for(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ObjectReader, "BULK_MIN", 0)
    monkeypatch.setattr(gateway, "CAN_LIMIT", False)
    big, small = _blob(repo, b"x" * (2 << 20)), _blob(repo, b"small\n")
    asked: list[list[str]] = []
    real = batches.parse_answers
    monkeypatch.setattr(batches, "parse_answers",
                        lambda data, names, *rest: asked.append(names) or real(data, names, *rest))
    with ObjectReader(repo) as objects:
        assert objects.read_bulk([small, big], max_size=1 << 20) == [
            b"small\n", Oversize("blob", 2 << 20, big)]
    assert asked == [[small]]  # the big one not asked


@pytest.mark.skipif(not gateway.CAN_LIMIT, reason="no prlimit(2) here")
def test_an_answer_over_the_cap_is_cut_by_the_kernel_and_read_the_checked_way(
        repo: Path, spawned: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch) -> None:
    """A hostile tree's huge blob: git may not write past the cap (it is killed there), and
    the chunk is read again sizes first, so the blob is its size, never its bytes."""
    monkeypatch.setattr(ObjectReader, "BULK_MIN", 0)
    monkeypatch.setattr(ObjectReader, "BULK_BYTES", 4096)
    huge = _blob(repo, b"\0" * (8 << 20))  # 8 MiB, a few KiB packed
    small = [_blob(repo, f"small {n}\n".encode()) for n in range(3)]
    with ObjectReader(repo) as objects, tempfile.TemporaryFile() as answer:
        assert bulk_reads.at_once(objects, [small[0], huge], "blob", 1 << 20, answer) is None
        answer.seek(0, 2)
        assert 4096 <= answer.tell() <= 4096 + 2 * ObjectReader.HEADER_BYTES  # cut at the cap
        spawned.clear()
        assert objects.read_bulk([*small, huge], max_size=1 << 20) == [
            b"small 0\n", b"small 1\n", b"small 2\n", Oversize("blob", 8 << 20, huge)]
    assert [a[-1] for a in spawned] == ["--batch", "--batch-check", "--batch"]
    with ObjectReader(repo) as objects:  # without a limit the huge one is read whole
        assert objects.read_bulk([huge]) == [b"\0" * (8 << 20)]


@pytest.mark.skipif(not gateway.CAN_LIMIT, reason="no prlimit(2) here")
def test_an_answer_over_the_cap_from_a_git_the_kernel_does_not_hold_is_never_read_in(
        repo: Path, spawned: list[tuple[str, ...]], monkeypatch: pytest.MonkeyPatch) -> None:
    """A git that runs where the cap does not reach (a wrapper handing the work to another
    process tree) answers whole and exits 0: its answer, past the cap, was read into memory
    (a hostile 1 GiB event file: 1.07 GB). It is read again the checked way instead."""
    import resource

    monkeypatch.setattr(ObjectReader, "BULK_MIN", 0)
    monkeypatch.setattr(ObjectReader, "BULK_BYTES", 4096)
    monkeypatch.setattr(resource, "prlimit", lambda *args: None)  # the kernel holds nothing
    huge = _blob(repo, b"\0" * (8 << 20))
    small = _blob(repo, b"small\n")
    read: list[int] = []
    real = batches.parse_answers
    monkeypatch.setattr(batches, "parse_answers",
                        lambda data, *rest: read.append(len(data)) or real(data, *rest))
    with ObjectReader(repo) as objects, tempfile.TemporaryFile() as answer:
        assert bulk_reads.at_once(objects, [small, huge], "blob", 1 << 20, answer) is None
        assert answer.seek(0, 2) > 8 << 20  # git wrote it all: nothing stopped it
        spawned.clear()
        assert objects.read_bulk([small, huge], max_size=1 << 20) == [
            b"small\n", Oversize("blob", 8 << 20, huge)]
    assert read and max(read) < 4096  # the answer past the cap never parsed, so never read
    assert [a[-1] for a in spawned] == ["--batch", "--batch-check", "--batch"]


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


def test_an_answer_read_at_once_cut_short_or_padded_is_one_error_line_and_no_result(
        repo: Path) -> None:
    a, b = _blob(repo, b"first\n"), _blob(repo, b"second\n")
    whole = f"{a} blob 6\nfirst\n\n{b} blob 7\nsecond\n\n".encode()
    assert batches.parse_answers(whole, [a, b], "blob", None) == [b"first\n", b"second\n"]
    assert batches.parse_answers(whole, [a, b], "blob", 6) == [b"first\n",
                                                               Oversize("blob", 7, b)]
    second = whole.index(b"\n\n") + 2
    for cut in (len(whole) - 1, len(whole) - 4, whole.index(b"second"), second, 50, 0):
        with pytest.raises(GitError, match="cut short") as caught:
            batches.parse_answers(whole[:cut], [a, b], "blob", None)
        assert "\n" not in str(caught.value) and (a if cut < second else b) in str(caught.value)
    with pytest.raises(GitError, match="bytes after the 2 objects"):
        batches.parse_answers(whole + b"junk", [a, b], "blob", None)
    with pytest.raises(GitError, match="cut short or damaged"):  # a size that lies
        batches.parse_answers(whole.replace(b"blob 6", b"blob 5"), [a, b], "blob", None)
    for answer, said in ((f"{a} missing\n".encode(), "is missing"),
                         (f"{a} ambiguous\n".encode(), "is ambiguous"),
                         (f"{a} tree 6\nfirst\n\n".encode(), "is a tree, not a blob")):
        with pytest.raises(DamagedLedger, match=said):
            batches.parse_answers(answer, [a], "blob", None)


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
