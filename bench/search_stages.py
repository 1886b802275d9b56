"""Where a lexical search's time goes: each stage timed alone beside the bare FTS5 query, in process and over HTTP.

Mines generated project files (`bench.mine`'s generator: 0.5–6 KB of Zipf-distributed words, so drawers longer
than one passage are common), then, for each query, times alone and in the same run:

- the floor: the bare FTS5 query, every term (`MATCH … ORDER BY bm25 LIMIT 50`, and `LIMIT 10`);
- the lexical leg's stages as a default search (limit 10, pool 50) runs them: the drawers holding every term (BM25
  top, then scope and time), the any-term fill (run only when fewer than the pool hold every term: its share is
  reported), the passage rescoring of long drawers, the second stage, reading the hits' drawers, their snippets;
- the whole search in process (`SearchService.search`), and through a real `memcastle serve` on loopback: `POST
  /api/search` (p50, p95 and the daemon's CPU per search), the compact view MCP answers with (`full: false`) and
  the web page's search (`GET /?q=`).

    python -m bench.search_stages [--files 6000] [--queries 100] [--reuse DIR] [--write]

Medians over the queries; each stage's share of the in-process search is its median over the search's median (the
stages are timed alone, so they need not add up exactly).
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.common import BENCH_ROOTS, command_line, machine, open_palace, percentile, wait_for, write_section
from bench.mine import generate, vocabulary
from bench.search import copy_palace_files, start_daemon
from memcastle.app import Palace
from memcastle.model import LexicalQuery, Scope, ScoredDrawer
from memcastle.model.requests import MineRequest, SearchRequest
from memcastle.preferences import pools_for
from memcastle.search.engine import PASSAGE_DEPTH, SearchEngine
from memcastle.search.fusion import Ranked
from memcastle.search.lexical import query_terms
from memcastle.store.sqlite.fulltext import fts5_match

LIMIT = 10


def queries(count: int, seed: int = 5) -> list[str]:
    """Two or three of the generated files' commoner words (the generator's vocabulary, seed 7)."""
    rng = random.Random(seed)
    words = vocabulary(random.Random(7))[:800]
    return [" ".join(rng.sample(words, rng.randint(2, 3))) for _ in range(count)]


def timed(work: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    out = work()
    return (time.perf_counter() - started) * 1000, out


def bare(database: Path, texts: list[str], limit: int) -> list[float]:
    db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    out = []
    for text in texts:
        match = fts5_match(LexicalQuery(tuple(query_terms(text)), require_all=True), column="content")
        sql = "SELECT rowid, bm25(drawer_fts) AS r FROM drawer_fts WHERE drawer_fts MATCH ? ORDER BY r LIMIT ?"
        out.append(timed(lambda m=match, q=sql: db.execute(q, (m, limit)).fetchall())[0])
    db.close()
    return out


def stages(palace: Palace, texts: list[str]) -> dict[str, list[float]]:
    """Each stage of a default lexical search, alone, with the inputs the search gives it."""
    engine: SearchEngine = palace.services.search._engine  # the stages of the one engine
    store = palace.store.search
    service = palace.services.search
    pool = pools_for(LIMIT)[0]
    depth = pool * PASSAGE_DEPTH
    out: dict[str, list[float]] = {}

    def note(name: str, value: float) -> None:
        out.setdefault(name, []).append(value)

    fills = 0
    for text in texts:
        request = SearchRequest(query=text, limit=LIMIT, ranking="lexical")
        query = service.query(request)
        terms = tuple(query_terms(text))
        every = LexicalQuery(terms, require_all=True)
        took, found = timed(lambda q=every: store.lexical_candidates(q, Scope(), depth))
        note("drawers holding every term (BM25 top, scope, time)", took)
        some: list[ScoredDrawer] = []
        if len(found) < pool and len(terms) >= 2:
            fills += 1
            anyterm = LexicalQuery(terms, require_all=False)
            took, some = timed(lambda q=anyterm: store.lexical_candidates(q, Scope(), depth))
            note("the any-term fill, when it runs", took)
        took, _ = timed(lambda f=found, s=some, t=text: engine._by_passage(t, f, s))
        note("passage rescoring of long drawers", took)
        pooled = [Ranked(c.drawer_id, c.signal, {"lexical": c.signal}) for c in engine.lexical_leg(query, pool)]
        took, rescored = timed(
            lambda p=pooled, t=text: engine.second_stage.rescore(
                t,
                p,
                engine._texts,
                engine._idf,
                measure=store.content_lengths,
            )
        )
        note("second stage (auto)", took)
        took, hits = timed(lambda r=rescored, q=query: engine._ranked(q, r, set(), LIMIT))
        note("ranking the pool, reading the hits' drawers", took)
        took, _ = timed(lambda h=hits, q=query: engine._with_snippets(q, h, None))
        note("snippets", took)
        note("whole search, in process", timed(lambda r=request: service.search(r))[0])
    out["_fills"] = [fills / len(texts)]
    return out


def over_http(address: str, texts: list[str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    with httpx.Client(base_url=address, timeout=60, trust_env=False) as http:
        for text in texts[:10]:
            http.post("/api/search", json={"query": text, "ranking": "lexical"}).raise_for_status()
            http.get("/", params={"q": text}).raise_for_status()
        for name, call in (
            ("POST /api/search", lambda t: http.post("/api/search", json={"query": t, "ranking": "lexical"})),
            (
                "POST /api/search, compact (MCP's view)",
                lambda t: http.post("/api/search", json={"query": t, "ranking": "lexical", "full": False}),
            ),
            ("GET /?q= (the web page)", lambda t: http.get("/", params={"q": t, "ranking": "lexical"})),
        ):
            for text in texts:
                took, answer = timed(lambda c=call, t=text: c(t))
                answer.raise_for_status()
                out.setdefault(name, []).append(took)
    return out


def process_cpu(pid: int) -> float:
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=6000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--reuse", type=Path, help="measure a copy of this palace instead of mining generated files")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    texts = queries(args.queries)
    flags = {"embeddings.provider": "none", "extraction.provider": "none"}
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-stages-") as temp:
        palace_dir = Path(temp) / "palace"
        if args.reuse is not None:
            copy_palace_files(args.reuse, palace_dir)
            described = f"a copy of {args.reuse}"
        else:
            root = Path(temp) / "tree"
            generate(root, args.files)
            palace = open_palace(palace_dir, **flags, **{"mining.roots": [*BENCH_ROOTS, str(root)]})
            try:
                job = palace.services.mining.submit_mine(MineRequest("directory", str(root))).job
                assert wait_for(palace, job).status.value == "completed"
            finally:
                palace.stop()
            described = f"{args.files} generated files (`bench.mine`'s generator)"
        palace = open_palace(palace_dir, **flags)
        try:
            drawers = palace.store.drawers.count_drawers()
            for text in texts[:10]:
                palace.services.search.search(SearchRequest(query=text, ranking="lexical"))
            floor50 = bare(palace_dir / "palace.sqlite3", texts, 50)
            floor10 = bare(palace_dir / "palace.sqlite3", texts, 10)
            timings = stages(palace, texts)
        finally:
            palace.stop()
        home = Path(temp) / "home"
        proc, address = start_daemon(palace_dir, home, extra_env={"MEMCASTLE_EMBEDDINGS_PROVIDER": "none"})
        try:
            before = process_cpu(proc.pid)
            http = over_http(address, texts)
            cpu_ms = (process_cpu(proc.pid) - before) * 1000 / (3 * len(texts) + 20)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    fills = timings.pop("_fills")[0]
    floor = statistics.median(floor50)
    whole = statistics.median(timings["whole search, in process"])
    post = statistics.median(http["POST /api/search"])
    rows = [
        f"| bare FTS5, every term, `LIMIT 50` (the floor) | {floor:.2f} | {percentile(floor50, 95):.2f} | 1.0× | |",
        f"| bare FTS5, every term, `LIMIT 10` | {statistics.median(floor10):.2f} | {percentile(floor10, 95):.2f} | "
        f"{statistics.median(floor10) / floor:.1f}× | |",
    ]
    for name, values in timings.items():
        p50 = statistics.median(values)
        share = "" if name.startswith("whole") else f"{p50 / whole:.0%}"
        label = f"{name} ({fills:.0%} of the queries)" if "fill" in name else name
        rows.append(f"| {label} | {p50:.2f} | {percentile(values, 95):.2f} | {p50 / floor:.1f}× | {share} |")
    for name, values in http.items():
        p50 = statistics.median(values)
        versus = "" if name == "POST /api/search" else f"{p50 / post:.2f}× POST"
        rows.append(f"| {name} | {p50:.2f} | {percentile(values, 95):.2f} | {p50 / floor:.1f}× | {versus} |")
    report = "\n".join(
        [
            "## A lexical search's stages (`bench.search_stages`)",
            "",
            f"Command: `{command_line()}`",
            "",
            f"Palace: {described}, {drawers:,} drawers; {len(texts)} queries of 2–3 words, limit {LIMIT} (pool "
            f"{pools_for(LIMIT)[0]}), lexical ranking, one client. Each stage timed alone with the inputs the search "
            "gives it; medians in ms; × floor against the bare FTS5 query in the same run.",
            "",
            "| stage | p50 ms | p95 ms | × floor | share of the search |",
            "|---|---|---|---|---|",
            *rows,
            "",
            f"Daemon CPU per request over HTTP: {cpu_ms:.2f} ms. Targets (issue 66): lexical p50 ≤ 6× the floor, "
            "p95 ≤ 3× p50; the web page and MCP's compact search within 1.2× of `POST /api/search`.",
            "",
            f"_Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}._",
        ]
    )
    print(report)
    if args.write:
        write_section("search-stages", report)


if __name__ == "__main__":
    main()
