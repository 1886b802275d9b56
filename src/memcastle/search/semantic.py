"""The semantic leg: exact cosine over an in-memory matrix of passage vectors, a drawer scored by its best passage.

The matrix grows as the embed job stores vectors (loaded incrementally by a row-id range; a search never waits for
the load, it scans the snapshot published last). Scope and time are applied to
the ranked drawers before the limit: the best drawers are checked in widening rounds, and when a scope is too
narrow for that to pay, the eligible set is fetched once and the scores are masked.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from memcastle.errors import ProviderError
from memcastle.model import Scope, ScoredDrawer, TimeWindow
from memcastle.store import SemanticStore, VectorChunk

_FIRST_ROUND = 8
_WIDEN = 16
LOAD_CHUNK = 8192  # rows per load query: a palace's vectors come in without holding them all twice
SEMANTIC_FLOOR = 0.10  # chosen on the judged set and LoCoMo: see docs/adr/0011-honest-hybrid-during-the-backlog.md


@dataclass(frozen=True)
class _Snapshot:
    """What a search reads: the first `count` rows. Rows below `count` never change once published (a refresh writes
    only past it, or into a new array when it grows), so a search scans its snapshot without holding any lock."""

    count: int = 0
    matrix: npt.NDArray[np.float32] = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    places: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros((0, 4), dtype=np.int32))
    alive: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    ids: list[str] = field(default_factory=list)  # append-only: indices below `count` are stable


class SemanticIndex:
    """Passage vectors of one embedding model, in memory; thread-safe.

    `refresh` loads the rows stored since the last one by a row-id range (an index walk of the new rows only, in
    chunks of `LOAD_CHUNK`), under a loader lock; searches read the published snapshot and scan it outside any lock.
    """

    def __init__(self, store: SemanticStore, model: str) -> None:
        self._store = store
        self.model = model
        self.dimension: int | None = None  # read from the stored vectors, never assumed
        self._loader = threading.Lock()
        self._snapshot = _Snapshot()
        # Per row: codes of the drawer's wing, room, source kind and connector (fixed for a drawer's life), so a
        # scope narrows the scan with a numpy mask instead of a round trip per candidate.
        self._codes: list[dict[str | None, int]] = [{}, {}, {}, {}]
        self._last_row = 0
        # Per drawer: its rows in memory (one row as an int, which most drawers have), and how many passages it has
        # in all (absent: stored whole, so complete).
        self._rows: dict[str, int | list[int]] = {}
        self._totals: dict[str, int] = {}

    @property
    def size(self) -> int:
        return self._snapshot.count

    def has_vector(self, drawer_id: str) -> bool:
        """Whether the drawer is found by meaning as well as it will be: all its passage vectors are loaded (a drawer
        with only its first passage so far still counts as waiting); call after `refresh`."""
        rows = self._rows.get(drawer_id)
        loaded = 0 if rows is None else 1 if isinstance(rows, int) else len(rows)
        return loaded > 0 and loaded >= self._totals.get(drawer_id, 0)

    def refresh(self) -> None:
        """Load vectors stored since the last refresh (nothing new: one index probe)."""
        with self._loader:
            while True:
                chunk = self._store.load_embeddings(self.model, self._last_row, self.dimension or 0, limit=LOAD_CHUNK)
                if chunk.ids:
                    self._append(chunk)
                if len(chunk.ids) < LOAD_CHUNK:
                    return

    def _append(self, chunk: VectorChunk) -> None:
        ids, matrix = chunk.ids, chunk.matrix
        if self.dimension is None:
            self.dimension = int(matrix.shape[1])
        if matrix.shape[1] != self.dimension:
            raise ValueError(f"stored vectors have dimension {matrix.shape[1]}, expected {self.dimension}")
        old = self._snapshot
        count, needed = old.count, old.count + len(ids)
        grown, places, alive = old.matrix, old.places, old.alive
        if needed > grown.shape[0] or grown.shape[1] != self.dimension:
            # Grow geometrically into new arrays, so a palace being embedded is not copied once per batch, and
            # searches still scanning the old arrays are undisturbed.
            rows = max(needed, 2 * grown.shape[0], 1024)
            grown = np.zeros((rows, self.dimension), dtype=np.float32)
            places = np.zeros((rows, 4), dtype=np.int32)
            alive = np.zeros(rows, dtype=bool)
            if count:
                grown[:count] = old.matrix[:count]
                places[:count] = old.places[:count]
                alive[:count] = old.alive[:count]
        grown[count:needed] = matrix
        found = self._store.drawer_places(ids)
        places[count:needed] = np.array(
            [[self._code(column, value) for column, value in enumerate(found[i])] for i in ids], dtype=np.int32
        ).reshape(len(ids), 4)
        alive[count:needed] = True
        for offset, (drawer_id, passage, total) in enumerate(zip(ids, chunk.passages, chunk.totals, strict=True)):
            row, before = count + offset, self._rows.get(drawer_id)
            if before is None:
                self._rows[drawer_id] = row
            elif passage == 0:
                # The drawer was embedded again from its first passage: the store replaced its rows, so do we.
                alive[before] = False
                self._rows[drawer_id] = row
            elif isinstance(before, int):
                self._rows[drawer_id] = [before, row]
            else:
                before.append(row)
            if total is not None:
                self._totals[drawer_id] = total
        old.ids.extend(ids)
        self._snapshot = _Snapshot(count=needed, matrix=grown, places=places, alive=alive, ids=old.ids)
        self._last_row = chunk.last_id

    def _code(self, column: int, value: str | None) -> int:
        codes = self._codes[column]
        return codes.setdefault(value, len(codes) + 1)

    def _scope_mask(self, snapshot: _Snapshot, scope: Scope) -> npt.NDArray[np.bool_]:
        mask = snapshot.alive[: snapshot.count]
        for column, wanted in enumerate((scope.wing, scope.room, scope.source_kind, scope.connector)):
            if wanted is None:
                continue
            code = self._codes[column].get(wanted, -1)
            mask = mask & (snapshot.places[: snapshot.count, column] == code)
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
        snapshot = self._snapshot
        count, ids = snapshot.count, snapshot.ids
        if count == 0 or need <= 0:
            return []
        if vector.shape[0] != self.dimension:
            raise ProviderError(f"the query vector has dimension {vector.shape[0]}, the palace {self.dimension}")
        scores = snapshot.matrix[:count] @ vector.astype(np.float32)
        # Below the floor a passage is unrelated to the query (the model's cosine between unrelated texts sits near
        # zero): it never brings its drawer in, however few drawers have vectors yet.
        mask = self._scope_mask(snapshot, scope) & (scores >= SEMANTIC_FLOOR)
        scores = np.where(mask, scores, -np.inf).astype(np.float32)
        rows = count
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
        allowed = np.fromiter((ids[row] in eligible for row in range(rows)), dtype=bool, count=rows)
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
