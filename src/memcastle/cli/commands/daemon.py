"""The daemon: serve, status, shutdown, migrate, the MCP stdio bridge and bearer tokens."""

from __future__ import annotations

import os
from typing import Any

import click

from memcastle.cli import render
from memcastle.cli.command_line import EXIT_ERROR, Invocation, app, group, pass_invocation
from memcastle.modes import MODES

auth_app = group("auth", app, "Authentication: bearer tokens of the palace.")
token_app = group("token", auth_app, "Create, list and revoke bearer tokens (stored only as digests).")


@app.command()
@click.option("--host", help="address to bind (default 127.0.0.1)")
@click.option("--port", type=int, help="port to bind; 0 picks a free one (default 8420)")
@pass_invocation
def serve(inv: Invocation, host: str | None, port: int | None) -> None:
    """Run the daemon for the palace in the foreground."""
    # Before numpy loads OpenBLAS: a threaded server runs many small matrix-vector products at once, one BLAS
    # thread each (docs/adr/0015-search-at-scale.md); the environment still decides.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from memcastle.daemon import serve as run_daemon

    run_daemon(inv.settings(**{"server.host": host, "server.port": port}))


@app.command()
@click.option("--to", help="postgresql://user:password@host:port/database — an empty palace")
@click.option("--status", "schema", is_flag=True, help="show the palace's schema version and pending migrations")
@click.option("--check", is_flag=True, help="exit 1 when a migration is pending, 0 when none is")
@pass_invocation
def migrate(inv: Invocation, to: str | None, schema: bool, check: bool) -> None:
    """Copy this embedded (SQLite) palace into PostgreSQL (--to). Runs here, not through the daemon: stop the
    palace's daemon first. The target must be empty; the copy is one transaction, so a failed copy leaves it empty.
    With --status or --check, the running daemon's schema instead (it migrates when it starts)."""
    if schema or check:
        _schema(inv, check)
        return
    if to is None:
        raise click.UsageError("give --to URL to copy the palace, or --status / --check for its schema")
    from rich.markup import escape

    from memcastle.app import migrate_palace

    settings = inv.settings()

    def progress(table: str, rows: int, done: bool) -> None:
        if done and not inv.as_json:
            render.console.print(f"  {table:16} {rows:>9} rows")

    if not inv.as_json:
        render.console.print(f"copying {escape(str(settings.palace))} into PostgreSQL …")
    report = migrate_palace(settings, to, progress=progress)

    def show(data: Any) -> None:
        render.console.print(
            f"[green]copied[/green] {report.rows} rows in {report.seconds:.1f} s into {escape(report.target)}"
        )
        render.console.print(
            "[dim]serve it from there: set store.url (config.toml) or MEMCASTLE_STORE_URL to that "
            "URL, then memcastle serve. Jobs were not copied; the SQLite palace is left as it was.[/dim]"
        )

    inv.emit(report.to_json(), show)


def _schema(inv: Invocation, check: bool) -> None:
    """The daemon's schema version, the latest this code ships, and the migrations pending (`GET /api/status`)."""
    schema = inv.client().get("/status")["schema"]
    pending = schema["pending_migrations"]

    def show(data: Any) -> None:
        said = f"{len(pending)} pending: {', '.join(pending)}" if pending else "none pending"
        render.console.print(f"schema version {data['version']} of {data['latest']}; {said}")

    inv.emit(schema, show)
    if check and pending:
        raise SystemExit(1)


@app.command()
@click.option("--acknowledge", is_flag=True, help="first clear the notices of what the daemon did on its own")
@click.pass_context
def status(ctx: click.Context, acknowledge: bool) -> None:
    """Is the daemon running and healthy? Exit 0 healthy, 1 degraded, 3 not running."""
    inv = ctx.find_object(Invocation)
    assert inv is not None
    if acknowledge:
        inv.client().post("/status/acknowledge", {})
    data = inv.client().get("/status")
    degraded = bool(data.get("warnings"))

    def show(data: Any) -> None:
        # A few styled lines, by click: the most frequent command does not pay for loading rich (ADR 0014).
        health = click.style("degraded", fg="yellow") if degraded else click.style("healthy", fg="green")
        jobs = data.get("jobs", {})
        lines = [
            f"{click.style('MemCastle ' + data['version'], bold=True)} — {health}",
            *_process_lines(data.get("daemon"), data.get("schema")),
            f"palace   {data['palace']}",
            f"store    {data['store']['backend']} ({data['store']['location']})",
            f"drawers  {data['drawers']} current, {data['drawers_total']} with history",
            "jobs     " + ", ".join(f"{k} {v}" for k, v in jobs.items() if v),
        ]
        embeddings = data.get("embeddings")
        if embeddings:
            lines.append(
                f"embed    {embeddings.get('provider')} {embeddings.get('model') or ''} "
                f"dim {embeddings.get('dimension')} · pending {embeddings.get('pending')}"
                + render.backlog_text(embeddings)
            )
            index = embeddings.get("index")
            if index:
                lines.append(f"vectors  {render.index_text(index)}")
        for warning in data.get("warnings", []):
            lines.append(f"{click.style('warning', fg='yellow')} {warning}")
        click.echo("\n".join(lines))

    inv.emit(data, show)
    ctx.exit(EXIT_ERROR if degraded else 0)


