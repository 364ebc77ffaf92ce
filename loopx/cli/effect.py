"""`git loopx effect ...`: external writes, intended, then confirmed or failed."""

from __future__ import annotations

import click

from loopx.cli.app import App, declared
from loopx.model.inert import line
from loopx.ops import catalog
from loopx.ops.declare import Values


@click.group()
def effect() -> None:
    """External writes: intend before the call, confirm or fail after."""


@effect.command("intend")
@declared(catalog.find("effect intend"))
def effect_intend(app: App, v: Values) -> None:
    event = app.call(catalog.find("effect intend"), v)
    app.emit_event(event, f"intend {v.action} on {v.target} as effect {event.data.id}")


@effect.command("confirm")
@declared(catalog.find("effect confirm"))
def effect_confirm(app: App, v: Values) -> None:
    event = app.call(catalog.find("effect confirm"), v)
    app.emit_event(event, f"confirmed effect {event.data.id}")


@effect.command("fail")
@declared(catalog.find("effect fail"))
def effect_fail(app: App, v: Values) -> None:
    event = app.call(catalog.find("effect fail"), v)
    app.emit_event(event, f"effect {event.data.id} failed")


@effect.command("list")
@declared(catalog.find("effect list"))
def effect_list(app: App, v: Values) -> None:
    found = app.call(catalog.find("effect list"), v)
    app.emit(found, lambda: "\n".join(
        f"{e.id:<12} {e.state:<13} {e.action} {e.target}" for e in found)
        or "no effects")


@effect.command("readback")
@declared(catalog.find("effect readback"))
def effect_readback(app: App, v: Values) -> None:
    found = app.call(catalog.find("effect readback"), v)
    app.emit(found, lambda: (
        f"confirmed: {line(found.receipt or '')} ({line(found.evidence)})"
        if found.state == "confirmed" else f"still indeterminate: {line(found.evidence)}"))


@effect.command("comment")
@declared(catalog.find("effect comment"))
def effect_comment(app: App, v: Values) -> None:
    posted = app.call(catalog.find("effect comment"), v)
    recorded = f"  [effect {posted.effect}]" if posted.effect else ""
    app.emit(posted, f"{line(posted.url)}{recorded}")
