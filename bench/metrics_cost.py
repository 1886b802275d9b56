"""`python -m bench.metrics_cost [--tree DIR] [--queries 200] [--write]`: what counting a search for `/metrics` costs,
against the search itself, in the same run.

A palace mines a real folder (this machine's `json`, `email` and `http` packages by default), then answers lexical
searches of words drawn from it through `SearchService.search` — each one counted as the daemon counts it — and the
median is taken. Beside it, the counting alone (`Metrics.timing_search`: a clock read on each side and a histogram
observation under its labels) is run as many times, and its median per search taken too. Target (issue 69): the
counting ≤ 2 % of a search's median.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import statistics
import sysconfig
import tempfile
import time
from pathlib import Path

from bench.common import command_line, open_palace, publish, wait_for
from memcastle.metrics import Metrics
from memcastle.model.requests import MineRequest
from memcastle.services import SearchRequest

STDLIB = Path(sysconfig.get_paths()["stdlib"])
FOLDERS = ("json", "email", "http")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memcastle-bench-metrics-") as folder:
        tree = Path(folder) / "tree"
        for name in FOLDERS:
            shutil.copytree(STDLIB / name, tree / name, ignore=shutil.ignore_patterns("__pycache__"))
        palace = open_palace(Path(folder) / "palace", **{"embeddings.provider": "none", "mining.roots": [folder]})
        try:
            asked = MineRequest(connector="directory", locator=str(tree))
            wait_for(palace, palace.services.mining.submit_mine(asked, requested_by="bench").job)
            words = sorted({w.lower() for p in tree.rglob("*.py") for w in re.findall(r"[A-Za-z]{6,}", p.read_text())})
            chosen = random.Random(69).sample(words, args.queries)
            search = palace.services.search
            for word in chosen[:20]:  # warm
                search.search(SearchRequest(query=word, ranking="lexical"))
            times = []
            for word in chosen:
                started = time.perf_counter()
                search.search(SearchRequest(query=word, ranking="lexical"))
                times.append(time.perf_counter() - started)
            drawers = palace.services.status.status().drawers
        finally:
            palace.stop()
    metrics = Metrics()
    counting = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(args.queries * 50):
            with metrics.timing_search("http") as labels:
                labels["ranking"] = "lexical"
        counting.append((time.perf_counter() - started) / (args.queries * 50))
    search_p50, count_p50 = statistics.median(times), statistics.median(counting)
    lines = [
        "## What counting a search for /metrics costs (`bench.metrics_cost`)",
        "",
        f"Command: `{command_line()}`",
        "",
        f"A palace of this machine's `{'`, `'.join(FOLDERS)}` packages ({drawers:,} drawers), {args.queries} lexical "
        "searches of words drawn from them through `SearchService.search`, each counted as the daemon counts it; "
        "beside them the counting alone, 5 runs of 50 × as many.",
        "",
        "| | median per search |",
        "|---|---|",
        f"| a search (counted) | {search_p50 * 1000:.2f} ms |",
        f"| the counting alone | {count_p50 * 1e6:.2f} µs |",
        "",
        f"Counting / search: **{count_p50 / search_p50:.3%}** (target ≤ 2 %).",
    ]
    publish("metrics-cost", lines, args.write)


if __name__ == "__main__":
    main()
