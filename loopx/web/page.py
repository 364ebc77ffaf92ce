"""The web page's HTML, made from the status document (the JSON of `status --format json`).

Every value came from an event or the environment: it goes through :func:`esc` (HTML escapes
of :func:`loopx.model.inert.line`), into text or a quoted attribute, never into markup, a URL
or a script. The page is one document with its style and script inline (nothing is fetched
from elsewhere); the Content-Security-Policy the server sends lets only the script carrying
this response's nonce run, so a value that escaped its escaping still could not.

Pure: values in, text out.
"""

from __future__ import annotations

import html
from typing import Any, Optional

from loopx.model import inert
from loopx.projection import graph

STYLE = """
body{font-family:system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#263238;color:#fff;padding:10px 20px;display:flex;gap:18px;align-items:baseline}
header h1{font-size:18px;margin:0} header a{color:#b3e5fc} main{padding:10px 20px}
section{background:#fff;border:1px solid #ddd;border-radius:6px;margin:12px 0;padding:8px 16px}
h2{font-size:16px;margin:8px 0} h3{font-size:14px;margin:8px 0}
.plan-box{overflow-x:auto} .muted{color:#777} .flash{padding:8px 12px;border-radius:4px}
.ok{background:#e3f5e1} .error{background:#fde2e1} code{background:#f1f1f1;padding:0 3px}
.fresh{color:#2e7d32} .stale,.unknown{color:#b26a00} .unmet,.failing{color:#c62828}
form.gate{margin:6px 0 12px} form.gate input[type=text]{width:22em}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border-radius:4px;
border:1px solid}
li{margin:2px 0}
""" + "".join(f".legend .{state}{{background:{fill};border-color:{stroke}}}"
              for state, (fill, stroke) in graph.COLOURS.items())

# Watches /events (a server-sent event each time the state ref moves) and swaps in the new
# <main> (a half-typed answer in a form is kept unless the form is gone).
SCRIPT = """
(function(){
  var token = document.body.dataset.token;
  var q = "?token=" + encodeURIComponent(token);
  function refresh(){
    fetch("/" + q, {cache: "no-store"}).then(function(r){ return r.text(); }).then(function(t){
      var doc = new DOMParser().parseFromString(t, "text/html");
      var fresh = doc.querySelector("main");
      if (fresh) { document.querySelector("main").replaceWith(fresh); }
      document.body.dataset.tip = doc.body.dataset.tip || "";
    });
  }
  var source = new EventSource("/events" + q);
  source.addEventListener("change", function(e){
    if (e.data !== document.body.dataset.tip) { refresh(); }
  });
})();
"""


def esc(value: Any) -> str:
    """A value as inert HTML text (one visible line, escaped for text and quoted attributes)."""
    return html.escape(inert.line("" if value is None else str(value)), quote=True)


def document(snap: dict[str, Any], *, actor: str, token: str, tip: Optional[str], nonce: str,
             flash: Optional[tuple[str, str]] = None) -> str:
    """The whole page: ``snap`` is the status document as JSON values; ``flash`` a
    (kind, message) pair to show once (the outcome of an answer)."""
    name = snap["ledger"].get("name") or snap.get("ref") or "loopx/state"
    head = (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f"<title>loopx: {esc(name)}</title>"
            f'<style nonce="{nonce}">{STYLE}</style></head>'
            f'<body data-token="{esc(token)}" data-tip="{esc(tip or "")}">'
            f"<header><h1>loopx: {esc(name)}</h1><span>you are <b>{esc(actor)}</b></span>"
            f'<span class="muted">{esc(snap.get("ref"))} @ {esc((tip or "")[:12])}</span>'
            f'<a href="/status.json?token={esc(token)}">status.json</a></header>')
    return (head + main(snap, actor=actor, token=token, flash=flash)
            + f'<script nonce="{nonce}">{SCRIPT}</script></body></html>')


def main(snap: dict[str, Any], *, actor: str, token: str,
         flash: Optional[tuple[str, str]] = None) -> str:
    """The part that changes with the ledger (what the script swaps in)."""
    parts = ["<main>"]
    if flash:
        parts.append(f'<p class="flash {esc(flash[0])}" id="flash">{esc(flash[1])}</p>')
    parts += [_waiting(snap, token), _plan(snap), _goals(snap), _next(snap),
              _sessions(snap, actor), _notices(snap, actor), "</main>"]
    return "".join(parts)


def _section(id_: str, title: str, body: str) -> str:
    return f'<section id="{id_}"><h2>{title}</h2>{body}</section>'


def _list(items: list[str], empty: str) -> str:
    if not items:
        return f'<p class="muted">{empty}</p>'
    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def waiting_gates(snap: dict[str, Any]) -> list[dict[str, Any]]:
    """The gates that wait on the viewer: those the status document's actions (made for the
    viewer) ask them to answer, open or conflicted."""
    mine = {a.get("gate") for a in snap["actions"] if a["kind"] == "answer_gate"}
    return [g for g in snap["gates"] if g["id"] in mine]


def _waiting(snap: dict[str, Any], token: str) -> str:
    gates = waiting_gates(snap)
    forms = [_gate_form(g, token) for g in gates]
    return _section("waiting", f"Waiting on you ({len(gates)})",
                    "".join(forms) or '<p class="muted">No gate waits on you.</p>')


