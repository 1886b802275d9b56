"""Search through the service seam of a real palace: ranking modes, filters before limits, embeddings jobs."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from clocks import DistinctClock
from waiting import CEILING

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.errors import InvalidRequest, ProviderError
from memcastle.model.requests import CheckpointItem
from memcastle.search.engine import SearchEngine
from memcastle.search.semantic import SemanticIndex
from memcastle.search.tuning import EngineTuning
from memcastle.services import SearchRequest
from memcastle.services.search import build_query
from memcastle.store.sqlite import SQLiteStore

EMBEDDER = str(Path(__file__).with_name("embedder.py"))


def make_palace(path: Path, model: str | None = "bow") -> Palace:
    flags: dict[str, Any] = {"palace": str(path)}
    if model is None:
        flags["embeddings.provider"] = "none"
    else:
        flags.update(
            {
                "embeddings.provider": "command",
                "embeddings.model": model,
                "embeddings.command": [sys.executable, EMBEDDER],
            }
        )
    palace = build(load_settings(flags=flags, env={}), now=DistinctClock())
    palace.start()
    return palace


@pytest.fixture
def palace(tmp_path: Path) -> Iterator[Palace]:
    built = make_palace(tmp_path / "palace")
    yield built
    built.stop()


def settle(palace: Palace, timeout: float = 20) -> None:
    """Wait until no drawer waits for embeddings and no job is queued or running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = palace.services.jobs.list_jobs("queued", None) + palace.services.jobs.list_jobs("running", None)
        if not busy and not palace.services.status.embedding_status().pending:
            return
        time.sleep(0.02)
    raise AssertionError("jobs did not settle")


def ids(result: Any) -> list[str]:
    return [hit.drawer.id for hit in result.hits]


def test_auto_is_hybrid_with_every_signal_once_embeddings_exist(palace: Palace) -> None:
    car = palace.services.drawers.save_note("The automobile needs new tyres before winter").drawer
    palace.services.drawers.save_note("Lunch menu: soup and bread")
    settle(palace)
    result = palace.services.search.search(SearchRequest(query="car tyres"))
    assert result.ranking == "hybrid" and result.warnings == ()
    top = result.hits[0]
    assert top.drawer.id == car.id
    assert {"lexical", "semantic", "fusion", "relevance"} <= set(top.signals)


def test_semantic_finds_a_paraphrase_that_shares_no_word(palace: Palace) -> None:
    dog = palace.services.drawers.save_note("Our puppy chews every shoe in the hall").drawer
    palace.services.drawers.save_note("Quarterly report numbers are due Friday")
    settle(palace)
    assert palace.services.search.search(SearchRequest(query="canine", ranking="lexical")).hits == ()
    result = palace.services.search.search(SearchRequest(query="canine", ranking="semantic"))
    assert ids(result)[0] == dog.id and "semantic" in result.hits[0].signals


def test_explicit_semantic_without_embeddings_is_a_400_never_a_downgrade(tmp_path: Path) -> None:
    palace = make_palace(tmp_path / "p", model=None)
    try:
        palace.services.drawers.save_note("hello world")
        for ranking in ("semantic", "hybrid"):
            with pytest.raises(InvalidRequest) as caught:
                palace.services.search.search(SearchRequest(query="hello", ranking=ranking))
            assert caught.value.field == "ranking"
        assert palace.services.search.search(SearchRequest(query="hello")).ranking == "lexical"
    finally:
        palace.stop()


def test_a_failing_provider_never_blocks_a_write_and_auto_falls_back_with_a_warning(tmp_path: Path) -> None:
    palace = make_palace(tmp_path / "p", model="fail")
    try:
        saved = palace.services.drawers.save_note("the write must succeed while the provider is down")
        drawer, created = saved.drawer, saved.created
        assert created
        deadline = time.monotonic() + CEILING
        while not palace.services.status.status().warnings and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "embedding provider failed" in palace.services.status.status().warnings[0]
        result = palace.services.search.search(SearchRequest(query="write succeed"))
        assert result.ranking == "lexical" and ids(result) == [drawer.id]
        assert any("embeddings unavailable" in w for w in result.warnings)
        with pytest.raises(ProviderError):
            palace.services.search.search(SearchRequest(query="write", ranking="hybrid"))
    finally:
        palace.stop()


