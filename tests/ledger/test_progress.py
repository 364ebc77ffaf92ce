"""The ledger's one progress hook: what long work reports, under the name of the task."""

from __future__ import annotations

from loopx.ledger import progress


def _heard() -> tuple[progress.Progress, list[tuple[str, int, int]]]:
    heard: list[tuple[str, int, int]] = []
    return progress.Progress(lambda task, done, total: heard.append((task, done, total))), heard


def test_reports_go_out_under_the_task_being_done_then_the_one_before() -> None:
    hook, heard = _heard()
    hook(1, 2)
    with hook.doing("validating x"):
        hook(2, 4)
        hook(4, 4)
    hook(2, 2)
    assert heard == [("replaying the ledger", 1, 2), ("validating x", 2, 4),
                     ("validating x", 4, 4), ("replaying the ledger", 2, 2)]


def test_a_task_left_unfinished_is_reported_finished_when_it_ends() -> None:
    hook, heard = _heard()
    with hook.doing("fetching from origin"):
        hook(1000, 3000)  # the rest turned out to need no reading
    assert heard[-1] == ("fetching from origin", 1, 1)


def test_chunks_report_only_work_long_enough_for_a_bar() -> None:
    hook, heard = _heard()
    assert [len(c) for c in hook.chunks(list(range(1500)))] == [1000, 500]
    assert heard == []
    assert sum(len(c) for c in hook.chunks(list(range(2500)))) == 2500
    assert heard == [("replaying the ledger", 1000, 2500), ("replaying the ledger", 2000, 2500),
                     ("replaying the ledger", 2500, 2500)]


def test_without_a_report_nothing_is_heard_and_nothing_breaks() -> None:
    hook = progress.Progress()
    with hook.doing("anything"):
        hook(1, 2)
    assert list(hook.chunks([1, 2, 3], 2)) == [[1, 2], [3]]
