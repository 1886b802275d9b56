"""Agent integrations: `integration list`, `integration install|uninstall NAME` (docs/agents.md)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from memcastle.cli import render
from memcastle.cli.command_line import Invocation, app, group, pass_invocation
from memcastle.integrations import INTEGRATIONS, SCOPES

integration_app = group(
    "integration",
    app,
    "Agent integrations: the wake-up at session start, sessions mined as they go (Claude Code, Codex, Pi, OpenCode).",
)

PROJECT = click.Path(file_okay=False, path_type=Path)


def _where(function: Any) -> Any:
    function = click.option("--dry-run", is_flag=True, help="show the change, write nothing")(function)
    function = click.option("--project", type=PROJECT, default=Path("."), help="the project (--scope project)")(
        function
    )
    return click.option("--scope", type=click.Choice(SCOPES), default="user", show_default=True, help="whose")(function)


def _palace(inv: Invocation) -> str | None:
    return str(inv.palace.expanduser().absolute()) if inv.palace else None


def _endpoint(inv: Invocation) -> Any:
    """How the agents reach this palace's daemon, from its configured address."""
    from memcastle.integrations import endpoint_of

    settings = inv.settings()
    return endpoint_of(settings.server.host, settings.server.port, auth=settings.auth.enabled, palace=_palace(inv))


def _apply(inv: Invocation, name: str, changes: Sequence[Any], dry_run: bool, next_step: str | None = None) -> None:
    if not dry_run:
        for change in changes:
            if change.changed:
                change.write()
    rows = [
        {
            "file": str(c.path),
            "changed": c.changed,
            "removed": c.after is None and c.before is not None,
            "diff": c.diff(),
        }
        for c in changes
    ]
    data = {"integration": name, "dry_run": dry_run, "changes": rows, **({"next": next_step} if next_step else {})}

    def show(data: Any) -> None:
        for row in data["changes"]:
            if not row["changed"]:
                render.console.print(f"{row['file']}: nothing to change")
                continue
            sys.stdout.write(row["diff"])
            verb = "would be" if dry_run else "was"
            render.console.print(f"[dim]{row['file']} {verb} {'removed' if row['removed'] else 'written'}[/dim]")
        if data.get("next"):
            render.console.print(data["next"])

    inv.emit(data, show)


@integration_app.command("install")
@click.argument("name", type=click.Choice(INTEGRATIONS))
@_where
@pass_invocation
def integration_install(inv: Invocation, name: str, scope: str, project: Path, dry_run: bool) -> None:
    """Install MemCastle into an agent and show each change: Claude Code and Codex CLI get hooks merged into their
    settings, Pi an extension, OpenCode a plugin; Claude Code, Codex and OpenCode get MemCastle's MCP server in their
    configuration (Pi's extension registers the tools itself); Claude Code and Pi also the `memcastle` agent skill.
    At session start the agent gets its wake-up bundle and its model the memory tools; as a session goes, it is
    mined. Running it again changes nothing."""
    from memcastle.integrations import install
    from memcastle.integrations.registration import answers

    endpoint = _endpoint(inv)
    reminder = inv.settings().hooks.reminder
    changes = install(name, scope, project.resolve(), palace=_palace(inv), endpoint=endpoint, reminder=reminder)
    # The agent reaches its tools only through a running daemon: say so now rather than at its first session.
    silent = answers(endpoint.url) if endpoint.url and not dry_run else None
    next_step = (
        f"next: start the daemon (`memcastle daemon start`) — {name}'s tools are at {endpoint.url}, where nothing "
        "answers yet; `memcastle integration status` checks it"
        if silent is not None and "no answer" in silent
        else None
    )
    _apply(inv, name, changes, dry_run, next_step)


