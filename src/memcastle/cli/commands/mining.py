"""Mining and the other sweeps: mine, named miners, verify, embed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

from memcastle.cli import render
from memcastle.cli.command_line import (
    EXIT_ERROR,
    Invocation,
    app,
    group,
    pass_invocation,
    request_sweep,
    wait_for_job,
    wait_option,
)
from memcastle.errors import InvalidRequest

miner_app = group("miner", app, "Named miners: [[miners]] in config.toml, and those added here; their triggers.")


@app.command()
@click.argument("source")
@click.argument("locator", required=False)
@click.argument("options", nargs=-1, metavar="[KEY=VALUE]...")
@click.option("--wing", help="wing for the drawers (default: the connector's rule)")
@click.option("--full", is_flag=True, help="read from the beginning instead of the saved cursor")
@click.option(
    "--notice-removed/--keep-removed",
    default=None,
    help="close the drawers of documents gone from the source (default: yes for directory and notes)",
)
@wait_option("follow the job with a progress bar and print its counts")
@click.pass_context
def mine(
    ctx: click.Context,
    source: str,
    locator: str | None,
    options: tuple[str, ...],
    wing: str | None,
    full: bool,
    notice_removed: bool | None,
    wait: bool,
) -> None:
    """Mine a source into drawers in the background.

    SOURCE is the connector (directory, notes, git, claude, codex, chatgpt, …), LOCATOR where it reads (a folder,
    file or repository), then the connector's options as KEY=VALUE. A path as SOURCE (`memcastle mine .`,
    `mine ~/notes`, `mine ./src`) mines it with its project file's `source` connector (`.config/memcastle.toml`),
    else the directory connector.
    """
    inv = ctx.find_object(Invocation)
    assert inv is not None
    if _is_path(source):
        # `memcastle mine .`: a folder (or file) is mined by its project file's `source` connector, else by the
        # directory connector, into its project's wing.
        from memcastle.connectors.project import find_project_settings

        project = find_project_settings(Path(source))
        options = tuple(o for o in (locator, *options) if o is not None)
        source, locator = (project.source if project and project.source else "directory"), source
    if locator is not None and "=" in locator and not Path(locator).exists():
        options = (locator, *options)
        locator = None
    body = {
        "connector": source,
        "locator": _locator(locator),
        "options": _options(options),
        "wing": wing,
        "full": full,
        **({"notice_removed": notice_removed} if notice_removed is not None else {}),
    }
    data = inv.client().post("/mine", body)
    job = data["job"]
    if wait:
        job = wait_for_job(inv, job)
        print_mine_result(inv, job)
        ctx.exit(0 if job["status"] == "completed" else EXIT_ERROR)

    def show(data: Any) -> None:
        joined = " (joined a queued run)" if data.get("joined") else ""
        render.console.print(f"mine job {job['id']} queued{joined}; follow it with: memcastle job show {job['id']}")

    inv.emit(data, show)


def _is_path(source: str) -> bool:
    """Whether SOURCE names a folder or file rather than a connector: `.`, `..`, `~…`, anything with a slash, or
    a word that is an existing folder (connector names have no slash, and a folder named like one needs `./`)."""
    if source in (".", "..") or source.startswith("~") or "/" in source or os.sep in source:
        return True
    return Path(source).is_dir() and source not in KNOWN_CONNECTORS


# The builtin connectors' names: a folder of one of these names is mined as `./NAME`.
KNOWN_CONNECTORS = ("directory", "notes", "git", "claude", "codex", "chatgpt", "pi", "opencode", "github")


def _locator(locator: str | None) -> str:
    """Paths are resolved here, where the user typed them: the daemon runs from another folder."""
    if locator is None:
        return ""
    candidate = Path(locator).expanduser()
    if "://" not in locator and (candidate.exists() or not candidate.is_absolute()):
        return str(candidate.resolve())
    return locator


def _options(pairs: tuple[str, ...]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidRequest(f"option {pair!r} is not key=value", field="options")
        options[key.strip()] = value
    return options


SHOWN = 20  # skipped documents and warnings a mine's answer lists on the terminal


def print_mine_result(inv: Invocation, job: dict[str, Any]) -> None:
    def show(data: Any) -> None:
        if job["status"] != "completed" or not job.get("result"):
            render.show_job(job)
            return
        result = job["result"]
        counts = ("documents", "created", "superseded", "invalidated", "removed", "unchanged", "skipped", "errors")
        render.console.print(
            f"[bold]mined[/bold] {result.get('wing', '')} · " + " · ".join(f"{k} {result.get(k, 0)}" for k in counts)
        )
        for kind, listed, total in (
            ("skipped", result.get("skipped_documents", []), int(result.get("skipped", 0))),
            ("warning", result.get("warnings", []), int(result.get("errors", 0))),
        ):
            for item in listed[:SHOWN]:
                render.console.print(f"[yellow]{kind}[/yellow] {item['document']}: {item['reason']}")
            if total > min(len(listed), SHOWN):
                # The job keeps the first 200 with their reasons; the terminal shows the first 20.
                render.console.print(
                    f"[dim]… and {total - min(len(listed), SHOWN):,} more {kind} "
                    f"(`memcastle job show {job['id'][:8]}` lists {min(len(listed), 200):,} with their reasons)[/dim]"
                )
        if result.get("copies_pending"):
            render.console.print(
                f"[dim]linking copies in the background: {result['copies_pending']:,} drawer(s) to check; "
                "`memcastle job list --kind link` follows it[/dim]"
            )
        if embeddings and embeddings.get("pending"):
            # Passages to go and the ETA come from the sweep's measured rate: until its first unit of work is in,
            # say when they will be known rather than guess.
            backlog = render.backlog_text(embeddings) or " (passages to go and an ETA once the first batch is in)"
            render.console.print(
                f"[dim]embedding in the background: {embeddings['pending']:,} drawer(s) waiting"
                f"{backlog}; lexical search finds them already; `memcastle status` follows it[/dim]"
            )

    # What is left to embed after the mine, so a user knows when search by meaning covers it.
    embeddings = inv.client().get("/status").get("embeddings") if job["status"] == "completed" else None
    inv.emit({"job": job, "embeddings": embeddings}, show)


@miner_app.command("list")
@pass_invocation
def miner_list(inv: Invocation) -> None:
    """List the miners (config.toml's and those added here): triggers, state, last run and its result, next run."""
    data = inv.client().get("/miners")

    def show(data: Any) -> None:
        render.table(
            "miners",
            ["name", "connector", "locator", "wing", "triggers", "state", "last run", "next run", "from"],
            [
                (
                    m["name"],
                    m["connector"],
                    m["locator"],
                    m.get("wing") or "",
                    _triggers(m),
                    m["state"],
                    _last_run(m.get("last_run")),
                    render.short_time(m.get("next_run")) if m.get("next_run") else "",
                    m["origin"] + (" (shadowed by config)" if m.get("shadowed") else ""),
                )
                for m in data["miners"]
            ],
        )

    inv.emit(data, show)


@miner_app.command("show")
@click.argument("name")
@pass_invocation
def miner_show(inv: Invocation, name: str) -> None:
    """One miner: its source, options, triggers, state, last run and its result, next run."""
    data = inv.client().get(f"/miners/{quote(name, safe='')}")

    def show(data: Any) -> None:
        miner = data["miner"]
        render.console.print(f"[bold]{miner['name']}[/bold] ({miner['state']}, from {miner['origin']})")
        render.console.print(
            f"  mines {miner['connector']} {miner['locator']}" + (f" into {miner['wing']}" if miner.get("wing") else "")
        )
        if miner.get("options"):
            render.console.print("  options " + ", ".join(f"{k}={v}" for k, v in miner["options"].items()))
        render.console.print(f"  triggers {_triggers(miner)}; last run {_last_run(miner.get('last_run'))}")
        if miner.get("next_run"):
            render.console.print(f"  next run {render.short_time(miner['next_run'])}")

    inv.emit(data, show)


def _triggers(miner: Any) -> str:
    parts = []
    if miner["watch"]:
        parts.append(f"watch ({miner['debounce']:g}s quiet)")
    if miner.get("every"):
        parts.append(f"every {render.duration_text(miner['every'])}")
    return ", ".join(parts) or "by hand"


def _last_run(run: Any) -> str:
    if not run:
        return "never"
    result = run.get("result") or {}
    counts = f" · {result.get('created', 0)} new, {result.get('superseded', 0)} changed" if result else ""
    return f"{render.short_time(run.get('at'))} {run['status']} ({run.get('trigger')}){counts}"


@miner_app.command("add")
@click.argument("name")
@click.argument("connector")
@click.argument("locator")
@click.option("--wing", help="the wing drawers go to")
@click.option("--option", "options", multiple=True, help="connector option KEY=VALUE; repeat for more")
@click.option("--full", is_flag=True, help="re-read every document each run")
@click.option("--watch", is_flag=True, help="mine again whenever the source's files change")
@click.option("--debounce", default="1.6s", help="quiet time before a watched source is mined")
@click.option("--every", help="mine on a schedule: 30s, 5m, 2h, 1d")
@click.option("--poll", help="check the source for a change so often (at least 30s), and mine when it changed")
@click.option("--webhook", type=click.Choice(["hmac", "token"]), help="POST /hooks/NAME asks for a run")
@click.option("--secret-env", help="the daemon's environment variable holding the webhook's secret")
@pass_invocation
def miner_add(inv: Invocation, /, name: str, locator: str, options: tuple[str, ...], **fields: Any) -> None:
    """Define a miner kept in the palace (beside config.toml's; a config miner of the same name wins). One with a
    poll or a webhook starts disabled: enable it with memcastle miner enable NAME."""
    # The other options are the miner's fields (`MinerDefinition`) by their names.
    body = {
        "name": name,
        "locator": str(Path(locator).expanduser().absolute()) if locator else locator,
        "options": _options(options),
        **fields,
    }
    data = inv.client().post("/miners", {k: v for k, v in body.items() if v is not None})
    inv.emit(data, lambda data: render.console.print(f"miner {name} added: {_triggers(data['miner'])}"))


# The original MemCastle's name for defining or replacing a miner.
miner_app.add_command(miner_add, "set")


@miner_app.command("reload")
@pass_invocation
def miner_reload(inv: Invocation) -> None:
    """Read config.toml's [[miners]] again and follow them from now on (the running daemon; a malformed file is
    refused naming its line, and the miners stay as they were)."""
    data = inv.client().post("/miners/reload", {})
    inv.emit(data, lambda data: render.console.print(f"{len(data['miners'])} miner(s) followed"))


trigger_app = group("trigger", app, "The triggers of the miners (watch, schedule, poll, webhook): where they live.")


@trigger_app.command("list")
@pass_invocation
def trigger_list(inv: Invocation) -> None:
    """The miners that have a trigger, and which (they live on the miners: memcastle miner list)."""
    data = inv.client().get("/triggers")

    def show(data: Any) -> None:
        rows = [(t["name"], ", ".join(t["triggers"]), "on" if t["enabled"] else "off") for t in data["triggers"]]
        render.table("triggers", ["miner", "triggers", "enabled"], rows)

    inv.emit(data, show)


@trigger_app.command("get")
@click.argument("name")
@pass_invocation
def trigger_get(inv: Invocation, name: str) -> None:
    """One miner's triggers (memcastle miner show NAME has the rest)."""
    data = inv.client().get(f"/triggers/{quote(name, safe='')}")
    show = ", ".join(data["triggers"]) or "none"
    inv.emit(data, lambda data: render.console.print(f"{data['name']}: {show}"))


@miner_app.command("remove")
@click.argument("name")
@pass_invocation
def miner_remove(inv: Invocation, name: str) -> None:
    """Remove a miner added with `miner add` (its drawers stay; `forget source` erases them)."""
    data = inv.client().call("DELETE", f"/miners/{name}", json={})
    inv.emit(data, lambda data: render.console.print(f"miner {name} removed"))


def _switch(action: str, help: str) -> None:
    @miner_app.command(action, help=help)
    @click.argument("name")
    @pass_invocation
    def switch(inv: Invocation, name: str) -> None:
        data = inv.client().post(f"/miners/{name}/{action}")
        inv.emit(data, lambda data: render.console.print(f"miner {name} {data['miner']['state']}"))


_switch("enable", "Let a miner's triggers run it again.")
_switch("disable", "Stop a miner's triggers from running it (it can still be run by hand).")


@miner_app.command("run")
@click.argument("name")
@wait_option("follow the job and print its counts")
@pass_invocation
def miner_run(inv: Invocation, name: str, wait: bool) -> None:
    """Run a named miner again (joins a run of it that is still queued)."""
    job = inv.client().post(f"/miners/{name}/run")["job"]
    if wait:
        job = wait_for_job(inv, job)
    print_mine_result(inv, job) if wait else (
        inv.emit({"job": job}, lambda data: render.console.print(f"mine job {job['id']} queued"))
    )


@app.command()
@wait_option()
@click.option("--pace-ms", type=int, default=0, help="pause between batches, to go easy on the disk")
@pass_invocation
def verify(inv: Invocation, wait: bool, pace_ms: int) -> None:
    """Re-hash every current drawer in the background and report any mismatch."""
    job = inv.client().post("/verify", {"pace_ms": pace_ms})["job"]
    if wait:
        job = wait_for_job(inv, job)
    inv.emit({"job": job}, lambda data: render.show_job(job))


@app.command()
@wait_option()
@pass_invocation
def embed(inv: Invocation, wait: bool) -> None:
    """Fill missing embeddings in the background (joins a queued sweep)."""
    request_sweep(inv, "/embed", wait)


source_app = group("source", app, "Mined sources: what was mined, from where.")


@source_app.command("list")
@pass_invocation
def source_list(inv: Invocation) -> None:
    """List mined sources with their ids (for forget source / forget document)."""
    data = inv.client().get("/sources")

    def show(data: Any) -> None:
        render.table(
            "sources",
            ["id", "connector", "locator", "documents", "drawers", "updated"],
            [
                (s["id"], s["connector"], s["locator"], s["documents"], s["drawers"], s["updated_at"])
                for s in data["sources"]
            ],
        )

    inv.emit(data, show)
