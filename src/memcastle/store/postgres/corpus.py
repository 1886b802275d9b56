"""The statistics BM25 needs on PostgreSQL — the palace's size, its average drawer length, each term's document
frequency — kept in memory and brought up to date by reading only the drawers added since.

FTS5 reads them from its own index in microseconds; PostgreSQL had to count: `count(*)` over every drawer took
120–150 ms at 100k drawers, and a term's `count(*)` through the GIN index up to 136 ms, on every query. Instead one
`ts_stat` pass reads every lexeme's document count at once (0.7 s for 100k drawers and 106k lexemes, about 100 bytes
of memory per lexeme), and drawers are only ever added (a version closes, it is not deleted), so the counts taken up
to the highest `seq` grow by reading the rows past it. A term of several lexemes (a phrase) is counted on its own, and
that count kept the same way.

Rows are numbered when inserted but become visible when committed, so two writers committing out of order can hide a
row below the highest `seq` already read; everything is therefore read again in full after `RECOUNT_SECONDS`, in the
background (queries go on with the counts they have). Until then a statistic can miss those few rows, which only
nudges the BM25 weights.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from memcastle.store.postgres.fulltext import CONFIG
from memcastle.store.sql.base import Tx

log = logging.getLogger(__name__)

RECOUNT_SECONDS = 300.0
MAX_PHRASES = 10_000  # phrase counts kept, least recently used dropped first
IDF_FLOOR = 1e-6  # FTS5's: a term in half the palace or more still counts, barely


@dataclass
class _Lexicon:
    """Counts up to drawer `upto`: drawers, their total length, and per lexeme the drawers holding it."""

    drawers: int
    tokens: int  # their own words and their neighbours' (ADR 0056), as FTS5 counts a row's length
    own_tokens: int  # their own words alone
    upto: int
    at: float
    lexemes: dict[str, int] = field(default_factory=dict)
    near: dict[str, int] = field(default_factory=dict)  # per lexeme, the drawers holding it or with it in their context
    phrases: OrderedDict[tuple[str, bool], tuple[int, int]] = field(default_factory=OrderedDict)  # → (drawers, upto)


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
    """Thread-safe. One lock covers bringing the counts forward (so no range of drawers is added twice); reading a
    count takes no lock."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._lexicon: _Lexicon | None = None
        self._words: dict[str, tuple[str, ...]] = {}  # a term's words → its lexemes (fixed by the configuration)
        self._recounting = False

    def read(
        self,
        tx: Tx,
        terms: Sequence[str],
        recount: Callable[[], None] | None = None,
        *,
        near: bool = False,
        own_length: bool = False,
    ) -> Statistics:
        """The statistics for these terms (each a term's words, as the full-text index sees them); with `near`, a
        term's drawers are those holding it in their own words or their neighbours' (as FTS5 counts a phrase
        matched in any column). `recount` is called (it should start `recount_in_full` elsewhere) when the counts
        are due to be read again in full. The average length is a row's, own words and context, as BM25 ranks by;
        with `own_length`, of drawers' own words alone (as FTS5's averages record counts its first column).

        A context changes when a neighbour arrives or goes, which the counts brought forward do not see: like a
        writer committing out of order, that nudges the weights until the next recount."""
        found = tx.one("SELECT coalesce(max(seq), 0) AS top FROM drawer")
        top = int(found["top"]) if found is not None else 0
        lexicon = self._forward(tx, top)
        if recount is not None and self._clock() - lexicon.at >= RECOUNT_SECONDS and not self._recounting:
            self._recounting = True
            recount()
        lexemes = self._lexemes_of(tx, terms)
        frequencies = []
        for words in terms:
            kept = lexemes[words]
            if len(kept) == 1:
                frequencies.append((lexicon.near if near else lexicon.lexemes).get(kept[0], 0))
            else:
                frequencies.append(self._phrase(tx, lexicon, words, near))
        tokens = lexicon.own_tokens if own_length else lexicon.tokens
        average = tokens / lexicon.drawers if lexicon.drawers else 0.0
        return Statistics(lexicon.drawers, average, tuple(frequencies))

    def recount_with(self, reader: Callable[[], AbstractContextManager[Tx]]) -> None:
        """Read every count again in a transaction of `reader`'s (see the module's note on writers committing out of
        order); queries go on with the counts they have meanwhile."""
        try:
            with reader() as tx:
                fresh = self._full(tx)
            with self._lock:
                self._lexicon = fresh
        except Exception:  # the store closing under it: the counts it had stay
            log.exception("recounting the full-text statistics failed; the counts read so far stay")
        finally:
            self._recounting = False

    def _forward(self, tx: Tx, top: int) -> _Lexicon:
        """The counts up to `top` at least (counts already past it, from a recount that finished meanwhile, serve)."""
        lexicon = self._lexicon
        if lexicon is not None and lexicon.upto >= top:
            return lexicon
        with self._lock:
            lexicon = self._lexicon
            if lexicon is None:
                lexicon = self._lexicon = self._full(tx)
            elif top > lexicon.upto:
                self._add_range(tx, lexicon, top)
            return lexicon

    def _full(self, tx: Tx) -> _Lexicon:
        row = tx.one("SELECT coalesce(max(seq), 0) AS upto FROM drawer")
        assert row is not None
        lexicon = _Lexicon(0, 0, 0, 0, self._clock())
        self._add_range(tx, lexicon, int(row["upto"]))
        return lexicon

    def _add_range(self, tx: Tx, lexicon: _Lexicon, top: int) -> None:
        """Count the drawers past `lexicon.upto` up to `top` into it (under the lock)."""
        low = lexicon.upto
        row = tx.one(
            "SELECT count(*) AS n, coalesce(sum(d.token_count), 0) AS own, coalesce(sum(c.token_count), 0) AS near "
            "FROM drawer d LEFT JOIN drawer_context c ON c.seq = d.seq WHERE d.seq > ? AND d.seq <= ?",
            (low, top),
        )
        assert row is not None
        own = f"SELECT search FROM drawer WHERE seq > {low:d} AND seq <= {top:d}"
        # A drawer's lexemes with its context's: `d.search` twice where it has none (ts_stat counts a row once).
        near = (
            "SELECT d.search || coalesce(c.search, d.search) FROM drawer d LEFT JOIN drawer_context c "
            f"ON c.seq = d.seq WHERE d.seq > {low:d} AND d.seq <= {top:d}"
        )
        for counts, query in ((lexicon.lexemes, own), (lexicon.near, near)):
            for r in tx.all(f"SELECT word, ndoc FROM ts_stat('{query}')"):
                counts[r["word"]] = counts.get(r["word"], 0) + int(r["ndoc"])
        lexicon.drawers += int(row["n"])
        lexicon.own_tokens += int(row["own"])
        lexicon.tokens += int(row["own"]) + int(row["near"])
        lexicon.upto = top

    def _lexemes_of(self, tx: Tx, terms: Sequence[str]) -> dict[str, tuple[str, ...]]:
        missing = [words for words in terms if words not in self._words]
        if missing:
            rows = tx.all(
                f"SELECT t.words, tsvector_to_array(to_tsvector('{CONFIG}', t.words)) AS lexemes "
                "FROM unnest(?::text[]) AS t(words)",
                (missing,),
            )
            for r in rows:
                self._words[r["words"]] = tuple(r["lexemes"])
        return {words: self._words[words] for words in terms}

    def _phrase(self, tx: Tx, lexicon: _Lexicon, words: str, near: bool) -> int:
        """A phrase's document frequency up to the lexicon's `upto` (with `near`, in drawers' context too): counted
        once, then forward."""
        upto = lexicon.upto
        key = (words, near)
        with self._lock:
            known = lexicon.phrases.get(key)
        query = f"phraseto_tsquery('{CONFIG}', ?)"
        match = f"(d.search @@ {query} OR c.search @@ {query})" if near else f"d.search @@ {query}"
        found = "SELECT count(*) AS n FROM drawer d LEFT JOIN drawer_context c ON c.seq = d.seq WHERE "
        asked = (words, words) if near else (words,)
        if known is None or known[1] > upto:
            row = tx.one(f"{found}{match} AND d.seq <= ?", (*asked, upto))
            assert row is not None
            known = (int(row["n"]), upto)
        elif known[1] < upto:
            row = tx.one(f"{found}d.seq > ? AND d.seq <= ? AND {match}", (known[1], upto, *asked))
            assert row is not None
            known = (known[0] + int(row["n"]), upto)
        with self._lock:
            lexicon.phrases[key] = known
            lexicon.phrases.move_to_end(key)
            while len(lexicon.phrases) > MAX_PHRASES:
                lexicon.phrases.popitem(last=False)
        return known[0]