def _gate_form(gate: dict[str, Any], token: str) -> str:
    gid = esc(gate["id"])
    conflicted = gate["state"] != "open"
    blocks = ", ".join(esc(b) for b in gate["blocks"]) or "nothing yet"
    choices = "".join(
        f'<label><input type="radio" name="decision" value="{d}"{" checked" if d == "approve" else ""}>'
        f" {d}</label> " for d in ("approve", "reject", "answer"))
    return (f'<form class="gate" method="post" action="/gate/answer" data-gate="{gid}">'
            f"<h3><code>{gid}</code> {esc(gate['question'])}</h3>"
            f'<p class="muted">asks {", ".join(esc(a) for a in gate["authority"])}; '
            f"blocks {blocks}{'; conflicted: answering again supersedes' if conflicted else ''}"
            f"</p>"
            f'<input type="hidden" name="token" value="{esc(token)}">'
            f'<input type="hidden" name="gate" value="{gid}">'
            + ('<input type="hidden" name="supersede" value="1">' if conflicted else "")
            + f"{choices}"
            f'<input type="text" name="answer" placeholder="answer (with: answer)"> '
            f'<input type="text" name="comment" placeholder="comment (optional)"> '
            f'<button type="submit" name="send" value="1">Send</button></form>')


def _plan(snap: dict[str, Any]) -> str:
    legend = "".join(f'<span class="{state}">{state}</span>' for state in graph.COLOURS)
    live = [g for g in snap["goals"] if g["state"] in ("active", "paused")]
    pictures = []
    for goal in live:
        plan = graph.plan(snap, goal=goal["id"])
        if plan.nodes:
            pictures.append(f"<h3>{esc(goal['id'])}: {esc(goal['title'])}</h3>"
                            f'<div class="plan-box">{graph.svg(plan)}</div>')
    body = (f'<p class="legend">{legend}</p>' + "".join(pictures)) if pictures else (
        '<p class="muted">No todos yet.</p>')
    return _section("plan", "Plan", body)


def _goals(snap: dict[str, Any]) -> str:
    out = []
    for goal in snap["goals"]:
        crits = []
        for c in goal["acceptance"]:
            fresh = c.get("freshness") or "unmet"
            crits.append(f'<code>{esc(c["id"])}</code> {esc(c["text"])} '
                         f'<b class="{esc(fresh)}">{esc(fresh)}</b>'
                         + (f' <span class="muted">{esc(c["why"])}</span>' if c.get("why") else "")
                         # a fresh pass with work serving it open is not met (as in status)
                         + (f' <span class="muted">work open: {esc(", ".join(c["open_work"]))}'
                            '</span>' if c.get("open_work") else ""))
        out.append(f'<h3 data-goal="{esc(goal["id"])}"><code>{esc(goal["id"])}</code> '
                   f'{esc(goal["title"])} <span class="muted">({esc(goal["state"])})</span></h3>'
                   + _list(crits, "No acceptance criteria.") + _evidence(snap, goal["id"]))
    return _section("goals", "Goals", "".join(out) or '<p class="muted">No live goals.</p>')


def _evidence(snap: dict[str, Any], goal: str) -> str:
    """The goal's latest evidence (ten at most), each with its freshness now."""
    recorded = [e for e in snap["evidence"] if e.get("goal") == goal][-10:]
    if not recorded:
        return ""
    items = [f'<code>{esc(e["id"])}</code> {esc(e["kind"])} '
             f'{esc(e.get("summary") or e.get("command") or "")} '
             + (f'<span class="muted">exit {esc(e["exit_code"])}</span> '
                if e.get("exit_code") is not None else "")
             + f'<b class="{esc(e.get("freshness") or "unknown")}">'
             f'{esc(e.get("freshness") or "unknown")}</b>' for e in recorded]
    return '<p class="muted">Evidence, newest last:</p>' + _list(items, "")


def _next(snap: dict[str, Any]) -> str:
    items = [f"<b>{esc(a['kind'])}</b>: {esc(a['reason'])}"
             + (f" <code>{esc(a['command'])}</code>" if a.get("command") else "")
             for a in snap["actions"][:10]]
    return _section("next", "Next actions", _list(items, "Nothing to do."))


def _sessions(snap: dict[str, Any], actor: str) -> str:
    out = []
    for s in snap.get("sessions", []):
        if s["state"] == "closed":
            continue
        inbox = [f"{esc(m['from'])} ({esc(m['kind'])}): {esc(m['message'])}" for m in s["inbox"]]
        out.append(f'<h3><code>{esc(s["id"])}</code> {esc(s["task"])} '
                   f'<span class="muted">({esc(s["state"])}, {esc(s["owner"])})</span></h3>'
                   + _list(inbox, "Inbox empty."))
    return _section("sessions", "Sessions", "".join(out) or '<p class="muted">No open sessions.</p>')


def _notices(snap: dict[str, Any], actor: str) -> str:
    mine = [p for p in snap["problems"] if p["actor"] == actor and not p["dismissed"]]
    items = [f"<code>{esc(p['event'])}</code> {esc(p['type'])}: {esc(p['reason'])}" for p in mine]
    return _section("notices", "Notices", _list(items, "No notices for you."))
