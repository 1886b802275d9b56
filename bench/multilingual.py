"""`python -m bench.multilingual`: the builtin models on a multilingual set, and the multilingual tier's threads.

The set (`eval/multilingual/corpus.json`, written for this project): 84 short notes, 12 in each of English, Spanish,
French, German, Chinese, Japanese and Russian, and 42 queries with one answer each — per answer language three in
that language (paraphrased) and three in another (cross-lingual). Each model's palace is built in process, every
note embedded, then each query is searched with `semantic` and `auto` (hybrid) rankings: hit@5 and MRR per answer
language and for cross-lingual queries. CPU seconds per passage (the embed job) and per query embedding are measured
in the same run, in this process.

`--threads`: the multilingual engine's OpenMP threads, with OpenMP waiting for work by spinning (`ACTIVE`, its
default) or by sleeping (`PASSIVE`, what MemCastle sets), each while another process keeps every core busy: CPU
seconds per query embedding, in a child process per setting.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import command_line, median, write_section
from memcastle.app import build
from memcastle.config import load_settings
from memcastle.services import SearchRequest

CORPUS = Path(__file__).resolve().parents[1] / "eval" / "multilingual" / "corpus.json"
MODELS = ("all-MiniLM-L6-v2-int8", "multilingual-e5-small")
RANKINGS = ("semantic", "auto")
LANGUAGES = ("en", "es", "fr", "de", "zh", "ja", "ru")


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(model: str, corpus: dict[str, Any], workdir: Path) -> dict[str, Any]:
    settings = load_settings(
        flags={"palace": str(workdir / model), "embeddings.provider": "builtin", "embeddings.model": model,
               "extraction.provider": "none"},
        env={}, config_file=None,
    )  # fmt: skip
    palace = build(settings)
    palace.start()
    try:
        names = {}
        began = cpu()
        for doc in corpus["documents"]:
            names[palace.services.drawers.save_note(doc["text"], wing=doc["lang"]).drawer.id] = doc["id"]
        deadline = time.monotonic() + 1800
        while palace.services.status.embedding_status().pending:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{model}: the notes were not embedded in 30 minutes")
            time.sleep(0.1)
        per_passage = (cpu() - began) / len(corpus["documents"])
        ranks: dict[str, dict[str, int | None]] = {}
        for ranking in RANKINGS:
            ranks[ranking] = {}
            for query in corpus["queries"]:
                hits = palace.services.search.search(SearchRequest(query=query["text"], ranking=ranking, limit=10)).hits
                found = [names.get(hit.drawer.id) for hit in hits]
                ranks[ranking][query["id"]] = found.index(query["relevant"]) + 1 if query["relevant"] in found else None
        began = cpu()
        for query in corpus["queries"]:
            palace.services.search.search(SearchRequest(query=query["text"] + " ", ranking="semantic", limit=1))
        per_query = (cpu() - began) / len(corpus["queries"])
    finally:
        palace.stop()
    return {"ranks": ranks, "per_passage": per_passage, "per_query": per_query}


def scores(corpus: dict[str, Any], ranks: dict[str, int | None]) -> dict[str, tuple[float, float, int]]:
    """Per answer language and for the cross-lingual queries: (hit@5, MRR, queries)."""
    groups: dict[str, list[int | None]] = {}
    for query in corpus["queries"]:
        rank = ranks[query["id"]]
        groups.setdefault(query["relevant"].split("-")[0], []).append(rank)
        groups.setdefault("cross-lingual" if query["cross"] else "same language", []).append(rank)
        groups.setdefault("all", []).append(rank)
    return {
        name: (sum(1 for r in found if r is not None and r <= 5) / len(found),
               sum(1 / r for r in found if r is not None) / len(found), len(found))
        for name, found in groups.items()
    }  # fmt: skip


def threads_child(policy: str, threads: int) -> None:
    os.environ["OMP_WAIT_POLICY"] = policy
    from memcastle.search.multilingual import MultilingualProvider

    provider = MultilingualProvider(threads=threads)
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))
    provider.embed(["warm"], kind="query")
    began = cpu()
    for query in corpus["queries"]:
        provider.embed([query["text"]], kind="query")
    print(json.dumps({"per_query": (cpu() - began) / len(corpus["queries"])}))


def thread_settings() -> list[str]:
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        rows = []
        for threads in (1, 2):
            for policy in ("ACTIVE", "PASSIVE"):
                runs = []
                for _ in range(3):
                    done = subprocess.run(
                        [sys.executable, "-m", "bench.multilingual", "--child", policy, str(threads)],
                        capture_output=True, text=True, check=True,
                    )  # fmt: skip
                    runs.append(json.loads(done.stdout.strip().splitlines()[-1])["per_query"])
                rows.append(f"| {threads} | {policy} | {median(runs) * 1000:.1f} |")
        return rows
    finally:
        for burner in burners:
            burner.kill()


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        threads_child(sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", action="store_true", help="also measure the engine's thread settings")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="memcastle-multilingual-") as folder:
        results = {model: measure(model, corpus, Path(folder)) for model in MODELS}
    groups = ["all", *LANGUAGES, "same language", "cross-lingual"]
    cross = sum(q["cross"] for q in corpus["queries"])
    lines = [
        "| model | ranking | " + " | ".join(groups) + " |",
        "|---|---|" + "---|" * len(groups),
    ]
    for model, result in results.items():
        for ranking in RANKINGS:
            table = scores(corpus, result["ranks"][ranking])
            cells = [f"{table[g][0]:.2f} / {table[g][1]:.2f}" for g in groups]
            lines.append(f"| {model} | {ranking} | " + " | ".join(cells) + " |")
    cost = ["| model | CPU ms per note embedded | CPU ms per query (embedding and search) |", "|---|---|---|"]
    for model, result in results.items():
        cost.append(f"| {model} | {result['per_passage'] * 1000:.1f} | {result['per_query'] * 1000:.1f} |")
    text = "\n".join([
        "## Multilingual: the builtin models on seven languages",
        "",
        f"Command: `{command_line()}`",
        "",
        f"Set: `eval/multilingual/corpus.json`, {len(corpus['documents'])} notes (12 per language), "
        f"{len(corpus['queries'])} queries ({cross} cross-lingual). Cells: hit@5 / MRR over the queries whose answer "
        "is in that language (6 each), then by query language relative to the answer.",
        "",
        *lines,
        "",
        *cost,
    ])  # fmt: skip
    if args.threads:
        text += "\n\nThe multilingual engine's threads, every core kept busy by other processes (medians of 3):\n\n"
        text += "| threads | OMP_WAIT_POLICY | CPU ms per query embedding |\n|---|---|---|\n"
        text += "\n".join(thread_settings())
    print(text)
    if args.write:
        write_section("multilingual", text)


if __name__ == "__main__":
    main()