def test_filters_apply_inside_every_leg_before_the_limit(palace: Palace) -> None:
    for index in range(30):
        palace.services.drawers.save_note(f"kitten photo number {index}", wing="noise")
    wanted = palace.services.drawers.save_note("a kitten sleeping", wing="home", tags=["pets"]).drawer
    palace.services.drawers.save_note("a kitten playing", wing="home")
    settle(palace)
    for ranking in ("lexical", "semantic", "hybrid"):
        result = palace.services.search.search(
            SearchRequest(query="kitten", ranking=ranking, limit=1, wing="home", tags=("pets",))
        )
        assert ids(result) == [wanted.id], ranking


def test_every_temporal_form_follows_a_supersession_chain_in_every_leg(palace: Palace) -> None:
    first = palace.services.drawers.save_note("the database is MySQL", name="db").drawer
    settle(palace)
    between = palace.now()
    second = palace.services.drawers.supersede_drawer(first.id, "the database is Postgres now")
    third = palace.services.drawers.supersede_drawer(second.id, "the database is Postgres 16, database upgraded")
    settle(palace)
    for ranking in ("lexical", "semantic", "hybrid"):

        def found(ranking: str = ranking, **temporal: Any) -> set[str]:
            return set(ids(palace.services.search.search(SearchRequest(query="database", ranking=ranking, **temporal))))

        assert found() == {third.id}, ranking
        assert found(as_of=between) == {first.id}, ranking
        assert found(as_of=second.valid_from) == {second.id}, ranking
        assert found(include_historical=True) == {first.id, second.id, third.id}, ranking
        assert found(from_=first.valid_from, until=second.valid_from) == {first.id}, ranking
        assert found(from_=first.valid_from, until="2999-01-01") == {first.id, second.id, third.id}, ranking


def test_two_temporal_forms_at_once_are_a_400_naming_both(palace: Palace) -> None:
    with pytest.raises(InvalidRequest) as caught:
        palace.services.search.search(SearchRequest(query="x", as_of="2026-01-01", include_historical=True))
    assert caught.value.field == "as_of,include_historical"


def test_a_long_drawer_is_found_by_its_end_semantically(palace: Palace) -> None:
    filler = " ".join(f"ledger entry {i} balanced" for i in range(400))
    ending = " finally the feline escaped through the window; the cat escaped the window again at dawn, a window cat"
    long = palace.services.drawers.save_note(filler + ending).drawer
    palace.services.drawers.save_note(" ".join(f"ledger entry {i} reconciled" for i in range(400)))
    settle(palace)
    result = palace.services.search.search(SearchRequest(query="cat escaped window", ranking="semantic", limit=1))
    assert ids(result) == [long.id]


def test_a_model_change_re_embeds_in_the_background_and_drops_old_vectors(tmp_path: Path) -> None:
    path = tmp_path / "p"
    palace = make_palace(path, model="bow")
    drawer = palace.services.drawers.save_note("vectors for the first model").drawer
    settle(palace)
    palace.stop()
    palace = make_palace(path, model="dim8")
    try:
        settle(palace)
        status = palace.services.status.embedding_status().to_json()
        assert status == {
            "provider": "command",
            "model": "dim8",
            "dimension": 8,
            "pending": 0,
            "passages_done": None,
            "passages_pending": 0,
            "passages_per_second": None,
            "eta_seconds": 0,
            "index": {
                "search": "exact",
                "vectors": 1,
                "in_graph": 0,
                "graph_from": 20_000,
                "loading": False,
                "ranks_by": "command:dim8",
            },
        }
        result = palace.services.search.search(SearchRequest(query="first model vectors", ranking="semantic"))
        assert ids(result) == [drawer.id]
        jobs = palace.services.jobs.list_jobs("completed", "embed")
        assert jobs[0].result is not None and jobs[0].result["dropped_vectors"] >= 1
    finally:
        palace.stop()


def test_recall_searches_a_wing_and_refuses_a_room(palace: Palace) -> None:
    note = palace.services.drawers.save_note("recall me by this phrase", wing="w", room="r1").drawer
    assert ids(palace.services.search.recall(SearchRequest(query="phrase", wing="w"))) == [note.id]
    with pytest.raises(InvalidRequest) as caught:
        palace.services.search.recall(SearchRequest(query="phrase", room="r1"))
    assert caught.value.field == "room"


