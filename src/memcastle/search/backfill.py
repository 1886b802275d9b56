"""The `embed` job: fill missing drawer embeddings in batches, in the background, resumable at any batch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from memcastle.jobs.context import JobContext
from memcastle.search.embeddings import EmbeddingProvider, split_passages
from memcastle.store import EmbeddingStore

KIND = "embed"
COALESCE_KEY = "embed"


def model_key(provider: EmbeddingProvider) -> str:
    """Vectors are stored per provider and model, so a model change re-embeds instead of mixing spaces."""
    return f"{provider.name}:{provider.model}"


class EmbeddingBackfill:
    """Embeds drawers that have no vectors for the active model; drops other models' vectors when done."""

    def __init__(self, store: EmbeddingStore, provider: EmbeddingProvider, *, batch_size: int) -> None:
        self._store = store
        self._provider = provider
        self._batch_size = batch_size

    def run(self, ctx: JobContext) -> Mapping[str, Any]:
        model = model_key(self._provider)
        done = int(ctx.state.get("embedded", 0))
        passages_done = int(ctx.state.get("passages", 0))
        while True:
            drawers = self._store.drawers_missing_embeddings(model, self._batch_size)
            if not drawers:
                break
            pieces = [split_passages(d.content) for d in drawers]
            flat = [p for passages in pieces for p in passages]
            vectors = self._provider.embed(flat) if flat else np.zeros((0, 0), dtype=np.float32)
            rows, start = [], 0
            for drawer, passages in zip(drawers, pieces, strict=True):
                rows.append((drawer.id, vectors[start : start + len(passages)]))
                start += len(passages)
            self._store.put_embeddings(model, rows)
            done += len(drawers)
            passages_done += len(flat)
            pending = self._store.count_missing_embeddings(model)
            ctx.checkpoint(
                {"embedded": done, "passages": passages_done},
                current=done,
                total=done + pending,
                message=f"{passages_done} passages",
            )
        removed = self._store.drop_other_embeddings(model)
        return {"embedded": done, "passages": passages_done, "model": model, "dropped_vectors": removed}
