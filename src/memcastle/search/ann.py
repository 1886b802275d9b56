"""An approximate nearest-neighbour index over one model's passage vectors: usearch's HNSW graph with int8 storage,
keyed by each vector's row id in the store, persisted beside the palace (docs/adr/0015-search-at-scale.md).

The int8 copies only guide the walk: the semantic leg takes each found row's cosine again from the float32 vector the
store holds, so a score is exact and the graph costs about half the memory float16 copies would (a million vectors
fit the daemon in 1.5 GB).

It is a cache: the store holds every vector, so a missing, damaged or stale file is rebuilt, never trusted. A file is
stale when it was built for another model, dimension or graph shape, when it knows a row the store does not have, or
when a sample of its vectors no longer matches the store's rows of the same ids (a palace restored from a backup).

A lock keeps searches and changes of the graph apart (usearch's graph is not safe for a search beside an insertion
from another thread). A change holds it briefly: rows go in `ADD_CHUNK` at a time, so a search waits for one chunk
(~50 ms at a million rows), not for a whole batch (~2 s) — usearch keeps the interpreter while it inserts, so the
chunks are also what lets every other thread of the daemon run. A save only reads the graph and takes a second lock
that keeps changes out; it too keeps the interpreter (2.6–5.4 s at a million rows), which is why the semantic index
spaces its saves by growth (`SemanticIndex._save_due`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

# The graph's shape and search breadth, chosen by recall against the exact scan on real vectors (bench/ann.py).
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 128
STORAGE = "i8"
FORMAT = 2
VERIFY_SAMPLE = 8  # stored vectors compared with the file's on open
FILL_KEYS = 2**62  # throwaway keys that overwrite the slots of forgotten rows (row ids stay far below)
ADD_CHUNK = 16  # rows inserted per hold of the search lock


@dataclass(frozen=True)
class AnnShape:
    """What a file must have been built for to be reused."""

    model: str
    dimension: int
    connectivity: int
    expansion_add: int
    storage: str
    format: int = FORMAT

    @classmethod
    def default(cls, model: str, dimension: int) -> AnnShape:
        """The shape this version builds (the module's settings, read when called)."""
        return cls(model, dimension, CONNECTIVITY, EXPANSION_ADD, STORAGE)


class AnnIndex:
    """The HNSW graph of one model's vectors; `covered` is the highest row id in it (rows are added in id order)."""

    def __init__(self, shape: AnnShape) -> None:
        from usearch.index import Index

        self.shape = shape
        self.rebuilt_because: str | None = None  # why a saved graph was not used (`open`): it is built anew
        self._lock = threading.Lock()  # searches, and each change of the graph
        self._changing = threading.Lock()  # changes and saves, one at a time
        self._graph = Index(
            ndim=shape.dimension,
            metric="cos",
            dtype=shape.storage,
            connectivity=shape.connectivity,
            expansion_add=shape.expansion_add,
            expansion_search=EXPANSION_SEARCH,
        )
        self.covered = 0
        self.saved_size = 0

    def __len__(self) -> int:
        return len(self._graph)

    def add(self, keys: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]) -> None:
        """Rows after `covered`, in id order."""
        if len(keys) == 0:
            return
        ids = keys.astype(np.uint64)
        with self._changing:
            for start in range(0, len(ids), ADD_CHUNK):
                stop = min(start + ADD_CHUNK, len(ids))
                with self._lock:
                    self._graph.add(ids[start:stop], vectors[start:stop], threads=1)
                    self.covered = int(keys[stop - 1])
                time.sleep(0)  # a search waiting for the lock takes it now

    def search(
        self, vector: npt.NDArray[np.float32], count: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The `count` nearest rows: their ids and cosine similarities, best first."""
        with self._lock:
            size = len(self._graph)
            if size == 0 or count <= 0:
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
            found = self._graph.search(vector, min(count, size), threads=1)
        keys = np.asarray(found.keys, dtype=np.int64)
        return keys, (1.0 - np.asarray(found.distances, dtype=np.float32))

    def forget(self, keys: npt.NDArray[np.int64]) -> int:
        """Remove these rows and overwrite the vectors they leave behind; how many the graph held.

        usearch only marks a removed slot free: its vector stays in memory, and in a saved file, until the slot is
        reused. So every free slot is filled with one constant vector under a throwaway key, which is removed again:
        no forgotten vector survives in the graph or in the file saved next."""
        with self._changing, self._lock:
            held = np.array([k for k in keys.astype(np.uint64) if self._graph.contains(k)], dtype=np.uint64)
            if len(held) == 0:
                return 0
            self._graph.remove(held)
            free = int(self._graph.stats.nodes) - len(self._graph)
            if free > 0:
                filler = np.full((free, self.shape.dimension), 1.0 / np.sqrt(self.shape.dimension), dtype=np.float32)
                start = FILL_KEYS + int(np.random.default_rng().integers(0, FILL_KEYS // 2))
                fill_keys = np.arange(start, start + free, dtype=np.uint64)
                self._graph.add(fill_keys, filler, threads=1)
                self._graph.remove(fill_keys)
            self.saved_size = -1  # what is on disk still holds them: save again
        return len(held)

    def free_share(self) -> float:
        """The share of the graph's slots left by removed rows (they cost a fill at every forget)."""
        with self._lock:
            nodes = int(self._graph.stats.nodes)
            return (nodes - len(self._graph)) / nodes if nodes else 0.0

    def save(self, path: Path) -> None:
        """Write the graph and its description beside it, each through a temporary file: a crash mid-save leaves the
        previous pair or none, never a torn one that passes for whole."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._changing:  # saving only reads the graph: no search lock
            graph_tmp = path.with_suffix(".usearch.tmp")
            try:
                self._graph.save(str(graph_tmp))
            except BaseException:
                graph_tmp.unlink(missing_ok=True)  # a save cut short (a full disk) leaves no half file behind
                raise
            meta = {**asdict(self.shape), "covered": self.covered, "size": len(self._graph)}
            size = len(self._graph)
        meta_path = _meta_path(path)
        meta_path.unlink(missing_ok=True)  # no description: the pair is not whole until both are in place
        os.replace(graph_tmp, path)
        meta_tmp = meta_path.with_suffix(".json.tmp")
        meta_tmp.write_text(json.dumps(meta), encoding="utf-8")
        os.replace(meta_tmp, meta_path)
        self.saved_size = size

    @classmethod
    def open(
        cls,
        path: Path,
        shape: AnnShape,
        *,
        last_row: int,
        stored: Callable[[list[int]], dict[int, npt.NDArray[np.float32]]],
    ) -> AnnIndex:
        """The graph saved at `path` when it is whole and matches the store (`last_row`: the store's highest row id;
        `stored(ids)`: those rows' vectors), else an empty one to build."""
        fresh = cls(shape)
        meta_path = _meta_path(path)
        if not (path.is_file() and meta_path.is_file()):
            return fresh
        why = ""
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if {k: meta.get(k) for k in asdict(shape)} != asdict(shape):
                why = "built for another model or graph shape"
            elif int(meta["covered"]) > last_row:
                why = "it knows rows the store does not have"
            else:
                fresh._graph.load(str(path))
                fresh.covered = int(meta["covered"])
                if len(fresh._graph) != int(meta["size"]):
                    why = "its size does not match its description"
                elif not _matches_store(fresh, stored):
                    why = "its vectors differ from the store's"
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            why = f"unreadable ({exc})"
        if why:
            log.warning("rebuilding the vector index %s: %s", path.name, why)
            rebuilt = cls(shape)
            rebuilt.rebuilt_because = why
            return rebuilt
        fresh.saved_size = len(fresh._graph)
        return fresh


def saved_problem(path: Path, *, last_row: int) -> str | None:
    """What is wrong with the graph saved at `path` without loading it (the file is mapped, not read): None when it
    is whole and knows no row past `last_row`, or when there is no file at all (one is built when needed)."""
    from usearch.index import Index

    meta_path = _meta_path(path)
    if not path.exists() and not meta_path.exists():
        return None
    if not (path.is_file() and meta_path.is_file()):
        return "the graph or its description is missing"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        covered, size = int(meta["covered"]), int(meta["size"])
        view = Index(ndim=int(meta["dimension"]), metric="cos", dtype=str(meta["storage"]))
        view.view(str(path))
        found = len(view)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        return f"unreadable ({exc})"
    if found != size:
        return f"it holds {found} vectors where its description says {size}"
    if covered > last_row:
        return "it knows rows the store does not have"
    return None


def _meta_path(path: Path) -> Path:
    return path.with_suffix(".json")


def _matches_store(index: AnnIndex, stored: Callable[[list[int]], dict[int, npt.NDArray[np.float32]]]) -> bool:
    keys = np.asarray(index._graph.keys, dtype=np.int64)
    if len(keys) == 0:
        return True
    sample = [int(k) for k in np.random.default_rng(len(keys)).choice(keys, min(VERIFY_SAMPLE, len(keys)), False)]
    found = stored(sample)
    for key in sample:
        vector = found.get(key)
        if vector is None:
            continue  # replaced since: the search skips rows the store no longer has
        kept = np.asarray(index._graph.get(key), dtype=np.float32).reshape(-1)
        cosine = float(kept @ vector / ((np.linalg.norm(kept) * np.linalg.norm(vector)) or 1.0))
        if cosine < 0.98:
            return False
    return True
