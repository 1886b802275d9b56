"""The semantic leg: exact cosine over an in-memory matrix of passage vectors, a drawer scored by its best passage.

The matrix grows as the embed job stores vectors (loaded incrementally by row id). Scope and time are applied to
the ranked drawers before the limit: the best drawers are checked in widening rounds, and when a scope is too
narrow for that to pay, the eligible set is fetched once and the scores are masked.
"""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

from memcastle.errors import ProviderError
from memcastle.model import Candidate, Scope, TimeWindow
from memcastle.store import Store

_FIRST_ROUND = 8
_WIDEN = 16


class SemanticIndex:
    """Passage vectors of one embedding model, in memory; thread-safe."""

    def __init__(self, store: Store, model: str) -> None:
        self._store = store
        self.model = model
        self.dimension: int | None = None  # read from the stored vectors, never assumed
        self._lock = threading.Lock()
        self._ids: list[str] = []
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._count = 0
        self._last_row = 0

    @property
    def size(self) -> int:
        return self._count

    def refresh(self) -> None:
        """Load vectors stored since the last refresh."""
        with self._lock:
            ids, matrix, last = self._store.load_embeddings(self.model, self._last_row, self.dimension or 0)
            if not ids:
                return
            if self.dimension is None:
                self.dimension = int(matrix.shape[1])
                self._matrix = np.zeros((0, self.dimension), dtype=np.float32)
            if matrix.shape[1] != self.dimension:
                raise ValueError(f"stored vectors have dimension {matrix.shape[1]}, expected {self.dimension}")
            needed = self._count + len(ids)
            if needed > self._matrix.shape[0]:
                # Grow geometrically so a palace being embedded is not copied once per batch.
                grown = np.zeros((max(needed, 2 * self._matrix.shape[0], 1024), self.dimension), dtype=np.float32)
                grown[: self._count] = self._matrix[: self._count]
                self._matrix = grown
            self._matrix[self._count : needed] = matrix
            self._ids.extend(ids)
            self._count = needed
            self._last_row = last

    def candidates(self, vector: npt.NDArray[np.float32], need: int, scope: Scope, window: TimeWindow | None,
                   include_historical: bool) -> list[Candidate]:
        """The `need` best eligible drawers by cosine of their best passage; ties by id."""
        self.refresh()
        with self._lock:
            count, ids = self._count, self._ids
            if count == 0 or need <= 0:
                return []
            if vector.shape[0] != self.dimension:
                raise ProviderError(f"the query vector has dimension {vector.shape[0]}, the palace {self.dimension}")
            scores = self._matrix[:count] @ vector.astype(np.float32)
        take = min(count, max(need * _FIRST_ROUND, 64))
        for _ in range(2):
            best = _best_per_drawer(scores, ids, take)
            eligible = self._store.eligible_ids(list(best), scope, window, include_historical)
            found = [(drawer_id, score) for drawer_id, score in best.items() if drawer_id in eligible]
            if len(found) >= need or take == count:
                return _ranked(found, need)
            take = min(count, take * _WIDEN)
        eligible = self._store.all_eligible_ids(scope, window, include_historical)
        mask = np.fromiter((drawer_id in eligible for drawer_id in ids), dtype=bool, count=count)
        masked = np.where(mask, scores, -np.inf)
        best = _best_per_drawer(masked, ids, min(count, int(mask.sum())))
        return _ranked([(d, s) for d, s in best.items() if np.isfinite(s)], need)


def _best_per_drawer(scores: npt.NDArray[np.float32], ids: list[str], take: int) -> dict[str, float]:
    if take <= 0:
        return {}
    if take < len(scores):
        top = np.argpartition(-scores, take - 1)[:take]
    else:
        top = np.arange(len(scores))
    top = top[np.argsort(-scores[top], kind="stable")]
    best: dict[str, float] = {}
    for row in top:
        best.setdefault(ids[row], float(scores[row]))  # descending order: the first passage seen is the best
    return best


def _ranked(found: list[tuple[str, float]], need: int) -> list[Candidate]:
    found.sort(key=lambda item: (-item[1], item[0]))
    return [Candidate(drawer_id=d, signal=s) for d, s in found[:need]]
