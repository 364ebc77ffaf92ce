"""What loopx says to someone new: sync in words, a claim that lost a race and its notice
dismissed, an unreachable remote named with its cause, `next --claim` saying why it did not
claim, a global option given after the command, counted nouns, one JSON shape for every list,
and a clone made before the remote had a ledger."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import git, invoke, run_loopx
from syncutil import bare_remote, clone

A, B = "agent:a@one", "agent:b@two"


def ok(cwd: Path, *args: str, actor: str | None = "human:test@example.com") -> str:
    result = invoke(cwd, *args, actor=actor)
    assert result.code == 0, (args, result.out, result.err)
    return result.out


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """Two clones of one remote whose ledger has goal g with todos t1 and t2."""
    remote = bare_remote(tmp_path)
    one = clone(remote, tmp_path / "one")
    git(one, "commit", "-q", "--allow-empty", "-m", "initial")
    git(one, "push", "-q", "origin", "HEAD")
    for args in (["init"], ["goal", "add", "G", "--id", "g", "--accept", "works"],
                 ["todo", "add", "g", "One", "--id", "t1"], ["todo", "add", "g", "Two", "--id", "t2"]):
        ok(one, *args)
    ok(one, "sync")
    return one, clone(remote, tmp_path / "two")


# --- sync, in words -------------------------------------------------------------------------


def test_sync_says_what_moved_in_words(pair: tuple[Path, Path]) -> None:
    one, two = pair
    assert ok(two, "sync").splitlines()[0] == "already in step with origin"  # adopted on open
    ok(one, "note", "add", "hello")
    assert ok(one, "sync").splitlines()[0] == "sent 1 event to origin"
    assert ok(one, "sync").splitlines()[0] == "already in step with origin"
    ok(one, "note", "add", "from one")
    ok(one, "sync")
    ok(two, "note", "add", "from two")
    assert ok(two, "sync").splitlines()[0] == "received 2 events, sent 1; merged with origin"


def test_sync_after_the_pre_push_hook_pushed_the_state_says_it_sent_nothing(
        pair: tuple[Path, Path]) -> None:
    one, two = pair
    ok(one, "hooks", "install")
    ok(one, "note", "add", "carried by the hook")
    git(one, "commit", "-q", "--allow-empty", "-m", "code")
    pushed = run_loopx(one, "sync", "--json")  # warm: the hook below runs the console script
    assert pushed.code == 0 and pushed.json()["sent"] == 1  # type: ignore[index]
    ok(one, "note", "add", "carried by the hook")
    import subprocess

    proc = subprocess.run(["git", "push", "-q", "origin", "HEAD"], cwd=one, capture_output=True,
                          text=True)
    assert proc.returncode == 0 and "pushed refs/heads/loopx/state" in proc.stderr, proc.stderr
    report = json.loads(ok(one, "sync", "--json"))
    assert (report["sent"], report["received"]) == (0, 0), report  # the hook sent it
    assert report["remote_after"] == git(one, "rev-parse", "refs/heads/loopx/state")
    ok(one, "note", "add", "pushed by hand")
    git(one, "push", "-q", "--no-verify", "origin", "refs/heads/loopx/state")
    assert ok(one, "sync").splitlines()[0] == "already in step with origin"
    assert ok(one, "push").splitlines()[0] == "origin already had every event"
    assert ok(two, "sync").splitlines()[0] == "received 3 events; fast-forwarded to origin"
    ok(two, "note", "add", "from two")
    ok(one, "note", "add", "from one")
    ok(one, "sync")
    assert ok(two, "sync").splitlines()[0] == "received 1 event, sent 1; merged with origin"


def test_a_claim_that_lost_a_race_is_told_by_sync_and_its_notice_can_be_dismissed(
        pair: tuple[Path, Path]) -> None:
    one, two = pair
    ok(two, "sync")
    ok(one, "todo", "claim", "t1", actor=A)
    lost = json.loads(ok(two, "todo", "claim", "t1", "--json", actor=B))["id"]
    ok(one, "sync", actor=A)
    out = ok(two, "sync", actor=B)
    assert f"notice: your claim lost a race: todo t1 is claimed by {A}" in out
    assert f"git loopx notice dismiss {lost}" in out
    report = json.loads(ok(two, "sync", "--json", actor=B))
    assert report["notices"] == []  # told once, by the sync that brought it

    def notices() -> list[str]:
        actions = json.loads(ok(two, "status", "--json", actor=B))["actions"]
        return [a["event"] for a in actions if a["kind"] == "notice"]

    assert notices() == [lost]
    assert [n["event"] for n in json.loads(ok(two, "notice", "list", "--json", actor=B))] == [lost]
    assert "no notice" in invoke(two, "notice", "dismiss", lost, actor=A).err  # not A's to dismiss
    ok(one, "todo", "done", "t1", "--reason", "nothing to test", actor=A)
    ok(one, "todo", "done", "t2", "--reason", "nothing to test", actor=A)
    ok(one, "sync", actor=A)
    ok(two, "sync", actor=B)
    # Nothing else for B now but the notice, and the goal's criteria: done without
    # evidence, nothing met them, so they are to plan (before a notice).
    actions = json.loads(ok(two, "status", "--json", actor=B))["actions"]
    assert {a["kind"] for a in actions[:-1]} == {"plan_criterion"}
    assert (actions[-1]["kind"], actions[-1]["event"]) == ("notice", lost)
    assert invoke(two, "next", actor=B).code == 0

    ok(two, "notice", "dismiss", lost[:12], actor=B)
    assert notices() == []
    assert json.loads(ok(two, "next", "--json", actor=B))["action"]["kind"] != "notice"
    assert "notice" not in ok(two, "status", actor=B)
    assert json.loads(ok(two, "notice", "list", "--json", actor=B)) == []
    listed = json.loads(ok(two, "notice", "list", "--all", "--json", actor=B))
    assert [(n["event"], n["dismissed"]) for n in listed] == [(lost, True)]
    status = json.loads(ok(two, "status", "--json", actor=B))
    assert [(p["event"], p["dismissed"]) for p in status["problems"]] == [(lost, True)]
    again = invoke(two, "notice", "dismiss", "--all", actor=B)
    assert again.code == 1 and "has no notice to dismiss" in again.err


def test_claim_sync_from_both_clones_one_wins_and_the_loser_is_told_who(pair: tuple[Path, Path]) -> None:
    one, two = pair
    assert invoke(one, "todo", "claim", "t2", "--sync", actor=A).code == 0
    lost = invoke(two, "todo", "claim", "t2", "--sync", actor=B)
    assert lost.code == 1 and f"todo t2 went to {A}" in lost.err


# --- an unreachable remote ------------------------------------------------------------------


@pytest.mark.parametrize("command", ["sync", "fetch", "push"])
def test_an_unreachable_remote_is_named_with_gits_cause(pair: tuple[Path, Path], tmp_path: Path,
                                                        command: str) -> None:
    one, _ = pair
    gone = tmp_path / "gone.git"
    git(one, "remote", "add", "gone", str(gone))
    result = invoke(one, command, "gone")
    assert result.code == 1
    line = result.err.strip()
    assert line.startswith(f"error: could not reach gone ({gone}) to ")
    assert "does not appear to be a git repository" in line
    assert "and the repository exists" not in line and "refused" not in line


def test_a_url_with_a_password_is_never_printed(pair: tuple[Path, Path]) -> None:
    one, _ = pair
    git(one, "remote", "add", "secret", "https://user:hunter22@127.0.0.1:1/x.git")
    result = invoke(one, "fetch", "secret")
    assert result.code == 1 and "hunter22" not in result.err and "could not reach secret" in result.err


# --- next --claim ---------------------------------------------------------------------------


def test_next_claim_says_why_it_did_not_claim(repo: Path) -> None:
    me = "human:test@example.com"
    for args in (["init"], ["config", "set", "--role", f"maintainer={me}"],
                 ["goal", "add", "G", "--id", "g", "--accept", "works"],
                 ["todo", "add", "g", "Free", "--id", "free"],
                 ["gate", "open", "g", "Names stable?", "--id", "names",
                  "--authority", "role:maintainer"]):
        ok(repo, *args)
    text = ok(repo, "next", "--claim")
    assert text.startswith("answer_gate:") and "(not claimed: answer_gate comes before new work)" in text
    doc = json.loads(ok(repo, "next", "--claim", "--json"))
    assert doc["claimed"] is None and doc["not_claimed"] == "answer_gate comes before new work"
    ok(repo, "gate", "answer", "names", "--approve")
    doc = json.loads(ok(repo, "next", "--claim", "--json"))
    assert doc["claimed"]["data"]["id"] == "free" and doc["not_claimed"] is None
    assert doc["action"]["reason"].startswith("you claimed free until ")
    doc = json.loads(ok(repo, "next", "--claim", "--json"))
    assert doc["claimed"] is None and doc["not_claimed"].startswith("you hold free already")
    assert json.loads(ok(repo, "next", "--json"))["not_claimed"] is None  # no claim asked


# --- options in the wrong place -------------------------------------------------------------


@pytest.mark.parametrize("args, option", [(["todo", "claim", "t", "--actor", "agent:x"], "--actor"),
                                          (["status", "--actor=agent:x"], "--actor"),
                                          (["note", "add", "hi", "-C", "."], "-C")])
def test_a_global_option_after_the_command_says_to_put_it_first(repo: Path, args: list[str],
                                                                option: str) -> None:
    result = run_loopx(repo, *args)
    assert result.code == 2
    assert f"{option} is an option of `git loopx` itself: put it before the command" in result.err
    assert f"e.g. `git loopx {option} ... {' '.join(args[:2 if args[0] != 'status' else 1])} ...`" \
        in result.err


def test_run_refuses_an_option_it_does_not_know_and_records_nothing(repo: Path) -> None:
    ok(repo, "init")
    ok(repo, "goal", "add", "G", "--id", "g", "--accept", "works")
    (repo / "t.py").write_text("print('ran')\n")
    result = run_loopx(repo, "run", "--goal", "g", "--no-such-flag", "x", "--", "python", "t.py")
    assert result.code == 2 and "No such option" in result.err and "ran" not in result.out
    assert json.loads(ok(repo, "evidence", "list", "--json"))["evidence"] == []
    good = run_loopx(repo, "run", "--goal", "g", "--", "python", "t.py", "--no-such-flag")
    assert good.code == 0 and "ran" in good.out  # after the command, options are the command's


# --- counted nouns ----------------------------------------------------------------------------


def test_one_is_singular_everywhere_it_was_plural(pair: tuple[Path, Path]) -> None:
    one, two = pair
    ok(one, "note", "add", "unpushed")
    status = ok(one, "status")
    assert "ledger: 1 event not pushed" in status and "1 event is not pushed to origin" in status
    assert "1 events" not in status
    doctor = ok(one, "doctor")
    assert "1 entries" not in doctor
    assert "1 event not pushed" in ok(one, "brief")
    assert "sent 1 event to origin" in ok(one, "sync")


# --- lists in JSON ----------------------------------------------------------------------------


def test_every_list_prints_a_bare_list_of_objects_in_json_or_a_page(
        pair: tuple[Path, Path]) -> None:
    one, _ = pair
    ok(one, "session", "open", "Report", "--id", "s-1", "--goal", "g")
    ok(one, "wake", "set", "--in", "1h", "--goal", "g")
    ok(one, "effect", "intend", "repo#1", "--action", "comment", "--goal", "g")
    ok(one, "evidence", "add", "--kind", "note", "--goal", "g", "--summary", "seen")
    ok(one, "gate", "open", "g", "Ok?", "--authority", "human:test@example.com")
    ok(one, "note", "add", "seen too")
    for args in (["goal", "list"], ["gate", "list"], ["effect", "list"], ["wake", "list"],
                 ["session", "list"], ["notice", "list"], ["log"], ["session", "inbox", "s-1"],
                 ["todo", "list"], ["evidence", "list"], ["note", "list"]):
        value = json.loads(ok(one, *args, "--json"))
        if args[0] in ("todo", "evidence", "note"):  # a page: its items, how many in all, next
            key = {"todo": "todos", "note": "notes"}.get(args[0], args[0])
            assert set(value) == {key, "total", "next_offset"}, args
            assert value["total"] == len(value[key]) > 0 and value["next_offset"] is None, args
            value = value[key]
        assert isinstance(value, list), args
        assert all(isinstance(item, dict) for item in value), args
    stats = json.loads(ok(one, "session", "stats", "--json"))
    assert stats["slots"]["human:test@example.com"]["used"] == 1 and stats["slot_limit"] == 20


# --- a clone made before the remote had a ledger ----------------------------------------------


def test_a_clone_made_before_the_remote_had_a_ledger_is_told_to_sync_and_init_adopts(
        tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    one = clone(remote, tmp_path / "one")
    git(one, "commit", "-q", "--allow-empty", "-m", "initial")
    git(one, "push", "-q", "origin", "HEAD")
    early = clone(remote, tmp_path / "early")  # before anyone ran loopx
    also_early = clone(remote, tmp_path / "also-early")
    ok(one, "init")
    ok(one, "goal", "add", "G", "--id", "g", "--accept", "works")
    ok(one, "sync")

    for args in (["status"], ["next"], ["todo", "list"], ["goal", "list"]):
        result = invoke(early, *args)
        assert result.code == 1, args
        assert "fetch it with `git loopx sync`" in result.err and "run `git loopx init`" not in result.err

    assert "adopted origin's state" in ok(early, "sync")
    assert [g["id"] for g in json.loads(ok(early, "goal", "list", "--json"))] == ["g"]

    out = ok(also_early, "init")
    assert out.startswith("adopted origin's ledger")
    assert git(also_early, "rev-parse", "loopx/state") == git(one, "rev-parse", "loopx/state")
    ok(also_early, "sync")
    log = json.loads(ok(one, "log", "--json"))
    ok(one, "sync")
    inits = [e for c in json.loads(ok(one, "log", "--json")) for e in c["events"]
             if e["type"] == "ledger.initialised"]
    assert len(inits) == 1 and len(log) >= 2  # one root, whoever ran init


def test_init_with_an_unreachable_remote_stops_and_offers_offline(repo: Path, tmp_path: Path) -> None:
    git(repo, "remote", "add", "origin", str(tmp_path / "nowhere.git"))
    result = invoke(repo, "init")
    assert result.code == 1 and "could not reach origin" in result.err
    assert "git loopx init --offline" in result.err
    assert invoke(repo, "init", "--offline").code == 0


def test_sync_with_no_ledger_on_either_side_says_so(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    one = clone(remote, tmp_path / "one")
    result = invoke(one, "sync")
    assert result.code == 1 and "neither this repository nor origin has a loopx ledger" in result.err


def test_next_claim_sync_takes_the_next_todo_when_another_host_won_the_first(
        pair: tuple[Path, Path]) -> None:
    one, two = pair
    ok(two, "sync")
    assert invoke(one, "todo", "claim", "t1", "--sync", actor=A).code == 0
    doc = json.loads(ok(two, "next", "--claim", "--sync", "--json", actor=B))  # two has not synced
    assert doc["claimed"]["data"]["id"] == "t2" and doc["not_claimed"] is None
    assert invoke(two, "next", "--sync", actor=B).code == 2  # --sync goes with --claim


def test_notes_can_be_listed(repo: Path) -> None:
    ok(repo, "init")
    ok(repo, "goal", "add", "G", "--id", "g", "--accept", "works")
    ok(repo, "todo", "add", "g", "One", "--id", "t1")
    ok(repo, "note", "add", "first")
    ok(repo, "note", "add", "on the todo", "--todo", "t1")
    listed = json.loads(ok(repo, "note", "list", "--json"))["notes"]
    assert [(n["text"], n["todo"], n["goal"]) for n in listed] == [("on the todo", "t1", "g"),
                                                                    ("first", None, None)]
    assert [n["text"] for n in json.loads(ok(repo, "note", "list", "--todo", "t1", "--json"))["notes"]] == [
        "on the todo"]
    assert "on the todo" in ok(repo, "note", "list")


def test_schema_check_outside_loopx_sources_says_what_it_is_for(repo: Path) -> None:
    result = invoke(repo, "schema", "check", "--root", str(repo))
    assert result.code == 1 and result.out.count("\n") == 1 and "no .loopx-schema/" in result.out


@pytest.mark.parametrize("args", [
    ["--now", "x" * 100_000, "status"],  # click's own refusal of an option's value
    ["todo", "show", "t" * 100_000],  # loopx's: no todo matches it
    ["--json", "todo", "show", "t" * 100_000],
])
def test_an_error_quoting_a_huge_value_is_one_short_line_that_keeps_its_end(
        tmp_path: Path, args: list[str]) -> None:
    """A message quotes the value it refuses; given 100 KB (or read from a hostile remote) it
    was 100 KB of stderr. It keeps its start and its end (what to do), the middle counted."""
    git(tmp_path, "init", "-q")
    assert invoke(tmp_path, "init").code == 0
    result = run_loopx(tmp_path, *args)
    assert result.code in (1, 2) and len(result.err) < 2000
    assert "characters not shown" in result.err
    if args[0] == "--json":
        message = json.loads(result.out)["error"]["message"]
        assert len(message) <= 1200 and message.endswith("(see `git loopx todo list`)")
    elif args[0] == "todo":
        assert result.err.rstrip().endswith("(see `git loopx todo list`)")
