"""Facts on either SQL backend: assertions, the links between them (extraction's and people's decisions), and
explicit operations in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memcastle.errors import Conflict, NotFound
from memcastle.model import Assertion, FactLink
from memcastle.store.sql.base import Role, Tx, dumps, marks
from memcastle.store.sql.rows import assertion_from_row, fact_link_from_row


class FactTables(Role):
    """`memcastle.store.FactStore` on SQL."""

    def get_assertion(self, assertion_id: str) -> Assertion:
        row = self._one("SELECT * FROM assertion WHERE id = ?", (assertion_id,))
        if row is None:
            raise NotFound(f"no fact {assertion_id}")
        return assertion_from_row(row)

    def get_assertions(self, assertion_ids: Sequence[str]) -> dict[str, Assertion]:
        return {
            r["id"]: assertion_from_row(r) for r in self._in("SELECT * FROM assertion WHERE id IN ({})", assertion_ids)
        }

    def find_assertions(
        self,
        *,
        subject: str | None = None,
        predicate: str | None = None,
        object: str | None = None,
        drawer_ids: Sequence[str] | None = None,
        limit: int = 1000,
    ) -> list[Assertion]:
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("subject", subject), ("predicate", predicate), ("object", object)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if drawer_ids is not None:
            if not drawer_ids:
                return []
            clauses.append(f"drawer_id IN ({marks(drawer_ids)})")
            params.extend(drawer_ids)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._all(f"SELECT * FROM assertion{where} ORDER BY valid_from, id LIMIT ?", (*params, limit))
        return [assertion_from_row(r) for r in rows]

    def facts_to_link(
        self, claim: Assertion, *, predecessor_drawer: str | None, rivals: bool, limit: int
    ) -> list[Assertion]:
        """What a new fact may link to, bounded: the newest `limit` facts making the same claim, the facts of the
        drawer its evidence superseded, and (for a single-valued predicate) the newest `limit` open facts of the same
        subject and predicate with another object. Each is an index walk that stops at the limit."""
        rows = list(
            self._all(
                "SELECT * FROM assertion WHERE subject = ? AND predicate = ? AND object = ? "
                "ORDER BY valid_from DESC, id DESC LIMIT ?",
                (claim.subject, claim.predicate, claim.object, limit),
            )
        )
        if predecessor_drawer is not None:
            rows += self._all(
                "SELECT * FROM assertion WHERE drawer_id = ? AND subject = ? AND predicate = ?",
                (predecessor_drawer, claim.subject, claim.predicate),
            )
        if rivals:
            rows += self._all(
                "SELECT * FROM assertion WHERE subject = ? AND predicate = ? AND valid_to IS NULL AND object <> ? "
                "ORDER BY valid_from DESC, id DESC LIMIT ?",
                (claim.subject, claim.predicate, claim.object, limit),
            )
        return list({r["id"]: assertion_from_row(r) for r in rows}.values())

    def assertions_touching(self, entity_ids: Sequence[str], limit: int = 1000) -> list[Assertion]:
        rows = self._in("SELECT * FROM assertion WHERE subject IN ({}) OR object IN ({})", entity_ids, repeat=2)
        return list({r["id"]: assertion_from_row(r) for r in rows}.values())[:limit]

    def explicit_links_of(self, assertion_ids: Sequence[str]) -> list[FactLink]:
        """The links a person decided among those touching `assertion_ids` (inferred ones are not read)."""
        rows = self._in(
            "SELECT * FROM fact_link WHERE origin = 'explicit' AND from_id IN ({}) "
            "UNION ALL SELECT * FROM fact_link WHERE origin = 'explicit' AND to_id IN ({})",
            assertion_ids,
            repeat=2,
        )
        return list({r["id"]: fact_link_from_row(r) for r in rows}.values())

    def links_of(self, assertion_ids: Sequence[str]) -> list[FactLink]:
        rows = self._in("SELECT * FROM fact_link WHERE from_id IN ({}) OR to_id IN ({})", assertion_ids, repeat=2)
        links = {r["id"]: fact_link_from_row(r) for r in rows}
        return sorted(links.values(), key=lambda link: (link.at, link.id))

    def record_decision(
        self, *, new: Assertion | None = None, close: tuple[str, str] | None = None, links: Sequence[FactLink] = ()
    ) -> None:
        """An explicit operation in one transaction: open a fact, close one (id, at), record links."""
        with self._write() as tx:
            if close is not None:
                fact_id, at = close
                row = tx.one(f"SELECT valid_to FROM assertion WHERE id = ?{self.FOR_UPDATE}", (fact_id,))
                if row is None:
                    raise NotFound(f"no fact {fact_id}")
                if row["valid_to"] is not None:
                    raise Conflict(f"fact {fact_id} was already closed at {row['valid_to']}", existing_id=fact_id)
                tx.run("UPDATE assertion SET valid_to = ? WHERE id = ?", (at, fact_id))
            if new is not None:
                insert_assertion(tx, new)
            for link in links:
                insert_link(tx, link)

    def count_facts(self) -> int:
        return self._count("SELECT COUNT(*) AS n FROM assertion")


def insert_assertion(tx: Tx, a: Assertion) -> None:
    tx.run(
        "INSERT INTO assertion(id, subject, predicate, object, confidence, valid_from, valid_to, drawer_id, "
        "extractor, job_id, origin, explicit, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) "
        "ON CONFLICT DO NOTHING",
        (
            a.id,
            a.subject,
            a.predicate,
            a.object,
            a.confidence,
            a.valid_from,
            a.valid_to,
            a.drawer_id,
            a.extractor,
            a.job_id,
            dumps(dict(a.origin)) if a.origin else None,
            bool(a.explicit),
            a.created_at,
        ),
    )


def insert_link(tx: Tx, link: FactLink) -> None:
    # Deterministic ids: a retried request or a replayed job lands on the same record.
    tx.run(
        "INSERT INTO fact_link(id, from_id, to_id, kind, origin, reason, at, evidence_drawer) "
        "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
        (link.id, link.from_id, link.to_id, link.kind, link.origin, link.reason, link.at, link.evidence_drawer),
    )
