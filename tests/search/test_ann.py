"""The semantic leg's HNSW graph: above `ann_min_rows` it answers like the exact scan (same filters, rows it does not
hold yet scanned beside it, replaced rows never returned); its file beside the palace is reused when it matches the
store and rebuilt when it does not."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from waiting import wait_until

from memcastle.model import DrawerScope, NewDrawer, Scope
from memcastle.search import semantic
from memcastle.search.maintainer import IndexMaintainer
from memcastle.search.semantic import SemanticIndex
from memcastle.store.notices import Notices
from memcastle.store.sqlite import SQLiteStore

DIM = 32


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "palace")
    yield opened
    opened.close()


def clustered(count: int, seed: int) -> np.ndarray:
    """Unit vectors around a few dozen centres, as text embeddings are (not uniform noise)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, DIM))
    rows = centres[rng.integers(0, 40, count)] + 0.6 * rng.standard_normal((count, DIM))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype(np.float32)


def fill(store: SQLiteStore, count: int, *, seed: int = 1, wing_every: int = 10) -> list[str]:
    ids = [
        store.drawers.add_drawer(
            NewDrawer(wing="small" if i % wing_every == 0 else "big", room="r", content=f"d{i}")
        ).id
        for i in range(count)
    ]
    vectors = clustered(count, seed)
    store.embeddings.put_embeddings("m", [(d, vectors[i : i + 1]) for i, d in enumerate(ids)])
    return ids


def built(store: SQLiteStore, path: Path | None, min_rows: int = 200) -> SemanticIndex:
    index = SemanticIndex(store, "m", ann_path=path, ann_min_rows=min_rows)
    while index.maintain():
        pass
    return index


def graph_copy(vector: np.ndarray) -> bytes:
    """The bytes of a unit vector's copy in the graph: usearch's int8 storage keeps each component × 127, truncated."""
    return np.trunc(vector * 127).astype(np.int8).tobytes()


def exact(store: SQLiteStore) -> SemanticIndex:
    return SemanticIndex(store, "m", ann_min_rows=10**9)


def test_the_graph_finds_what_the_exact_scan_finds(store: SQLiteStore, tmp_path: Path) -> None:
    fill(store, 1500)
    graph, scan = built(store, tmp_path / "g.usearch"), exact(store)
    assert graph._ann is not None and len(graph._ann) == 1500
    queries = clustered(60, seed=9)
    overlap = []
    for query in queries:
        got = graph.candidates(query, 10, Scope())
        want = scan.candidates(query, 10, Scope())
        overlap.append(len({c.drawer_id for c in got} & {c.drawer_id for c in want}) / len(want))
        # The graph only finds the rows; their cosines are taken again from the stored float32 vectors: exact.
        scores = {c.drawer_id: c.signal for c in want}
        assert all(abs(c.signal - scores[c.drawer_id]) < 1e-6 for c in got if c.drawer_id in scores)
    assert np.mean(overlap) >= 0.95


def test_rows_in_the_graph_keep_no_float32_copy(store: SQLiteStore, tmp_path: Path) -> None:
    ids = fill(store, 1500)
    graph = built(store, tmp_path / "g.usearch")
    snapshot = graph._snapshot
    assert snapshot.base == 1500 and snapshot.matrix.shape[0] <= 1024, "the graph's rows are its copies alone"
    late = store.drawers.add_drawer(NewDrawer(wing="big", room="r", content="late")).id
    store.embeddings.put_embeddings("m", [(late, clustered(1, seed=77))])
    graph.refresh()
    assert graph._snapshot.base == 1500 and graph._snapshot.count == 1501, "new rows are kept until the graph has them"
    graph.maintain()
    assert graph._snapshot.base == 1501
    stored = clustered(1500, 1)  # the vectors `fill` stored
    back = graph._vectors(graph._snapshot, np.array([0, 700, 1499]))
    assert np.array_equal(back, stored[[0, 700, 1499]]), "read back from the store, bit for bit"
    assert graph.has_vector(ids[0]) and graph.has_vector(late)