@integration_app.command("uninstall")
@click.argument("name", type=click.Choice(INTEGRATIONS))
@_where
@pass_invocation
def integration_uninstall(inv: Invocation, name: str, scope: str, project: Path, dry_run: bool) -> None:
    """Remove exactly what installing wrote (also `integration remove`): MemCastle's hooks and MCP server entry
    (every other hook, server and setting stays; a file nothing else changed in is given back byte for byte) and its
    own files (a file of the same name that is not MemCastle's stays)."""
    from memcastle.integrations import uninstall

    _apply(inv, name, uninstall(name, scope, project.resolve()), dry_run)


@integration_app.command("list")
@click.option("--project", type=PROJECT, default=Path("."), help="the project to look in")
@pass_invocation
def integration_list(inv: Invocation, project: Path) -> None:
    """Every integration, in both scopes: what it installs, where, and whether it is there — `installed`,
    `outdated` (written by another version or for another palace: install again), `missing` or `foreign` (a file of
    that name that is not MemCastle's)."""
    from memcastle.integrations import status

    endpoint = _endpoint(inv)
    settings = inv.settings()
    rows = [
        {
            "integration": name,
            "scope": scope,
            "kind": part.kind,
            "file": str(part.path),
            "state": part.state,
            "events": list(part.events),
        }
        for name in INTEGRATIONS
        for scope in SCOPES
        for part in status(
            name, scope, project.resolve(), palace=_palace(inv), endpoint=endpoint, reminder=settings.hooks.reminder
        )
    ]
    inv.emit(
        {"integrations": rows},
        lambda data: render.table(
            "agent integrations",
            ["integration", "scope", "part", "state", "file"],
            [(r["integration"], r["scope"], r["kind"], r["state"], r["file"]) for r in data["integrations"]],
        ),
    )


@integration_app.command("status")
@click.argument("names", nargs=-1, type=click.Choice(INTEGRATIONS))
@click.option("--scope", type=click.Choice(SCOPES), default="user", show_default=True, help="whose")
@click.option("--project", type=PROJECT, default=Path("."), help="the project (--scope project)")
@pass_invocation
def integration_status(inv: Invocation, names: tuple[str, ...], scope: str, project: Path) -> None:
    """Per agent (every one unless named): each part and its state, what its model's MCP server is registered as,
    and whether that server answers now (its tools listed, with $MEMCASTLE_AUTH_TOKEN when one is needed)."""
    import os

    from memcastle.integrations import status
    from memcastle.integrations.registration import TOKEN_VARIABLE, answers

    endpoint = _endpoint(inv)
    token = os.environ.get(TOKEN_VARIABLE) or inv.settings().auth.token or None
    rows = []
    for name in names or INTEGRATIONS:
        parts = status(
            name,
            scope,
            project.resolve(),
            palace=_palace(inv),
            endpoint=endpoint,
            reminder=inv.settings().hooks.reminder,
        )
        tools = next((p for p in parts if p.kind in ("mcp", "extension")), None)
        url = (tools.mcp or {}).get("url") if tools is not None and tools.kind == "mcp" else endpoint.url
        present = tools is not None and tools.state in ("installed", "outdated")
        problem = answers(url, token) if present else "not registered"
        rows.append(
            {
                "integration": name,
                "scope": scope,
                "parts": {p.kind: p.state for p in parts},
                "mcp": tools.mcp if tools is not None and tools.kind == "mcp" else {"url": url},
                "answers": problem is None,
                "why": problem,
            }
        )

    def show(data: Any) -> None:
        render.table(
            f"agent integrations ({scope} scope)",
            ["integration", "parts", "tools at", "answers"],
            [
                (
                    r["integration"],
                    ", ".join(f"{kind} {state}" for kind, state in r["parts"].items()),
                    ((r["mcp"] or {}).get("url") or "the stdio bridge") if r["why"] != "not registered" else "—",
                    "yes" if r["answers"] else f"no: {r['why']}",
                )
                for r in data["integrations"]
            ],
        )

    inv.emit({"integrations": rows}, show)


integration_app.add_command(integration_uninstall, "remove")
