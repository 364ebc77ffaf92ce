from pathlib import Path

from conftest import invoke, run_loopx


def test_init_then_status_through_git_loopx(repo: Path) -> None:
    assert run_loopx(repo, "init").code == 0
    result = run_loopx(repo, "status", "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["goals"] == []


def test_in_process_invoke_maps_user_errors_to_exit_1(repo: Path) -> None:
    invoke(repo, "init")
    result = invoke(repo, "todo", "claim", "nope")
    assert result.code == 1
    assert "no todo matches 'nope'" in result.err
