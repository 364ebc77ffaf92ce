"""CI providers, the GitHub one against a local stand-in for its REST API on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from conftest import git
from loopx.recovery import ci
from loopx.storage import gateway

SHA = "a" * 40


class StandIn:
    """Answers GitHub's check-runs and combined-status endpoints with canned replies."""

    def __init__(self) -> None:
        self.reply: tuple[int, dict[str, str], Any] = (200, {}, {})
        self.routes: dict[str, Any] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.delay = 0.0
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                stand_in.requests.append((self.path, dict(self.headers)))
                time.sleep(stand_in.delay)
                kind = "check-runs" if "/check-runs" in self.path else "status"
                code, headers, body = stand_in.routes.get(kind, stand_in.reply)
                self.send_response(code)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps(body).encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True).start()

    def answer(self, runs: list[dict[str, Any]], statuses: list[dict[str, Any]]) -> None:
        self.routes = {
            "check-runs": (200, {}, {"total_count": len(runs), "check_runs": runs}),
            "status": (200, {}, {"state": "pending", "statuses": statuses,
                                 "total_count": len(statuses)}),
        }

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    server = StandIn()
    yield server
    server.close()


def _run(name: str, status: str = "completed", conclusion: str | None = "success") -> dict[str, Any]:
    return {"name": name, "status": status, "conclusion": conclusion,
            "html_url": f"https://ci.example/{name}"}


def _check(repo: Path, url: str, **config: str) -> ci.CiStatus:
    settings = {"loopx.ci.githubapi": url, "loopx.ci.timeout": "1", **config}
    return ci.check(SHA, provider="github", repo=gateway.discover(repo), config=settings,
                    snapshot={})


@pytest.fixture(autouse=True)
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "t0ken")


def test_github_success_combines_check_runs_and_statuses(repo: Path, stand_in: StandIn) -> None:
    git(repo, "remote", "add", "origin", "git@github.com:acme/widget.git")
    stand_in.answer([_run("tests")], [{"context": "lint", "state": "success"}])
    status = _check(repo, stand_in.url)
    assert status.state == "success"
    assert [c["name"] for c in status.checks] == ["tests", "lint"]
    path, headers = stand_in.requests[0]
    assert path == f"/repos/acme/widget/commits/{SHA}/check-runs?per_page=100"
    assert headers["Authorization"] == "Bearer t0ken"


def test_github_failure_names_the_failed_check(repo: Path, stand_in: StandIn) -> None:
    stand_in.answer([_run("tests", conclusion="failure"), _run("docs")], [])
    status = _check(repo, stand_in.url, **{"loopx.ci.githubrepo": "acme/widget"})
    assert status.state == "failure"
    assert [c["name"] for c in status.checks if c["state"] == "failure"] == ["tests"]


def test_github_pending_while_a_run_is_in_progress(repo: Path, stand_in: StandIn) -> None:
    stand_in.answer([_run("tests", status="in_progress", conclusion=None), _run("docs")],
                    [{"context": "deploy", "state": "pending"}])
    assert _check(repo, stand_in.url, **{"loopx.ci.githubrepo": "acme/widget"}).state == "pending"


@pytest.mark.parametrize("code, headers, detail", [
    (500, {}, "HTTP 500"),
    (401, {}, "unauthorised (401)"),
    (403, {"x-ratelimit-remaining": "0"}, "rate limited"),
    (429, {}, "rate limited"),
])
def test_github_http_errors_are_unknown_not_fatal(repo: Path, stand_in: StandIn, code: int,
                                                  headers: dict[str, str], detail: str) -> None:
    stand_in.reply = (code, headers, {"message": "nope"})
    status = _check(repo, stand_in.url, **{"loopx.ci.githubrepo": "acme/widget"})
    assert status.state == "unknown"
    assert detail in (status.detail or "")


def test_github_timeout_is_unknown(repo: Path, stand_in: StandIn) -> None:
    stand_in.delay = 0.6
    status = _check(repo, stand_in.url, **{"loopx.ci.githubrepo": "acme/widget",
                                           "loopx.ci.timeout": "0.2"})
    assert status.state == "unknown"
    assert "timed out" in (status.detail or "")