def test_wake_up_returns_the_latest_diary_entry_and_checkpoints_within_the_budget(palace: Palace) -> None:
    palace.services.agents.write_diary("agent-a", "old entry")
    latest = palace.services.agents.write_diary("agent-a", "latest entry: refactored the store")
    palace.services.agents.write_diary("agent-b", "someone else's entry")
    saved = palace.services.agents.checkpoint(
        [CheckpointItem("decided: use Postgres"), CheckpointItem("x" * 600)], agent="agent-a"
    )
    palace.services.agents.checkpoint([CheckpointItem("agent-b's own state")], agent="agent-b")
    bundle = palace.services.agents.wake_up("agent-a", max_bytes=300)
    assert [d["id"] for d in bundle["diary"]] == [latest.id]
    assert [d["id"] for d in bundle["checkpoints"]] == [saved[0].id]  # the 600-byte one does not fit
    assert bundle["omitted"] == 1 and bundle["bytes"] <= 300
    assert [d.id for d in palace.services.agents.read_diary("agent-a")][0] == latest.id


def test_a_checkpoint_with_one_bad_item_writes_nothing(palace: Palace) -> None:
    before = palace.services.status.status().drawers
    with pytest.raises(InvalidRequest) as caught:
        palace.services.agents.checkpoint([CheckpointItem("fine"), CheckpointItem("  ")])
    assert caught.value.field == "items[1].content"
    assert palace.services.status.status().drawers == before


class _HeldProvider:
    """An embedding provider that holds every query until the test lets it go, counting how many it holds at once."""

    name = "held"
    model = "held"
    is_enabled = True

    def __init__(self) -> None:
        self.inside = self.most = 0
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()
        self._lock = threading.Lock()

    def dimension(self) -> int:
        return 4

    def embed(self, texts: Sequence[str], kind: str = "document") -> np.ndarray:
        with self._lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        self.entered.release()
        self.release.wait(60)
        with self._lock:
            self.inside -= 1
        return np.tile(np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))


def test_searches_beyond_the_parallel_setting_wait_their_turn(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "palace")
    try:
        provider = _HeldProvider()
        engine = SearchEngine(store, provider, SemanticIndex(store, "held"), tuning=EngineTuning(parallel=2))
        query = build_query(SearchRequest(query="anything at all"))
        with ThreadPoolExecutor(5) as pool:
            searches = [pool.submit(engine.search, query) for _ in range(5)]
            assert provider.entered.acquire(timeout=60) and provider.entered.acquire(timeout=60)
            assert not provider.entered.acquire(timeout=0.5), "a third search computed beside two"
            provider.release.set()
            for search in searches:
                search.result(timeout=60)
        assert provider.most == 2
    finally:
        store.close()


def test_drawers_with_some_of_the_words_fill_the_lexical_leg_below_those_with_all(tmp_path: Path) -> None:
    palace = make_palace(tmp_path / "palace", model=None)
    try:
        save = palace.services.drawers.save_note
        every = [save(f"The moat pump {i} failed in spring", wing="w").drawer for i in range(2)]
        some = [save(f"moat moat moat note {i}", wing="w").drawer for i in range(3)]
        save("Unrelated: bread and soup", wing="w")
        hits = palace.services.search.search(SearchRequest(query="moat pump failed", wing="w", limit=10)).hits
        order = [hit.drawer.id for hit in hits]
        assert set(order[:2]) == {d.id for d in every}, "every word beats the same word three times over"
        assert set(order[2:]) == {d.id for d in some}, "some of the words still fill the leg"
        lexical = [hit.signals["lexical"] for hit in hits]
        assert lexical == sorted(lexical, reverse=True) and min(lexical[:2]) > max(lexical[2:])
    finally:
        palace.stop()


def test_the_count_of_drawers_waiting_for_vectors_is_taken_again_off_the_search_path(tmp_path: Path) -> None:
    """Counting reads the whole palace: the first search counts, later ones use the last count while a thread takes
    the next."""
    store = SQLiteStore(tmp_path / "palace")
    counted = threading.Event()
    gate = threading.Event()

    def pending(model: str) -> int:
        assert model == "held", "counted for the model the leg ranks by"
        if not counted.is_set():
            counted.set()
            return 3
        gate.wait(CEILING)  # every later count holds until the test lets it go
        return 5

    provider = _HeldProvider()
    provider.release.set()
    engine = SearchEngine(
        store, provider, SemanticIndex(store, "held"), pending=pending, tuning=EngineTuning(pending_ttl=0)
    )
    try:
        query = build_query(SearchRequest(query="anything at all"))
        assert "3 drawer(s) are still waiting" in engine.search(query).warnings[0], "the first search counts"
        assert "3 drawer(s)" in engine.search(query).warnings[0], "the next count is held: the last one stands"
        gate.set()
        deadline = time.monotonic() + CEILING
        while "5 drawer(s)" not in engine.search(query).warnings[0]:
            assert time.monotonic() < deadline, "the count taken in the background never arrived"
            time.sleep(0.01)
    finally:
        gate.set()
        engine.close()
        store.close()


