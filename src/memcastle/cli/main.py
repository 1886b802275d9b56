"""`memcastle` commands: parse, call the daemon, render. Errors become a message, a hint and an exit code."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from memcastle.cli import render
from memcastle.cli.client import DaemonClient
from memcastle.config import Settings, load_settings
from memcastle.errors import DaemonNotRunning, InvalidRequest, MemCastleError
from memcastle.modes import MODES

EXIT_ERROR = 1
EXIT_NO_DAEMON = 3

app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                  pretty_exceptions_enable=False,
                  help="MemCastle: a local-first memory server for AI agents.")
drawer_app = typer.Typer(no_args_is_help=True, help="Drawers: show, history, supersede, list.")
wing_app = typer.Typer(no_args_is_help=True, help="Wings of the palace.")
room_app = typer.Typer(no_args_is_help=True, help="Rooms of a wing.")
job_app = typer.Typer(no_args_is_help=True, help="Background jobs: list, show and control them.")
config_app = typer.Typer(no_args_is_help=True, help="Configuration.")
miner_app = typer.Typer(no_args_is_help=True, help="Named miners declared with [[miners]] in config.toml.")
diary_app = typer.Typer(no_args_is_help=True, help="An agent's diary: write and read entries.")
auth_app = typer.Typer(no_args_is_help=True, help="Authentication: bearer tokens of the palace.")
token_app = typer.Typer(no_args_is_help=True, help="Create bearer tokens (stored only as digests).")
auth_app.add_typer(token_app, name="token")
fact_app = typer.Typer(no_args_is_help=True, help="Facts: list, history, and explicit decisions.")
entity_app = typer.Typer(no_args_is_help=True, help="Entities of the knowledge graph.")
preferences_app = typer.Typer(no_args_is_help=True, help="Source preferences: show, check, explain.")
app.add_typer(drawer_app, name="drawer")
app.add_typer(wing_app, name="wing")
app.add_typer(room_app, name="room")
app.add_typer(job_app, name="job")
app.add_typer(config_app, name="config")
app.add_typer(miner_app, name="miner")
app.add_typer(diary_app, name="diary")
app.add_typer(preferences_app, name="preferences")
app.add_typer(fact_app, name="fact")
app.add_typer(auth_app, name="auth")
app.add_typer(entity_app, name="entity")


@dataclass
class Invocation:
    """Global options, resolved into settings on first use."""

    palace: Path | None
    config: Path | None
    json: bool
    mode: str | None
    _settings: Settings | None = None

    def settings(self, **flags: Any) -> Settings:
        if self._settings is None or flags:
            base = {"palace": str(self.palace) if self.palace else None, "mode": self.mode}
            self._settings = load_settings(flags={**base, **flags}, config_file=self.config)
        return self._settings

    def client(self) -> DaemonClient:
        return DaemonClient(self.settings())

    @property
    def as_json(self) -> bool:
        return render.wants_json(self.json)


def _inv(ctx: typer.Context) -> Invocation:
    return ctx.obj  # type: ignore[no-any-return]


@app.callback()
def main(
    ctx: typer.Context,
    palace: Annotated[Path | None, typer.Option("--palace", help="palace directory", envvar=None)] = None,
    config: Annotated[Path | None, typer.Option("--config", help="config file to read instead of the XDG one")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="print JSON even on a terminal")] = False,
    mode: Annotated[str | None, typer.Option("--mode", help="memory mode: full, read_only, disabled")] = None,
) -> None:
    if mode is not None and mode not in MODES:
        raise InvalidRequest(f"--mode must be one of {', '.join(MODES)}", field="mode")
    ctx.obj = Invocation(palace=palace, config=config, json=json_output, mode=mode)


# --- daemon ---------------------------------------------------------------------------------------


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[str | None, typer.Option(help="address to bind (default 127.0.0.1)")] = None,
    port: Annotated[int | None, typer.Option(help="port to bind; 0 picks a free one (default 8420)")] = None,
) -> None:
    """Run the daemon for the palace in the foreground."""
    from memcastle.daemon import serve as run_daemon

    run_daemon(_inv(ctx).settings(**{"server.host": host, "server.port": port}))


@app.command()
def migrate(
    ctx: typer.Context,
    to: Annotated[str, typer.Option("--to", help="postgresql://user:password@host:port/database — an empty palace")],
) -> None:
    """Copy this embedded (SQLite) palace into PostgreSQL. Runs here, not through the daemon: stop the palace's
    daemon first. The target must be empty; the copy is one transaction, so a failed copy leaves it empty."""
    from memcastle.app import migrate_palace

    inv = _inv(ctx)
    settings = inv.settings()

    def progress(table: str, rows: int, done: bool) -> None:
        if done and not inv.as_json:
            render.console.print(f"  {table:16} {rows:>9} rows")

    if not inv.as_json:
        render.console.print(f"copying {escape(str(settings.palace))} into PostgreSQL …")
    report = migrate_palace(settings, to, progress=progress)
    if inv.as_json:
        render.print_json(report.to_json())
        return
    render.console.print(f"[green]copied[/green] {report.rows} rows in {report.seconds:.1f} s into "
                         f"{escape(report.target)}")
    render.console.print("[dim]serve it from there: set store.url (config.toml) or MEMCASTLE_STORE_URL to that "
                         "URL, then memcastle serve. Jobs were not copied; the SQLite palace is left as it was.[/dim]")


@app.command()
def status(ctx: typer.Context) -> None:
    """Is the daemon running and healthy? Exit 0 healthy, 1 degraded, 3 not running."""
    inv = _inv(ctx)
    data = inv.client().get("/status")
    degraded = bool(data.get("warnings"))
    if inv.as_json:
        render.print_json(data)
    else:
        jobs = data.get("jobs", {})
        lines = [
            f"[bold]MemCastle {data['version']}[/bold] — {'[yellow]degraded[/yellow]' if degraded else '[green]healthy[/green]'}",
            f"palace   {data['palace']}",
            f"store    {data['store']['backend']} ({data['store']['location']})",
            f"drawers  {data['drawers']} current, {data['drawers_total']} with history",
            "jobs     " + ", ".join(f"{k} {v}" for k, v in jobs.items() if v),
        ]
        embeddings = data.get("embeddings")
        if embeddings:
            lines.append(f"embed    {embeddings.get('provider')} {embeddings.get('model') or ''} "
                         f"dim {embeddings.get('dimension')} · pending {embeddings.get('pending')}")
        for warning in data.get("warnings", []):
            lines.append(f"[yellow]warning[/yellow] {warning}")
        render.console.print("\n".join(lines))
    raise typer.Exit(EXIT_ERROR if degraded else 0)


@app.command()
def shutdown(ctx: typer.Context) -> None:
    """Ask the daemon to drain its jobs and exit."""
    inv = _inv(ctx)
    data = inv.client().post("/shutdown")
    render.print_json(data) if inv.as_json else render.console.print(data["message"])


# --- drawers --------------------------------------------------------------------------------------


def _read_content(content: str) -> str:
    return sys.stdin.read() if content == "-" else content


@app.command()
def note(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="the note text, or - to read standard input")],
    wing: Annotated[str | None, typer.Option(help="wing (default: the project's, else 'default')")] = None,
    room: Annotated[str | None, typer.Option(help="room (default: the project's, else 'notes')")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="a tag; repeat for more")] = None,
    agent: Annotated[str | None, typer.Option(help="who is writing (an agent identity)")] = None,
    name: Annotated[str | None, typer.Option(help="a name, unique among the room's current drawers")] = None,
) -> None:
    """Save a note as a drawer."""
    from memcastle.connectors.project import find_project_settings

    inv = _inv(ctx)
    project = find_project_settings(Path.cwd())
    body = {"content": _read_content(content), "wing": wing or (project.wing if project else None),
            "room": room or (project.room if project else None), "tags": tag or [], "agent": agent, "name": name}
    data = inv.client().post("/notes", body)
    if inv.as_json:
        render.print_json(data)
    else:
        verb = "saved" if data["created"] else "already stored (exact copy)"
        render.console.print(f"{verb}: {data['drawer']['id']} in {data['drawer']['wing']}/{data['drawer']['room']}")


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="what to look for")],
    limit: Annotated[int, typer.Option(help="how many hits (1-200)")] = 10,
    wing: Annotated[str | None, typer.Option(help="only this wing")] = None,
    room: Annotated[str | None, typer.Option(help="only this room")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="required tag; repeat for more")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="source kind: file, note, transcript, commit, …")] = None,
    connector: Annotated[str | None, typer.Option(help="only drawers mined by this connector")] = None,
    ranking: Annotated[str, typer.Option(help="auto, lexical, semantic or hybrid")] = "auto",
    as_of: Annotated[str | None, typer.Option("--as-of", help="what was current at this instant")] = None,
    from_: Annotated[str | None, typer.Option("--from", help="window start (with --until)")] = None,
    until: Annotated[str | None, typer.Option(help="window end (with --from)")] = None,
    historical: Annotated[bool, typer.Option("--historical", help="include closed versions")] = False,
    expand: Annotated[bool, typer.Option(help="add drawers related through the knowledge graph")] = False,
    preferences: Annotated[str, typer.Option(help="on, or off to see the ranking without source preferences")] = "on",
) -> None:
    """Search the palace: evidence with provenance and the signals that ranked it."""
    inv = _inv(ctx)
    body = {"query": query, "limit": limit, "wing": wing, "room": room, "tags": tag or [], "source_kind": kind,
            "connector": connector, "ranking": ranking, "as_of": as_of, "from": from_, "until": until,
            "include_historical": historical, "expand": expand, "preferences": preferences}
    data = inv.client().post("/search", {k: v for k, v in body.items() if v is not None})
    render.print_json(data) if inv.as_json else render.show_hits(data)


@app.command()
def recall(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="what to remember")],
    limit: Annotated[int, typer.Option(help="how many hits (1-200)")] = 10,
    wing: Annotated[str | None, typer.Option(help="only this wing")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="required tag; repeat for more")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="source kind")] = None,
    connector: Annotated[str | None, typer.Option(help="only drawers mined by this connector")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="what was current at this instant")] = None,
    historical: Annotated[bool, typer.Option("--historical", help="include closed versions")] = False,
) -> None:
    """Search a whole wing (no room scoping): the agent-facing search."""
    inv = _inv(ctx)
    body = {"query": query, "limit": limit, "wing": wing, "tags": tag or [], "source_kind": kind,
            "connector": connector, "as_of": as_of, "include_historical": historical}
    data = inv.client().post("/recall", {k: v for k, v in body.items() if v is not None})
    render.print_json(data) if inv.as_json else render.show_hits(data)


@app.command("wake-up")
def wake_up(
    ctx: typer.Context,
    agent: Annotated[str, typer.Option(help="the agent's identity")],
    wing: Annotated[str | None, typer.Option(help="only this wing")] = None,
    max_items: Annotated[int, typer.Option("--max-items", help="at most this many drawers")] = 10,
    max_bytes: Annotated[int, typer.Option("--max-bytes", help="at most this many bytes of content")] = 8192,
) -> None:
    """The agent's latest diary entry and the most recent checkpoints, within a budget."""
    inv = _inv(ctx)
    data = inv.client().get("/wake-up", agent=agent, wing=wing, max_items=max_items, max_bytes=max_bytes)
    if inv.as_json:
        render.print_json(data)
        return
    for drawer in data["diary"] + data["checkpoints"]:
        render.show_drawer(drawer)
    render.console.print(f"[dim]{data['bytes']} bytes; {data['omitted']} drawer(s) left out by the budget[/dim]")


