"""Search speed through HTTP on loopback (SPEC §9), beside a bare FTS5 query and a bare numpy scan in the same run.

Builds a palace of N drawers (default 100 000) by mining generated notes through the real pipeline, fills the
embeddings (the builtin model by default; `--vectors synthetic` stores seeded random unit vectors instead, which
costs the search exactly the same and saves the embedding time — the report says which was used), then starts a
real `memcastle serve` process and measures:

- p50/p95 of lexical, semantic and hybrid search over HTTP, one client;
- the same queries as a bare SQLite FTS5 MATCH + a bare numpy matrix-vector scan over the same data (the ratio is
  the figure that matters on a shared, noisy machine);
- the daemon's resident memory;
- p95 with 16 concurrent clients while a mine runs, against the idle p95.

    python bench/search.py [--drawers 100000] [--queries 200] [--vectors builtin|synthetic] [--write]
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

from common import command_line, median, open_palace, percentile, wait_for, wait_for_embeddings, write_section

from memcastle.search.backfill import model_key
from memcastle.search.embeddings import BuiltinProvider
from memcastle.search.lexical import match_expression, query_terms

VOCABULARY_SIZE = 6000
TOPICS = ("deploy", "database", "migration", "incident", "review", "release", "cache", "latency", "budget",
          "roadmap", "hiring", "security", "backup", "search", "embedding", "pipeline", "invoice", "travel")


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
        while True:
            drawers = palace.store.drawers_missing_embeddings(model, 2000)
            if not drawers:
                break
            vectors = rng.standard_normal((len(drawers), dimension)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            palace.store.put_embeddings(model, [(d.id, vectors[i : i + 1]) for i, d in enumerate(drawers)])
    finally:
        palace.stop()


def start_daemon(palace_dir: Path, home: Path) -> tuple[subprocess.Popen[bytes], str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("MEMCASTLE_")},
           "XDG_STATE_HOME": str(home / "state"), "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_DATA_HOME": str(home / "data")}
    proc = subprocess.Popen([sys.executable, "-c", "from memcastle.cli.main import run; run()", "--palace",
                             str(palace_dir), "serve", "--port", "0"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    from memcastle.registry import find_daemon

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


def bare_baseline(palace_dir: Path, texts: list[str]) -> tuple[list[float], list[float]]:
    """The floor: the same FTS5 MATCH straight on the file, and one numpy scan of the same vectors."""
    db = sqlite3.connect(f"file:{palace_dir / 'palace.sqlite3'}?mode=ro", uri=True)
    rows = db.execute("SELECT vector FROM embedding").fetchall()
    matrix = np.frombuffer(b"".join(r[0] for r in rows), dtype="<f4").reshape(len(rows), -1)
    provider = BuiltinProvider()
    lexical, semantic = [], []
    for text in texts:
        expression = match_expression(query_terms(text), require_all=True)
        started = time.perf_counter()
        db.execute("SELECT rowid, bm25(drawer_fts) AS r FROM drawer_fts WHERE drawer_fts MATCH ? ORDER BY r "
                   "LIMIT 10", (expression,)).fetchall()
        lexical.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        vector = provider.embed([text])[0]
        scores = matrix @ vector
        np.argpartition(-scores, 10)[:10]
        semantic.append((time.perf_counter() - started) * 1000)
    db.close()
    return lexical, semantic


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--drawers", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--vectors", choices=("builtin", "synthetic"), default="builtin")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-search-") as temp:
        root, palace_dir, home = Path(temp) / "notes", Path(temp) / "palace", Path(temp) / "home"
        generate_notes(root, args.drawers)
        palace = open_palace(palace_dir, **{"embeddings.provider": "none"})
        started = time.perf_counter()
        job, _ = palace.services.submit_mine("notes", str(root), wing="bench")
        assert wait_for(palace, job).status.value == "completed"
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

        texts = queries(args.queries)
        proc, address = start_daemon(palace_dir, home)
        try:
            with httpx.Client(base_url=address, timeout=60, trust_env=False) as client:
                for ranking in ("lexical", "semantic", "hybrid"):
                    time_http(client, texts[:20], ranking)  # warm: index load, page cache, model
                measured = {ranking: time_http(client, texts, ranking) for ranking in ("lexical", "semantic",
                                                                                         "hybrid")}
            rss = rss_mb(proc.pid)
            bare_lexical, bare_semantic = bare_baseline(palace_dir, texts)
            idle_p95, _, _ = concurrent_p95(address, texts, 16, 10)
            extra = Path(temp) / "more"
            generate_notes(extra, 3000, seed=99)
            with httpx.Client(base_url=address, timeout=60, trust_env=False) as client:
                client.post("/api/mine", json={"connector": "notes", "locator": str(extra), "wing": "more"})
            busy_p95, busy_count, busy_errors = concurrent_p95(address, texts, 16, 15)
        finally:
            proc.terminate()
            proc.wait(timeout=60)

    bare_hybrid = [a + b for a, b in zip(bare_lexical, bare_semantic, strict=True)]
    rows = []
    for ranking, bare, target in (("lexical", bare_lexical, "p50 ≤ 10"), ("semantic", bare_semantic, ""),
                                  ("hybrid", bare_hybrid, "p50 ≤ 20, p95 ≤ 60")):
        times = measured[ranking]
        rows.append(f"| {ranking} | {median(times):.1f} | {percentile(times, 95):.1f} | {median(bare):.1f} | "
                    f"{median(times) / median(bare):.2f}× | {target} |")
    report = "\n".join([
        "## Search speed through HTTP",
        "",
        f"Command: `{command_line()}`",
        "",
        f"Palace: {args.drawers} drawers mined from generated notes ({mine_seconds:.0f} s), vectors: "
        f"{args.vectors} ({embed_seconds:.0f} s); {args.queries} queries, limit 10, one client on loopback.",
        "Baseline in the same run: the same FTS5 MATCH on the file (lexical), query embedding + one numpy scan of "
        "every passage vector (semantic), their sum (hybrid).",
        "",
        "| ranking | p50 ms | p95 ms | bare p50 ms | ratio p50 | target |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"Daemon resident memory after the run: **{rss:.0f} MB** (target ≤ 700 MB).",
        "",
        f"16 concurrent clients (auto ranking) while a 3000-note mine runs: p95 {busy_p95:.1f} ms over "
        f"{busy_count} requests, {busy_errors} errors; the same 16 clients with no mine running: p95 {idle_p95:.1f} ms; ratio "
        f"{busy_p95 / idle_p95:.1f}× (target ≤ 3×).",
    ])
    print(report)
    if args.write:
        write_section("search", report)


if __name__ == "__main__":
    main()
