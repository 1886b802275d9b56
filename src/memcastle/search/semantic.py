"""The semantic leg: cosine over an in-memory matrix of passage vectors, a drawer scored by its best passage.

The matrix grows as the embed job stores vectors (loaded incrementally by a row-id range; a search never waits for
the load, it scans the snapshot published last). Below `ann.min_rows` rows every search is an exact scan; above it,
an HNSW graph kept by a background thread (`IndexMaintainer`, see `memcastle.search.ann`) answers, with the rows not
yet in the graph scanned exactly beside it. Scope and time are applied to the ranked drawers before the limit: the
best drawers are checked in widening rounds, a scope too narrow for the graph to pay is scanned exactly, and when
nothing else finds enough, the eligible set is fetched once and the scores are masked.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memcastle.errors import ProviderError
from memcastle.model import Scope, ScoredDrawer
from memcastle.search.ann import AnnIndex, AnnShape, saved_problem
from memcastle.search.vector_rows import Snapshot, best_of, best_per_drawer, top
from memcastle.store import SemanticStore, VectorChunk

log = logging.getLogger(__name__)

_FIRST_ROUND = 8
_WIDEN = 16
_ELIGIBLE_FIRST = 32  # candidates whose eligibility is asked of the store first (see `_eligible_best`)
ANN_MIN_ROWS = 20_000  # below this many vectors an exact scan takes a few milliseconds: no graph (ADR 0015)
ANN_MAX_K = 4096  # passages asked of the graph before falling back to the exact scan
ANN_ADD_BATCH = 1024
ANN_SAVE_SECONDS = 60.0
ANN_SAVE_GROWTH = 0.1  # a saved graph is written again once it holds a tenth more rows (see `_save_due`)
LOAD_CHUNK = 8192  # rows per load query: a palace's vectors come in without holding them all twice
NARROW_ROWS = 4096  # a scope with fewer rows is scanned exactly (its vectors read back from the store) (ADR 0015)
_GRAPH_BLOCK = 16_384  # rows read back from the store at a time by an exact scan
TIE_DIGITS = 6  # float32 carries about seven significant digits
SEMANTIC_FLOOR = 0.10  # chosen on the judged set and LoCoMo: see docs/adr/0011-honest-hybrid-during-the-backlog.md


class SemanticIndex:
    """Passage vectors of one embedding model, in memory; thread-safe.

    `refresh` loads the rows stored since the last one by a row-id range (an index walk of the new rows only, in
    chunks of `LOAD_CHUNK`), under a loader lock; searches read the published snapshot and scan it outside any lock.
    """

    def __init__(
        self,
        store: SemanticStore,
        model: str,
        *,
        ann_path: Path | None = None,
        ann_min_rows: int = ANN_MIN_ROWS,
        on_rebuilt: Callable[[str, str], object] | None = None,
    ) -> None:
        # Told (the cache's file, why) when a saved graph was damaged and is built anew: a status warning until seen.
        self._on_rebuilt = on_rebuilt
        self._store = store
        self.model = model
        self._ann_path = ann_path
        self.ann_min_rows = ann_min_rows
        self._ann: AnnIndex | None = None
        self._ann_saved_at = time.monotonic()
        self._counts: list[dict[int, int]] = [{}, {}, {}, {}]  # rows per place code, to tell a narrow scope
        self.dimension: int | None = None  # read from the stored vectors, never assumed
        self._loader = threading.Lock()
        self._loaded = False  # the first refresh has read every stored vector
        self._snapshot = Snapshot()
        # Per row: codes of the drawer's wing, room, source kind and connector (fixed for a drawer's life), so a
        # scope narrows the scan with a numpy mask instead of a round trip per candidate.
        self._codes: list[dict[str | None, int]] = [{}, {}, {}, {}]
        self._last_row = 0
        # Per drawer: its rows in memory (one row as an int, which most drawers have), and how many passages it has
        # in all (absent: stored whole, so complete).
        self._rows: dict[str, int | list[int]] = {}
        self._totals: dict[str, int] = {}

    @property
    def loading(self) -> bool:
        """The first load of the stored vectors has not finished (see `refresh`)."""
        return not self._loaded

    @property
    def size(self) -> int:
        return self._snapshot.count

    def describe(self) -> dict[str, Any]:
        """How searches by meaning run now: `graph` once the HNSW graph is built (with how many of the vectors it
        holds; the rest are scanned exactly beside it), else `exact`; `loading` until the stored vectors have been
        read once (a search by meaning waits for that)."""
        ann, rows = self._ann, self._snapshot.count
        graph = ann is not None and len(ann) >= self.ann_min_rows
        return {
            "search": "graph" if graph else "exact",
            "vectors": rows,
            "in_graph": len(ann) if ann is not None else 0,
            "graph_from": self.ann_min_rows,
            "loading": self.loading,
        }

    def has_vector(self, drawer_id: str) -> bool:
        """Whether the drawer is found by meaning as well as it will be: all its passage vectors are loaded (a drawer
        with only its first passage so far still counts as waiting); call after `refresh`."""
        rows = self._rows.get(drawer_id)
        loaded = 0 if rows is None else 1 if isinstance(rows, int) else len(rows)
        return loaded > 0 and loaded >= self._totals.get(drawer_id, 0)

    def waiting_among(self, drawer_ids: Sequence[str]) -> set[str]:
        """Those of the drawers not yet found by meaning as well as they will be (see `has_vector`)."""
        return {drawer_id for drawer_id in drawer_ids if not self.has_vector(drawer_id)}

    def nearest_passages(self, vector: npt.NDArray[np.float32], drawer_ids: Sequence[str]) -> dict[str, int]:
        """For each drawer with vectors, the index of its passage nearest `vector` (a hit's snippet comes from it)."""
        snapshot = self._snapshot
        nearest: dict[str, int] = {}
        if snapshot.count == 0 or vector.shape[0] != self.dimension:
            return nearest
        for drawer_id in drawer_ids:
            found = self._rows.get(drawer_id)
            listed = [found] if isinstance(found, int) else list(found or ())
            # A row past the snapshot is being published by a refresh; passages are loaded in order, so the rows
            # before it are the drawer's first passages.
            rows = np.array([row for row in listed if row < snapshot.count], dtype=np.int64)
            if len(rows) > 1:
                nearest[drawer_id] = int(np.argmax(self._vectors(snapshot, rows) @ vector.astype(np.float32)))
            elif len(rows) == 1:
                nearest[drawer_id] = 0
        return nearest

    def refresh(self, *, wait: bool = True) -> None:
        """Load vectors stored since the last refresh (nothing new: one index probe). With `wait=False` a load under
        way in another thread is not waited for: the caller reads what it has published so far."""
        if not self._loader.acquire(blocking=wait):
            return
        try:
            while True:
                chunk = self._store.embeddings.load_embeddings(
                    self.model, self._last_row, self.dimension or 0, limit=LOAD_CHUNK
                )
                if chunk.ids:
                    self._append(chunk)
                if len(chunk.ids) < LOAD_CHUNK:
                    self._loaded = True
                    return
        finally:
            self._loader.release()

    def _append(self, chunk: VectorChunk) -> None:
        ids, matrix = chunk.ids, chunk.matrix
        if self.dimension is None:
            self.dimension = int(matrix.shape[1])
        if matrix.shape[1] != self.dimension:
            raise ValueError(f"stored vectors have dimension {matrix.shape[1]}, expected {self.dimension}")
        old = self._snapshot
        count, needed, base = old.count, old.count + len(ids), old.base
        grown, keys, places, alive = old.matrix, old.keys, old.places, old.alive
        if needed > keys.shape[0]:
            # Grow geometrically into new arrays, so a palace being embedded is not copied once per batch, and
            # searches still scanning the old arrays are undisturbed.
            rows = max(needed, 2 * keys.shape[0], 1024)
            keys = np.zeros(rows, dtype=np.int64)
            places = np.zeros((rows, 4), dtype=np.int32)
            alive = np.zeros(rows, dtype=bool)
            if count:
                keys[:count] = old.keys[:count]
                places[:count] = old.places[:count]
                alive[:count] = old.alive[:count]
        if needed - base > grown.shape[0] or grown.shape[1] != self.dimension:
            grown = np.zeros((max(needed - base, 2 * grown.shape[0], 1024), self.dimension), dtype=np.float32)
            if count > base:
                grown[: count - base] = old.matrix[: count - base]
        grown[count - base : needed - base] = matrix
        keys[count:needed] = chunk.row_ids
        found = self._store.search.drawer_places(ids)
        coded = np.array(
            [[self._code(column, value) for column, value in enumerate(found[i])] for i in ids], dtype=np.int32
        ).reshape(len(ids), 4)
        places[count:needed] = coded
        for column in range(4):
            counts = self._counts[column]
            for code, many in zip(*np.unique(coded[:, column], return_counts=True), strict=True):
                counts[int(code)] = counts.get(int(code), 0) + int(many)
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
        self._snapshot = Snapshot(needed, keys, grown, places, alive, old.ids, base)
        self._last_row = chunk.last_id

    def _release(self, covered: int) -> None:
        """Drop the float32 copies of the rows the graph holds (row ids up to `covered`): they are searched through
        the graph, and the few vectors a search needs of them are read back from the store."""
        with self._loader:
            old = self._snapshot
            keys = old.keys[: old.count]
            base = int(np.searchsorted(keys, covered, side="right"))
            if base <= old.base:
                return
            kept = old.count - base
            matrix = np.zeros((max(kept, 1024), old.matrix.shape[1]), dtype=np.float32)
            matrix[:kept] = old.matrix[base - old.base : old.count - old.base]
            self._snapshot = Snapshot(old.count, old.keys, matrix, old.places, old.alive, old.ids, base)

    def _vectors(self, snapshot: Snapshot, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """The float32 vectors of these rows: from the matrix, or from the store for the rows below `base` (the
        graph holds them, as int8 copies too coarse to score with: ADR 0015). A row the store no longer has reads
        as zeros, below every floor."""
        held = rows >= snapshot.base
        if held.all():
            return snapshot.matrix[rows - snapshot.base]
        out = np.empty((len(rows), snapshot.matrix.shape[1]), dtype=np.float32)
        out[held] = snapshot.matrix[rows[held] - snapshot.base]
        out[~held] = self._store.embeddings.vectors_of_rows(
            snapshot.keys[rows[~held]].tolist(), snapshot.matrix.shape[1]
        )
        return out

    def _scores(
        self, snapshot: Snapshot, vector: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.float32]:
        """Cosine of every row of the snapshot where `mask` holds and it reaches the floor, else -inf; the rows only
        the graph holds are read back from the store in blocks, and only where the mask holds."""
        count, base = snapshot.count, snapshot.base
        scores = np.full(count, -np.inf, dtype=np.float32)
        if count > base:
            scores[base:count] = snapshot.matrix[: count - base] @ vector
        graph_rows = np.flatnonzero(mask[:base])
        for first in range(0, len(graph_rows), _GRAPH_BLOCK):
            rows = graph_rows[first : first + _GRAPH_BLOCK]
            scores[rows] = self._vectors(snapshot, rows) @ vector
        # Below the floor a passage is unrelated to the query (the model's cosine between unrelated texts sits near
        # zero): it never brings its drawer in, however few drawers have vectors yet.
        scores[~mask | (scores < SEMANTIC_FLOOR)] = -np.inf
        return scores

    def _code(self, column: int, value: str | None) -> int:
        codes = self._codes[column]
        return codes.setdefault(value, len(codes) + 1)

    def _in_scope(self, snapshot: Snapshot, scope: Scope, rows: slice | npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Which of these rows (a range or row numbers) are alive and inside the scope's wing, room, source kind and
        connector."""
        mask = snapshot.alive[rows]
        for column, wanted in enumerate((scope.wing, scope.room, scope.source_kind, scope.connector)):
            if wanted is not None:
                mask = mask & (snapshot.places[rows, column] == self._codes[column].get(wanted, -1))
        if scope.places is not None:
            inside = np.zeros_like(mask)
            for wing, room in scope.places:
                here = snapshot.places[rows, 0] == self._codes[0].get(wing, -1)
                if room is not None:
                    here = here & (snapshot.places[rows, 1] == self._codes[1].get(room, -1))
                inside = inside | here
            mask = mask & inside
        return mask

    def _narrow(self, scope: Scope) -> bool:
        """Whether the scope holds so few rows that scanning them exactly beats asking the graph."""
        sizes = [
            self._counts[column].get(self._codes[column].get(wanted, -1), 0)
            for column, wanted in enumerate((scope.wing, scope.room, scope.source_kind, scope.connector))
            if wanted is not None
        ]
        return bool(sizes) and min(sizes) < min(self.ann_min_rows, NARROW_ROWS)

    def candidates(self, vector: npt.NDArray[np.float32], need: int, scope: Scope) -> list[ScoredDrawer]:
        """The `need` best eligible drawers by cosine of their best passage; ties by id. While the first load after a
        start is under way in another thread (most of a minute at a million vectors), the vectors read so far."""
        self.refresh(wait=self._loaded)
        snapshot = self._snapshot
        if snapshot.count == 0 or need <= 0:
            return []
        if vector.shape[0] != self.dimension:
            raise ProviderError(f"the query vector has dimension {vector.shape[0]}, the palace {self.dimension}")
        vector = vector.astype(np.float32)
        ann = self._ann
        if ann is not None and len(ann) >= self.ann_min_rows and not self._narrow(scope):
            found = self._approximate(snapshot, ann, vector, need, scope)
            if found is not None:
                return found
        return self._exact(snapshot, vector, need, scope)

    def _approximate(
        self,
        snapshot: Snapshot,
        ann: AnnIndex,
        vector: npt.NDArray[np.float32],
        need: int,
        scope: Scope,
    ) -> list[ScoredDrawer] | None:
        """The graph's nearest rows and, exactly, the rows it does not hold yet; None when widening up to
        `ANN_MAX_K` still finds too few eligible drawers."""
        count = snapshot.count
        keys = snapshot.keys[:count]
        start = int(np.searchsorted(keys, ann.covered, side="right"))
        tail_rows = np.zeros(0, dtype=np.int64)
        tail_scores = np.zeros(0, dtype=np.float32)
        if start < count:
            scores = self._vectors(snapshot, np.arange(start, count)) @ vector
            keep = self._in_scope(snapshot, scope, slice(start, count)) & (scores >= SEMANTIC_FLOOR)
            tail_rows, tail_scores = np.flatnonzero(keep) + start, scores[keep]
        take = max(need * _FIRST_ROUND, 64)
        while True:
            found_keys, _ = ann.search(vector, take)
            rows = np.minimum(np.searchsorted(keys, found_keys), count - 1)
            rows = rows[keys[rows] == found_keys]  # a row the store replaced since is no longer loaded
            rows = rows[self._in_scope(snapshot, scope, rows)]
            # The graph ranks by its int8 copies; the cosine of each row it found is taken again, exactly, from the
            # stored float32 vector: scores equal the exact scan's.
            exact = self._vectors(snapshot, rows) @ vector
            keep = exact >= SEMANTIC_FLOOR
            tail = top(tail_scores, take)
            rows = np.concatenate([rows[keep], tail_rows[tail]])
            scores = np.concatenate([exact[keep], tail_scores[tail]])
            best = best_of(rows, scores, snapshot.ids)
            found = self._eligible_best(best, need, scope)
            if len(found) >= need or take >= len(ann):
                return ranked(found, need)
            if take >= ANN_MAX_K:
                return None  # a scope or a time the graph's best rows miss: scan what is eligible
            take = min(take * _WIDEN, ANN_MAX_K)

    def _exact(
        self,
        snapshot: Snapshot,
        vector: npt.NDArray[np.float32],
        need: int,
        scope: Scope,
    ) -> list[ScoredDrawer]:
        ids = snapshot.ids
        mask = self._in_scope(snapshot, scope, slice(0, snapshot.count))
        if snapshot.base:
            # Vectors only the graph holds are read for eligible rows alone: the eligible set comes first.
            mask &= self._rows_of(snapshot, self._store.search.all_eligible_ids(scope))
            scores = self._scores(snapshot, vector, mask)
            best = best_per_drawer(scores, ids, int(np.isfinite(scores).sum()))
            return ranked(list(best.items()), need)
        scores = self._scores(snapshot, vector, mask)
        count = int(np.isfinite(scores).sum())
        if count == 0:
            return []
        take = min(count, max(need * _FIRST_ROUND, 64))
        for _ in range(2):
            best = best_per_drawer(scores, ids, take)
            found = self._eligible_best(best, need, scope)
            if len(found) >= need or take == count:
                return ranked(found, need)
            take = min(count, take * _WIDEN)
        scores[~self._rows_of(snapshot, self._store.search.all_eligible_ids(scope))] = -np.inf
        best = best_per_drawer(scores, ids, int(np.isfinite(scores).sum()))
        return ranked(list(best.items()), need)

    def _eligible_best(
        self,
        best: dict[str, float],
        need: int,
        scope: Scope,
    ) -> list[tuple[str, float]]:
        """The eligible among `best` (drawers, best first), asked of the store a prefix at a time: the `need` best
        eligible drawers are found among the first ones whenever few are out of scope or time, and each drawer asked
        costs the store a lookup (a hybrid search asks for 20 drawers of ~150 candidates). The prefix grows past
        `need` eligible drawers while the next one ties with the last kept (`ranked` breaks such ties by id), and
        takes all of them when fewer than `need` are eligible."""
        ranked_ids = list(best)
        found: list[tuple[str, float]] = []
        start, size = 0, max(2 * need, _ELIGIBLE_FIRST)

        def more() -> bool:
            if len(found) < need:
                return True
            return round(best[ranked_ids[start]], TIE_DIGITS) >= round(found[need - 1][1], TIE_DIGITS)

        while start < len(ranked_ids) and more():
            batch = ranked_ids[start : start + size]
            eligible = self._store.search.eligible_ids(batch, scope)
            found.extend((drawer_id, best[drawer_id]) for drawer_id in batch if drawer_id in eligible)
            start, size = start + size, 4 * size
        return found

    def _rows_of(self, snapshot: Snapshot, drawer_ids: set[str]) -> npt.NDArray[np.bool_]:
        """A mask of the snapshot's rows that belong to these drawers."""
        mask = np.zeros(snapshot.count, dtype=bool)
        for drawer_id in drawer_ids:
            rows = self._rows.get(drawer_id)
            for row in (rows,) if isinstance(rows, int) else rows or ():
                if row < snapshot.count:
                    mask[row] = True
        return mask

    # --- forgetting -----------------------------------------------------------------------------------

    def forget(self, drawer_ids: Sequence[str]) -> None:
        """Drop the rows of forgotten drawers (the store has erased them): zeroed in memory, removed from the graph
        and from its file at once. When removed rows would fill a quarter of the graph, the index starts afresh
        instead, from the vectors the store still has (the graph is rebuilt in the background)."""
        with self._loader:
            snapshot = self._snapshot
            rows: list[int] = []
            for drawer_id in drawer_ids:
                found = self._rows.pop(drawer_id, None)
                self._totals.pop(drawer_id, None)
                rows.extend([found] if isinstance(found, int) else found or [])
            if not rows:
                return
            at = np.array(sorted(rows), dtype=np.int64)
            snapshot.alive[at] = False
            held = at[at >= snapshot.base]
            snapshot.matrix[held - snapshot.base] = 0.0
            for column in range(4):
                counts = self._counts[column]
                for code in snapshot.places[at, column]:
                    counts[int(code)] = counts.get(int(code), 1) - 1
            ann = self._ann
            if ann is None:
                return
            gone = snapshot.keys[at]
            if ann.free_share() + len(gone) / max(1, len(ann)) > 0.25:
                self._start_afresh()
                return
            ann.forget(gone)
        self.save()

    def _start_afresh(self) -> None:
        """Forget every row in memory and the graph's file; the next refresh loads what the store holds."""
        self._ann = None
        self._snapshot = Snapshot()
        self._rows, self._totals = {}, {}
        self._counts = [{}, {}, {}, {}]
        self._codes = [{}, {}, {}, {}]
        self._last_row = 0
        if self._ann_path is not None:
            for path in (self._ann_path, self._ann_path.with_suffix(".json")):
                path.unlink(missing_ok=True)

    # --- the graph, kept by a background thread ------------------------------------------------------

    def maintain(self, budget: int = 8 * ANN_ADD_BATCH) -> int:
        """One step of keeping the graph: load what is new, open or start the graph once the palace is large enough,
        add up to `budget` rows it lacks, save it when caught up; the rows added."""
        self.refresh()
        snapshot = self._snapshot
        if self._ann is None:
            if snapshot.count < self.ann_min_rows or self.dimension is None:
                return 0
            self._ann = self._open_ann(snapshot)
        ann = self._ann
        keys = snapshot.keys[: snapshot.count]
        start = int(np.searchsorted(keys, ann.covered, side="right"))
        stop = min(snapshot.count, start + budget)
        added = 0
        for first in range(start, stop, ANN_ADD_BATCH):
            rows = np.arange(first, min(stop, first + ANN_ADD_BATCH))
            rows = rows[snapshot.alive[rows]]
            if len(rows):
                ann.add(keys[rows], self._vectors(snapshot, rows))
                added += len(rows)
            ann.covered = int(keys[min(stop, first + ANN_ADD_BATCH) - 1])
        caught_up = stop == snapshot.count
        releasable = stop - snapshot.base
        if len(ann) >= self.ann_min_rows and (releasable >= budget or (caught_up and releasable > 0)):
            self._release(ann.covered)
        if caught_up and self._save_due(ann) and time.monotonic() - self._ann_saved_at >= ANN_SAVE_SECONDS:
            self.save()
        return added

    @staticmethod
    def _save_due(ann: AnnIndex) -> bool:
        """Whether the graph the maintainer caught up with is worth writing now: never written, or grown by
        `ANN_SAVE_GROWTH` since. Writing holds the interpreter (usearch does not release it: 2.6–5.4 s at a million
        vectors, the whole daemon waiting), so the writes are spaced by how much a crash would cost to rebuild; a stop
        always writes, and a forget at once."""
        if ann.saved_size <= 0:
            return len(ann) > 0
        return len(ann) - ann.saved_size >= ann.saved_size * ANN_SAVE_GROWTH

    def discard(self) -> None:
        """Let the graph go and delete its file: searches no longer rank by this model (its vectors are dropped)."""
        self._ann = None
        if self._ann_path is not None:
            for path in (self._ann_path, self._ann_path.with_suffix(".json")):
                path.unlink(missing_ok=True)

    def cache_problem(self) -> tuple[str, str] | None:
        """The graph's file and what is wrong with it (`ann.saved_problem`); None when it is sound or absent."""
        if self._ann_path is None:
            return None
        self.refresh()
        count = self._snapshot.count
        why = saved_problem(self._ann_path, last_row=int(self._snapshot.keys[count - 1]) if count else 0)
        return (str(self._ann_path), why) if why else None

    def rewrite_cache(self) -> int:
        """Replace a damaged graph file: written again from the graph in memory, else deleted (the next start
        builds it); 1 when a file was replaced or removed."""
        if self.cache_problem() is None:
            return 0
        if self._ann is None:
            self.discard()
            return 1
        self._ann.saved_size = -1  # whatever the file says, this graph is not saved
        self.save()
        return 1

    def save(self) -> None:
        """Write the graph beside the palace (nothing to write: no graph, or no path)."""
        if self._ann is None or self._ann_path is None or len(self._ann) == self._ann.saved_size:
            return
        try:
            self._ann.save(self._ann_path)
        except (OSError, RuntimeError) as exc:  # a full disk: the graph is a cache, rebuilt when its file is absent
            log.warning("could not save the vector index to %s: %s", self._ann_path, exc)
        self._ann_saved_at = time.monotonic()

    def _open_ann(self, snapshot: Snapshot) -> AnnIndex:
        assert self.dimension is not None
        shape = AnnShape.default(self.model, self.dimension)
        if self._ann_path is None:
            return AnnIndex(shape)
        keys = snapshot.keys[: snapshot.count]

        def stored(wanted: list[int]) -> dict[int, npt.NDArray[np.float32]]:
            rows = np.searchsorted(keys, wanted)
            found = [
                (key, int(row))
                for key, row in zip(wanted, rows, strict=True)
                if row < len(keys) and keys[row] == key and snapshot.alive[row]
            ]
            vectors = self._vectors(snapshot, np.array([row for _, row in found], dtype=np.int64))
            return {key: vectors[at] for at, (key, _) in enumerate(found)}

        ann = AnnIndex.open(self._ann_path, shape, last_row=int(keys[-1]), stored=stored)
        self._ann_saved_at = time.monotonic()
        if ann.rebuilt_because is not None and self._on_rebuilt is not None:
            self._on_rebuilt(str(self._ann_path), ann.rebuilt_because)
        return ann


def ranked(found: list[tuple[str, float]], need: int) -> list[ScoredDrawer]:
    """The `need` best (drawer, cosine) pairs. Cosines equal to `TIE_DIGITS` decimals are a tie, broken by id: two
    drawers the model cannot tell apart are otherwise ordered by the last bit of a float32 sum, which differs between
    a numpy scan, the graph and pgvector."""
    found.sort(key=lambda item: (-round(item[1], TIE_DIGITS), item[0]))
    return [ScoredDrawer(drawer_id=d, signal=s) for d, s in found[:need]]