@diary_app.command("write")
def diary_write(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="the entry, or - for standard input")],
    agent: Annotated[str, typer.Option(help="the agent's identity")],
    wing: Annotated[str | None, typer.Option(help="wing (default 'default')")] = None,
) -> None:
    """Write a diary entry for an agent."""
    inv = _inv(ctx)
    data = inv.client().post("/diary", {"agent": agent, "content": _read_content(content), "wing": wing})
    render.print_json(data) if inv.as_json else render.console.print(f"written: {data['drawer']['id']}")


@diary_app.command("read")
def diary_read(
    ctx: typer.Context,
    agent: Annotated[str, typer.Option(help="the agent's identity")],
    wing: Annotated[str | None, typer.Option(help="only this wing")] = None,
    limit: Annotated[int, typer.Option(help="how many entries, newest first")] = 10,
) -> None:
    """Read an agent's diary, newest first."""
    inv = _inv(ctx)
    data = inv.client().get("/diary", agent=agent, wing=wing, limit=limit)
    if inv.as_json:
        render.print_json(data)
        return
    for drawer in data["entries"]:
        render.show_drawer(drawer)


@app.command()
def embed(ctx: typer.Context, wait: Annotated[bool, typer.Option(help="follow the job to its end")] = False) -> None:
    """Fill missing embeddings in the background (joins a queued sweep)."""
    _request_sweep(_inv(ctx), "/embed", wait)


