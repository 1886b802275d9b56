"""Out-of-process connectors: add one (after consent to what its manifest asks), list, remove."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from memcastle.cli import render
from memcastle.cli.command_line import Invocation, app, group, pass_invocation

connector_app = group("connector", app, "Out-of-process connectors: programs in any language, added with consent.")


def _book(inv: Invocation) -> Any:
    from memcastle.app import consent_file
    from memcastle.connectors.consent import ConsentBook

    return ConsentBook(consent_file(inv.settings()))


@connector_app.command("add")
@click.argument("manifest", type=click.Path(exists=True, path_type=Path))
@click.option("--yes", is_flag=True, help="agree without being asked (the permissions are printed all the same)")
@pass_invocation
def connector_add(inv: Invocation, manifest: Path, yes: bool) -> None:
    """Add the connector MANIFEST (a connector.toml, or its folder) declares, once you agree to what it may do:
    the program it runs, the folders it may read, the hosts it may reach, the metadata it files. A change to the
    manifest or the program later needs this again. The daemon loads it at its next start."""
    from memcastle.connectors.external import read_manifest
    from memcastle.errors import InvalidRequest

    declared = read_manifest(manifest)
    click.echo(f"connector {declared.name}: {declared.description}", err=True)
    for line in declared.permissions():
        click.echo(f"  - {line}", err=True)
    if not yes and not click.confirm("Add it with these permissions?", default=False, err=True):
        raise InvalidRequest("not added: consent was not given", field="yes")
    consent = _book(inv).add(declared)
    data = {"name": consent.name, "manifest": consent.manifest, "permissions": list(consent.permissions),
            "fingerprint": consent.fingerprint, "added": True}  # fmt: skip
    inv.emit(
        data, lambda data: click.echo(f"added {data['name']}; restart the daemon to use it: memcastle daemon restart")
    )


@connector_app.command("list")
@pass_invocation
def connector_list(inv: Invocation) -> None:
    """The out-of-process connectors added, with what they were allowed."""
    consents = _book(inv).consents()
    data = {"connectors": [{"name": c.name, "manifest": c.manifest, "permissions": list(c.permissions),
                            "consented_at": c.consented_at} for c in consents]}  # fmt: skip

    def show(data: Any) -> None:
        render.table(
            "connectors",
            ["name", "manifest", "allowed"],
            [(c["name"], c["manifest"], "; ".join(c["permissions"])) for c in data["connectors"]],
        )

    inv.emit(data, show)


@connector_app.command("remove")
@click.argument("name")
@pass_invocation
def connector_remove(inv: Invocation, name: str) -> None:
    """Withdraw the consent to connector NAME (its drawers stay; memcastle forget source erases them)."""
    _book(inv).remove(name)
    inv.emit({"name": name, "removed": True}, lambda data: click.echo(f"removed {name}"))
