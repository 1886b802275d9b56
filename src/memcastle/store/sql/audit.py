"""The read audit on either SQL backend: records written in batches, listed newest first, pruned by age and count."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memcastle.model.audit import ReadQuery, ReadRecord
from memcastle.store.sql.base import Role, batches, marks
from memcastle.store.sql.rows import record


class AuditTables(Role):
    """`memcastle.store.AuditStore` on SQL: a `read_audit` row per answer, a `read_audit_item` row per id it returned
    (so "who saw this drawer" follows an index, and forgetting a drawer erases its ids)."""

    def record_reads(self, records: Sequence[ReadRecord]) -> None:
        if not records:
            return
        with self._write() as tx:
            for record in records:
                row = tx.one(
                    "INSERT INTO read_audit(at, interface, operation, token, client, session, query) "
                    "VALUES (?,?,?,?,?,?,?) RETURNING id",
                    (record.at, record.interface, record.operation, record.token, record.client, record.session,
                     record.query),
                )  # fmt: skip
                assert row is not None
                items = [("drawer", i) for i in record.drawer_ids] + [("fact", i) for i in record.fact_ids]
                tx.many(
                    "INSERT INTO read_audit_item(audit_id, kind, item_id, position) VALUES (?,?,?,?)",
                    [(row["id"], kind, item, position) for position, (kind, item) in enumerate(items)],
                )

    def reads(self, query: ReadQuery) -> list[ReadRecord]:
        where, params = [], list[Any]()
        for column, value in (("a.token", query.token), ("a.client", query.client)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if query.since is not None:
            where.append("a.at >= ?")
            params.append(query.since)
        if query.item is not None:
            where.append("a.id IN (SELECT audit_id FROM read_audit_item WHERE item_id = ?)")
            params.append(query.item)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        with self._read() as tx:
            rows = tx.all(f"SELECT * FROM read_audit a{clause} ORDER BY a.id DESC LIMIT ?", (*params, query.limit))
            items: dict[int, list[tuple[str, str]]] = {int(r["id"]): [] for r in rows}
            for batch in batches([str(i) for i in items]):
                found = tx.all(
                    f"SELECT audit_id, kind, item_id FROM read_audit_item WHERE audit_id IN ({marks(batch)}) "
                    "ORDER BY audit_id, position",
                    [int(i) for i in batch],
                )
                for item in found:
                    items[int(item["audit_id"])].append((item["kind"], item["item_id"]))
        return [
            record(
                ReadRecord,
                r,
                id=int(r["id"]),
                drawer_ids=tuple(i for kind, i in items[int(r["id"])] if kind == "drawer"),
                fact_ids=tuple(i for kind, i in items[int(r["id"])] if kind == "fact"),
            )
            for r in rows
        ]

    def count_reads(self) -> int:
        return self._count("SELECT COUNT(*) AS n FROM read_audit")

    def prune_reads(self, before: str, keep: int) -> int:
        """Erase the records older than `before`, and the oldest beyond the newest `keep`; how many went."""
        with self._write() as tx:
            newest = tx.one("SELECT MAX(id) AS n FROM read_audit")
            floor = int(newest["n"] or 0) - keep if newest is not None else 0
            tx.run("DELETE FROM read_audit_item WHERE audit_id IN (SELECT id FROM read_audit WHERE at < ? OR id <= ?)",
                   (before, floor))  # fmt: skip
            return tx.run("DELETE FROM read_audit WHERE at < ? OR id <= ?", (before, floor))
