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
from memcastle.model import Scope, ScoredDrawer, TimeWindow
from memcastle.store import SemanticStore

_FIRST_ROUND = 8
_WIDEN = 16
SEMANTIC_FLOOR = 0.10  # chosen on the judged set and LoCoMo: see docs/adr/0011-honest-hybrid-during-the-backlog.md


class SemanticIndex:
    """Passage vectors of one embedding model, in memory; thread-safe."""

    def __init__(self, store: SemanticStore, model: str) -> None:
        self._store = store
        self.model = model
        self.dimension: int | None = None  # read from the stored vectors, never assumed
        self._lock = threading.Lock()
        self._ids: list[str] = []
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        # Per row: codes of the drawer's wing, room, source kind and connector (fixed for a drawer's life), so a
        # scope narrows the scan with a numpy mask instead of a round trip per candidate.
        self._places = np.zeros((0, 4), dtype=np.int32)
        self._codes: list[dict[str | None, int]] = [{}, {}, {}, {}]
        self._count = 0
        self._last_row = 0
        # Per drawer: passage vectors in memory, and how many it has in all (absent: stored whole, so complete).
        self._loaded: dict[str, int] = {}
        self._totals: dict[str, int] = {}

    @property
    def size(self) -> int:
        return self._count

    def has_vector(self, drawer_id: str) -> bool:
        """Whether the drawer is found by meaning as well as it will be: all its passage vectors are loaded (a drawer
        with only its first passage so far still counts as waiting); call after `refresh`."""
        loaded = self._loaded.get(drawer_id, 0)
        return loaded > 0 and loaded >= self._totals.get(drawer_id, 0)

    def refresh(self) -> None:
        """Load vectors stored since the last refresh."""
        with self._lock:
            ids, matrix, last, totals = self._store.load_embeddings(self.model, self._last_row, self.dimension or 0)
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
            places = self._store.drawer_places(ids)
            coded = np.array(
                [[self._code(column, value) for column, value in enumerate(places[i])] for i in ids], dtype=np.int32
            ).reshape(len(ids), 4)
            if needed > self._places.shape[0]:
                grown_places = np.zeros((self._matrix.shape[0], 4), dtype=np.int32)
                grown_places[: self._count] = self._places[: self._count]
                self._places = grown_places
            self._places[self._count : needed] = coded
            self._ids.extend(ids)
            for drawer_id, total in zip(ids, totals, strict=True):
                self._loaded[drawer_id] = self._loaded.get(drawer_id, 0) + 1
                if total is not None:
                    self._totals[drawer_id] = total
            self._count = needed
            self._last_row = last

    def _code(self, column: int, value: str | None) -> int:
        codes = self._codes[column]
        return codes.setdefault(value, len(codes) + 1)

    def _scope_mask(self, scope: Scope, count: int) -> npt.NDArray[np.bool_] | None:
        mask: npt.NDArray[np.bool_] | None = None
        for column, wanted in enumerate((scope.wing, scope.room, scope.source_kind, scope.connector)):
            if wanted is None:
                continue
            code = self._codes[column].get(wanted, -1)
            column_mask = self._places[:count, column] == code
            mask = column_mask if mask is None else mask & column_mask
        return mask

    def candidates(
        self,
        vector: npt.NDArray[np.float32],
        need: int,
        scope: Scope,
        window: TimeWindow | None,
        include_historical: bool,
    ) -> list[ScoredDrawer]:
        """The `need` best eligible drawers by cosine of their best passage; ties by id."""
        self.refresh()
        with self._lock:
            count, ids = self._count, self._ids[: self._count]  # a copy: the embed job may grow the list meanwhile
            if count == 0 or need <= 0:
                return []
            if vector.shape[0] != self.dimension:
                raise ProviderError(f"the query vector has dimension {vector.shape[0]}, the palace {self.dimension}")
            scores = self._matrix[:count] @ vector.astype(np.float32)
            mask = self._scope_mask(scope, count)
        # Below the floor a passage is unrelated to the query (the model's cosine between unrelated texts sits near
        # zero): it never brings its drawer in, however few drawers have vectors yet.
        floor = scores >= SEMANTIC_FLOOR
        mask = floor if mask is None else mask & floor
        rows = count
        if mask is not None:
            scores = np.where(mask, scores, -np.inf).astype(np.float32)
            count = int(mask.sum())
            if count == 0:
                return []
        take = min(count, max(need * _FIRST_ROUND, 64))
        for _ in range(2):
            best = _best_per_drawer(scores, ids, take)
            eligible = self._store.eligible_ids(list(best), scope, window, include_historical)
            found = [(drawer_id, score) for drawer_id, score in best.items() if drawer_id in eligible]
            if len(found) >= need or take == count:
                return _ranked(found, need)
            take = min(count, take * _WIDEN)
        eligible = self._store.all_eligible_ids(scope, window, include_historical)
        allowed = np.fromiter((drawer_id in eligible for drawer_id in ids), dtype=bool, count=rows)
        masked = np.where(allowed, scores, -np.inf).astype(np.float32)
        best = _best_per_drawer(masked, ids, int(np.isfinite(masked).sum()))
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
        if np.isfinite(scores[row]):
            best.setdefault(ids[row], float(scores[row]))  # descending order: the first passage seen is the best
    return best


def _ranked(found: list[tuple[str, float]], need: int) -> list[ScoredDrawer]:
    found.sort(key=lambda item: (-item[1], item[0]))
    return [ScoredDrawer(drawer_id=d, signal=s) for d, s in found[:need]]
