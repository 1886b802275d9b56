"""Mining and the other sweeps: mine, named miners, verify, embed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from memcastle.cli import render
from memcastle.cli.app import (
    EXIT_ERROR,
    Invocation,
    app,
    invocation,
    request_sweep,
    wait_for_job,
)
from memcastle.errors import InvalidRequest

miner_app = typer.Typer(no_args_is_help=True, help="Named miners declared with [[miners]] in config.toml.")
app.add_typer(miner_app, name="miner")


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
    inv = invocation(ctx)
    if locator is not None and "=" in locator and not Path(locator).exists():
        options = [locator, *(options or [])]
        locator = None
    body = {
        "connector": source,
        "locator": _locator(locator),
        "options": _options(options or []),
        "wing": wing,
        "full": full,
    }
    data = inv.client().post("/mine", body)
    job = data["job"]
    if wait:
        job = wait_for_job(inv, job)
        print_mine_result(inv, job)
        raise typer.Exit(0 if job["status"] == "completed" else EXIT_ERROR)

    def show(data: Any) -> None:
        joined = " (joined a queued run)" if data.get("joined") else ""
        render.console.print(f"mine job {job['id']} queued{joined}; follow it with: memcastle job show {job['id']}")

    inv.emit(data, show)


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


def print_mine_result(inv: Invocation, job: dict[str, Any]) -> None:
    def show(data: Any) -> None:
        if job["status"] != "completed" or not job.get("result"):
            render.show_job(job)
            return
        result = job["result"]
        counts = ("documents", "created", "superseded", "invalidated", "unchanged", "skipped", "similar", "errors")
        render.console.print(
            f"[bold]mined[/bold] {result.get('wing', '')} · " + " · ".join(f"{k} {result.get(k, 0)}" for k in counts)
        )
        for item in result.get("skipped_documents", [])[:20]:
            render.console.print(f"[yellow]skipped[/yellow] {item['document']}: {item['reason']}")
        for item in result.get("warnings", [])[:20]:
            render.console.print(f"[yellow]warning[/yellow] {item['document']}: {item['reason']}")
        if embeddings and embeddings.get("pending"):
            render.console.print(
                f"[dim]embedding in the background: {embeddings['pending']:,} drawer(s) waiting"
                f"{render.backlog_text(embeddings)}; lexical search finds them already[/dim]"
            )

    # What is left to embed after the mine, so a user knows when search by meaning covers it.
    embeddings = inv.client().get("/status").get("embeddings") if job["status"] == "completed" else None
    inv.emit({"job": job, "embeddings": embeddings}, show)


@miner_app.command("list")
def miner_list(ctx: typer.Context) -> None:
    """List the miners declared in config.toml."""
    inv = invocation(ctx)
    data = inv.client().get("/miners")

    def show(data: Any) -> None:
        render.table(
            "miners",
            ["name", "connector", "locator", "wing", "options"],
            [
                (m["name"], m["connector"], m["locator"], m.get("wing") or "", m["options"] or "")
                for m in data["miners"]
            ],
        )

    inv.emit(data, show)


@miner_app.command("run")
def miner_run(
    ctx: typer.Context,
    name: str,
    wait: Annotated[bool, typer.Option(help="follow the job and print its counts")] = False,
) -> None:
    """Run a named miner again (joins a run of it that is still queued)."""
    inv = invocation(ctx)
    job = inv.client().post(f"/miners/{name}/run")["job"]
    if wait:
        job = wait_for_job(inv, job)
    print_mine_result(inv, job) if wait else (
        inv.emit({"job": job}, lambda data: render.console.print(f"mine job {job['id']} queued"))
    )


@app.command()
def verify(
    ctx: typer.Context,
    wait: Annotated[bool, typer.Option(help="follow the job to its end")] = False,
    pace_ms: Annotated[int, typer.Option("--pace-ms", help="pause between batches, to go easy on the disk")] = 0,
) -> None:
    """Re-hash every current drawer in the background and report any mismatch."""
    inv = invocation(ctx)
    job = inv.client().post("/verify", {"pace_ms": pace_ms})["job"]
    if wait:
        job = wait_for_job(inv, job)
    inv.emit({"job": job}, lambda data: render.show_job(job))


@app.command()
def embed(ctx: typer.Context, wait: Annotated[bool, typer.Option(help="follow the job to its end")] = False) -> None:
    """Fill missing embeddings in the background (joins a queued sweep)."""
    request_sweep(invocation(ctx), "/embed", wait)
