"""`git loopx config|signer ...`: ledger-wide settings, and the keys authority acts are
signed with."""

from __future__ import annotations


import click

from loopx.cli import render
from loopx.cli.app import App, declared
from loopx.model import plural, typed
from loopx.ops import catalog
from loopx.ops.declare import Values


@click.group()
def config() -> None:
    """Ledger-wide settings (roles, lease length, session slots), stored as events."""


@config.command("set")
@declared(catalog.find("config set"))
def config_set(app: App, v: Values) -> None:
    event = app.call(catalog.find("config set"), v)
    app.emit_event(event, "updated ledger config")


@config.command("show")
@declared(catalog.find("config show"))
def config_show(app: App, v: Values) -> None:
    effective = app.call(catalog.find("config show"), v)
    shown = {k: v for k, v in typed.fields_of(effective).items() if k != "allowed_signers"}
    if effective.allowed_signers:
        shown["allowed_signers"] = plural.counted(len(effective.allowed_signers.splitlines()), 'line')
    app.emit(effective, lambda: render.fields_text(shown))


@click.group()
def signer() -> None:
    """The ssh keys that sign authority acts (docs/security.md)."""


@signer.command("add")
@declared(catalog.find("signer add"))
def signer_add(app: App, v: Values) -> None:
    done = app.call(catalog.find("signer add"), v)
    said = f"listed {done['fingerprint']} for {v.identity}"
    if done["first"]:
        said += ("; trusted on first use (nothing vouched for this key: check it is theirs). "
                 "Signing is on: authority acts now count only signed by a listed key")
    app.emit_event(done["event"], said)


@signer.command("remove")
@declared(catalog.find("signer remove"))
def signer_remove(app: App, v: Values) -> None:
    event = app.call(catalog.find("signer remove"), v)
    app.emit_event(event, f"removed the keys of {v.identity}")


@signer.command("list")
@declared(catalog.find("signer list"))
def signer_list(app: App, v: Values) -> None:
    found = app.call(catalog.find("signer list"), v)
    app.emit(found, lambda: "\n".join(
        f"{s['identity']}  {s['key'].split()[0]}  {s['fingerprint']}" for s in found)
        or "no signers listed (git loopx signer add IDENTITY --key KEY.pub)")