def test_the_daemons_warm_up_search_leaves_no_count_behind(tmp_path: Path) -> None:
    """The search a daemon runs before its first client's (`SearchEngine.warm`) takes a pending count like any
    first search; the client's first search counts again, so drawers embedded meanwhile are not said to wait."""
    store = SQLiteStore(tmp_path / "palace")
    waiting = [63]
    provider = _HeldProvider()
    provider.release.set()
    engine = SearchEngine(store, provider, SemanticIndex(store, "held"), pending=lambda model: waiting[0])
    try:
        query = build_query(SearchRequest(query="anything at all"))
        engine.warm(query)
        waiting[0] = 0  # the embed sweep finished meanwhile
        assert not engine.search(query).warnings
    finally:
        engine.close()
        store.close()


def test_a_palace_starts_tells_its_status_and_searches_while_its_vectors_are_still_loading(tmp_path: Path) -> None:
    """Reading every stored vector takes most of a minute at a million: start, status and searches do not wait for
    it (the index's background thread loads them); status says the load is under way, and a search by meaning says
    it searched only the vectors read so far."""
    first = make_palace(tmp_path / "palace")
    note = first.services.drawers.save_note("The automobile needs new tyres before winter").drawer
    settle(first)
    first.stop()
    palace = build(
        load_settings(
            flags={
                "palace": str(tmp_path / "palace"),
                "embeddings.provider": "command",
                "embeddings.model": "bow",
                "embeddings.command": [sys.executable, EMBEDDER],
            },
            env={},
        ),
        now=DistinctClock(),
    )
    assert palace.maintainer is not None
    loader = palace.maintainer._index._loader
    pool = ThreadPoolExecutor(1)
    loader.acquire()  # a load under way, until the test ends it
    try:
        pool.submit(palace.start).result(timeout=CEILING)
        status = pool.submit(lambda: palace.services.status.embedding_status().to_json()).result(timeout=CEILING)
        hybrid = pool.submit(palace.services.search.search, SearchRequest(query="car tyres")).result(timeout=CEILING)
        meaning = pool.submit(
            palace.services.search.search, SearchRequest(query="car tyres", ranking="semantic")
        ).result(timeout=CEILING)
    finally:
        loader.release()
        pool.shutdown(wait=True)
    try:
        assert status["index"]["loading"] and status["index"]["vectors"] == 0
        loading = "the stored vectors are still being read after the start (0 so far)"
        assert ids(hybrid) == [note.id] and any(loading in w for w in hybrid.warnings), "found by its words"
        assert meaning.hits == () and any(loading in w for w in meaning.warnings)
        deadline = time.monotonic() + CEILING
        while palace.services.status.embedding_status().index["loading"]:
            assert time.monotonic() < deadline, "the background load never finished"
            time.sleep(0.01)
        assert palace.services.status.embedding_status().index["vectors"] >= 1
        result = palace.services.search.search(SearchRequest(query="car tyres", ranking="semantic"))
        assert ids(result) == [note.id] and result.warnings == ()
    finally:
        palace.stop()


def test_coverage_says_in_absolute_terms_how_much_of_the_query_a_hit_holds(palace: Palace) -> None:
    """Relevance is relative to the pool: a query nothing matches still gets a first hit at 1.0. Coverage is not."""
    palace.services.drawers.save_note("The granary stores barley and oats for the winter.", wing="c")
    palace.services.drawers.save_note("Oats are cheaper than barley this year.", wing="c")
    palace.services.drawers.save_note("The moat freezes in January.", wing="c")
    settle(palace)
    exact = palace.services.search.search(SearchRequest(query="granary barley winter", wing="c")).hits
    assert exact[0].signals["coverage"] == 1.0 and "granary" in exact[0].drawer.content
    partial = [h for h in exact if "cheaper" in h.drawer.content]
    assert partial and partial[0].signals["coverage"] == pytest.approx(1 / 3, abs=0.001)
    nonsense = palace.services.search.search(SearchRequest(query="quantum banana teleportation", wing="c")).hits
    assert nonsense, "the semantic leg always has a nearest drawer"
    assert nonsense[0].signals["relevance"] == 1.0 and all(h.signals["coverage"] == 0.0 for h in nonsense)