def _request_sweep(inv: Invocation, path: str, wait: bool) -> None:
    """Queue a background sweep (or join the queued one); follow it when asked."""
    data = inv.client().post(path)
    job = data.get("job")
    if job is None:
        render.print_json(data) if inv.as_json else render.console.print(data["message"])
        return
    if wait:
        job = wait_for_job(inv, job)
    render.print_json({"job": job}) if inv.as_json else render.show_job(job)


@drawer_app.command("show")
def drawer_show(ctx: typer.Context, drawer_id: str) -> None:
    """Show one drawer verbatim with its provenance."""
    inv = _inv(ctx)
    data = inv.client().get(f"/drawers/{drawer_id}")
    render.print_json(data) if inv.as_json else render.show_drawer(data)


@drawer_app.command("history")
def drawer_history(ctx: typer.Context, drawer_id: str) -> None:
    """Every version of a drawer, oldest first."""
    inv = _inv(ctx)
    data = inv.client().get(f"/drawers/{drawer_id}/history")
    if inv.as_json:
        render.print_json(data)
        return
    for version in data["versions"]:
        render.show_drawer(version)


@drawer_app.command("supersede")
def drawer_supersede(
    ctx: typer.Context,
    drawer_id: str,
    content: Annotated[str, typer.Argument(help="the replacement text, or - for standard input")],
    reason: Annotated[str | None, typer.Option(help="why, kept in the replacement's provenance")] = None,
) -> None:
    """Replace a drawer: the old version closes, the new one opens, both stay linked."""
    inv = _inv(ctx)
    body = {"content": _read_content(content), **({"reason": reason} if reason is not None else {})}
    data = inv.client().post(f"/drawers/{drawer_id}/supersede", body)
    render.print_json(data) if inv.as_json else render.show_drawer(data)