def test_a_time_or_scope_the_graph_misses_is_scanned_over_what_is_eligible(
    store: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(semantic, "ANN_MAX_K", 128)
    ids = fill(store, 1500)
    kept = set(ids[::100])
    for drawer_id in ids:
        if drawer_id not in kept:
            store.drawers.invalidate_drawer(drawer_id)
    graph, scan = built(store, tmp_path / "g.usearch"), exact(store)
    assert graph._ann is not None and graph._snapshot.base == 1500
    for query in clustered(10, seed=6):
        assert graph._approximate(graph._snapshot, graph._ann, query, 10, Scope()) is None
        got = graph.candidates(query, 10, Scope())
        want = scan.candidates(query, 10, Scope())
        assert [c.drawer_id for c in got] == [c.drawer_id for c in want]
        assert {c.drawer_id for c in got} <= kept
        assert [c.signal for c in got] == pytest.approx([c.signal for c in want], abs=1e-6)


def test_filters_apply_before_the_limit_and_narrow_scopes_scan_exactly(store: SQLiteStore, tmp_path: Path) -> None:
    ids = fill(store, 1200, wing_every=3)
    for drawer_id in ids[1:400:2]:
        store.drawers.invalidate_drawer(drawer_id)
    graph, scan = built(store, tmp_path / "g.usearch"), exact(store)
    for query in clustered(20, seed=4):
        for scope in (Scope(wing="small"), Scope()):
            got = graph.candidates(query, 10, scope)
            assert len(got) == 10
            eligible = store.search.eligible_ids([c.drawer_id for c in got], scope)
            assert eligible == {c.drawer_id for c in got}, "closed or out-of-scope drawers never come back"
            want = scan.candidates(query, 10, scope)
            assert len({c.drawer_id for c in got} & {c.drawer_id for c in want}) >= 8
    graph.ann_min_rows = 500  # now the wing "small" (400 rows) is narrower than the graph pays for
    assert graph._narrow(Scope(wing="small")) and not graph._narrow(Scope(wing="big"))
    query = clustered(1, seed=5)[0]
    got = graph.candidates(query, 10, Scope(wing="small"))
    want = scan.candidates(query, 10, Scope(wing="small"))
    assert [c.drawer_id for c in got] == [c.drawer_id for c in want]
    assert [c.signal for c in got] == pytest.approx([c.signal for c in want], abs=1e-6)


def test_eligibility_is_asked_for_the_best_first_and_ties_past_them_still_break_by_id(
    store: SQLiteStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store is asked about the best candidates a prefix at a time, not all ~8 × `need` of them; the answer is
    the one asking about all of them gives: drawers tied with the last one kept are asked too (ties break by id),
    and when the best candidates are closed, the prefix widens."""
    fill(store, 600)
    same = np.ones((1, DIM), dtype=np.float32) / np.sqrt(DIM)
    tied = [store.drawers.add_drawer(NewDrawer(wing="big", room="r", content=f"tied {i}")).id for i in range(50)]
    store.embeddings.put_embeddings("m", [(d, same) for d in tied])
    graph, scan = built(store, tmp_path / "g.usearch"), exact(store)
    asked: list[int] = []
    eligible_ids = store.search.eligible_ids

    def counted(drawer_ids: list[str], *args: object) -> set[str]:
        asked.append(len(drawer_ids))
        return eligible_ids(drawer_ids, *args)  # type: ignore[arg-type]

    store.search.eligible_ids = counted  # type: ignore[method-assign]
    for index in (graph, scan):
        asked.clear()
        got = index.candidates(same[0], 5, Scope())
        assert [c.drawer_id for c in got] == sorted(tied)[:5], "a tie is broken by id over every tied drawer"
        assert asked[0] == 32 and sum(asked) >= 50
        query = clustered(1, seed=3)[0]
        asked.clear()
        got = index.candidates(query, 5, Scope())
        assert asked[0] == 32 and sum(asked) < 64, "the best are asked about first, not every candidate"
    query = clustered(1, seed=3)[0]
    for drawer in scan.candidates(query, 40, Scope()):
        store.drawers.invalidate_drawer(
            drawer.drawer_id
        )  # the index cannot tell: only the store knows a drawer is closed
    for index in (graph, scan):
        asked.clear()
        got = index.candidates(query, 5, Scope())
        assert len(got) == 5 and len(asked) >= 2, "when the first ones are closed, more are asked about"
    store.search.eligible_ids = eligible_ids  # type: ignore[method-assign]
    assert [c.drawer_id for c in got] == [c.drawer_id for c in graph.candidates(query, 5, Scope())]
    for query in clustered(10, seed=8):
        for index, need in ((graph, 20), (scan, 20), (graph, 3), (scan, 3)):
            got = index.candidates(query, need, Scope())
            monkeypatch.setattr(semantic, "_ELIGIBLE_FIRST", 10**6)  # every candidate asked about at once
            assert index.candidates(query, need, Scope()) == got
            monkeypatch.undo()


def test_rows_the_graph_lacks_are_scanned_and_replaced_rows_never_return(store: SQLiteStore, tmp_path: Path) -> None:
    ids = fill(store, 600)
    graph = built(store, tmp_path / "g.usearch")
    late = store.drawers.add_drawer(NewDrawer(wing="big", room="r", content="late")).id
    target = np.zeros(DIM, dtype=np.float32)
    target[0] = 1.0
    store.embeddings.put_embeddings("m", [(late, target[None, :])])
    found = graph.candidates(target, 3, Scope())
    assert found[0].drawer_id == late and found[0].signal == pytest.approx(1.0), "not in the graph yet, still found"
    # Re-embedding a drawer from its first passage replaces its rows: its old vector must not bring it in.
    old_vector = graph._vectors(graph._snapshot, np.array([0]))[0]
    assert graph.candidates(old_vector, 1, Scope())[0].drawer_id == ids[0]
    store.embeddings.put_embeddings("m", [(ids[0], -old_vector[None, :])])
    assert ids[0] not in {c.drawer_id for c in graph.candidates(old_vector, 10, Scope())}


def test_the_saved_graph_is_reused_and_a_stale_or_damaged_one_rebuilt(
    store: SQLiteStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ids = fill(store, 800)
    path = tmp_path / "vectors" / "m.usearch"
    first = built(store, path)
    first.save()
    assert path.is_file() and path.with_suffix(".json").is_file()

    again = SemanticIndex(store, "m", ann_path=path, ann_min_rows=200)
    assert again.maintain() == 0, "the saved graph matches the store: nothing to add"
    assert again._ann is not None and len(again._ann) == 800

    other = SemanticIndex(store, "another-model", ann_path=path, ann_min_rows=200)
    store.embeddings.put_embeddings("another-model", [(d, clustered(1, i)) for i, d in enumerate(ids[:200])])
    other.ann_min_rows = 100
    with caplog.at_level(logging.WARNING):
        assert other.maintain() > 0
    assert "another model" in caplog.text

    path.write_bytes(b"not a graph at all")
    caplog.clear()
    notices = Notices(tmp_path)
    told = lambda where, why: notices.add("vector cache rebuilt", where, f"{where} rebuilt: {why}")  # noqa: E731
    with caplog.at_level(logging.WARNING):
        rebuilt = SemanticIndex(store, "m", ann_path=path, ann_min_rows=200, on_rebuilt=told)
        assert rebuilt.maintain() > 0
    assert "rebuilding the vector index" in caplog.text
    # Not a log line alone: a notice, kept until a person acknowledges it.
    (notice,) = Notices(tmp_path).current()
    assert notice.subject == str(path) and "unreadable" in notice.text


def test_a_graph_from_a_palace_with_other_rows_is_rebuilt(store: SQLiteStore, tmp_path: Path) -> None:
    """A file copied from another palace (or a backup restored under a newer file) knows rows this store does not
    have, or holds other vectors under the same ids."""
    fill(store, 500, seed=1)
    path = tmp_path / "m.usearch"
    built(store, path).save()
    elsewhere = SQLiteStore(tmp_path / "other")
    try:
        fill(elsewhere, 500, seed=2)
        index = SemanticIndex(elsewhere, "m", ann_path=path, ann_min_rows=200)
        assert index.maintain() == 500, "the other palace's vectors differ: rebuilt from its own"
    finally:
        elsewhere.close()


def test_the_maintainer_builds_in_the_background_and_saves_on_stop(store: SQLiteStore, tmp_path: Path) -> None:
    fill(store, 400)
    path = tmp_path / "m.usearch"
    index = SemanticIndex(store, "m", ann_path=path, ann_min_rows=200)
    maintainer = IndexMaintainer(index, poll=0.05)
    maintainer.start()
    wait_until(lambda: index._ann is not None and len(index._ann) == 400, what="the graph to hold every row")
    maintainer.stop()
    assert path.is_file()


def test_describe_says_how_searches_by_meaning_run(store: SQLiteStore, tmp_path: Path) -> None:
    fill(store, 300)
    index = SemanticIndex(store, "m", ann_path=tmp_path / "m.usearch", ann_min_rows=200)
    assert index.describe()["loading"], "nothing read yet"
    index.refresh()
    assert index.describe() == {"search": "exact", "vectors": 300, "in_graph": 0, "graph_from": 200, "loading": False}
    while index.maintain():
        pass
    assert index.describe() == {"search": "graph", "vectors": 300, "in_graph": 300, "graph_from": 200, "loading": False}


def test_the_daemon_status_shows_the_graph_once_built(tmp_path: Path) -> None:
    """End to end through the palace: the maintainer starts with it, builds the graph, `status` says so, and the
    graph is saved when the palace stops."""
    from memcastle.app import build
    from memcastle.config import load_settings
    from memcastle.search.backfill import model_key
    from memcastle.search.embeddings import BuiltinProvider

    folder = tmp_path / "palace"
    settings = load_settings(
        flags={"palace": str(folder), "search.ann_min_rows": 150, "jobs.drain_seconds": 3.0}, env={}, config_file=None
    )
    palace = build(settings)
    try:
        ids = [palace.store.drawers.add_drawer(NewDrawer(wing="w", room="r", content=f"d{i}")).id for i in range(200)]
        rng = np.random.default_rng(3)
        vectors = rng.standard_normal((200, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        palace.store.embeddings.put_embeddings(
            model_key(BuiltinProvider()), [(d, vectors[i : i + 1]) for i, d in enumerate(ids)]
        )
        palace.start()

        def graph() -> bool:
            index = palace.services.status.embedding_status().index
            return index["search"] == "graph" and index["in_graph"] == 200

        wait_until(graph, what="the status to show a graph holding every vector")
    finally:
        palace.stop()
    assert list((folder / "vectors").glob("*.usearch"))


def test_the_graph_library_and_the_model_runtime_load_in_the_daemons_order() -> None:
    """The daemon may build a graph before the first query loads the embedding model: loading onnxruntime after the
    graph library must not crash the process (usearch 2.26 did, with SIGSEGV)."""
    import subprocess
    import sys

    script = (
        "import numpy as np\n"
        "from memcastle.search.ann import AnnIndex, AnnShape\n"
        "graph = AnnIndex(AnnShape.default('m', 8))\n"
        "graph.add(np.arange(1, 4, dtype=np.int64), np.eye(3, 8, dtype=np.float32))\n"
        "from memcastle.search.embeddings import BuiltinProvider\n"
        "print(BuiltinProvider().embed(['after the graph'])[0].shape)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "(384,)"


def test_forgotten_rows_leave_the_graph_and_its_file_at_once(store: SQLiteStore, tmp_path: Path) -> None:
    ids = fill(store, 400)
    path = tmp_path / "vectors" / "m.usearch"
    index = built(store, path)
    index.save()
    vectors = clustered(400, 1)
    gone = ids[5:25]
    planted = [graph_copy(vectors[i]) for i in range(5, 25)]
    assert all(v in path.read_bytes() for v in planted), "the saved graph holds the vectors to forget"
    store.forgetting.forget(DrawerScope(drawer_id=gone[0]), dry_run=False, requested_by="test")
    for drawer_id in gone[1:]:
        store.forgetting.forget(DrawerScope(drawer_id=drawer_id), dry_run=False, requested_by="test")
    index.forget(gone)
    data = path.read_bytes()
    assert not any(v in data for v in planted), "no forgotten vector survives in the file"
    assert sum(graph_copy(vectors[i]) in data for i in range(30, 60)) == 30, "the others stay"
    query = vectors[7]
    found = index.candidates(query, 10, Scope())
    assert not {h.drawer_id for h in found} & set(gone)
    assert [h.drawer_id for h in found] == [h.drawer_id for h in exact(store).candidates(query, 10, Scope())]
    again = built(store, path)
    assert len(again._ann or []) == 380, "the saved file is reused without the forgotten rows"


def test_forgetting_a_large_share_starts_the_index_afresh(store: SQLiteStore, tmp_path: Path) -> None:
    ids = fill(store, 400)
    path = tmp_path / "vectors" / "m.usearch"
    index = built(store, path)
    index.save()
    for drawer_id in ids[:150]:
        store.forgetting.forget(DrawerScope(drawer_id=drawer_id), dry_run=False, requested_by="test")
    index.forget(ids[:150])
    assert not path.exists(), "the file went at once; the graph is built again"
    query = clustered(400, 1)[300]
    found = index.candidates(query, 10, Scope())
    assert [h.drawer_id for h in found] == [h.drawer_id for h in exact(store).candidates(query, 10, Scope())]
    assert index.size == 250
    while index.maintain():
        pass
    index.save()
    assert path.exists() and len(index._ann or []) == 250


def test_a_search_does_not_wait_for_a_whole_batch_of_insertions() -> None:
    """usearch keeps the interpreter while it inserts: rows go in a few at a time, so a search (and every other thread
    of the daemon) runs between them instead of waiting for the whole batch."""
    import threading

    from memcastle.search.ann import ADD_CHUNK, AnnIndex, AnnShape

    rng = np.random.default_rng(5)
    rows = 16 * 1024  # over a second of insertion: the first chunk is in after milliseconds
    vectors = rng.standard_normal((rows, 16)).astype(np.float32)
    index = AnnIndex(AnnShape.default("m", 16))
    adding = threading.Thread(target=index.add, args=(np.arange(1, rows + 1, dtype=np.int64), vectors))
    adding.start()
    try:
        wait_until(lambda: index.covered >= ADD_CHUNK, what="the first rows inserted")
        keys, _ = index.search(vectors[0], 5)
        assert adding.is_alive(), "the search waited for every row of the batch"
        assert 1 in keys.tolist()
    finally:
        adding.join()
    assert len(index) == rows and index.covered == rows


def test_a_saved_graph_is_written_again_once_it_has_grown_by_a_tenth() -> None:
    """Writing holds the interpreter (seconds at a million rows): after the first write, the next waits for growth."""
    from memcastle.search.ann import AnnIndex, AnnShape

    index = AnnIndex(AnnShape.default("m", 4))
    assert not SemanticIndex._save_due(index), "nothing to write"
    index.add(np.arange(1, 101, dtype=np.int64), np.random.default_rng(1).standard_normal((100, 4)).astype(np.float32))
    assert SemanticIndex._save_due(index), "never written"
    index.saved_size = 95
    assert not SemanticIndex._save_due(index)
    index.saved_size = 90
    assert SemanticIndex._save_due(index), "a tenth more than was written"
    index.saved_size = -1
    assert SemanticIndex._save_due(index), "a forget left rows in the file"
