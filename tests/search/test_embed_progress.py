"""The embed sweep says how far it is: passages done and still to go, its rate and an ETA, in the job, in
`status` and on the terminal."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from clocks import DistinctClock

from memcastle.app import Palace, build
from memcastle.cli.render import backlog_text, index_text, show_job
from memcastle.clock import eta_text
from memcastle.config import load_settings
from memcastle.model import NewDrawer, Origin, Progress, Provenance, Source
from memcastle.search.backfill import EmbeddingBackfill, SweepPace, model_key
from memcastle.search.embeddings import BuiltinProvider
from memcastle.search.passages import drawer_passages
from memcastle.search.semantic import SemanticIndex
from memcastle.services import SearchRequest
from memcastle.store.sqlite import DB_FILE


class Recording:
    """What the job engine hands a handler, keeping every checkpoint (the store under it is the palace's own)."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {}
        self.job_id = "job-under-test"
        self.checkpoints: list[tuple[dict[str, Any], int, int | None, str | None]] = []

    def checkpoint(
        self, state: Mapping[str, Any], current: int, total: int | None = None, message: str | None = None
    ) -> None:
        self.state = dict(state)
        self.checkpoints.append((dict(state), current, total, message))


class Ticks:
    """A monotonic clock that moves 2 s each time it is read."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        self.now += 2.0
        return self.now


@pytest.fixture
def unstarted(xdg_home: Any, palace_dir: Path) -> Iterator[Palace]:
    settings = load_settings(
        flags={"palace": str(palace_dir), "embeddings.provider": "builtin"}, env={}, config_file=None
    )
    palace = build(settings, now=DistinctClock())
    try:
        yield palace
    finally:
        palace.stop()


def test_the_estimate_comes_from_this_runs_rate_and_passages_per_drawer() -> None:
    backlog = SweepPace(started=10.0)
    nothing_yet = {"passages_pending": None, "passages_per_second": None, "eta_seconds": None}
    assert backlog.estimate(owed=0, unreached=50, now=12.0) == nothing_yet
    backlog.embedded, backlog.drawers_seen, backlog.passages_seen = 30, 10, 30
    # 3 passages a drawer, 15 passages a second: 50 drawers not reached are ~150 passages, plus 20 owed by drawers
    # whose first passage is in: 170 passages, 11 s.
    assert backlog.estimate(owed=20, unreached=50, now=12.0) == {
        "passages_pending": 170,
        "passages_per_second": 15.0,
        "eta_seconds": 11,
    }


def test_every_checkpoint_of_the_sweep_carries_the_backlog_and_the_last_says_nothing_is_left(
    unstarted: Palace,
) -> None:
    for i in range(5):
        unstarted.services.drawers.save_note(f"Note {i} about the release checklist and its owners.", wing="w")
    sweep = EmbeddingBackfill(unstarted.store.embeddings, BuiltinProvider(), batch_size=2, monotonic=Ticks())
    ctx = Recording()
    result = sweep.run(ctx)  # type: ignore[arg-type]
    assert result["embedded"] == 5 and result["passages"] == 5
    first, *_, last = ctx.checkpoints
    state, current, total, message = first
    assert (current, total) == (2, 5)
    # Two passages in 2 s (the clock moved once): 3 drawers of 1 passage left, 3 s to go.
    assert (state["passages"], state["passages_pending"], state["passages_per_second"], state["eta_seconds"]) == (
        2,
        3,
        1.0,
        3,
    )
    assert message == "2 passages, 3 to go, ETA 3 s (notes and documents first)"
    state, current, total, message = last
    assert (current, total, state["passages_pending"], message) == (5, 5, 0, "5 passages")


def test_the_jobs_progress_counts_passages_as_its_backlog_does(unstarted: Palace) -> None:
    """Before, the bar counted drawers made whole: 0 of 3 while the first passages went in. It counts passages now,
    the unit of the backlog and the ETA beside it."""
    sentence = "The cellar inventory lists every barrel, its vintage and the shelf it stands on. "
    for i in range(3):
        unstarted.services.drawers.save_note(f"Note {i}. " + sentence * 20, wing="w")  # three passages each
    sweep = EmbeddingBackfill(unstarted.store.embeddings, BuiltinProvider(), batch_size=2, monotonic=Ticks())
    ctx = Recording()
    sweep.run(ctx)  # type: ignore[arg-type]
    first, *_, last = ctx.checkpoints
    state, current, total, _ = first
    assert (current, total) == (state["passages"], state["passages"] + state["passages_pending"]) == (2, 9)
    assert last[1:3] == (9, 9)


def test_status_reports_the_backlog_of_the_running_sweep(unstarted: Palace) -> None:
    idle = unstarted.services.status.embedding_status().to_json()
    assert (idle["pending"], idle["passages_pending"], idle["eta_seconds"]) == (0, 0, 0)
    unstarted.services.drawers.save_note("A note that waits for its vector.", wing="w")
    waiting = unstarted.services.status.embedding_status().to_json()
    assert waiting["pending"] == 1
    assert waiting["passages_pending"] is None, "no sweep has measured anything yet: no invented estimate"


def test_the_terminal_line_reads_naturally() -> None:
    line = backlog_text(
        {"passages_done": 1200, "passages_pending": 3400, "passages_per_second": 41.2, "eta_seconds": 83}
    )
    assert line == " · 1,200 passages done, ~3,400 to go at 41/s, ETA 83 s"
    assert backlog_text({"passages_pending": 0}) == ""
    assert (eta_text(None), eta_text(300), eta_text(7500)) == ("", "ETA 5 min", "ETA 2 h 5 min")


def test_job_show_says_a_running_sweeps_figures_once(capsys: pytest.CaptureFixture[str]) -> None:
    job = {
        "id": "c1410f24", "kind": "embed", "status": "running", "priority": 0, "attempt": 1, "recovery_attempts": 0,
        "created_at": "2026-12-07T19:44:06Z", "started_at": "2026-12-07T19:44:06Z", "finished_at": None,
        "progress": {"current": 3391, "total": 60227,
                     "message": "3,391 passages, 56,836 to go, ETA 18 min (first passages first)"},
        "checkpoint": {"passages": 3391, "passages_pending": 56836, "passages_per_second": 53.0, "eta_seconds": 1072},
    }  # fmt: skip
    show_job(job)
    shown = capsys.readouterr().out
    assert "progress: 3,391/60,227 passages (first passages first)" in shown
    assert "embedding: 3,391 passages done, ~56,836 to go at 53/s, ETA 18 min" in shown
    assert shown.count("56,836") == 1, shown


def test_the_vectors_line_says_when_they_are_still_being_read_after_a_start() -> None:
    base = {"search": "exact", "vectors": 188_416, "in_graph": 0, "graph_from": 20_000}
    assert index_text({**base, "loading": True}) == (
        "188,416 in memory so far · loading the stored vectors (searches by meaning cover those read)"
    )
    assert index_text({**base, "loading": False}) == "188,416 in memory · exact scan (a graph from 20,000)"


def test_every_drawers_first_passage_is_embedded_before_any_drawers_others(unstarted: Palace) -> None:
    """Search by meaning reaches every drawer early: the sweep embeds each current drawer's first passage, then the
    others; a drawer with only its first passage counts as still waiting (for the fusion's fairness) until the
    rest is in."""
    paragraph = "The release train leaves every second Tuesday; whoever owns the branch tags it and writes the notes. "
    long_texts = [f"Runbook {i}. " + paragraph * 20 for i in range(3)]  # ~2,000 characters: three passages each
    drawers = [unstarted.services.drawers.save_note(text, wing="w").drawer for text in long_texts]
    store = unstarted.store
    index = SemanticIndex(store, model_key(BuiltinProvider()))
    seen: list[tuple[str, int, list[bool]]] = []

    class Watching(Recording):
        def checkpoint(
            self, state: Mapping[str, Any], current: int, total: int | None = None, message: str | None = None
        ) -> None:
            super().checkpoint(state, current, total, message)
            index.refresh()
            seen.append(
                (
                    state["stage"],
                    store.embeddings.count_missing_embeddings(index.model),
                    [index.has_vector(d.id) for d in drawers],
                )
            )

    sweep = EmbeddingBackfill(store.embeddings, BuiltinProvider(), batch_size=2, monotonic=Ticks())
    result = sweep.run(Watching())  # type: ignore[arg-type]
    assert result["embedded"] == 3 and result["passages"] == 9
    stages = [stage for stage, _, _ in seen]
    order = {"prose": 0, "head": 1, "rest": 2}
    assert stages == sorted(stages, key=order.__getitem__), "no drawer's later passages before every first one"
    last_head = max(i for i, (stage, _, _) in enumerate(seen) if stage in ("prose", "head"))
    # Every drawer has its first passage in, none is complete: all three still count as waiting.
    assert seen[last_head][1:] == (3, [False, False, False])
    assert index.size == 3 + (9 - 3) and seen[-1][1:] == (0, [True, True, True])
    hits = unstarted.services.search.search(SearchRequest(query="who tags the release branch", ranking="semantic"))
    assert {hit.drawer.id for hit in hits.hits} == {d.id for d in drawers}


def test_a_mine_during_the_later_passages_gets_its_first_passages_before_any_more_later_ones(unstarted: Palace) -> None:
    """Drawers filed while the sweep is in its later passages are findable by meaning first: their first passages
    come before any drawer's later passage, then their own later passages before the older backlog's."""
    paragraph = "The harbour master logs every ship that enters, its cargo, its crew and the berth it was given. "
    old = [unstarted.services.drawers.save_note(f"Old log {i}. " + paragraph * 20, wing="w").drawer for i in range(3)]
    store = unstarted.store
    model = model_key(BuiltinProvider())
    fresh: list[Any] = []
    order: list[set[tuple[str, int]]] = []  # the passages in after each unit of work
    arrival: list[int] = []  # where in `order` the fresh drawers were filed

    def passages_in() -> set[tuple[str, int]]:
        with sqlite3.connect(unstarted.settings.palace / DB_FILE) as conn:
            rows = conn.execute(
                "SELECT d.id, e.passage FROM embedding e JOIN drawer d ON d.seq = e.drawer_seq WHERE e.model = ?",
                (model,),
            ).fetchall()
        return {(drawer_id, passage) for drawer_id, passage in rows}

    class MiningMeanwhile(Recording):
        def checkpoint(
            self, state: Mapping[str, Any], current: int, total: int | None = None, message: str | None = None
        ) -> None:
            super().checkpoint(state, current, total, message)
            order.append(passages_in())
            if state["stage"] == "rest" and not fresh:
                fresh.extend(
                    unstarted.services.drawers.save_note(f"New log {i}. " + paragraph * 20, wing="w").drawer
                    for i in range(3)
                )
                arrival.append(len(order) - 1)

    sweep = EmbeddingBackfill(store.embeddings, BuiltinProvider(), batch_size=1, monotonic=Ticks())
    result = sweep.run(MiningMeanwhile())  # type: ignore[arg-type]
    assert result["embedded"] == 6 and store.embeddings.count_missing_embeddings(model) == 0
    fresh_ids, old_ids = {d.id for d in fresh}, {d.id for d in old}
    assert arrival and any(p > 0 for _, p in order[arrival[0]]), "the fresh drawers came during the later passages"
    added = [after - before for before, after in zip(order[arrival[0] :], order[arrival[0] + 1 :], strict=False)]
    steps = [(d in fresh_ids, p) for step in added for d, p in sorted(step)]
    heads = [i for i, (is_fresh, p) in enumerate(steps) if is_fresh and p == 0]
    later = [i for i, (is_fresh, p) in enumerate(steps) if p > 0]
    assert len(heads) == 3 and max(heads) < min(later), f"every fresh first passage before any later one: {steps}"
    fresh_later = [i for i, (is_fresh, p) in enumerate(steps) if is_fresh and p > 0]
    old_later = [i for i, (is_fresh, p) in enumerate(steps) if not is_fresh and p > 0]
    assert fresh_later and max(fresh_later) < min(old_later), steps
    assert all(d in old_ids | fresh_ids for step in added for d, _ in step)


def test_notes_and_documents_get_their_first_vectors_before_code_files_even_when_filed_during_the_sweep(
    unstarted: Palace,
) -> None:
    """What people write is what a user searches by meaning first: the sweep's first vectors go to notes and prose
    files before code and data files, among the drawers it found and among those filed while it runs; its line
    says so while it does."""
    store = unstarted.store

    def filed(document: str) -> str:
        origin = Origin(connector="directory", source_id="s", document=document, chunk=0, revision="r", metadata={})
        source = Source(kind="file", uri=f"file:///p/{document}", origin=origin)
        text = f"The contents of {document}, a file the sweep embeds."
        new = NewDrawer(wing="w", room="r", content=text, source=source, provenance=Provenance(requested_by="cli"))
        return store.drawers.add_drawer(new).id

    found = [filed("a.py"), filed("guide.md"), filed("b.py"), filed("notes.txt")]
    later: list[str] = []
    embedded: list[str] = []

    class FilingMeanwhile(Recording):
        def checkpoint(
            self, state: Mapping[str, Any], current: int, total: int | None = None, message: str | None = None
        ) -> None:
            super().checkpoint(state, current, total, message)
            with sqlite3.connect(unstarted.settings.palace / DB_FILE) as conn:
                rows = conn.execute("SELECT d.id FROM embedding e JOIN drawer d ON d.seq = e.drawer_seq").fetchall()
            embedded.extend(r[0] for r in rows if r[0] not in embedded)
            if not later:
                later.extend([filed("c.py"), filed("d.json"), unstarted.services.drawers.save_note("a note").drawer.id])

    sweep = EmbeddingBackfill(store.embeddings, BuiltinProvider(), batch_size=1, monotonic=Ticks())
    recorder = FilingMeanwhile()
    sweep.run(recorder)  # type: ignore[arg-type]
    names = dict(
        zip([*found, *later], ["a.py", "guide.md", "b.py", "notes.txt", "c.py", "d.json", "note"], strict=True)
    )
    # Prose the sweep found, newest first; a note filed meanwhile; the rest of the prose; the code and data filed
    # meanwhile; the code found.
    assert [names[d] for d in embedded] == ["notes.txt", "note", "guide.md", "c.py", "d.json", "b.py", "a.py"]
    stages = [state["stage"] for state, *_ in recorder.checkpoints]
    assert stages[0] == "prose" and "head" in stages, stages
    assert recorder.checkpoints[0][3].endswith("(notes and documents first)"), "and says so"


def test_the_later_passages_of_test_files_come_after_every_other_drawers(unstarted: Palace) -> None:
    """Half a code base's passages can be its tests (the standard library's are): the sweep completes every other
    drawer first, so the code people search for is whole by meaning sooner; the line says so. First passages
    still come first, the tests' too."""
    store = unstarted.store
    body = "def handler(request):\n    return respond(request.path, status=200, headers=default_headers())\n" * 12

    def filed(document: str) -> str:
        origin = Origin(connector="directory", source_id="s", document=document, chunk=0, revision="r", metadata={})
        source = Source(kind="file", uri=f"file:///p/{document}", origin=origin)
        new = NewDrawer(wing="w", room="r", content=f"# {document}\n" + body, source=source,
                        provenance=Provenance(requested_by="cli"))  # fmt: skip
        return store.drawers.add_drawer(new).id

    paths = ["Lib/test/test_http.py", "app/server.py", "tests/unit/helpers.py", "pkg/test_views.py",
             "web/api.test.ts", "cli/main.py", "testing/README.txt"]  # fmt: skip
    names = {filed(path): path for path in paths}
    model = model_key(BuiltinProvider())
    steps: list[tuple[str, int]] = []

    class Watching(Recording):
        def checkpoint(
            self, state: Mapping[str, Any], current: int, total: int | None = None, message: str | None = None
        ) -> None:
            super().checkpoint(state, current, total, message)
            with sqlite3.connect(unstarted.settings.palace / DB_FILE) as conn:
                rows = conn.execute(
                    "SELECT d.id, e.passage FROM embedding e JOIN drawer d ON d.seq = e.drawer_seq WHERE e.model = ?",
                    (model,),
                ).fetchall()
            steps.extend((names[d], p) for d, p in sorted(rows, key=lambda r: r[1]) if (names[d], p) not in steps)

    recorder = Watching()
    sweep = EmbeddingBackfill(store.embeddings, BuiltinProvider(), batch_size=1, monotonic=Ticks())
    sweep.run(recorder)  # type: ignore[arg-type]
    assert store.embeddings.count_missing_embeddings(model) == 0
    tests = {"Lib/test/test_http.py", "tests/unit/helpers.py", "pkg/test_views.py", "web/api.test.ts"}
    heads = [i for i, (_, p) in enumerate(steps) if p == 0]
    others_later = [i for i, (path, p) in enumerate(steps) if p > 0 and path not in tests]
    tests_later = [i for i, (path, p) in enumerate(steps) if p > 0 and path in tests]
    assert len(heads) == len(paths) and max(heads) < min(others_later + tests_later), steps
    assert others_later and tests_later and max(others_later) < min(tests_later), steps
    messages = [m for _, _, _, m in recorder.checkpoints if m]
    assert any(m.endswith("(tests last)") for m in messages), messages


def test_a_unit_of_work_is_bounded_by_passages_not_drawers(unstarted: Palace) -> None:
    """Long drawers do not make a batch long: where a pause or a shutdown takes effect stays a few seconds away."""
    paragraph = "Each drawer here is long enough for several passages of the builtin model to embed in turn. "
    for i in range(4):
        unstarted.services.drawers.save_note(f"Long drawer {i}. " + paragraph * 25, wing="w")  # ~3 passages each
    sweep = EmbeddingBackfill(
        unstarted.store.embeddings, BuiltinProvider(), batch_size=64, max_passages=5, monotonic=Ticks()
    )
    ctx = Recording()
    result = sweep.run(ctx)  # type: ignore[arg-type]
    counts = [state["passages"] for state, _, _, _ in ctx.checkpoints]
    steps = [after - before for before, after in zip([0, *counts], counts, strict=False)]
    assert result["embedded"] == 4 and sum(steps) == result["passages"]
    assert max(steps) <= 5 and len(steps) > 2, steps
    assert unstarted.store.embeddings.count_missing_embeddings(model_key(BuiltinProvider())) == 0


def test_the_rate_is_the_latest_minutes_so_the_eta_follows_a_machine_that_slowed_down() -> None:
    """An ETA from the rate since the sweep began lagged a machine that got busy (it said 18 minutes for ~3 hours)."""
    backlog = SweepPace(started=0.0)
    backlog.drawers_seen = backlog.passages_seen = 1
    for second in range(1, 121):  # 100 passages a second for two minutes
        backlog.note(100, float(second))
    for second in range(121, 241):  # then 10 a second: a mine started beside it
        backlog.note(10, float(second))
    estimate = backlog.estimate(owed=6000, unreached=0, now=240.0)
    assert estimate["passages_per_second"] == pytest.approx(10, rel=0.05)
    assert estimate["eta_seconds"] == pytest.approx(600, rel=0.05)  # the since-start rate would say ~109 s


def test_the_passages_left_are_counted_exactly_at_every_checkpoint_drawers_filed_meanwhile_too(
    unstarted: Palace,
) -> None:
    """The backlog said ~36,161 to go where 61,780 were left: an estimate from the passages per drawer seen. It is
    now the passages the waiting drawers still have, as the sweep splits them."""
    drawers = unstarted.services.drawers
    for i in range(6):  # short notes of several sentences: a passage each, and one per sentence
        drawers.save_note(f"Note {i} is short. It has three sentences. Each gets a vector of its own.", wing="w")
    for i in range(3):  # long ones: several passages each
        drawers.save_note(" ".join(f"Paragraph {i}.{n} of a long report about the harbour works." for n in range(60)))
    provider = BuiltinProvider()
    model = model_key(provider)
    clock = Ticks()
    sweep = EmbeddingBackfill(unstarted.store.embeddings, provider, batch_size=2, max_passages=8, monotonic=clock)

    def truth() -> int:
        store = unstarted.store.embeddings
        waiting = store.waiting_texts(model, 0, store.last_drawer_seq(), 10_000)
        total = sum(len(drawer_passages(text, 700, 0, 700)) for _, text in waiting)
        return total - store.count_stored_of_waiting(model, 0, store.last_drawer_seq())

    class Checking(Recording):
        def checkpoint(
            self, state: Mapping[str, Any], current: int, total: int | None = None, message: str | None = None
        ) -> None:
            super().checkpoint(state, current, total, message)
            self.truths.append(truth())
            if len(self.checkpoints) == 2:  # a mine files more while the sweep runs
                drawers.save_note("A later note. Filed while the sweep runs.", wing="w")
                clock.now += 60  # past the recount

    ctx = Checking()
    ctx.truths = []  # type: ignore[attr-defined]
    sweep.run(ctx)  # type: ignore[arg-type]
    said = [state["passages_pending"] for state, *_ in ctx.checkpoints]
    assert len(said) > 4 and said == ctx.truths, (said, ctx.truths)  # type: ignore[attr-defined]
    assert said[-1] == 0


def test_a_resumed_sweep_starts_from_its_last_rate_and_moves_to_its_own() -> None:
    """A restart reset the ETA (2 h 21 min after 45 min): a resumed sweep begins with what its last run measured."""
    resumed = SweepPace(started=0.0, drawers_seen=10, passages_seen=30, prior_rate=15.0)
    assert resumed.estimate(owed=20, unreached=50, now=0.5) == {
        "passages_pending": 170,
        "passages_per_second": 15.0,
        "eta_seconds": 11,
    }, "an estimate before this run's first batch, from the last run's figures"
    for second in range(1, 17):  # this run: 5 passages a second
        resumed.note(5, float(second))
    assert resumed.rate(16.0) == pytest.approx(0.5 * 5 + 0.5 * 15.0, rel=0.05), "halfway there after 15 s"
    for second in range(17, 61):
        resumed.note(5, float(second))
    assert resumed.rate(60.0) == pytest.approx(5.0, rel=0.01), "its own rate once it has measured enough"


def test_drawers_filed_while_the_sweep_runs_are_counted_in_what_is_left(unstarted: Palace) -> None:
    for i in range(4):
        unstarted.services.drawers.save_note(f"Note {i} about the cellar inventory.", wing="w")
    clock = Ticks()
    sweep = EmbeddingBackfill(unstarted.store.embeddings, BuiltinProvider(), batch_size=1, monotonic=clock)

    class FilingMeanwhile(Recording):
        """A mine files ten more drawers after the sweep's first unit of work."""

        def checkpoint(
            self, state: Mapping[str, Any], current: int, total: int | None = None, message: str | None = None
        ) -> None:
            if not self.checkpoints:
                for i in range(10):
                    unstarted.services.drawers.save_note(f"Later note {i} about the well.", wing="w")
                clock.now += 60  # past the recount
            super().checkpoint(state, current, total, message)

    ctx = FilingMeanwhile()
    result = sweep.run(ctx)  # type: ignore[arg-type]
    assert result["embedded"] == 14
    totals = [total for _, _, total, _ in ctx.checkpoints]
    # From the first unit after the recount on, the later drawers are in what is left (they used to be missing
    # until the sweep reached them).
    assert totals[0] == 4 and totals[1:] == [14] * (len(totals) - 1), totals


def test_status_follows_the_running_sweep_not_a_request_queued_behind_it(unstarted: Palace) -> None:
    store = unstarted.store
    running = unstarted.services.jobs.submit_job("embed", {}, priority="background", coalesce_key="embed").job
    claimed = store.jobs.claim_next_job("probe", 60.0, ["embed"])
    assert claimed is not None and claimed.id == running.id
    store.jobs.save_job_checkpoint(
        running.id,
        "probe",
        {"passages": 10, "passages_pending": 90, "passages_per_second": 5.0, "eta_seconds": 18},
        Progress(current=1, total=10),
        60.0,
    )
    submitted = unstarted.services.jobs.submit_job("embed", {}, priority="background", coalesce_key="embed")
    queued, created = submitted.job, submitted.created
    assert created and queued.id != running.id
    unstarted.services.drawers.save_note("A note that waits for its vector.", wing="w")
    status = unstarted.services.status.embedding_status().to_json()
    assert (status["passages_pending"], status["eta_seconds"]) == (90, 18)
