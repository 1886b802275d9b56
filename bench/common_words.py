"""`python -m bench.common_words --reuse DIR`: what a query of near-universal words costs, against ordinary queries.

The palace is a copy of one `bench.search --keep DIR` built (generated notes whose words follow Zipf's law: "note"
is in every drawer, the commonest vocabulary words in nearly every one). Near-universal queries are made of the
words found in at least `--share` of the palace (found by counting, and reported with their shares), with stop words
around them as a person types ("the note and the kalo"); ordinary queries are the search benchmark's own.

Two measurements, each against its same-run floor:

- **Through a daemon** (`--daemon`, the default): `auto` ranking over HTTP, one client, the p50 of each kind of query
  and the daemon's CPU per query (`/proc/<pid>/stat` around each batch), on daemons started alternately with the
  bounded lexical leg (the default) and with `search.fill_rows = 0` (the exact leg every term is scored in: what
  searches did before), twice each. The figure: near-universal p50 ÷ ordinary p50, target ≤ 2×.
- **In process** (`--in-process`, for a palace too large to build a semantic graph for in a run): the hybrid lexical
  leg alone (`SearchEngine.lexical_leg` with the daemon's bound), CPU per query, bounded and exact; the semantic
  leg beside it is what `bench.search` measures at the same size.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import tempfile
import time
from pathlib import Path

import httpx

from bench.common import command_line, machine, median, write_section
from bench.search import copy_palace_files, queries, start_daemon, vocabulary, wait_for_graph

STOP = ("the", "and", "of", "a")


def common_words(palace_dir: Path, share: float) -> list[tuple[str, float]]:
    """The palace's words found in at least `share` of its drawers, with their shares, commonest first."""
    candidates = ["note", *vocabulary(random.Random(11))[:40]]
    with sqlite3.connect(palace_dir / "palace.sqlite3") as db:
        total = db.execute("SELECT count(*) FROM drawer_fts").fetchone()[0]
        shares = []
        for word in candidates:
            rows = db.execute("SELECT count(*) FROM drawer_fts WHERE drawer_fts MATCH ?", (f'"{word}"',)).fetchone()[0]
            shares.append((word, rows / total))
    return sorted([(w, s) for w, s in shares if s >= share], key=lambda item: -item[1])


