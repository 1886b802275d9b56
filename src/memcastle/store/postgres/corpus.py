"""The statistics BM25 needs on PostgreSQL — the palace's size, its average drawer length, each term's document
frequency — kept in memory and brought up to date by counting only the drawers added since.

FTS5 reads them from its own index in microseconds; PostgreSQL has to count: `count(*)` over every drawer took
120–150 ms at 100k drawers, and a common term's `count(*)` through the GIN index up to 136 ms, on every query. Drawers
are only ever added (a version closes, it is not deleted), so a count taken up to the highest `seq` grows by counting
the rows past it, an index range walk of the new rows alone.

Rows are numbered when inserted but become visible when committed, so two writers committing out of order can hide a
row below the highest `seq` already counted; each count is therefore taken again in full after `RECOUNT_SECONDS`.
Until then a statistic can miss those few rows, which only nudges the BM25 weights.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memcastle.store.postgres.fulltext import CONFIG
from memcastle.store.sql.base import Tx

RECOUNT_SECONDS = 300.0
MAX_TERMS = 50_000  # document frequencies kept, least recently used dropped first
IDF_FLOOR = 1e-6  # FTS5's: a term in half the palace or more still counts, barely


@dataclass(frozen=True)
class _Count:
    value: int
    tokens: int  # the corpus' total length; 0 for a term
    upto: int  # the highest seq counted
    at: float  # when it was counted in full


@dataclass(frozen=True)
class Statistics:
    """What one query ranks with."""

    drawers: int
    average_length: float
    frequencies: tuple[int, ...]  # per term, in the query's order

    def idf(self) -> list[float]:
        """FTS5's IDF per term, floored."""
        n = self.drawers
        return [max(math.log((n - df + 0.5) / (df + 0.5)), IDF_FLOOR) for df in self.frequencies]


class CorpusStatistics:
    """Thread-safe: each count is an immutable value replaced whole, so concurrent queries read one consistent count
    or the next; two queries bringing the same count up to date at once only do the same small count twice."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._corpus: _Count | None = None
        self._terms: OrderedDict[str, _Count] = OrderedDict()

    def read(self, tx: Tx, terms: Sequence[str]) -> Statistics:
        """The statistics for these terms (each a term's words, as the full-text index sees them)."""
        found = tx.one("SELECT coalesce(max(seq), 0) AS top FROM drawer")
        top = int(found["top"]) if found is not None else 0
        corpus = self._corpus_count(tx, top)
        frequencies = tuple(self._term_count(tx, words, corpus.upto).value for words in terms)
        average = corpus.tokens / corpus.value if corpus.value else 0.0
        return Statistics(corpus.value, average, frequencies)

    def _corpus_count(self, tx: Tx, top: int) -> _Count:
        now, known = self._clock(), self._corpus
        if known is None or now - known.at >= RECOUNT_SECONDS or top < known.upto:
            row = tx.one(
                "SELECT count(*) AS n, coalesce(sum(token_count), 0) AS tokens, coalesce(max(seq), 0) AS upto "
                "FROM drawer"
            )
            assert row is not None
            known = _Count(int(row["n"]), int(row["tokens"]), int(row["upto"]), now)
        elif top > known.upto:
            row = tx.one(
                "SELECT count(*) AS n, coalesce(sum(token_count), 0) AS tokens FROM drawer WHERE seq > ? AND seq <= ?",
                (known.upto, top),
            )
            assert row is not None
            known = _Count(known.value + int(row["n"]), known.tokens + int(row["tokens"]), top, known.at)
        self._corpus = known
        return known

    def _term_count(self, tx: Tx, words: str, upto: int) -> _Count:
        """The term's document frequency up to the same `seq` as the corpus count it is used with."""
        now = self._clock()
        with self._lock:
            known = self._terms.get(words)
            if known is not None:
                self._terms.move_to_end(words)
        match = f"search @@ phraseto_tsquery('{CONFIG}', ?)"
        if known is None or now - known.at >= RECOUNT_SECONDS or upto < known.upto:
            row = tx.one(f"SELECT count(*) AS n FROM drawer WHERE {match} AND seq <= ?", (words, upto))
            assert row is not None
            known = _Count(int(row["n"]), 0, upto, now)
        elif upto > known.upto:
            row = tx.one(
                f"SELECT count(*) AS n FROM drawer WHERE seq > ? AND seq <= ? AND {match}", (known.upto, upto, words)
            )
            assert row is not None
            known = _Count(known.value + int(row["n"]), 0, upto, known.at)
        with self._lock:
            self._terms[words] = known
            self._terms.move_to_end(words)
            while len(self._terms) > MAX_TERMS:
                self._terms.popitem(last=False)
        return known
