"""The checks of the palace audit that the store cannot make itself: drawers waiting for vectors of the configured
model, and the vector graph's file beside an embedded palace (`memcastle.integrity.audit`)."""

from __future__ import annotations

from collections.abc import Callable

from memcastle.integrity.audit import Check
from memcastle.model.integrity import Finding
from memcastle.search.backfill import model_key
from memcastle.search.embeddings import EmbeddingProvider
from memcastle.search.engine import SearchEngine
from memcastle.search.semantic import SemanticIndex
from memcastle.store import Store


def palace_check_names(store: Store, provider: EmbeddingProvider) -> list[str]:
    """The names of the checks `palace_checks` makes, known before its repairs' services are."""
    if not provider.is_enabled:
        return []
    return ["missing_vectors"] if store.backend != "sqlite" else ["missing_vectors", "vector_cache"]


def palace_checks(
    store: Store,
    provider: EmbeddingProvider,
    search: Callable[[], SearchEngine],
    request_embedding: Callable[[], object],
) -> list[Check]:
    """`missing_vectors` (repaired by queueing the embed sweep) and, on SQLite, `vector_cache` (repaired by writing
    the graph's file again from memory, or deleting it to be rebuilt); none without embeddings."""
    if not provider.is_enabled:
        return []
    key = model_key(provider)

    def missing() -> Finding:
        count, examples = store.integrity.without_vectors(key)
        what = f"drawers without vectors of {key} (only lexical search finds them until the embed sweep runs)"
        return Finding("missing_vectors", what, count, tuple(examples), "queue the embed sweep")

    def embed() -> int:
        count, _ = store.integrity.without_vectors(key)
        request_embedding()
        return count

    checks = [Check("missing_vectors", missing, embed)]
    if store.backend != "sqlite":
        return checks  # PostgreSQL keeps its vector index itself

    def index() -> SemanticIndex | None:
        leg = search().semantic_leg
        return leg if isinstance(leg, SemanticIndex) else None

    def cache() -> Finding:
        leg = index()
        problem = leg.cache_problem() if leg is not None else None
        what = "the vector graph's file beside the palace is damaged or stale (the next start would rebuild it)"
        examples = (f"{problem[0]}: {problem[1]}",) if problem else ()
        repair = "write it again from the graph in memory, or delete it to be rebuilt"
        return Finding("vector_cache", what, 1 if problem else 0, examples, repair)

    def rewrite() -> int:
        leg = index()
        return leg.rewrite_cache() if leg is not None else 0

    checks.append(Check("vector_cache", cache, rewrite))
    return checks
