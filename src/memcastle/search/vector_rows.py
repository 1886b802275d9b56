"""What a search of the in-memory semantic index reads: a published snapshot of the rows of vectors, and picking
the best of a scan's scores."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Snapshot:
    """What a search reads: the first `count` rows. Rows below `count` never change once published (a refresh writes
    only past it, or into a new array when it grows; only a replaced row's `alive` flag turns off), so a search
    scans its snapshot without holding any lock.

    `matrix` holds the float32 vectors of rows `base` to `count` (its row 0 is row `base`); the rows below `base`
    are in the HNSW graph, whose int8 copies guide its walk and are their only copy in memory (a search reads the
    float32 vectors it needs of them back from the store)."""

    count: int = 0
    keys: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # row ids, ascending
    matrix: npt.NDArray[np.float32] = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    places: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros((0, 4), dtype=np.int32))
    alive: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    ids: list[str] = field(default_factory=list)  # append-only: indices below `count` are stable
    base: int = 0


def top(scores: npt.NDArray[np.float32], take: int) -> npt.NDArray[np.int64]:
    """Positions of the `take` best scores (all of them when there are fewer), in no particular order."""
    if len(scores) <= take:
        return np.arange(len(scores))
    return np.argpartition(-scores, take - 1)[:take]


def best_of(rows: npt.NDArray[np.int64], scores: npt.NDArray[np.float32], ids: list[str]) -> dict[str, float]:
    """Each drawer's best score among these rows, best drawers first."""
    best: dict[str, float] = {}
    for at in np.argsort(-scores, kind="stable"):
        best.setdefault(ids[int(rows[at])], float(scores[at]))
    return best


def best_per_drawer(scores: npt.NDArray[np.float32], ids: list[str], take: int) -> dict[str, float]:
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