@drawer_app.command("list")
def drawer_list(
    ctx: typer.Context,
    wing: Annotated[str | None, typer.Option(help="only this wing")] = None,
    room: Annotated[str | None, typer.Option(help="only this room")] = None,
    limit: Annotated[int, typer.Option(help="page size (1-200)")] = 50,
    after: Annotated[str | None, typer.Option(help="continue after this drawer id")] = None,
) -> None:
    """List current drawers, oldest first, a page at a time."""
    inv = _inv(ctx)
    data = inv.client().get("/drawers", wing=wing, room=room, limit=limit, after=after)
    if inv.as_json:
        render.print_json(data)
        return
    render.table("drawers", ["id", "wing/room", "name", "text"], [
        (d["id"], f"{d['wing']}/{d['room']}", d.get("name"), d["content"][:60].replace("\n", " "))
        for d in data["drawers"]
    ])
    if data.get("next_after"):
        render.console.print(f"[dim]more: --after {data['next_after']}[/dim]")


@wing_app.command("list")
def wing_list(ctx: typer.Context) -> None:
    """List the palace's wings."""
    inv = _inv(ctx)
    data = inv.client().get("/wings")
    if inv.as_json:
        render.print_json(data)
    else:
        render.table("wings", ["wing", "drawers", "created"], [(w["name"], w["drawers"], w["created_at"])
                                                               for w in data["wings"]])


@room_app.command("list")
def room_list(ctx: typer.Context, wing: str) -> None:
    """List the rooms of a wing."""
    inv = _inv(ctx)
    data = inv.client().get(f"/wings/{wing}/rooms")
    if inv.as_json:
        render.print_json(data)
    else:
        render.table(f"rooms of {wing}", ["room", "drawers", "created"],
                     [(r["name"], r["drawers"], r["created_at"]) for r in data["rooms"]])


# --- jobs -----------------------------------------------------------------------------------------


@job_app.command("list")
def job_list(
    ctx: typer.Context,
    status_: Annotated[str | None, typer.Option("--status", help="queued, running, paused, completed, …")] = None,
    kind: Annotated[str | None, typer.Option(help="job kind, e.g. mine, embed, verify")] = None,
    limit: Annotated[int, typer.Option(help="how many (1-200)")] = 50,
) -> None:
    """List jobs, newest first."""
    inv = _inv(ctx)
    data = inv.client().get("/jobs", status=status_, kind=kind, limit=limit)
    render.print_json(data) if inv.as_json else render.show_jobs(data["jobs"])


