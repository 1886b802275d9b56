"""A palace moving from one embedding model to another without a gap in search by meaning (ADR 0033).

Vectors are stored per model (`backfill.model_key`). When the configured model has not embedded the whole palace yet
and another builtin model has vectors there (the palace was embedded before the model changed), searches go on
ranking by those: the old model embeds the queries, its vectors answer them. The embed job fills the new model's
vectors meanwhile. When it has embedded every drawer, `ModelTransition.complete` loads the new vectors, switches the
search engine (and the index's maintainer) to the new pair in one step, and only then drops the old vectors. No
ranking ever mixes the two models' spaces; nothing is mined again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from memcastle.search.embeddings import BUILTIN_MODELS, EmbeddingProvider, builtin_provider
from memcastle.search.engine import SearchEngine, SemanticLeg
from memcastle.search.multilingual import MULTILINGUAL_MODEL, available
from memcastle.store import EmbeddingStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Serving:
    """The model searches rank by, with its vectors."""

    provider: EmbeddingProvider
    key: str


def previous_builtin(store: EmbeddingStore, target: str, models: dict[str, int]) -> str | None:
    """The builtin model whose vectors a palace should keep ranking by while `target` fills in: the one with the most
    embedded drawers, when `target` still misses some (None: rank by the target from the start)."""
    candidates = [
        (count, key)
        for key, count in models.items()
        if key != target and key.startswith("builtin:") and _servable(key.removeprefix("builtin:"))
    ]
    if not candidates or store.count_missing_embeddings(target) == 0:
        return None
    return max(candidates)[1]


def _servable(model: str) -> bool:
    """Whether this daemon can embed queries with `model` (the multilingual tier only where it is installed)."""
    return model in BUILTIN_MODELS or (model == MULTILINGUAL_MODEL and available())


def builtin_for(key: str, threads: int | None) -> EmbeddingProvider:
    return builtin_provider(key.removeprefix("builtin:"), threads)


class ModelTransition:
    """Ranks by `serving` until the target model's vectors are complete, then switches (`complete`)."""

    def __init__(
        self,
        store: EmbeddingStore,
        engine: SearchEngine,
        serving: Serving,
        target: Serving,
        make_index: Callable[[str], SemanticLeg],
        *,
        on_switch: Callable[[SemanticLeg], None] = lambda index: None,
    ) -> None:
        self._store = store
        self._engine = engine
        self.serving = serving
        self.target = target
        self._make_index = make_index
        self._on_switch = on_switch
        self.done = False

    def complete(self, model: str) -> int:
        """The embed job's end for `model`: when it is the target and nothing is left to embed, switch searches to it
        and drop every other model's vectors (returns how many); until then the old vectors stay."""
        if self.done:
            return self._store.drop_other_embeddings(model)
        if model != self.target.key or self._store.count_missing_embeddings(model) > 0:
            return 0
        index = self._make_index(model)
        refresh = getattr(index, "refresh", None)
        if refresh is not None:
            refresh(wait=True)  # every new vector in memory before the first search ranks by them
        previous = self._engine.switch(self.target.provider, index)
        self._on_switch(index)
        self.done = True
        log.info("searches now rank by %s; the vectors of %s are dropped", model, self.serving.key)
        self.serving = self.target
        if previous is not None and previous is not self.target.provider:
            close = getattr(previous, "close", None)
            if close is not None:
                close()
        return self._store.drop_other_embeddings(model)
