"""The eligibility every leg of a search filters by (scope and time, before any limit), and what the lexical leg
reads besides its full-text index; each backend ranks with its own full-text index (`lexical_candidates`)."""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Sequence

from memcastle.model import DrawerPlace, LexicalQuery, Scope, ScoredDrawer, TermStatistics
from memcastle.store.sql.base import Role, Tx, batches, marks
from memcastle.store.sql.filters import filter_sql

_PLACED = "FROM drawer d JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id"


class SearchTables(Role):
    """`memcastle.store.SearchStore` on SQL: eligibility here, ranking in each backend."""

    @abstractmethod
    def lexical_candidates(self, query: LexicalQuery, scope: Scope, limit: int) -> list[ScoredDrawer]: ...

    @abstractmethod
    def count_matching(self, query: LexicalQuery, scope: Scope, at_most: int) -> int: ...

    @abstractmethod
    def term_statistics(self, words: Sequence[str]) -> TermStatistics: ...

    @abstractmethod
    def _holding(self, drawer_ids: Sequence[str], terms: Sequence[str]) -> set[str]:
        """Which of these drawers hold one of the terms in their own text."""

    def _marked_own(self, query: LexicalQuery, found: list[ScoredDrawer]) -> list[ScoredDrawer]:
        """With a weight for the neighbours' words, each candidate marked by whether it holds one of the query's
        terms itself (`ScoredDrawer.own`); without one, every candidate does."""
        if not query.context_weight or not found:
            return found
        # Only a drawer with neighbours can have matched by their words alone: the others are not looked at again.
        ids = [c.drawer_id for c in found]
        beside = {
            r["id"]
            for r in self._all(
                f"SELECT d.id FROM drawer d JOIN drawer_context c ON c.seq = d.seq WHERE d.id IN ({marks(ids)})", ids
            )
        }
        holding = self._holding(sorted(beside), query.terms) if beside else set()
        return [
            c if c.drawer_id not in beside or c.drawer_id in holding else dataclasses.replace(c, own=False)
            for c in found
        ]

    def eligible_ids(self, drawer_ids: Sequence[str], scope: Scope) -> set[str]:
        """The subset of `drawer_ids` inside the scope and the temporal window."""
        where, params = filter_sql(scope, self._now(), self.lifecycle, self.backend)
        found: set[str] = set()
        with self._read() as tx:
            for batch in batches(drawer_ids):
                rows = tx.all(f"SELECT d.id {_PLACED} WHERE d.id IN ({marks(batch)}){where}", (*batch, *params))
                found.update(r["id"] for r in rows)
        return found

    def count_in_scope(self, scope: Scope, *, missing_vectors: str | None = None, unread_by: str | None = None) -> int:
        """How many drawers the scope holds; with `missing_vectors` (a model), those still without all their vectors;
        with `unread_by` (an extractor), those it has not read yet."""
        where, params = filter_sql(scope, self._now(), self.lifecycle, self.backend)
        if missing_vectors is not None:
            where += " AND NOT EXISTS (SELECT 1 FROM embedded e WHERE e.model = ? AND e.drawer_seq = d.seq)"
            params = [*params, missing_vectors]
        if unread_by is not None:
            where += " AND NOT EXISTS (SELECT 1 FROM extraction_read x WHERE x.extractor = ? AND x.drawer_id = d.id)"
            params = [*params, unread_by]
        return self._count(f"SELECT COUNT(*) AS n {_PLACED} WHERE 1 = 1{where}", params)

    def count_facts_in(self, scope: Scope) -> int:
        """How many facts have their evidence drawer in the scope."""
        where, params = filter_sql(scope, self._now(), self.lifecycle, self.backend)
        return self._count(
            f"SELECT COUNT(*) AS n FROM assertion a JOIN drawer d ON d.id = a.drawer_id "
            f"JOIN room r ON r.id = d.room_id JOIN wing w ON w.id = r.wing_id WHERE 1 = 1{where}",
            params,
        )

    def all_eligible_ids(self, scope: Scope) -> set[str]:
        where, params = filter_sql(scope, self._now(), self.lifecycle, self.backend)
        return {r["id"] for r in self._all(f"SELECT d.id {_PLACED} WHERE 1 = 1{where}", params)}

    def drawer_places(self, drawer_ids: Sequence[str]) -> dict[str, DrawerPlace]:
        """Where each drawer lives and what mined it: fixed for a drawer's whole life."""
        with self._read() as tx:
            return places(tx, drawer_ids)

    def stage_texts(self, drawer_ids: Sequence[str]) -> dict[str, tuple[str, str, str | None, str | None]]:
        """Each drawer's text, source kind, URI and origin (JSON): what the second stage reads of a candidate, without
        the rest of the drawer."""
        found: dict[str, tuple[str, str, str | None, str | None]] = {}
        with self._read() as tx:
            for batch in batches(drawer_ids):
                for r in tx.all(f"SELECT * FROM drawer WHERE id IN ({marks(batch)})", batch):
                    exact = r["content_exact"] if "content_exact" in r.keys() else None  # PostgreSQL's NUL-holding text
                    text = bytes(exact).decode("utf-8") if exact is not None else r["content"]
                    found[r["id"]] = (text, r["source_kind"], r["source_uri"], r["origin"])
        return found

    def content_lengths(self, drawer_ids: Sequence[str]) -> dict[str, int]:
        """Each drawer's length in characters, its text left unread."""
        found: dict[str, int] = {}
        with self._read() as tx:
            for batch in batches(drawer_ids):
                rows = tx.all(f"SELECT id, length(content) AS n FROM drawer WHERE id IN ({marks(batch)})", batch)
                found.update((r["id"], int(r["n"])) for r in rows)
        return found

    def long_contents(self, drawer_ids: Sequence[str], longer_than: int) -> dict[str, str]:
        """The text of those of the drawers longer than `longer_than` characters, and nothing else of them."""
        found: dict[str, str] = {}
        with self._read() as tx:
            for batch in batches(drawer_ids):
                rows = tx.all(
                    f"SELECT id, content FROM drawer WHERE id IN ({marks(batch)}) AND length(content) > ?",
                    (*batch, longer_than),
                )
                found.update((r["id"], r["content"]) for r in rows)
        return found


def places(tx: Tx, drawer_ids: Sequence[str]) -> dict[str, DrawerPlace]:
    """Each drawer's wing, room, source kind and connector (`SearchStore.drawer_places`)."""
    found: dict[str, DrawerPlace] = {}
    for batch in batches(drawer_ids):
        for r in tx.all(
            "SELECT d.id, w.name AS wing, r.name AS room, d.source_kind, d.connector "
            f"{_PLACED} WHERE d.id IN ({marks(batch)})",
            batch,
        ):
            found[r["id"]] = DrawerPlace(r["wing"], r["room"], r["source_kind"], r["connector"])
    return found