def universal_queries(words: list[str], count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        chosen = rng.sample(words, min(len(words), rng.randint(2, 3)))
        out.append(" ".join(f"{rng.choice(STOP)} {word}" for word in chosen))
    return out


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(client: httpx.Client, pid: int, texts: list[str]) -> tuple[float, float]:
    """p50 ms over HTTP (auto ranking) and the daemon's CPU ms per query."""
    spent = process_cpu(pid)
    times = []
    for text in texts:
        started = time.perf_counter()
        client.post("/api/search", json={"query": text, "limit": 10, "ranking": "auto"}).raise_for_status()
        times.append((time.perf_counter() - started) * 1000)
    return median(times), (process_cpu(pid) - spent) * 1000 / len(texts)


def through_daemon(palace_dir: Path, home: Path, ordinary: list[str], universal: list[str]) -> list[str]:
    results: dict[str, list[tuple[float, float, float, float]]] = {"bounded": [], "exact": []}
    for setting in ("bounded", "exact", "bounded", "exact"):
        extra = {"MEMCASTLE_SEARCH_FILL_ROWS": "0"} if setting == "exact" else {}
        proc, address = start_daemon(palace_dir, home, extra_env=extra)
        try:
            with httpx.Client(base_url=address, timeout=120, trust_env=False) as client:
                wait_for_graph(client)
                timed(client, proc.pid, ordinary[:20] + universal[:10])  # warm: page cache, model
                results[setting].append((*timed(client, proc.pid, ordinary), *timed(client, proc.pid, universal)))
        finally:
            proc.terminate()
            proc.wait(timeout=600)
    rows = []
    for setting, runs in results.items():
        o_p50, o_cpu, u_p50, u_cpu = (median([run[i] for run in runs]) for i in range(4))
        rows.append(f"| {setting} | {o_p50:.1f} | {o_cpu:.1f} | {u_p50:.1f} | {u_cpu:.1f} | **{u_p50 / o_p50:.2f}×** |")
    return [
        "Through a daemon: `auto` ranking over HTTP, one client; daemons started alternately bounded (the default) "
        "and exact (`search.fill_rows = 0`), twice each, each warmed first; medians of the two daemons' figures.",
        "",
        "| lexical leg | ordinary p50 ms | ordinary CPU ms/query | near-universal p50 ms | near-universal CPU "
        "ms/query | near-universal ÷ ordinary (p50) |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        "Target: near-universal ≤ 2× ordinary at 100,000 drawers.",
    ]


def in_process(palace_dir: Path, ordinary: list[str], universal: list[str]) -> list[str]:
    from memcastle.model import Scope, SearchQuery
    from memcastle.search.engine import SearchEngine
    from memcastle.search.tuning import FILL_ROWS
    from memcastle.store.sqlite import SQLiteStore

    store = SQLiteStore(palace_dir)
    try:
        engine = SearchEngine(store)
        figures: dict[str, dict[str, float]] = {}
        for setting, bound in (("bounded", FILL_ROWS), ("exact", None), ("bounded", FILL_ROWS), ("exact", None)):
            for kind, texts in (("ordinary", ordinary), ("near-universal", universal)):
                for text in texts[:5]:  # warm the page cache
                    engine.lexical_leg(SearchQuery(text=text, scope=Scope()), 100, bound)
                started = time.process_time()
                for text in texts:
                    engine.lexical_leg(SearchQuery(text=text, scope=Scope()), 100, bound)
                spent = (time.process_time() - started) * 1000 / len(texts)
                figures.setdefault(setting, {}).setdefault(kind, spent)
                figures[setting][kind] = min(figures[setting][kind], spent)
    finally:
        store.close()
    rows = [
        f"| {setting} | {f['ordinary']:.1f} | {f['near-universal']:.1f} | {f['near-universal'] / f['ordinary']:.2f}× |"
        for setting, f in figures.items()
    ]
    return [
        "In process: the hybrid lexical leg alone (`SearchEngine.lexical_leg`, depth 100 as a default search asks), "
        "CPU ms per query; bounded (the daemon's default) and exact, alternated twice, the lower of the two.",
        "",
        "| lexical leg | ordinary CPU ms | near-universal CPU ms | ratio |",
        "|---|---|---|---|",
        *rows,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reuse", type=Path, required=True, help="a palace kept by bench.search --keep")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--share", type=float, default=0.9, help="a near-universal word is in this share or more")
    parser.add_argument("--in-process", action="store_true", help="measure the lexical leg in process only")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-common-") as temp:
        palace_dir, home = Path(temp) / "palace", Path(temp) / "home"
        copy_palace_files(args.reuse, palace_dir)
        found = common_words(palace_dir, args.share)
        if len(found) < 2:
            raise SystemExit(f"fewer than two words in {args.share:.0%} of the palace: {found}")
        with sqlite3.connect(palace_dir / "palace.sqlite3") as db:
            drawers = db.execute("SELECT count(*) FROM drawer").fetchone()[0]
        ordinary = queries(args.queries)
        universal = universal_queries([w for w, _ in found], args.queries)
        body = (
            in_process(palace_dir, ordinary, universal)
            if args.in_process
            else through_daemon(palace_dir, home, ordinary, universal)
        )
    text = "\n".join(
        [
            f"## Near-universal words at {drawers:,} drawers",
            "",
            f"Command: `{command_line()}`",
            "",
            f"Words in at least {args.share:.0%} of the palace: "
            + ", ".join(f"{w} ({s:.0%})" for w, s in found)
            + f'. {len(universal)} near-universal queries of 2–3 of them with stop words (e.g. "{universal[0]}"), '
            f"against {len(ordinary)} ordinary queries (the search benchmark's).",
            "",
            *body,
            "",
            f"_Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}._",
        ]
    )
    print(text)
    if args.write:
        write_section(f"common-words-{'in-process-' if args.in_process else ''}{drawers}", text)


if __name__ == "__main__":
    main()