@job_app.command("show")
def job_show(ctx: typer.Context, job_id: str) -> None:
    """Show one job: status, progress, result or error."""
    inv = _inv(ctx)
    data = inv.client().get(f"/jobs/{job_id}")
    render.print_json(data) if inv.as_json else render.show_job(data)


def _control(ctx: typer.Context, job_id: str, action: str) -> None:
    inv = _inv(ctx)
    data = inv.client().post(f"/jobs/{job_id}/{action}")
    render.print_json(data) if inv.as_json else render.show_job(data["job"])


@job_app.command("pause")
def job_pause(ctx: typer.Context, job_id: str) -> None:
    """Pause a running job at its next checkpoint."""
    _control(ctx, job_id, "pause")


@job_app.command("resume")
def job_resume(ctx: typer.Context, job_id: str) -> None:
    """Queue a paused job again; it continues from its checkpoint."""
    _control(ctx, job_id, "resume")


@job_app.command("cancel")
def job_cancel(ctx: typer.Context, job_id: str) -> None:
    """Cancel a queued, paused or running job (a running one stops at its next checkpoint)."""
    _control(ctx, job_id, "cancel")


@job_app.command("retry")
def job_retry(ctx: typer.Context, job_id: str) -> None:
    """Queue a failed job again."""
    _control(ctx, job_id, "retry")