def test_github_offline_is_unknown(repo: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on: connection refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    status = _check(repo, f"http://127.0.0.1:{port}", **{"loopx.ci.githubrepo": "acme/widget"})
    assert (status.state, status.detail) == ("unknown", "CI unknown (offline)")


def test_final_status_is_cached_per_commit(repo: Path, stand_in: StandIn) -> None:
    stand_in.answer([_run("tests")], [])
    _check(repo, stand_in.url, **{"loopx.ci.githubrepo": "acme/widget"})
    asked = len(stand_in.requests)
    assert _check(repo, stand_in.url, **{"loopx.ci.githubrepo": "acme/widget"}).state == "success"
    assert len(stand_in.requests) == asked


def test_a_cached_status_of_another_shape_is_asked_again(repo: Path, stand_in: StandIn) -> None:
    stand_in.answer([_run("tests")], [])
    _check(repo, stand_in.url, **{"loopx.ci.githubrepo": "acme/widget"})
    (cached,) = (gateway.discover(repo).loopx_dir / "ci-cache").glob("*.json")
    doc = json.loads(cached.read_text())
    doc["status"]["checks"][0]["took"] = 3  # a key status does not document
    cached.write_text(json.dumps(doc))
    asked = len(stand_in.requests)
    status = _check(repo, stand_in.url, **{"loopx.ci.githubrepo": "acme/widget"})
    assert len(stand_in.requests) > asked and "took" not in status.checks[0]


def test_offline_flag_uses_only_the_cache(repo: Path) -> None:
    status = ci.check(SHA, provider="github", repo=gateway.discover(repo), config={},
                      snapshot={}, offline=True)
    assert (status.state, status.detail) == ("unknown", "CI unknown (offline)")


def test_command_provider_reads_json_from_the_command(repo: Path) -> None:
    command = 'printf \'{"state": "failure", "checks": [{"name": "%s", "state": "failure"}]}\' "$1"'
    status = ci.check(SHA, provider="command", repo=gateway.discover(repo),
                      config={"loopx.ci.command": command}, snapshot={})
    assert status.state == "failure"
    assert status.checks == [{"name": SHA, "state": "failure"}]


def test_command_provider_checks_keep_the_documented_shape(repo: Path) -> None:
    """Whatever else the command prints about a check is left out (status is typed): a
    status with such a provider still answers, with ``{name, state, url?}`` checks."""
    doc = {"state": "success", "detail": 7, "checks": [
        {"name": "unit", "state": "success", "url": "https://ci/1", "took": 3},
        {"name": 5, "state": None}, "not a check"]}
    git(repo, "config", "loopx.ci.provider", "command")
    git(repo, "config", "loopx.ci.command", f"printf '%s' '{json.dumps(doc)}'")
    status = ci.check(SHA, provider="command", repo=gateway.discover(repo),
                      config={"loopx.ci.command": f"printf '%s' '{json.dumps(doc)}'"}, snapshot={})
    assert status.checks == [{"name": "unit", "state": "success", "url": "https://ci/1"},
                             {"name": "?", "state": "unknown"}]
    assert status.detail is None
    from conftest import invoke

    assert invoke(repo, "init").code == 0
    shown = invoke(repo, "status", "--json")
    assert shown.code == 0, shown.err
    assert shown.json()["environment"]["ci"]["checks"][0] == status.checks[0]


def test_command_provider_without_json_is_unknown(repo: Path) -> None:
    status = ci.check(SHA, provider="command", repo=gateway.discover(repo),
                      config={"loopx.ci.command": "echo hello; exit 3"}, snapshot={})
    assert status.state == "unknown"
    assert "exit 3" in (status.detail or "")


def test_ledger_provider_reads_ci_evidence_for_the_commit(repo: Path) -> None:
    snapshot = {"evidence": [
        {"id": "e-1", "kind": "ci", "commit": SHA, "summary": "tests", "exit_code": 1, "at": "1"},
        {"id": "e-2", "kind": "ci", "commit": SHA, "summary": "tests", "exit_code": 0, "at": "2"},
        {"id": "e-3", "kind": "ci", "commit": "b" * 40, "summary": "x", "exit_code": 1, "at": "3"},
    ]}
    status = ci.check(SHA, provider="ledger", repo=gateway.discover(repo), config={},
                      snapshot=snapshot)
    assert status.state == "success"
    assert status.checks == [{"name": "tests", "state": "success", "evidence": "e-2"}]


def test_unknown_provider_says_which_exist(repo: Path) -> None:
    status = ci.check(SHA, provider="jenkins", repo=gateway.discover(repo), config={}, snapshot={})
    assert status.state == "unknown" and "github" in (status.detail or "")


# --- CI as evidence (issue 11): a mapped check meets a criterion and is recorded -------------


def _ci_project(repo: Path) -> Path:
    from conftest import invoke

    for args in (["init"], ["goal", "add", "Ship", "--id", "g1", "--accept", "tests pass",
                            "--accept", "CI is green"],
                 ["config", "set", "--ci-criterion", "tests (3.12)=g1:a2"]):
        result = invoke(repo, *args)
        assert result.code == 0, result.err
    return repo


def _command_ci(repo: Path, state: str) -> None:
    doc = {"state": state, "checks": [{"name": "tests (3.12)", "state": state,
                                       "url": f"https://ci.example/run/{state}"}]}
    git(repo, "config", "loopx.ci.provider", "command")
    git(repo, "config", "loopx.ci.command", f"printf '%s' '{json.dumps(doc)}'")


def _a2(doc: dict[str, Any]) -> dict[str, Any]:
    (goal,) = doc["goals"]
    return goal["acceptance"][1]  # type: ignore[no-any-return]


def test_a_green_mapped_check_meets_its_criterion_and_is_recorded_for_every_clone(
        repo: Path, tmp_path: Path) -> None:
    from conftest import invoke

    _ci_project(repo)
    _command_ci(repo, "success")
    doc = invoke(repo, "status", "--json").json()
    crit = _a2(doc)  # type: ignore[arg-type]
    assert (crit["met"], crit["freshness"], crit["ci"]["recorded"]) == (True, "fresh", False)
    record = [a for a in doc["actions"] if a["kind"] == "record_ci"]  # type: ignore[index]
    assert record and record[0]["command"] == "git loopx ci record"
    assert not [a for a in doc["actions"] if a["kind"] == "close_goal"]  # type: ignore[index]
    dry = invoke(repo, "ci", "record", "--dry-run", "--json").json()
    assert dry["planned"][0]["criteria"] == ["a2"] and dry["recorded"] == []  # type: ignore[index]
    text = invoke(repo, "ci", "record").out
    assert "recorded ci evidence" in text and "https://ci.example/run/success" in text
    (ev,) = invoke(repo, "evidence", "list", "--json").json()["evidence"]  # type: ignore[index]
    assert (ev["kind"], ev["check"], ev["url"], ev["criteria"], ev["commit"]) == (
        "ci", "tests (3.12)", "https://ci.example/run/success", ["a2"],
        git(repo, "rev-parse", "HEAD"))
    assert "nothing new to record" in invoke(repo, "ci", "record").out
    after = invoke(repo, "status", "--json", "--detail").json()
    assert (_a2(after)["met"], _a2(after)["ci"]) == (True, None)  # type: ignore[arg-type]
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "fetch", "-q", "origin", "loopx/state:loopx/state")
    theirs = invoke(clone, "status", "--json", "--no-ci").json()  # no provider asked there
    assert (_a2(theirs)["met"], _a2(theirs)["freshness"]) == (True, "fresh")  # type: ignore[arg-type]


