"""`memcastle tui` driven by Textual's own harness (`App.run_test` and its Pilot) against a real daemon: the four
views read it, and a job is paused and resumed from the keyboard."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Awaitable, Callable
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Button, DataTable, Static

from memcastle.cli.client import DaemonClient
from memcastle.cli.tui import Console
from memcastle.config import load_settings
from memcastle.doctor import diagnose

CEILING = 20.0


async def until(pilot: Pilot[None], condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + CEILING
    while not condition():
        if time.monotonic() > deadline:
            status = pilot.app.query_one("#status", Static).render()
            raise AssertionError(f"timed out waiting for {what} (status line: {status})")
        await pilot.pause(0.05)


def rows(app: Console, table: str) -> list[list[str]]:
    widget = app.query_one(f"#{table}", DataTable)
    return [[str(cell) for cell in widget.get_row_at(i)] for i in range(widget.row_count)]


def console_for(served: Any) -> Console:
    settings = load_settings(flags={"palace": str(served.palace)}, env={}, config_file=None)
    client = DaemonClient(settings)

    def checks() -> list[dict[str, str]]:
        return [f.to_json() for f in diagnose(flags={"palace": str(served.palace)}, config_file=None,
                                              healthy=lambda address: True)[1]]  # fmt: skip

    return Console(client.call, checks, palace=str(served.palace))


def drive(app: Console, scenario: Callable[[Pilot[None]], Awaitable[None]]) -> None:
    async def run() -> None:
        async with app.run_test(size=(160, 40)) as pilot:
            await scenario(pilot)

    asyncio.run(run())


def test_the_four_views_read_the_daemon(daemon: Any) -> None:
    served = daemon()
    for text in ("the drawbridge squeaks at dawn", "the moat was drained in May", "oil for the drawbridge chain"):
        assert served.cli("note", text, "--wing", "tui").returncode == 0
    app = console_for(served)

    async def scenario(pilot: Pilot[None]) -> None:
        # Readiness: the doctor's findings, the daemon among them.
        await until(pilot, lambda: any(r[1] == "daemon" for r in rows(app, "doctor-table")), "the doctor's findings")
        # Search bench: a query with a ranking, each hit with its score and signals.
        app.query_one("TabbedContent").active = "search"
        await pilot.pause()
        await pilot.click("#query")
        await pilot.press(*"drawbridge", "enter")
        await until(pilot, lambda: len(rows(app, "hits-table")) == 2, "two hits")
        hits = rows(app, "hits-table")
        assert all(r[2] == "tui/notes" and "lexical" in r[3] for r in hits)
        assert "drawbridge" in str(app.query_one("#hit", Static).render())
        assert "2 hit(s)" in str(app.query_one("#status", Static).render())
        # Maintenance: an audit of a palace damaged on purpose, then its repair.
        with sqlite3.connect(served.palace / "palace.sqlite3", isolation_level=None) as db:
            db.execute("INSERT INTO drawer_tag(drawer_seq, tag) VALUES (777777, 'ghost')")
        app.query_one("TabbedContent").active = "maintenance"
        await pilot.pause()
        app.query_one("#audit", Button).focus()
        await pilot.press("enter")
        await until(pilot, lambda: any(r[0] == "orphan_tags" for r in rows(app, "findings-table")), "the audit")
        assert next(r for r in rows(app, "findings-table") if r[0] == "orphan_tags")[1] == "1"
        app.query_one("#repair", Button).focus()
        await pilot.press("enter")
        await until(pilot, lambda: "repaired 1 row" in str(app.query_one("#status", Static).render()), "the repair")
        assert all(r[1] == "0" for r in rows(app, "findings-table"))
        # Jobs: the audit and the repair are there.
        app.query_one("TabbedContent").active = "jobs"
        await until(pilot, lambda: {"audit", "repair"} <= {r[1] for r in rows(app, "jobs-table")}, "the jobs")

    drive(app, scenario)


def test_a_job_is_paused_and_resumed_from_the_keyboard(daemon: Any) -> None:
    served = daemon()
    with served.http() as http:
        for i in range(60):
            http.post("/api/notes", json={"content": f"ledger line {i}", "wing": "tui-verify"})
        # A verify a drawer at a time, 300 ms apart: running for a quarter of a minute, a checkpoint per drawer.
        job = http.post("/api/verify", json={"batch": 1, "pace_ms": 300}).json()["job"]
    app = console_for(served)

    async def scenario(pilot: Pilot[None]) -> None:
        def state() -> str | None:
            return next((r[2] for r in rows(app, "jobs-table") if r[0] == job["id"][:8]), None)

        await until(pilot, lambda: state() == "running", "the verify job to run")
        table = app.query_one("#jobs-table", DataTable)
        table.focus()
        table.move_cursor(row=[r[0] for r in rows(app, "jobs-table")].index(job["id"][:8]))
        await pilot.press("p")
        await until(pilot, lambda: state() == "paused", "the pause")
        await pilot.press("r")
        await until(pilot, lambda: state() in ("queued", "running", "completed"), "the resume")
        await pilot.press("c")
        await until(pilot, lambda: state() == "cancelled", "the cancel")

    drive(app, scenario)


def test_without_a_terminal_it_refuses_at_once_instead_of_waiting_for_keys(daemon: Any) -> None:
    """Piped (a script, an agent's shell tool), the console would wait for keys no one sends: it says so instead."""
    served = daemon()
    started = time.monotonic()
    done = served.cli("tui")
    assert done.returncode == 1 and time.monotonic() - started < 30
    assert "needs a terminal" in done.stderr and "memcastle job list" in done.stderr, done.stderr