def wait_for_job(inv: Invocation, job: dict[str, Any]) -> dict[str, Any]:
    """Follow a job to its end, with a progress bar on a terminal."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    client = inv.client()
    finished = {"completed", "failed", "cancelled", "paused"}
    if inv.as_json:
        while job["status"] not in finished:
            time.sleep(0.2)
            job = client.get(f"/jobs/{job['id']}")
        return job
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=render.console, transient=True) as bar:
        task = bar.add_task(job["kind"], total=None)
        while job["status"] not in finished:
            time.sleep(0.2)
            job = client.get(f"/jobs/{job['id']}")
            progress = job.get("progress") or {}
            bar.update(task, completed=progress.get("current", 0), total=progress.get("total"),
                       description=f"{job['kind']} · {job['status']}")
    return job


def _locator(locator: str | None) -> str:
    """Paths are resolved here, where the user typed them: the daemon runs from another folder."""
    if locator is None:
        return ""
    candidate = Path(locator).expanduser()
    if "://" not in locator and (candidate.exists() or not candidate.is_absolute()):
        return str(candidate.resolve())
    return locator


def _options(pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidRequest(f"option {pair!r} is not key=value", field="options")
        options[key.strip()] = value
    return options


def _print_mine_result(inv: Invocation, job: dict[str, Any]) -> None:
    if inv.as_json:
        render.print_json({"job": job})
        return
    if job["status"] != "completed" or not job.get("result"):
        render.show_job(job)
        return
    result = job["result"]
    counts = ("documents", "created", "superseded", "invalidated", "unchanged", "skipped", "similar", "errors")
    render.console.print(f"[bold]mined[/bold] {result.get('wing', '')} · " + " · ".join(
        f"{k} {result.get(k, 0)}" for k in counts))
    for item in result.get("skipped_documents", [])[:20]:
        render.console.print(f"[yellow]skipped[/yellow] {item['document']}: {item['reason']}")
    for item in result.get("warnings", [])[:20]:
        render.console.print(f"[yellow]warning[/yellow] {item['document']}: {item['reason']}")


@app.command()
def mine(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(help="connector: directory, notes, git, claude, codex, chatgpt, …")],
    locator: Annotated[str | None, typer.Argument(help="where to read (a folder, file or repository)")] = None,
    options: Annotated[list[str] | None, typer.Argument(help="connector options as key=value")] = None,
    wing: Annotated[str | None, typer.Option(help="wing for the drawers (default: the connector's rule)")] = None,
    full: Annotated[bool, typer.Option(help="read from the beginning instead of the saved cursor")] = False,
    wait: Annotated[bool, typer.Option(help="follow the job with a progress bar and print its counts")] = False,
) -> None:
    """Mine a source into drawers in the background."""
    inv = _inv(ctx)
    if locator is not None and "=" in locator and not Path(locator).exists():
        options = [locator, *(options or [])]
        locator = None
    body = {"connector": source, "locator": _locator(locator), "options": _options(options or []), "wing": wing,
            "full": full}
    data = inv.client().post("/mine", body)
    job = data["job"]
    if wait:
        job = wait_for_job(inv, job)
        _print_mine_result(inv, job)
        raise typer.Exit(0 if job["status"] == "completed" else EXIT_ERROR)
    if inv.as_json:
        render.print_json(data)
    else:
        joined = " (joined a queued run)" if data.get("joined") else ""
        render.console.print(f"mine job {job['id']} queued{joined}; follow it with: memcastle job show {job['id']}")


@miner_app.command("list")
def miner_list(ctx: typer.Context) -> None:
    """List the miners declared in config.toml."""
    inv = _inv(ctx)
    data = inv.client().get("/miners")
    if inv.as_json:
        render.print_json(data)
    else:
        render.table("miners", ["name", "connector", "locator", "wing", "options"], [
            (m["name"], m["connector"], m["locator"], m.get("wing") or "", m["options"] or "")
            for m in data["miners"]])


@miner_app.command("run")
def miner_run(
    ctx: typer.Context,
    name: str,
    wait: Annotated[bool, typer.Option(help="follow the job and print its counts")] = False,
) -> None:
    """Run a named miner again (joins a run of it that is still queued)."""
    inv = _inv(ctx)
    job = inv.client().post(f"/miners/{name}/run")["job"]
    if wait:
        job = wait_for_job(inv, job)
    _print_mine_result(inv, job) if wait else (
        render.print_json({"job": job}) if inv.as_json else render.console.print(f"mine job {job['id']} queued"))


@app.command()
def verify(
    ctx: typer.Context,
    wait: Annotated[bool, typer.Option(help="follow the job to its end")] = False,
    pace_ms: Annotated[int, typer.Option("--pace-ms", help="pause between batches, to go easy on the disk")] = 0,
) -> None:
    """Re-hash every current drawer in the background and report any mismatch."""
    inv = _inv(ctx)
    job = inv.client().post("/verify", {"pace_ms": pace_ms})["job"]
    if wait:
        job = wait_for_job(inv, job)
    render.print_json({"job": job}) if inv.as_json else render.show_job(job)


# --- facts and entities ---------------------------------------------------------------------------


@app.command()
def extract(ctx: typer.Context, wait: Annotated[bool, typer.Option(help="follow the job to its end")] = False) -> None:
    """Read new drawers for entities and facts in the background (joins a queued sweep)."""
    _request_sweep(_inv(ctx), "/extract", wait)


@fact_app.command("list")
def fact_list(
    ctx: typer.Context,
    subject: Annotated[str | None, typer.Option(help="subject entity name")] = None,
    predicate: Annotated[str | None, typer.Option(help="works_on, uses, located_in, …")] = None,
    object_: Annotated[str | None, typer.Option("--object", help="object entity name")] = None,
    state: Annotated[str | None, typer.Option(help="current, conflicting, superseded, invalidated, historical")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="states as they were at this instant")] = None,
    limit: Annotated[int, typer.Option(help="how many (1-200)")] = 50,
) -> None:
    """Facts with their lifecycle state; in a conflict, which one is preferred and why."""
    inv = _inv(ctx)
    data = inv.client().get("/facts", subject=subject, predicate=predicate, object=object_, state=state,
                            as_of=as_of, limit=limit)
    render.print_json(data) if inv.as_json else render.show_facts(data["facts"])


@fact_app.command("history")
def fact_history(ctx: typer.Context, fact_id: str) -> None:
    """A fact and everything transitively linked to it, by valid_from."""
    inv = _inv(ctx)
    data = inv.client().get(f"/facts/{fact_id}/history")
    render.print_json(data) if inv.as_json else render.show_facts(data["facts"], links=True)


@fact_app.command("add")
def fact_add(
    ctx: typer.Context,
    subject: str,
    predicate: str,
    object_: Annotated[str, typer.Argument(metavar="OBJECT")],
    confidence: Annotated[float, typer.Option(help="0 to 1")] = 1.0,
    valid_from: Annotated[str | None, typer.Option("--valid-from", help="when it became true")] = None,
    subject_kind: Annotated[str | None, typer.Option("--subject-kind")] = None,
    object_kind: Annotated[str | None, typer.Option("--object-kind")] = None,
) -> None:
    """Record an explicit fact."""
    inv = _inv(ctx)
    body = {"subject": subject, "predicate": predicate, "object": object_, "confidence": confidence,
            "valid_from": valid_from, "subject_kind": subject_kind, "object_kind": object_kind}
    data = inv.client().post("/facts", {k: v for k, v in body.items() if v is not None})
    render.print_json(data) if inv.as_json else render.show_facts([data])


@fact_app.command("supersede")
def fact_supersede(
    ctx: typer.Context,
    fact_id: str,
    object_: Annotated[str | None, typer.Option("--object", help="the new object")] = None,
    subject: Annotated[str | None, typer.Option(help="the new subject")] = None,
    confidence: Annotated[float | None, typer.Option(help="0 to 1")] = None,
    reason: Annotated[str | None, typer.Option(help="why")] = None,
) -> None:
    """Close a fact and open its replacement, linked `supersedes`, in one step."""
    inv = _inv(ctx)
    body = {"object": object_, "subject": subject, "confidence": confidence, "reason": reason}
    data = inv.client().post(f"/facts/{fact_id}/supersede", {k: v for k, v in body.items() if v is not None})
    render.print_json(data) if inv.as_json else render.show_facts([data["superseded"], data["fact"]])


@fact_app.command("invalidate")
def fact_invalidate(ctx: typer.Context, fact_id: str,
                    reason: Annotated[str, typer.Option(help="why it no longer holds")]) -> None:
    """Close a fact without a replacement."""
    inv = _inv(ctx)
    data = inv.client().post(f"/facts/{fact_id}/invalidate", {"reason": reason})
    render.print_json(data) if inv.as_json else render.show_facts([data])


@fact_app.command("link")
def fact_link(
    ctx: typer.Context,
    fact_id: str,
    to: Annotated[str, typer.Argument(help="the other fact's id")],
    kind: Annotated[str, typer.Option(help="confirms, contradicts or refines")],
    reason: Annotated[str, typer.Option(help="why")],
) -> None:
    """Record an explicit link between two facts."""
    inv = _inv(ctx)
    data = inv.client().post(f"/facts/{fact_id}/link", {"to": to, "kind": kind, "reason": reason})
    render.print_json(data) if inv.as_json else render.show_facts([data["from"], data["to"]], links=True)


@entity_app.command("list")
def entity_list(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Option(help="part of a name or alias")] = None,
    kind: Annotated[str | None, typer.Option(help="person, organization, project, tool, place, concept, other")] = None,
    limit: Annotated[int, typer.Option(help="how many (1-200)")] = 50,
) -> None:
    """List entities."""
    inv = _inv(ctx)
    data = inv.client().get("/entities", name=name, kind=kind, limit=limit)
    if inv.as_json:
        render.print_json(data)
    else:
        render.table("entities", ["id", "name", "kind", "aliases"],
                     [(e["id"], e["name"], e["kind"], ", ".join(e["aliases"])) for e in data["entities"]])


@entity_app.command("show")
def entity_show(ctx: typer.Context, entity_id: str) -> None:
    """One entity with its aliases, mentions and possibly-same hints."""
    inv = _inv(ctx)
    data = inv.client().get(f"/entities/{entity_id}")
    if inv.as_json:
        render.print_json(data)
        return
    render.console.print(f"[bold]{data['name']}[/bold] ({data['kind']}) {data['id']}")
    if data["aliases"]:
        render.console.print("aliases: " + ", ".join(data["aliases"]))
    for mention in data["mentions"]:
        render.console.print(f"  mentioned in {mention['drawer']} as {mention['spelling']!r}")
    for hint in data["hints"]:
        render.console.print(f"  [yellow]{hint['kind']}[/yellow] {hint['other']}: {hint['reason']}")


@drawer_app.command("duplicates")
def drawer_duplicates(ctx: typer.Context, drawer_id: str) -> None:
    """Drawers linked to this one as exact, normalized or near copies (never merged)."""
    inv = _inv(ctx)
    data = inv.client().get(f"/drawers/{drawer_id}/duplicates")
    if inv.as_json:
        render.print_json(data)
        return
    for item in data["duplicates"]:
        render.console.print(render.drawer_panel(
            item["drawer"], title_extra=f"{item['verdict']} copy, similarity {item['similarity']}"))


# --- preferences ----------------------------------------------------------------------------------


@preferences_app.command("show")
def preferences_show(ctx: typer.Context) -> None:
    """The daemon's effective source-preference policy, each field with the layer it came from."""
    inv = _inv(ctx)
    data = inv.client().get("/preferences")
    if inv.as_json:
        render.print_json(data)
        return
    render.show_policy(data)


