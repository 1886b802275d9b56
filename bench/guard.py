"""`python -m bench.guard`: a short check that the fixed costs around the engine have not drifted back (CI runs it).

Three figures, each a CPU ratio against a floor measured in the same run (the machine is shared: ratios, not times):

- **mining**: the CPU of a first mine of a few hundred generated files (`bench.mine`'s generator; extraction and
  embeddings off; the copies sweep after it not counted, ADR 0058) over the realistic floor (read, chunk, hash, FTS5
  insert: `bench.mine.realistic_floor`). Target 3×.
- **lexical search**: the CPU of a few dozen lexical searches through the search service, in process, over the same
  queries as bare FTS5 queries (every term, `ORDER BY bm25 LIMIT 50`). The target (6×) is not met yet
  (`bench/RESULTS.md`); the bound is set from what the searches cost when the guard was written, so that a change that
  makes them dearer is seen.
- **start-up**: a `memcastle serve` to its first `/api/health` answer, server CPU, over a bare uvicorn app's. Target 4×.

Each fails past its bound (twice its target; for search, twice the figure measured when the guard was written), and
every figure is printed beside its floor. The medians of `--runs` runs (3) are compared.

    python -m bench.guard [--files 300] [--queries 40] [--runs 3]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from bench.common import median, open_palace, wait_for
from bench.mine import generate, realistic_floor, roots_for
from bench.search_stages import queries
from bench.startup import BARE_APP, MEMCASTLE, environment, free_port, stop, until_healthy
from memcastle.model import LexicalQuery
from memcastle.model.requests import MineRequest, SearchRequest
from memcastle.search.lexical import query_terms
from memcastle.store.sqlite.fulltext import fts5_match

# Bounds: twice each target; lexical search has no target it meets yet, so twice its ratio when the guard was
# written (300 generated files, 40 queries: 290–310× the bare query in CPU, ~11.5 ms a search against ~0.04 ms).
MINING_BOUND = 6.0
SEARCH_BOUND = 600.0
STARTUP_BOUND = 8.0
REPEAT_BARE = 20  # the bare query is ~0.05 ms on a small palace: run each this many times to time it at all


def mining(root: Path, temp: Path, run: int) -> tuple[float, float]:
    """(mine CPU s, floor CPU s) of one run."""
    floor, _ = realistic_floor(root, temp / f"floor{run}.sqlite3")
    flags = {"embeddings.provider": "none", "extraction.provider": "none", **roots_for(root)}
    palace = open_palace(temp / f"mine{run}", **flags)
    try:
        started = time.process_time()
        job = palace.services.mining.submit_mine(MineRequest("directory", str(root))).job
        done = wait_for(palace, job, links=False)
        spent = time.process_time() - started
        assert done.status.value == "completed", done.error
    finally:
        palace.stop()
    return spent, floor


def searching(palace_dir: Path, texts: list[str]) -> tuple[float, float]:
    """(CPU s per search, CPU s per bare query), the searches in process on the mined palace."""
    palace = open_palace(palace_dir, **{"embeddings.provider": "none", "extraction.provider": "none"})
    try:
        for text in texts[:5]:
            palace.services.search.search(SearchRequest(query=text, ranking="lexical"))
        started = time.process_time()
        for text in texts:
            palace.services.search.search(SearchRequest(query=text, ranking="lexical"))
        per_search = (time.process_time() - started) / len(texts)
    finally:
        palace.stop()
    db = sqlite3.connect(f"file:{palace_dir / 'palace.sqlite3'}?mode=ro", uri=True)
    sql = "SELECT rowid, bm25(drawer_fts) AS r FROM drawer_fts WHERE drawer_fts MATCH ? ORDER BY r LIMIT 50"
    matches = [fts5_match(LexicalQuery(tuple(query_terms(t)), require_all=True), column="content") for t in texts]
    started = time.process_time()
    for _ in range(REPEAT_BARE):
        for match in matches:
            db.execute(sql, (match,)).fetchall()
    per_bare = (time.process_time() - started) / (REPEAT_BARE * len(texts))
    db.close()
    return per_search, per_bare


def starting(home: Path) -> tuple[float, float]:
    """(daemon CPU s to health, bare uvicorn CPU s to its first answer)."""
    env = environment(home)
    port = free_port()
    _, bare = until_healthy([sys.executable, "-c", BARE_APP, str(port)], port, env)
    stop(bare)
    port = free_port()
    _, daemon = until_healthy([MEMCASTLE, "serve", "--port", str(port)], port, env)
    stop(daemon)
    return daemon.cpu, bare.cpu  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    texts = queries(args.queries)
    with tempfile.TemporaryDirectory(prefix="memcastle-guard-") as folder:
        temp = Path(folder)
        root = temp / "tree"
        generate(root, args.files)
        mines = [mining(root, temp, run) for run in range(args.runs)]
        searches = [searching(temp / "mine0", texts) for _ in range(args.runs)]
        starts = [starting(temp / f"home{run}") for run in range(args.runs)]
    figures = [
        ("mining, CPU over the realistic floor", mines, MINING_BOUND, "s"),
        ("lexical search, CPU over the bare FTS5 query", searches, SEARCH_BOUND, "ms"),
        ("start to /api/health, CPU over a bare uvicorn app", starts, STARTUP_BOUND, "s"),
    ]
    failed = []
    for name, pairs, bound, unit in figures:
        scale = 1000.0 if unit == "ms" else 1.0
        ratio = median([ours / floor for ours, floor in pairs])
        ours, floor = median([p[0] for p in pairs]) * scale, median([p[1] for p in pairs]) * scale
        verdict = "ok" if ratio <= bound else "FAIL"
        print(f"{verdict:4} {name}: {ratio:.1f}× (bound {bound:g}×) — {ours:.3f} {unit} against {floor:.3f} {unit}")
        if ratio > bound:
            failed.append(name)
    if failed:
        sys.exit(f"the fixed costs drifted past their bound: {', '.join(failed)}")


if __name__ == "__main__":
    main()