def _process_lines(daemon: dict[str, Any] | None, schema: dict[str, Any] | None) -> list[str]:
    lines = []
    if daemon and daemon.get("pid"):
        uptime = render.duration_text(daemon["uptime_seconds"] or 0)
        auth = "on" if daemon["auth"] else "off"
        lines.append(
            f"daemon   pid {daemon['pid']} at {daemon['address']}, up {uptime} · mode {daemon['mode']} · auth {auth}"
        )
    if schema:
        pending = schema["pending_migrations"]
        state = f"{len(pending)} migration(s) pending: {', '.join(pending)}" if pending else "up to date"
        lines.append(f"schema   version {schema['version']} of {schema['latest']} ({state})")
    return lines


@app.command()
@pass_invocation
def shutdown(inv: Invocation) -> None:
    """Ask the daemon to drain its jobs and exit."""
    data = inv.client().post("/shutdown")
    inv.emit(data, lambda data: render.console.print(data["message"]))


@app.command("mcp")
@click.option("--start", is_flag=True, help="start the palace's daemon in the background if none runs, and wait for it")
@click.option(
    "--tools",
    metavar="PROFILE|NAMES",
    default=None,
    help="the tools the session lists: a profile (core, full) or tool names, comma-separated; default the "
    "daemon's mcp.tools (unlisted tools still answer by name)",
)
@pass_invocation
def mcp_bridge(inv: Invocation, start: bool, tools: str | None) -> None:
    """Speak MCP on standard input/output and forward every request to the palace's daemon (for MCP clients that
    only spawn processes); --mode is sent as the X-MemCastle-Mode header, --tools as X-MemCastle-Tools, auth.token
    as the bearer token."""
    from memcastle.mcp.bridge import locate_daemon, run_bridge, start_daemon

    settings = inv.settings()
    if start:
        start_daemon(settings.palace, config_file=inv.config)
    run_bridge(
        lambda: locate_daemon(settings.palace),
        mode=settings.mode,
        token=settings.auth.token or None,
        tools=tools,
    )


@token_app.command("create")
@click.argument("name")
@click.option(
    "--mode",
    "token_mode",
    type=click.Choice(MODES),
    default="full",
    show_default=True,
    help="the most a client holding the token may do: a ceiling, whatever mode it asks for",
)
@click.option("--read", "read", help="the only wings (or wing/room) it may read, comma-separated (default: all)")
@click.option("--write", "write", help="the only wings (or wing/room) it may write to, comma-separated (default: all)")
@click.option("--tools", "tools", help="the only MCP tools it may list and call, comma-separated (default: all)")
@click.option("--routes", "routes", help="the only REST route groups (API tags; web) it may use (default: all)")
@pass_invocation
def token_create(
    inv: Invocation,
    name: str,
    token_mode: str,
    read: str | None,
    write: str | None,
    tools: str | None,
    routes: str | None,
) -> None:
    """Create a bearer token for this palace, NAME saying what it is for; it is printed once and stored only as a
    digest. --read and --write limit it to wings: a client holding it sees a palace holding only those."""
    from memcastle.runtime.tokens import TokenStore, known_routes

    store = TokenStore(inv.settings().palace)
    from memcastle.mcp.tools.base import known_tools

    allowed = known_tools(_wing_list(tools), field="--tools")
    groups = known_routes(_wing_list(routes), field="--routes")
    token = store.create(
        name, mode=token_mode, read=_wing_list(read), write=_wing_list(write), tools=allowed, routes=groups
    )
    record = next(r for r in store.records() if r.name == name.strip())

    def show(data: Any) -> None:
        limited = "" if token_mode == "full" else f" (mode {token_mode})"
        if not record.visibility.is_whole:
            limited += f", {record.visibility.describe()}"
        if record.tools is not None:
            limited += f", MCP tools {', '.join(record.tools)}"
        if record.routes is not None:
            limited += f", routes {', '.join(record.routes)}"
        render.console.print(f"token {name!r}{limited} created; it is shown only this once:\n\n  {token}\n")
        render.console.print(
            "[dim]clients send it as Authorization: Bearer TOKEN; the CLI reads MEMCASTLE_AUTH_TOKEN. "
            "Enable checking with auth.enabled = true and restart the daemon.[/dim]"
        )

    inv.emit({**record.to_json(), "token": token}, show)


def _wing_list(value: str | None) -> list[str] | None:
    return None if value is None else [w.strip() for w in value.split(",") if w.strip()]


@token_app.command("list")
@pass_invocation
def token_list(inv: Invocation) -> None:
    """The tokens of this palace: names and when they were created (the tokens themselves are never stored)."""
    from memcastle.runtime.tokens import TokenStore

    records = TokenStore(inv.settings().palace).records()
    data = {"tokens": [r.to_json() for r in records]}

    def show(_: Any) -> None:
        if not records:
            render.console.print("no tokens; create one with: memcastle auth token create NAME")
        for record in records:
            scope = "" if record.visibility.is_whole else f"  {record.visibility.describe()}"
            render.console.print(f"{record.name}  {record.mode}{scope}  [dim]created {record.created_at}[/dim]")

    inv.emit(data, show)


@token_app.command("revoke")
@click.argument("name")
@pass_invocation
def token_revoke(inv: Invocation, name: str) -> None:
    """Revoke the token NAME: a running daemon refuses it from the next request on."""
    from memcastle.runtime.tokens import TokenStore

    TokenStore(inv.settings().palace).revoke(name)
    inv.emit({"revoked": name}, lambda _: render.console.print(f"token {name!r} revoked"))
