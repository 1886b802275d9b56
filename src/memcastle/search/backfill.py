"""The `embed` job: fill missing drawer embeddings in batches, in the background, resumable at any batch."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from memcastle.clock import eta_text
from memcastle.errors import ConfigError
from memcastle.jobs.context import JobContext
from memcastle.search.embeddings import (
    PASSAGE_OVERLAP_CHARS,
    PASSAGE_WINDOW_CHARS,
    EmbeddingProvider,
    split_passages,
)
from memcastle.store import EmbeddingStore

KIND = "embed"
COALESCE_KEY = "embed"


def model_key(provider: EmbeddingProvider) -> str:
    """Vectors are stored per provider and model, so a model change re-embeds instead of mixing spaces."""
    return f"{provider.name}:{provider.model}"


@dataclass
class Backlog:
    """How far the sweep is and how long the rest should take, from the rate of this run (not of earlier ones: the
    machine may have been busier or idler then). Passages still to embed are estimated from the passages per drawer
    seen so far, since counting them exactly would mean splitting every waiting drawer."""

    started: float
    drawers: int = 0
    passages: int = 0

    def add(self, drawers: int, passages: int) -> None:
        self.drawers += drawers
        self.passages += passages

    def estimate(self, drawers_left: int, now: float) -> dict[str, Any]:
        elapsed = max(now - self.started, 1e-6)
        if not self.drawers or not self.passages:
            return {"passages_pending": None, "passages_per_second": None, "eta_seconds": None}
        pending = round(drawers_left * self.passages / self.drawers)
        rate = self.passages / elapsed
        return {
            "passages_pending": pending,
            "passages_per_second": round(rate, 1),
            "eta_seconds": round(pending / rate),
        }


class EmbeddingBackfill:
    """Embeds drawers that have no vectors for the active model; drops other models' vectors when done."""

    def __init__(
        self,
        store: EmbeddingStore,
        provider: EmbeddingProvider,
        *,
        batch_size: int,
        passage_chars: int = PASSAGE_WINDOW_CHARS,
        passage_overlap: int = PASSAGE_OVERLAP_CHARS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 <= passage_overlap < passage_chars:
            raise ConfigError(
                f"must be smaller than embeddings.passage_chars ({passage_chars}), got {passage_overlap}",
                key="embeddings.passage_overlap",
            )
        self._store = store
        self._provider = provider
        self._batch_size = batch_size
        self._passages = (passage_chars, passage_overlap)
        self._monotonic = monotonic

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
        backlog = Backlog(started=self._monotonic())
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
            pieces = [split_passages(d.content, *self._passages) for d in drawers]
            flat = [p for passages in pieces for p in passages]
            vectors = self._provider.embed(flat) if flat else np.zeros((0, 0), dtype=np.float32)
            rows, start = [], 0
            for drawer, passages in zip(drawers, pieces, strict=True):
                rows.append((drawer.id, vectors[start : start + len(passages)]))
                start += len(passages)
            self._store.put_embeddings(model, rows)
            done += len(drawers)
            passages_done += len(flat)
            backlog.add(len(drawers), len(flat))
            left = max(0, pending - (done - started))
            estimate = backlog.estimate(left, self._monotonic())
            to_go = f", ~{estimate['passages_pending']} to go, {eta_text(estimate['eta_seconds'])}" if left else ""
            ctx.checkpoint(
                {
                    "embedded": done,
                    "passages": passages_done,
                    **estimate,
                    "top": top,
                    "cursor": cursor,
                    "phase": phase,
                },
                current=done,
                total=done + left,
                message=f"{passages_done} passages{to_go}",
            )
        removed = self._store.drop_other_embeddings(model)
        return {"embedded": done, "passages": passages_done, "model": model, "dropped_vectors": removed}