@preferences_app.command("check")
def preferences_check(ctx: typer.Context) -> None:
    """Validate every preference layer (global file and the palace's preferences.toml); exit 1 on an error."""
    from memcastle.config.layers import layers_from_settings
    from memcastle.preferences import load_policy

    inv = _inv(ctx)
    settings = inv.settings()
    layers = layers_from_settings(settings)
    policy = load_policy(layers)
    if inv.as_json:
        render.print_json({"ok": True, "layers": [layer.name for layer in layers], "policy": policy.to_json()})
        return
    render.console.print(f"[green]ok[/green]: {len(layers)} layer(s) valid" +
                         "".join(f"\n  {layer.name}" for layer in layers))
    render.show_policy(policy.to_json())


@preferences_app.command("explain")
def preferences_explain(ctx: typer.Context, drawer_id: str) -> None:
    """How the policy resolves one drawer: connector, each criterion tried, which matched, which won and why."""
    inv = _inv(ctx)
    data = inv.client().get(f"/drawers/{drawer_id}/preference")
    if inv.as_json:
        render.print_json(data)
        return
    render.show_trace(data)


# --- MCP ------------------------------------------------------------------------------------------


@app.command("mcp")
def mcp_bridge(
    ctx: typer.Context,
    start: Annotated[bool, typer.Option("--start", help="start the palace's daemon in the background if none "
                                                        "runs, and wait for it")] = False,
) -> None:
    """Speak MCP on standard input/output and forward every request to the palace's daemon (for MCP clients that
    only spawn processes); --mode is sent as the X-MemCastle-Mode header, auth.token as the bearer token."""
    from memcastle.mcp.bridge import locate_daemon, run_bridge, start_daemon

    inv = _inv(ctx)
    settings = inv.settings()
    if start:
        start_daemon(settings.palace, config_file=inv.config)
    run_bridge(lambda: locate_daemon(settings.palace), mode=settings["mode"], token=settings["auth.token"] or None)


