"""`git loopx web`: the page, the status document and gate answers over HTTP, on Starlette.

One process per repository, on 127.0.0.1 only, acting as one identity (the viewer's). Every
request must carry the token the command printed (``?token=`` on a read, a ``token`` form
field or an ``X-Loopx-Token`` header on a write; never a cookie, so another site's page cannot
make a browser send it): anything else is a 403 with nothing done. An answer is the CLI's
`gate answer`, run through its declaration (:mod:`loopx.ops.catalog`) as that identity.

Every ledger call runs in one worker thread (the cache's SQLite connection belongs to the
thread that opened it), one call at a time; ``Ledger.fold`` re-reads when the tip moved, so
writes by any other process show on the next request. ``/events`` sends a server-sent event
each time the state ref's tip changes (polled once a second: one ref read, no replay).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Optional, TypeVar

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse,
)
from starlette.routing import Route

from loopx.errors import LoopxError, describe
from loopx.ledger.book import Ledger
from loopx.model import inert, typed
from loopx.ops import catalog, declare, ledgers
from loopx.ops.worker import Worker
from loopx.projection import graph
from loopx.web import page

T = TypeVar("T")
POLL_S = 1.0  # how often /events looks at the state ref
DECISIONS = ("approve", "reject", "answer")


@dataclass
class Config:
    """What the page serves: one ledger (opened in ``worker``), the identity it acts as, and
    the token every request must carry."""

    ledger: Ledger
    actor: str
    worker: Worker
    token: str
    cwd: str


def new_token() -> str:
    return secrets.token_urlsafe(24)


def _given(request: Request, form: Optional[dict[str, Any]] = None) -> str:
    return str((form or {}).get("token") or request.headers.get("x-loopx-token")
               or request.query_params.get("token") or "")


def _allowed(config: Config, given: str) -> bool:
    return hmac.compare_digest(given.encode(), config.token.encode())


FORBIDDEN = "403: this page needs the token in the URL `git loopx web` printed\n"


def _headers(nonce: str) -> dict[str, str]:
    # Nothing from elsewhere, no framing, no referrer (the URL holds the token).
    return {"Content-Security-Policy": (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}' "
        "'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"),
        "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store"}


def status_doc(config: Config, *, detail: bool = False) -> Any:
    """The status document, exactly as `status --format json` answers it (its defaults: the
    compact answer an agent reads); ``detail``: the whole of it, as the page draws it."""
    ledgers.apply_spool(config.ledger, wait=ledgers.READ_WAIT_S)  # as every command does
    op = catalog.find("status")
    values = declare.validate(op, {"detail": detail})
    return op.run(declare.Call(values, config.ledger, lambda: config.actor, cwd=config.cwd))


def status_json(config: Config, detail: bool = False) -> str:
    # (a forged file name not in UTF-8, held as surrogates, made a page that cannot be sent)
    return inert.unicode_text(json.dumps(status_doc(config, detail=detail), ensure_ascii=False,
                                         separators=(",", ":"), default=typed.json_default))


def _page(config: Config, flash: Optional[tuple[str, str]], nonce: str) -> str:
    snap = json.loads(status_json(config, True))
    tip = config.ledger.tip()
    return page.document(snap, actor=config.actor, token=config.token, tip=tip, nonce=nonce,
                         flash=flash)


def answer(config: Config, form: dict[str, Any]) -> tuple[str, str]:
    """Run `gate answer` from a submitted form, as the page's identity: (kind, message)."""
    decision = str(form.get("decision") or "")
    if decision not in DECISIONS:
        return "error", f"a decision is one of {', '.join(DECISIONS)}"
    raw: dict[str, Any] = {"gate": str(form.get("gate") or ""),
                           "supersede": bool(form.get("supersede"))}
    text = str(form.get("answer") or "").strip()
    if decision == "answer":
        raw["answer"] = text
    else:
        raw[decision] = True
    if form.get("comment"):
        raw["comment"] = str(form["comment"])
    op = catalog.find("gate answer")
    try:
        ledgers.apply_spool(config.ledger, wait=ledgers.READ_WAIT_S)
        values = declare.validate(op, raw, what="gate answer")
        event = op.run(declare.Call(values, config.ledger, lambda: config.actor, cwd=config.cwd))
    except LoopxError as exc:
        return "error", describe(exc)[1]
    return "ok", f"answered gate {event.data.id}: {event.data.decision}  [{event.id}]"


def build(config: Config) -> Starlette:
    """The application: every route checks the token first."""
    serial = config.worker.run
    flashes: dict[str, tuple[str, str]] = {}  # one-time outcomes of answers, by a random key

    async def index(request: Request) -> Response:
        if not _allowed(config, _given(request)):
            return PlainTextResponse(FORBIDDEN, status_code=403)
        flash = flashes.pop(request.query_params.get("said", ""), None)
        nonce = secrets.token_urlsafe(12)
        body = await serial(_page, config, flash, nonce)
        return HTMLResponse(body, headers=_headers(nonce))

    async def status(request: Request) -> Response:
        if not _allowed(config, _given(request)):
            return JSONResponse({"error": {"message": FORBIDDEN.strip(), "kind": "Forbidden"}},
                                status_code=403)
        text = await serial(status_json, config)
        return Response(text, media_type="application/json", headers={"Cache-Control": "no-store"})

    async def svg(request: Request) -> Response:
        if not _allowed(config, _given(request)):
            return PlainTextResponse(FORBIDDEN, status_code=403)
        snap = json.loads(await serial(status_json, config, True))
        goal = request.query_params.get("goal")
        return Response(graph.svg(graph.plan(snap, goal=goal)), media_type="image/svg+xml",
                        headers=_headers(secrets.token_urlsafe(12)))

    async def gate_answer(request: Request) -> Response:
        form = dict(await request.form())
        if not _allowed(config, _given(request, form)):
            return PlainTextResponse(FORBIDDEN, status_code=403)
        kind, message = await serial(answer, config, form)
        key = secrets.token_urlsafe(8)
        flashes[key] = (kind, message)
        return RedirectResponse(f"/?token={config.token}&said={key}", status_code=303)

    async def events(request: Request) -> Response:
        if not _allowed(config, _given(request)):
            return PlainTextResponse(FORBIDDEN, status_code=403)
        return StreamingResponse(_changes(request), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store"})

    async def _changes(request: Request) -> AsyncIterator[str]:
        last: Optional[str] = None
        while not await request.is_disconnected():
            tip = await serial(config.ledger.tip)
            if tip != last:
                last = tip
                yield f"event: change\ndata: {inert.line(tip or '')}\n\n"
            else:
                yield ": still here\n\n"
            await asyncio.sleep(POLL_S)

    async def elsewhere(request: Request) -> Response:
        if not _allowed(config, _given(request)):
            return PlainTextResponse(FORBIDDEN, status_code=403)
        return PlainTextResponse("404: no such page\n", status_code=404)

    return Starlette(routes=[
        Route("/", index), Route("/status.json", status), Route("/graph.svg", svg),
        Route("/gate/answer", gate_answer, methods=["POST"]), Route("/events", events),
        Route("/{rest:path}", elsewhere, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
    ])
