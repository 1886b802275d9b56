"""The lexical leg on FTS5: rank inside the full-text index first, then meet scope and time on the few rows kept."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memcastle.model import LexicalQuery, Scope, ScoredDrawer, TermStatistics
from memcastle.model.search import is_common
from memcastle.store.sql.filters import filter_sql
from memcastle.store.sql.search import SearchTables
from memcastle.store.sqlite.fulltext import fts5_match, quote_term

if TYPE_CHECKING:
    from memcastle.store.sqlite import SQLiteStore

# The lexical leg's first round ranks this many times the limit inside the full-text index (at least the minimum);
# a round that cannot prove its answer exact widens once by the factor.
LEXICAL_HEAD = 4
LEXICAL_MIN_HEAD = 64
LEXICAL_WIDEN = 16
_PLACED = re.compile(r"\b[rw]\.")  # a filter on the room's or the wing's columns


class SQLiteSearch(SearchTables):
    """The lexical leg on FTS5."""

    db: SQLiteStore

    def __init__(self, db: SQLiteStore) -> None:
        super().__init__(db)
        self._verdicts = threading.local()

    def lexical_candidates(self, query: LexicalQuery, scope: Scope, limit: int) -> list[ScoredDrawer]:
        """See `_candidates`; with a weight for the neighbours' words, each marked by whether it holds one of the
        terms itself (`ScoredDrawer.own`)."""
        return self._marked_own(query, self._candidates(query, scope, limit))

    def _holding(self, drawer_ids: Sequence[str], terms: Sequence[str]) -> set[str]:
        match = fts5_match(LexicalQuery(tuple(terms), require_all=False), column="content")
        rows = self._all(
            "SELECT d.id FROM drawer_fts JOIN drawer d ON d.seq = drawer_fts.rowid "
            f"WHERE drawer_fts MATCH ? AND d.id IN ({','.join('?' * len(drawer_ids))})",
            (match, *drawer_ids),
        )
        return {r["id"] for r in rows}

    def _candidates(self, query: LexicalQuery, scope: Scope, limit: int) -> list[ScoredDrawer]:
        """BM25's best `limit` eligible drawers, ties by id (bm25() is lower-is-better; the signal is flipped so that
        higher is better everywhere).

        An any-term query first leaves out the terms in half the palace or more (`_any_term_reduced`), and keeps
        that answer when it fills the limit; with `max_rows` it keeps it whatever its length, matched on the rarest
        terms the budget allows. The full-text index ranks first and alone (`ORDER BY bm25() LIMIT k`: SQLite keeps
        the best k as it goes, where FTS5's own `ORDER BY rank` sorts every match — 1.4–1.6× slower at a million
        drawers), then only those k rows meet scope, time and the joins. That is exact whenever the k-th rank is
        worse than the last drawer kept (nothing past k could displace it); otherwise k widens once, and the last
        resort is the whole query in one pass. A bounded query (`max_rows`) none of whose terms can rank matches
        nothing (`LexicalQuery.matches_nothing`).
        """
        if query.max_rows is not None and self._matches_nothing(query):
            return []
        if not query.require_all and len(query.terms) > 1:
            reduced, bounded = self._any_term_reduced(query, *self._term_rows(query))
            if reduced.terms != query.terms:
                enough = self._ranked(reduced, scope, limit)
                if bounded or len(enough) >= limit:
                    # Unbounded, a drawer holding only the terms left out scores ~1e-6: it would rank below these.
                    return enough
        return self._ranked(query, scope, limit)

    def count_matching(self, query: LexicalQuery, scope: Scope, at_most: int) -> int:
        match = fts5_match(query, column=_column(query))
        if match is None:
            return 0
        where, params = filter_sql(scope, self._now(), self.lifecycle, self.backend)
        row = self._one(
            "SELECT COUNT(*) AS n FROM (SELECT 1 FROM drawer_fts JOIN drawer d ON d.seq = drawer_fts.rowid "
            f"JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id WHERE drawer_fts MATCH ?{where} LIMIT ?)",
            (match, *params, at_most),
        )
        return int(row["n"]) if row else 0

    def _ranked(self, query: LexicalQuery, scope: Scope, limit: int) -> list[ScoredDrawer]:
        match = fts5_match(query, column=_column(query))
        if match is None:
            return []
        bm25 = f"bm25(drawer_fts, 1.0, {float(query.context_weight)!r})"
        where, params = filter_sql(scope, self._now(), self.lifecycle, self.backend)
        # The room and wing are joined only for a scope that names them: two lookups a row for nothing otherwise.
        places = "JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id" if _PLACED.search(where) else ""
        take = max(limit * LEXICAL_HEAD, LEXICAL_MIN_HEAD)
        for _ in range(2):
            top = self._all(
                f"SELECT rowid AS seq, {bm25} AS score FROM drawer_fts WHERE drawer_fts MATCH ? ORDER BY score LIMIT ?",
                (match, take),
            )
            if not top:
                return []
            ranks = {int(r["seq"]): float(r["score"]) for r in top}
            rows = self._all(
                f"SELECT d.seq, d.id FROM drawer d {places} WHERE d.seq IN ({','.join('?' * len(ranks))}){where}",
                (*ranks, *params),
            )
            found = sorted((ranks[int(r["seq"])], r["id"]) for r in rows)[:limit]
            seen_all = len(top) < take
            if seen_all or (len(found) == limit and found[-1][0] < float(top[-1]["score"])):
                return [ScoredDrawer(drawer_id=drawer_id, signal=-rank) for rank, drawer_id in found]
            take *= LEXICAL_WIDEN
        rows = self._all(
            f"SELECT d.id, {bm25} AS rank FROM drawer_fts JOIN drawer d ON d.seq = drawer_fts.rowid "
            "JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id "
            f"WHERE drawer_fts MATCH ?{where} ORDER BY rank, d.id LIMIT ?",
            (match, *params, limit),
        )
        return [ScoredDrawer(drawer_id=r["id"], signal=-float(r["rank"])) for r in rows]

    def term_statistics(self, words: Sequence[str]) -> TermStatistics:
        """FTS5's own figures: its averages record (rows, then tokens per column, as SQLite varints) and each word's
        row count (a walk of its doclist without scoring)."""
        with self._read() as tx:
            found = tx.one("SELECT block FROM drawer_fts_data WHERE id = 1")
            rows, tokens = (_varints(bytes(found["block"])) + [0, 0])[:2] if found is not None else (0, 0)
            counts = []
            for word in words:
                row = tx.one(  # in drawers' own text, as the averages count
                    "SELECT count(*) AS n FROM drawer_fts WHERE drawer_fts MATCH ?", ("content : " + quote_term(word),)
                )
                counts.append(int(row["n"]) if row is not None else 0)
        return TermStatistics(rows, tokens / rows if rows else 0.0, tuple(counts))

    def _matches_nothing(self, query: LexicalQuery) -> bool:
        """`LexicalQuery.matches_nothing`, counting each term's drawers only as far as the verdict needs: past half the
        palace (common) and past `max_rows`, stopping at the first term that is neither. A hybrid leg asks twice
        with the same terms (all of them, then any of them when too few hold all): the verdict is kept per thread
        for the palace's size it was counted at."""
        assert query.max_rows is not None
        with self._read() as tx:
            found = tx.one("SELECT max(seq) AS n FROM drawer")
            total = int(found["n"] or 0) if found is not None else 0
            key = (query.terms, query.max_rows, total)
            last = getattr(self._verdicts, "last", None)
            if last is not None and last[0] == key:
                return bool(last[1])
            cap = max((total + 1) // 2, query.max_rows + 1)  # is_common(n) from n ≥ total / 2
            rows: list[int] = []
            for term in query.terms:
                row = tx.one(
                    "SELECT count(*) AS n FROM (SELECT 1 FROM drawer_fts WHERE drawer_fts MATCH ? LIMIT ?)",
                    (_columns(query) + quote_term(term), cap),
                )
                rows.append(int(row["n"]) if row is not None else 0)
                if rows[-1] < cap:
                    break  # this term can rank, or is within the bound: the query matches
        verdict = len(rows) == len(query.terms) and query.matches_nothing(rows, total)
        self._verdicts.last = (key, verdict)
        return verdict

    def _term_rows(self, query: LexicalQuery) -> tuple[list[int], int]:
        """How many drawers each term is in, and the palace's size. Counting a term's rows walks its doclist without
        scoring (2 ms for 57,000 rows at a million drawers, where scoring them takes 75). The palace size is bounded
        above by the highest `seq`, which only finds fewer terms common."""
        with self._read() as tx:
            found = tx.one("SELECT max(seq) AS n FROM drawer")
            total = int(found["n"] or 0) if found is not None else 0
            rows = []
            for term in query.terms:
                row = tx.one(
                    "SELECT count(*) AS n FROM drawer_fts WHERE drawer_fts MATCH ?",
                    (_columns(query) + quote_term(term),),
                )
                rows.append(int(row["n"]) if row is not None else 0)
        return rows, total

    @staticmethod
    def _any_term_reduced(query: LexicalQuery, rows: list[int], total: int) -> tuple[LexicalQuery, bool]:
        """An any-term query without the terms in half the palace or more, and whether `max_rows` left out more.

        FTS5's BM25 floors the IDF of a term in half the palace or more at 1e-6, so it adds at most 2.2e-6 to a
        score (it can only break an exact tie) — yet matching it makes FTS5 score nearly every row."""
        ranking = [i for i, n in enumerate(rows) if not is_common(n, total)]
        kept = ranking or list(range(len(query.terms)))
        budget = LexicalQuery(tuple(query.terms[i] for i in kept), require_all=False, max_rows=query.max_rows)
        taken = budget.within_budget([rows[i] for i in kept])
        bounded = query.max_rows is not None and sum(rows) > query.max_rows
        reduced = LexicalQuery(
            tuple(budget.terms[i] for i in taken), require_all=False, context_weight=query.context_weight
        )
        return reduced, bounded


def _varints(block: bytes) -> list[int]:
    """SQLite varints: big-endian groups of seven bits, the high bit set on all but the last; a ninth byte is whole."""
    values, at = [], 0
    while at < len(block):
        value = 0
        for index in range(9):
            byte = block[at]
            at += 1
            if index == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
    return values


def _column(query: LexicalQuery) -> str | None:
    """Where a query matches: without a weight for the neighbours' words, in a drawer's own text alone."""
    return None if query.context_weight else "content"


def _columns(query: LexicalQuery) -> str:
    """`_column` as the prefix of one term's MATCH."""
    column = _column(query)
    return f"{column} : " if column else ""