@token_app.command("create")
def token_create(ctx: typer.Context, name: Annotated[str, typer.Argument(help="what the token is for")]) -> None:
    """Create a bearer token for this palace; it is printed once and stored only as a digest."""
    from memcastle.runtime.tokens import TokenStore

    inv = _inv(ctx)
    token = TokenStore(inv.settings().palace).create(name)
    if inv.as_json:
        render.print_json({"name": name, "token": token})
        return
    render.console.print(f"token {name!r} created; it is shown only this once:\n\n  {token}\n")
    render.console.print("[dim]clients send it as Authorization: Bearer TOKEN; the CLI reads MEMCASTLE_AUTH_TOKEN. "
                         "Enable checking with auth.enabled = true and restart the daemon.[/dim]")


# --- configuration --------------------------------------------------------------------------------


@config_app.command("show")
def config_show(ctx: typer.Context) -> None:
    """Every effective setting and where its value came from."""
    inv = _inv(ctx)
    settings = inv.settings()
    rows = settings.describe()
    if inv.as_json:
        render.print_json({"config_file": str(settings.config_file), "settings": rows})
        return
    render.console.print(f"[dim]config file: {settings.config_file}[/dim]")
    render.table("settings", ["key", "value", "from"], [(r["key"], r["value"], r["origin"]) for r in rows])


def run() -> None:
    """Console-script entry point: one place turns errors into a message and an exit code."""
    try:
        # Standalone mode lets click handle usage errors (exit 2) and typer.Exit codes; our errors pass through.
        app(args=hoist_json_flag(sys.argv[1:]))
    except DaemonNotRunning as exc:
        _report(exc)
        sys.exit(EXIT_NO_DAEMON)
    except MemCastleError as exc:
        _report(exc)
        sys.exit(EXIT_ERROR)


def hoist_json_flag(args: list[str]) -> list[str]:
    """`--json` is a global option, but people type it after the command (`memcastle search x --json`): move it
    to the front. Nothing after a `--` is touched."""
    end = args.index("--") if "--" in args else len(args)
    if "--json" not in args[1:end]:
        return args
    return ["--json", *[a for i, a in enumerate(args) if not (a == "--json" and i < end)]]


def _report(exc: MemCastleError) -> None:
    # Messages quote user data (paths, names, `[/socket/dir]` locations): printed as text, never as markup.
    render.errors.print(f"[red]error:[/red] {escape(exc.message)}")
    if exc.help:
        render.errors.print(f"[dim]hint: {escape(exc.help)}[/dim]")
