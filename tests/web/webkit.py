"""A served page for the web tests: a ledger with a plan and a gate, and `git loopx web` on it
as a real process (the URL it prints, stopped at the end)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from conftest import run_loopx

ME = "human:test@example.com"  # the viewer (git's user.email in every test)
HOSTILE = "<script>alert(1)</script> & \"quoted\" `ticks` [x](y)"


def plan(repo: Path) -> None:
    """A goal with three todos in a chain, the first waiting on a gate that asks the viewer, a
    passing run for its criterion, and an agent's session with a message in its inbox."""
    for args in (("init",),
                 ("goal", "add", "Ship the viewer", "--id", "g-1", "--accept", "tests pass"),
                 ("todo", "add", "g-1", "write code", "--id", "t-1"),
                 ("todo", "add", "g-1", "write docs", "--id", "t-2", "--after", "t-1"),
                 ("gate", "open", "g-1", "Release on Friday?", "--authority", ME,
                  "--blocks", "t-1", "--id", "q-1"),
                 ("todo", "add", "g-1", HOSTILE, "--id", "t-3", "--after", "t-2"),
                 ("run", "--goal", "g-1", "--criterion", "a1", "--", "true"),
                 ("session", "send", "s-1", "use the new parser API")):
        if args[0] == "session":  # an agent's session, with a message for it in its inbox
            opened = run_loopx(repo, "session", "open", "port the parser", "--id", "s-1",
                               actor="agent:codex@devbox")
            assert opened.code == 0, opened.err
        result = run_loopx(repo, *args)
        assert result.code == 0, result.err


@dataclass
class Served:
    url: str  # as printed: http://127.0.0.1:PORT/?token=T
    proc: subprocess.Popen[str]

    @property
    def base(self) -> str:
        return self.url.split("/?", 1)[0]

    @property
    def token(self) -> str:
        return self.url.rsplit("token=", 1)[1]

    def get(self, path: str, *, token: Optional[str] = "") -> tuple[int, str]:
        """GET ``path`` with the page's token (``None``: without one; a string: that one)."""
        given = self.token if token == "" else token
        query = f"{'&' if '?' in path else '?'}token={given}" if given is not None else ""
        return _open(urllib.request.Request(self.base + path + query))

    def post(self, path: str, form: dict[str, str]) -> tuple[int, str]:
        """POST a form: (status, where a redirect leads or the body)."""
        data = urllib.parse.urlencode(form).encode()
        return _open(urllib.request.Request(self.base + path, data=data, method="POST"))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kw: object) -> None:
        return None


def _open(request: urllib.request.Request) -> tuple[int, str]:
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:  # a redirect's text is where it leads
        return exc.code, exc.headers.get("location") or exc.read().decode()


@contextmanager
def serve(repo: Path, *args: str) -> Iterator[Served]:
    """`git loopx web` in ``repo``, until the block ends."""
    env = dict(os.environ, LOOPX_ACTOR=ME)
    proc = subprocess.Popen(["git", "loopx", "web", *args], cwd=repo, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/\?token=[\w-]+", first)
        assert found, f"no URL printed: {first!r} {proc.stderr.read() if proc.stderr else ''}"
        yield Served(found.group(0), proc)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
