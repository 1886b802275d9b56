"""What a write of passage vectors means, the same on every backend: which rows, from which passage, and whether the
drawer is complete afterwards (then it is marked embedded)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memcastle.store import VectorChunk

# A drawer made whole for a model: its every passage vector stored (`supplied`: given by the caller, not embedded here).
MARK_EMBEDDED = (
    "INSERT INTO embedded(model, drawer_seq, dimension, supplied) VALUES (?,?,?,?) "
    "ON CONFLICT (model, drawer_seq) DO UPDATE SET dimension = excluded.dimension, supplied = excluded.supplied"
)


@dataclass(frozen=True)
class VectorWrite:
    drawer_id: str
    matrix: np.ndarray  # float32, shape (passages, dimension)
    first: int  # index of the matrix's first row among the drawer's passages
    total: int | None  # all passages of the drawer; None: the matrix is all of them

    @property
    def dimension(self) -> int:
        return int(self.matrix.shape[1]) if self.matrix.ndim == 2 and self.matrix.shape[0] else 0

    @property
    def replaces(self) -> bool:
        """Starting at the first passage replaces what the drawer had; a later start adds to it."""
        return self.first == 0

    @property
    def completes(self) -> bool:
        return self.total is None or self.first + self.matrix.shape[0] >= self.total

    def rows(self) -> list[tuple[int, np.ndarray]]:
        """(passage index, vector) for each row."""
        return [(self.first + index, self.matrix[index]) for index in range(self.matrix.shape[0])]


def vector_writes(
    rows: Iterable[tuple[str, np.ndarray]], first_passage: int, totals: Mapping[str, int] | None
) -> list[VectorWrite]:
    return [
        VectorWrite(drawer_id, np.asarray(vectors, dtype="<f4"), first_passage, (totals or {}).get(drawer_id))
        for drawer_id, vectors in rows
    ]


VECTOR_LOOKUP_CHUNK = 500  # row ids per lookup statement: well under every backend's limit on parameters


def vectors_by_row(
    row_ids: Sequence[int], dimension: int, fetch: Callable[[list[int]], Iterable[tuple[int, np.ndarray]]]
) -> np.ndarray:
    """`EmbeddingStore.vectors_of_rows` on any backend: `fetch(ids)` gives (row id, vector) for those of `ids` it
    holds, asked `VECTOR_LOOKUP_CHUNK` ids at a time; laid out in the order of `row_ids`, zeros for the rows not
    found."""
    wanted = [int(r) for r in row_ids]
    found: dict[int, np.ndarray] = {}
    for first in range(0, len(wanted), VECTOR_LOOKUP_CHUNK):
        found.update(fetch(wanted[first : first + VECTOR_LOOKUP_CHUNK]))
    out = np.zeros((len(wanted), dimension), dtype=np.float32)
    for at, row_id in enumerate(wanted):
        vector = found.get(row_id)
        if vector is not None:
            out[at] = vector
    return out


def vector_chunk(
    rows: Sequence[Mapping[str, Any]], matrix: np.ndarray | None, after_id: int, dimension: int
) -> VectorChunk:
    """Loaded rows (`id, drawer_id, passage, passages`, in id order) and their vectors as one chunk; an empty one
    when nothing was past `after_id`."""
    if not rows or matrix is None:
        return VectorChunk([], [], [], [], np.zeros((0, dimension), dtype=np.float32), after_id)
    return VectorChunk(
        ids=[r["drawer_id"] for r in rows],
        row_ids=[int(r["id"]) for r in rows],
        passages=[r["passage"] for r in rows],
        totals=[r["passages"] for r in rows],
        matrix=matrix.astype(np.float32, copy=False),
        last_id=int(rows[-1]["id"]),
    )