def test_a_red_mapped_check_unmeets_its_criterion(repo: Path) -> None:
    from conftest import invoke

    _ci_project(repo)
    assert invoke(repo, "evidence", "add", "--kind", "test", "--goal", "g1", "--criterion", "a2",
                  "--exit-code", "0").code == 0
    _command_ci(repo, "failure")
    doc = invoke(repo, "status", "--json").json()
    assert (_a2(doc)["met"], _a2(doc)["ci"]["verdict"]) == (False, "fail")  # type: ignore[arg-type]
    kinds = [a["kind"] for a in doc["actions"]]  # type: ignore[index]
    assert "fix_ci" in kinds and "record_ci" in kinds
    assert invoke(repo, "ci", "record").code == 0
    after = invoke(repo, "status", "--json", "--no-ci").json()
    assert (_a2(after)["met"], _a2(after)["verdict"]) == (False, "fail")  # type: ignore[arg-type]


def test_github_check_runs_meet_criteria_through_the_stand_in(repo: Path,
                                                              stand_in: StandIn) -> None:
    from conftest import invoke

    _ci_project(repo)
    stand_in.answer([_run("tests (3.12)")], [])
    for key, value in (("provider", "github"), ("githubApi", stand_in.url),
                       ("githubRepo", "acme/widget")):
        git(repo, "config", f"loopx.ci.{key}", value)
    assert _a2(invoke(repo, "status", "--json").json())["met"]  # type: ignore[arg-type]
    assert invoke(repo, "ci", "record").code == 0
    (ev,) = invoke(repo, "evidence", "list", "--json").json()["evidence"]  # type: ignore[index]
    assert ev["url"] == "https://ci.example/tests (3.12)"
    assert f"/repos/acme/widget/commits/{git(repo, 'rev-parse', 'HEAD')}/check-runs" in (
        stand_in.requests[0][0])


def test_a_mapping_must_name_a_criterion_in_force(repo: Path) -> None:
    from conftest import invoke

    _ci_project(repo)
    result = invoke(repo, "config", "set", "--ci-criterion", "lint=g9:a1")
    assert result.code == 1 and "there is no goal g9" in result.err
    bad = invoke(repo, "config", "set", "--ci-criterion", "lint")
    assert bad.code == 2 and "CHECK=GOAL:CRITERION" in bad.err
    assert invoke(repo, "config", "set", "--ci-criterion", "tests (3.12)=").code == 0
    assert invoke(repo, "config", "show", "--json").json()["ci_criteria"] == {}  # type: ignore[index]


def test_the_ledger_provider_results_are_tied_to_criteria_by_ci_record(repo: Path) -> None:
    from conftest import invoke

    _ci_project(repo)
    git(repo, "config", "loopx.ci.provider", "ledger")
    assert invoke(repo, "evidence", "add", "--kind", "ci", "--check", "tests (3.12)",
                  "--exit-code", "0", "--url", "https://ci.example/job/7").code == 0
    doc = invoke(repo, "status", "--json").json()
    assert _a2(doc)["ci"]["verdict"] == "pass"  # type: ignore[arg-type]
    assert invoke(repo, "ci", "record").code == 0
    after = invoke(repo, "status", "--json", "--detail").json()
    assert (_a2(after)["met"], _a2(after)["ci"]) == (True, None)  # type: ignore[arg-type]
    tied = [e for e in after["evidence"] if e["criteria"]]  # type: ignore[index]
    assert [(e["check"], e["url"]) for e in tied] == [("tests (3.12)", "https://ci.example/job/7")]
