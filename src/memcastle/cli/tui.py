"""`memcastle tui`: a terminal console for a running palace, on Textual — four views, each a thin reader of the same
HTTP API the CLI uses:

- **Jobs**: every job, live (read every two seconds), with pause, resume and cancel on the selected one;
- **Search**: a test bench — a query, a ranking, and per hit its score, signals and preference level;
- **Readiness**: `memcastle doctor`'s findings, each with what to do;
- **Maintenance**: the palace audit, and its repair, as the background jobs they are.

The HTTP calls are blocking (the CLI's light client), so each runs on a worker thread and hands its answer back to
the interface thread; a daemon that stops answering is said in the status line, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import (
    Button,
    DataTable,
    Footer,
    Header,
    Input,
    Select,
    Static,
    TabbedContent,
    TabPane,
)

from memcastle.errors import MemCastleError

RANKINGS = ("auto", "hybrid", "lexical", "semantic")
REFRESH_SECONDS = 2.0

Call = Callable[..., Any]  # `DaemonClient.call(method, path, json=…, params=…)`
Diagnose = Callable[[], Sequence[Mapping[str, str]]]


class Console(App[None]):
    """The console; `call` talks to the daemon, `diagnose` runs the doctor's checks (both injected: a test hands
    in the real ones for its palace)."""

    TITLE = "MemCastle"
    CSS = """
    #status { height: 1; color: $text-muted; }
    DataTable { height: 1fr; }
    #hit { height: 8; border: round $primary; padding: 0 1; }
    #bench-form, #maintenance-actions { height: auto; }
    #query { width: 1fr; }
    #ranking { width: 20; }
    """
    BINDINGS = [
        Binding("p", "job('pause')", "pause job"),
        Binding("r", "job('resume')", "resume job"),
        Binding("c", "job('cancel')", "cancel job"),
        Binding("f5", "refresh", "refresh"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(self, call: Call, diagnose: Diagnose, *, palace: str = "") -> None:
        super().__init__()
        self._call = call
        self._diagnose = diagnose
        self._palace = palace
        self._hits: list[dict[str, Any]] = []
        self.sub_title = palace

    # --- layout ---------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(initial="jobs"):
            with TabPane("Jobs", id="jobs"):
                yield DataTable(id="jobs-table", cursor_type="row")
            with TabPane("Search", id="search"):
                with Horizontal(id="bench-form"):
                    yield Input(placeholder="a query, then Enter", id="query")
                    yield Select([(r, r) for r in RANKINGS], value="auto", allow_blank=False, id="ranking")
                yield DataTable(id="hits-table", cursor_type="row")
                yield Static("", id="hit")
            with TabPane("Readiness", id="readiness"):
                yield DataTable(id="doctor-table", cursor_type="row")
            with TabPane("Maintenance", id="maintenance"):
                with Horizontal(id="maintenance-actions"):
                    yield Button("Audit the palace", id="audit", variant="primary")
                    yield Button("Repair what it found", id="repair", variant="warning")
                with Vertical():
                    yield DataTable(id="findings-table", cursor_type="row")
        yield Static("", id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#jobs-table", DataTable).add_columns("id", "kind", "status", "progress", "created", "why")
        self.query_one("#hits-table", DataTable).add_columns("#", "score", "place", "signals", "preference", "id")
        self.query_one("#doctor-table", DataTable).add_columns("level", "check", "detail", "what to do")
        self.query_one("#findings-table", DataTable).add_columns("check", "count", "what", "e.g.", "repair")
        self.refresh_jobs()
        self.run_doctor()
        self.set_interval(REFRESH_SECONDS, self.refresh_jobs)

    def say(self, text: str) -> None:
        self.query_one("#status", Static).update(text)

    # --- jobs -----------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="jobs")
    def refresh_jobs(self) -> None:
        answer = self._ask("GET", "/jobs", params={"limit": 200})
        if answer is not None:
            self.call_from_thread(self._show_jobs, answer["jobs"])

    def _show_jobs(self, jobs: list[dict[str, Any]]) -> None:
        table = self.query_one("#jobs-table", DataTable)
        selected = self._selected_key(table)
        table.clear()
        for job in jobs:
            progress = job.get("progress") or {}
            done = f"{progress.get('current', 0)}/{progress.get('total') or '?'}" if progress else ""
            table.add_row(
                job["id"][:8],
                job["kind"],
                job["status"],
                done,
                (job.get("created_at") or "")[:19].replace("T", " "),
                job.get("waiting") or progress.get("message") or job.get("error") or "",
                key=job["id"],
            )
        if selected is not None and selected in {job["id"] for job in jobs}:
            table.move_cursor(row=table.get_row_index(selected))

    @staticmethod
    def _selected_key(table: DataTable[Any]) -> str | None:
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return str(key) if key is not None else None

    def action_job(self, action: str) -> None:
        job_id = self._selected_key(self.query_one("#jobs-table", DataTable))
        if job_id is None:
            self.say("no job selected")
            return
        self._control(job_id, action)

    @work(thread=True, group="control")
    def _control(self, job_id: str, action: str) -> None:
        answer = self._ask("POST", f"/jobs/{job_id}/{action}", json={})
        if answer is not None:
            job = answer["job"]
            self.call_from_thread(self.say, f"{action}: job {job['id'][:8]} is {job['status']}")
            self.refresh_jobs()

    def action_refresh(self) -> None:
        self.refresh_jobs()
        self.run_doctor()

    # --- the search bench -----------------------------------------------------------------------

    @on(Input.Submitted, "#query")
    def search(self) -> None:
        query = self.query_one("#query", Input).value.strip()
        if query:
            ranking = str(self.query_one("#ranking", Select).value)
            self._search(query, ranking)

    @work(thread=True, exclusive=True, group="search")
    def _search(self, query: str, ranking: str) -> None:
        answer = self._ask("POST", "/search", json={"query": query, "ranking": ranking, "limit": 20})
        if answer is not None:
            self.call_from_thread(self._show_hits, answer)

    def _show_hits(self, answer: dict[str, Any]) -> None:
        self._hits = list(answer["hits"])
        table = self.query_one("#hits-table", DataTable)
        table.clear()
        for rank, hit in enumerate(self._hits, start=1):
            drawer = hit["drawer"]
            signals = " ".join(f"{k} {v:.2f}" for k, v in (hit.get("signals") or {}).items() if isinstance(v, float))
            preference = (hit.get("preference") or {}).get("level") or ""
            table.add_row(
                str(rank), f"{hit['score']:.3f}", f"{drawer['wing']}/{drawer['room']}", signals, preference,
                drawer["id"][:8], key=drawer["id"],
            )  # fmt: skip
        warnings = "; ".join(answer.get("warnings") or [])
        self.say(f"{len(self._hits)} hit(s), ranked {answer.get('ranking')}" + (f" — {warnings}" if warnings else ""))
        self._show_hit(0)

    @on(DataTable.RowHighlighted, "#hits-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_hit(event.cursor_row)

    def _show_hit(self, index: int) -> None:
        box = self.query_one("#hit", Static)
        if not 0 <= index < len(self._hits):
            box.update("")
            return
        hit = self._hits[index]
        text = (hit.get("snippet") or {}).get("text") or hit["drawer"]["content"][:400]
        why = (hit.get("preference") or {}).get("explanation") or ""
        box.update(f"{text}\n\n{why}".strip())

    # --- readiness ------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="doctor")
    def run_doctor(self) -> None:
        findings = self._diagnose()
        self.call_from_thread(self._show_doctor, findings)

    def _show_doctor(self, findings: Sequence[Mapping[str, str]]) -> None:
        table = self.query_one("#doctor-table", DataTable)
        table.clear()
        for f in findings:
            table.add_row(f["level"], f["check"], f["detail"], f["fix"] if f["level"] != "ok" else "")

    # --- maintenance ----------------------------------------------------------------------------

    @on(Button.Pressed, "#audit")
    def audit(self) -> None:
        self._maintain("/audit", {})

    @on(Button.Pressed, "#repair")
    def repair(self) -> None:
        self._maintain("/repair", {})

    @work(thread=True, exclusive=True, group="maintenance")
    def _maintain(self, path: str, body: dict[str, Any]) -> None:
        import time

        answer = self._ask("POST", path, json=body)
        if answer is None:
            return
        job_id = answer["job"]["id"]
        self.call_from_thread(self.say, f"{path.strip('/')} job {job_id[:8]} queued")
        while True:
            job = self._ask("GET", f"/jobs/{job_id}")
            if job is None:
                return
            if job["status"] in ("completed", "failed", "cancelled"):
                self.call_from_thread(self._show_findings, job)
                return
            time.sleep(0.2)

    def _show_findings(self, job: dict[str, Any]) -> None:
        result = job.get("result") or {}
        report = result.get("after") if "repaired" in result else result
        table = self.query_one("#findings-table", DataTable)
        table.clear()
        if job["status"] != "completed" or not report:
            self.say(f"{job['kind']} job {job['id'][:8]} {job['status']}: {job.get('error') or ''}")
            return
        for f in report["findings"]:
            table.add_row(f["check"], str(f["count"]), f["what"], "; ".join(f["examples"][:2]), f["repair"] or "")
        repaired = result.get("repaired")
        done = f"; repaired {sum(repaired.values())} row(s)" if repaired else ""
        self.say(f"{job['kind']}: {report['problems']} problem(s) found{done}")

    # --- the daemon -----------------------------------------------------------------------------

    def _ask(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            return self._call(method, path, **kwargs)
        except MemCastleError as exc:
            self.call_from_thread(self.say, f"error: {exc.message}")
            return None
