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
        """Newest first: drawers filed while the sweep runs (above `top`), then current drawers walking down from
        `top`, then closed ones. Each batch follows the primary key from a cursor kept in the checkpoint, and the
        pending count is taken once, so no batch costs a pass over the palace."""
        model = model_key(self._provider)
        state = dict(ctx.state)
        done = int(state.get("embedded", 0))
        passages_done = int(state.get("passages", 0))
        top = int(state["top"]) if "top" in state else self._store.last_drawer_seq()
        cursor = int(state.get("cursor", top + 1))
        phase = str(state.get("phase", "current"))
        pending = self._store.count_missing_embeddings(model)
        started = done
        while True:
            batch = self._store.next_to_embed(model, self._batch_size, after=top)
            if batch:
                top = max(seq for seq, _ in batch)
            else:
                batch = self._store.next_to_embed(model, self._batch_size, before=cursor, current=phase == "current")
                if batch:
                    cursor = min(seq for seq, _ in batch)
                elif phase == "current":
                    phase, cursor = "historical", top + 1
                    continue
                else:
                    break
            drawers = [drawer for _, drawer in batch]
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
            left = max(0, pending - (done - started))
            ctx.checkpoint(
                {"embedded": done, "passages": passages_done, "top": top, "cursor": cursor, "phase": phase},
                current=done,
                total=done + left,
                message=f"{passages_done} passages",
            )
        removed = self._store.drop_other_embeddings(model)
        return {"embedded": done, "passages": passages_done, "model": model, "dropped_vectors": removed}
