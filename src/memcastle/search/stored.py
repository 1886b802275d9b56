"""The semantic leg answered by the store's own nearest-neighbour index: PostgreSQL's pgvector HNSW graph.

A PostgreSQL palace may be served by several daemons at once; each holding every vector in memory (as
`memcastle.search.semantic.SemanticIndex` does for SQLite) would multiply its memory and its start-up by the daemons.
Here the vectors stay in the database, searched with scope and time inside the graph walk, so a daemon's memory does not
grow with the palace. A drawer is scored by its best passage, and the semantic floor applies as in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memcastle.errors import ProviderError
from memcastle.model import Scope, ScoredDrawer
from memcastle.search.semantic import ANN_MAX_K, SEMANTIC_FLOOR, ranked
from memcastle.store import NearestStore

_FIRST_ROUND = 8  # passages asked per drawer wanted: a long drawer's passages crowd the nearest ones
_WIDEN = 16


class StoredVectorIndex:
    """The semantic leg over `NearestStore.nearest_passages`; thread-safe (it keeps only the dimension)."""

    def __init__(self, store: NearestStore, model: str) -> None:
        self._store = store
        self.model = model
        self.dimension: int | None = None

    def refresh(self, *, wait: bool = True) -> None:
        """Read the vectors' dimension once there are any (nothing else is held; a read never waits on another)."""
        if self.dimension is None:
            self.dimension = self._store.vector_count(self.model)[1]

    @property
    def loading(self) -> bool:
        """Never: the vectors stay in the store."""
        return False

    def describe(self) -> dict[str, Any]:
        count, _ = self._store.vector_count(self.model)
        return {"search": "pgvector", "vectors": count, "in_graph": count, "graph_from": 0, "loading": False}

    def has_vector(self, drawer_id: str) -> bool:
        return bool(self._store.embedded_among(self.model, [drawer_id]))

    def waiting_among(self, drawer_ids: Sequence[str]) -> set[str]:
        """Those of the drawers not yet found by meaning as well as they will be (some passages still missing)."""
        return set(drawer_ids) - self._store.embedded_among(self.model, drawer_ids)

    def nearest_passages(self, vector: npt.NDArray[np.float32], drawer_ids: Sequence[str]) -> dict[str, int]:
        """For each drawer with vectors, the index of its passage nearest `vector`."""
        if self.dimension is None or vector.shape[0] != self.dimension or not drawer_ids:
            return {}
        return self._store.nearest_passage_of(self.model, vector.astype(np.float32), drawer_ids)

    def forget(self, drawer_ids: Sequence[str]) -> None:
        """Nothing is held here: the store erased the vectors with the drawers."""

    def candidates(self, vector: npt.NDArray[np.float32], need: int, scope: Scope) -> list[ScoredDrawer]:
        """The `need` best eligible drawers by cosine of their best passage; ties by id."""
        self.refresh()
        if self.dimension is None or need <= 0:
            return []
        if vector.shape[0] != self.dimension:
            raise ProviderError(f"the query vector has dimension {vector.shape[0]}, the palace {self.dimension}")
        take = max(need * _FIRST_ROUND, 64)
        while True:
            found = self._store.nearest_passages(self.model, vector.astype(np.float32), take, scope)
            best: dict[str, float] = {}
            for drawer_id, score in found:
                if score >= SEMANTIC_FLOOR:
                    best.setdefault(drawer_id, score)  # best first: a drawer's first passage is its best
            exhausted = len(found) < take or (found and found[-1][1] < SEMANTIC_FLOOR)  # nothing nearer is left
            if len(best) >= need or exhausted or take >= ANN_MAX_K:
                return ranked(list(best.items()), need)
            take = min(take * _WIDEN, ANN_MAX_K)
