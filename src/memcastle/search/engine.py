"""The search pipeline: eligible candidates from each ranking leg, fusion, pool relevance, truncation."""

from __future__ import annotations

from collections.abc import Sequence

from memcastle.errors import InvalidRequest
from memcastle.model import Candidate, Hit, SearchQuery, SearchResult
from memcastle.search.lexical import match_expression, query_terms
from memcastle.store import Store


class SearchEngine:
    """Runs a validated `SearchQuery` against the store."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def search(self, query: SearchQuery) -> SearchResult:
        ranking = query.ranking
        if ranking in ("semantic", "hybrid"):
            raise InvalidRequest(
                f"ranking {ranking!r} needs embeddings, which this palace does not have yet",
                field="ranking", help="use ranking 'lexical' or 'auto'",
            )
        used = "lexical"
        candidates = self.lexical_leg(query, query.limit)
        drawers = self._store.get_drawers([c.drawer_id for c in candidates])
        hits = [
            Hit(drawer=drawers[c.drawer_id], score=c.signal,
                signals={"lexical": c.signal, "relevance": relevance})
            for c, relevance in zip(candidates, pool_relevance([c.signal for c in candidates]), strict=True)
            if c.drawer_id in drawers
        ]
        return SearchResult(hits=tuple(hits[: query.limit]), ranking=used)

    def lexical_leg(self, query: SearchQuery, limit: int) -> list[Candidate]:
        """BM25 candidates: every term required first; any term when that finds nothing and there are 2+ words."""
        terms = query_terms(query.text)
        expression = match_expression(terms, require_all=True)
        if expression is None:
            return []
        found = self._store.lexical_candidates(expression, query.scope, query.window, query.include_historical,
                                               limit)
        if not found and len(terms) >= 2:
            fallback = match_expression(terms, require_all=False)
            assert fallback is not None
            found = self._store.lexical_candidates(fallback, query.scope, query.window, query.include_historical,
                                                   limit)
        return found


def pool_relevance(signals: Sequence[float]) -> list[float]:
    """Min-max normalize base signals within the pool to [0, 1]; all equal → 1.0."""
    if not signals:
        return []
    low, high = min(signals), max(signals)
    if high == low:
        return [1.0] * len(signals)
    return [(s - low) / (high - low) for s in signals]
