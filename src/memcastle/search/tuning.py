"""How a palace tunes its search engine (the `[search]` and passage settings): fusion weights, passage windows, the
any-term fill's bound, the neighbours' weight, how many searches compute at once, how long a backlog count is used,
the freshness boost and the second stage. One frozen value, so the engine takes one argument for all of them."""

from __future__ import annotations

from dataclasses import dataclass

from memcastle.preferences import NO_FRESHNESS, Freshness
from memcastle.search.fusion import FusionWeights
from memcastle.search.passages import PASSAGE_OVERLAP_CHARS, PASSAGE_WINDOW_CHARS
from memcastle.search.second_stage import NO_SECOND_STAGE, SecondStage

PENDING_TTL = 2.0  # seconds a count of the drawers waiting for vectors is used before it is taken again
# The most drawers the hybrid leg's any-term fill may score: above it, the fill matches on the query's rarest terms
# only (`LexicalQuery.max_rows`), and the drawers holding only commoner ones are left to the semantic leg. FTS5 scores
# ~0.8 drawers per microsecond: ~12 ms, about what the semantic leg beside it costs (query embedding, graph, rescoring),
# so the fill is not what a hybrid search waits for. Lexical ranking, with no other leg, stays exact.
FILL_ROWS = 10_000


@dataclass(frozen=True)
class EngineTuning:
    """`parallel`: at most this many searches compute at once (0: one per CPU core); `passages`: the window and
    overlap drawers are split by; `fill_rows`: 0 for no bound; `context_weight`: a neighbour's words count this much
    (0: off)."""

    weights: FusionWeights = FusionWeights()
    passages: tuple[int, int] = (PASSAGE_WINDOW_CHARS, PASSAGE_OVERLAP_CHARS)
    fill_rows: int = FILL_ROWS
    context_weight: float = 0.0
    parallel: int = 0
    pending_ttl: float = PENDING_TTL
    freshness: Freshness = NO_FRESHNESS
    second_stage: SecondStage = NO_SECOND_STAGE


DEFAULT_TUNING = EngineTuning()
