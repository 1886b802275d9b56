"""Passage vectors beside the drawers, per model, on either SQL backend: which drawers still need vectors, and the
writes and reads each backend does its own way (`_store_vectors`, `_vectors_by_id`, `load_embeddings`)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Unpack

import numpy as np

from memcastle.model import Drawer, DrawerPlace
from memcastle.store import EmbedWalk, VectorChunk
from memcastle.store.sql.base import Role, SqlStore
from memcastle.store.sql.drawers import DrawerTables
from memcastle.store.sql.search import places
from memcastle.store.sql.vectors import VectorWrite, vector_writes, vectors_by_row

# Files whose text is prose: the embed sweep gives their drawers (and every note, transcript and commit) their first
# vectors before code and data files' (what a user searches by meaning first).
PROSE_SUFFIXES = ("md", "markdown", "txt", "rst", "adoc", "org", "tex", "html", "htm")
# Files that test code: their later passages wait until every other drawer is whole (half the standard library's
# passages are its tests). `LIKE` patterns over a drawer's document path, a backslash escaping `_`.
TEST_PATHS = ("test/%", "tests/%", "%/test/%", "%/tests/%", "test\\_%", "%/test\\_%", "%\\_test.%", "%.test.%",
              "%.spec.%")  # fmt: skip


class EmbeddingTables(Role):
    """`memcastle.store.EmbeddingStore` on SQL."""

    def __init__(self, db: SqlStore, drawers: DrawerTables) -> None:
        super().__init__(db)
        self.drawers = drawers

    def put_embeddings(
        self,
        model: str,
        rows: Iterable[tuple[str, np.ndarray]],
        *,
        first_passage: int = 0,
        totals: Mapping[str, int] | None = None,
        supplied: bool = False,
    ) -> None:
        """See `EmbeddingStore.put_embeddings`; each backend stores the vectors its own way."""
        self._store_vectors(model, vector_writes(rows, first_passage, totals), supplied=supplied)

    def vector_state(self, model: str, drawer_id: str) -> tuple[int, bool] | None:
        """The drawer's vectors of `model`: (dimension, supplied by a caller), or None when it has none."""
        row = self._one(
            "SELECT e.dimension, e.supplied FROM embedded e JOIN drawer d ON d.seq = e.drawer_seq "
            "WHERE e.model = ? AND d.id = ?",
            (model, drawer_id),
        )
        return (int(row["dimension"]), bool(row["supplied"])) if row else None

    def vectors_of_rows(self, row_ids: Sequence[int], dimension: int) -> np.ndarray:
        """See `EmbeddingStore.vectors_of_rows`; each backend reads the vectors its own way."""
        return vectors_by_row(row_ids, dimension, self._vectors_by_id)

    @abstractmethod
    def _vectors_by_id(self, row_ids: list[int]) -> list[tuple[int, np.ndarray]]:
        """(row id, float32 vector) for those of `row_ids` the store holds."""

    @abstractmethod
    def _store_vectors(self, model: str, writes: list[VectorWrite], *, supplied: bool = False) -> None: ...

    @abstractmethod
    def load_embeddings(self, model: str, after_id: int, dimension: int, *, limit: int) -> VectorChunk: ...

    def drawer_places(self, drawer_ids: Sequence[str]) -> dict[str, DrawerPlace]:
        with self._read() as tx:
            return places(tx, drawer_ids)

    def next_to_embed(self, model: str, limit: int, **walk: Unpack[EmbedWalk]) -> list[tuple[int, Drawer]]:
        """Up to `limit` drawers not fully embedded for `model`, as (seq, drawer), where `walk` goes (`EmbedWalk`).
        The walk follows the primary key, so a batch costs what it skips and reads, not what the palace holds."""
        after, before, current = walk.get("after"), walk.get("before"), walk.get("current")
        stage, subset = walk.get("stage", "all"), walk.get("subset", "all")
        where: list[str] = []
        params: list[Any] = []
        if subset == "prose":
            suffixes = " OR ".join("LOWER(d.document) LIKE ?" for _ in PROSE_SUFFIXES)
            where.append(f"(d.source_kind <> 'file' OR d.document IS NULL OR {suffixes})")
            params.extend(f"%.{suffix}" for suffix in PROSE_SUFFIXES)
        elif subset in ("tests", "untested"):
            paths = " OR ".join("LOWER(d.document) LIKE ? ESCAPE '\\'" for _ in TEST_PATHS)
            test = f"(d.source_kind = 'file' AND d.document IS NOT NULL AND ({paths}))"
            where.append(test if subset == "tests" else f"NOT {test}")
            params.extend(TEST_PATHS)
        elif subset != "all":
            raise ValueError(f"subset must be all, prose, tests or untested, not {subset!r}")
        if after is not None:
            where.append("d.seq > ?")
            params.append(after)
        if before is not None:
            where.append("d.seq < ?")
            params.append(before)
        if current is not None:
            where.append(f"{self.NO_INDEX}d.valid_to IS {'NULL' if current else 'NOT NULL'}")
        where.append("NOT EXISTS (SELECT 1 FROM embedded e WHERE e.model = ? AND e.drawer_seq = d.seq)")
        params.append(model)
        if stage in ("head", "rest"):
            head = "EXISTS (SELECT 1 FROM embedding h WHERE h.model = ? AND h.drawer_seq = d.seq AND h.passage = 0)"
            where.append(head if stage == "rest" else f"NOT {head}")
            params.append(model)
        elif stage != "all":
            raise ValueError(f"stage must be head, rest or all, not {stage!r}")
        order = "DESC" if before is not None and after is None else "ASC"
        rows = self._all(
            f"SELECT d.seq, d.id FROM drawer d WHERE {' AND '.join(where)} ORDER BY d.seq {order} LIMIT ?",
            (*params, max(0, limit)),
        )
        found = self.drawers.get_drawers([r["id"] for r in rows])
        return [(int(r["seq"]), found[r["id"]]) for r in rows if r["id"] in found]

    def last_drawer_seq(self) -> int:
        return self._count("SELECT MAX(seq) AS n FROM drawer")

    def waiting_texts(self, model: str, after: int, upto: int, limit: int) -> list[tuple[int, str]]:
        """(seq, text) of the drawers not fully embedded for `model` with `after` < seq ≤ `upto`, ascending: what the
        embed sweep counts the passages of."""
        rows = self._all(
            "SELECT d.seq, d.content FROM drawer d WHERE d.seq > ? AND d.seq <= ? AND NOT EXISTS "
            "(SELECT 1 FROM embedded e WHERE e.model = ? AND e.drawer_seq = d.seq) ORDER BY d.seq LIMIT ?",
            (after, upto, model, limit),
        )
        return [(int(r["seq"]), str(r["content"])) for r in rows]

    def count_stored_of_waiting(self, model: str, after: int, upto: int) -> int:
        """Passages already stored for the drawers not fully embedded for `model` with `after` < seq ≤ `upto` (a first
        passage, before the rest)."""
        return self._count(
            "SELECT COUNT(*) AS n FROM embedding x WHERE x.model = ? AND x.drawer_seq > ? AND x.drawer_seq <= ? "
            "AND NOT EXISTS (SELECT 1 FROM embedded e WHERE e.model = x.model AND e.drawer_seq = x.drawer_seq)",
            (model, after, upto),
        )

    def count_missing_embeddings(self, model: str) -> int:
        return max(
            0,
            self._count(
                "SELECT (SELECT COUNT(*) FROM drawer) - (SELECT COUNT(*) FROM embedded WHERE model = ?) AS n", (model,)
            ),
        )

    def embedded_models(self) -> dict[str, int]:
        """Each model with vectors in the palace, and how many drawers it has embedded."""
        rows = self._all("SELECT model, COUNT(*) AS n FROM embedded GROUP BY model")
        return {r["model"]: int(r["n"]) for r in rows}

    def drop_other_embeddings(self, model: str) -> int:
        """Remove vectors of models other than `model` (after a model change has been filled in)."""
        with self._write() as tx:
            removed = tx.run("DELETE FROM embedding WHERE model <> ?", (model,))
            tx.run("DELETE FROM embedded WHERE model <> ?", (model,))
        return removed
