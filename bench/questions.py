"""What the question benchmarks share: ask each question in each ranking, find the rank of the first right hit, and
report hit@1/5/10 per ranking (`bench.code_questions`, `bench.history_questions`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bench.common import median, wait_for, wait_for_embeddings
from memcastle.app import Palace
from memcastle.model.requests import MineRequest
from memcastle.model.search import Hit
from memcastle.services import SearchRequest

RANKINGS = ("lexical", "semantic", "hybrid")
KS = (1, 5, 10)

# A question, and what counts as its answer: a label the report shows, and whether a hit is a drawer of it.
Question = tuple[str, str]
IsAnswer = Callable[[Hit, str], bool]


@dataclass
class Run:
    ranking: str
    ranks: list[int | None] = field(default_factory=list)  # 1-based rank of the first right hit, None when missed
    seconds: list[float] = field(default_factory=list)

    def hit_at(self, k: int) -> float:
        return sum(1 for r in self.ranks if r is not None and r <= k) / len(self.ranks)


def ask(palace: Palace, ranking: str, questions: Sequence[Question], wing: str, is_answer: IsAnswer) -> Run:
    run = Run(ranking)
    for question, expected in questions:
        started = time.perf_counter()
        result = palace.services.search.search(SearchRequest(query=question, ranking=ranking, limit=10, wing=wing))
        run.seconds.append(time.perf_counter() - started)
        run.ranks.append(next((i + 1 for i, hit in enumerate(result.hits) if is_answer(hit, expected)), None))
    return run


def mine(palace: Palace, connector: str, locator: str, wing: str) -> str:
    """Mine one source and wait for every drawer's vectors; says what was made and how long it took (wall and this
    process's CPU seconds: the daemon's threads, the model's included)."""
    started = time.monotonic()
    job = palace.services.mining.submit_mine(MineRequest(connector, locator, {}, wing=wing)).job
    done = wait_for(palace, job)
    assert done.status.value == "completed", done.error
    mined = time.monotonic() - started
    cpu = time.process_time()
    waited = wait_for_embeddings(palace)
    cpu = time.process_time() - cpu
    passages = (palace.services.status.embedding_status().index or {}).get("vectors", 0)
    result = done.result or {}
    return (
        f"{result.get('documents', 0):,} documents → {result.get('created', 0):,} drawers, mined in {mined:.0f} s, "
        f"{passages:,} vectors embedded in {waited:.0f} s more ({cpu:.0f} CPU s)"
    )


def per_question(runs: Sequence[Run]) -> dict[str, dict[str, list[float]]]:
    """Each question's hit@5, hit@10 and reciprocal rank per ranking, in order, for `bench.paired --metric`."""

    def at(k: int, rank: int | None) -> float:
        return 1.0 if rank is not None and rank <= k else 0.0

    return {
        "hit_at_5": {run.ranking: [at(5, r) for r in run.ranks] for run in runs},
        "hit_at_10": {run.ranking: [at(10, r) for r in run.ranks] for run in runs},
        "mrr": {run.ranking: [1 / r if r is not None else 0.0 for r in run.ranks] for run in runs},
    }


def table(runs: Sequence[Run], questions: Sequence[Question]) -> list[str]:
    """The Markdown table of hit@k per ranking, then which answers each ranking did not put first."""
    lines = ["| ranking | hit@1 | hit@5 | hit@10 | missed | median ms |", "|---|---|---|---|---|---|"]
    for run in runs:
        missed = sum(1 for r in run.ranks if r is None)
        lines.append(
            f"| {run.ranking} | {run.hit_at(1):.3f} | {run.hit_at(5):.3f} | {run.hit_at(10):.3f} | {missed} | "
            f"{median(run.seconds) * 1000:.1f} |"
        )
    for run in runs:
        below = [
            f"{expected} {'missed' if rank is None else f'at {rank}'}"
            for (_, expected), rank in zip(questions, run.ranks, strict=True)
            if rank != 1
        ]
        lines += ["", f"Not first in {run.ranking}: " + ("; ".join(below) or "none") + "."]
    return lines


def show(runs: Sequence[Run], questions: Sequence[Question]) -> None:
    for run in runs:
        print(
            f"{run.ranking:9s} hit@1 {run.hit_at(1):.3f}  hit@5 {run.hit_at(5):.3f}  hit@10 {run.hit_at(10):.3f}"
            f"  median {median(run.seconds) * 1000:.1f} ms"
        )
        for (question, expected), rank in zip(questions, run.ranks, strict=True):
            if rank != 1:
                print(f"    {'missed' if rank is None else f'at {rank}':7s} {expected:24s} {question}")
