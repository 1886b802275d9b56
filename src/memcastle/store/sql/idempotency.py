"""Idempotency keys on either SQL backend: claim a key, record what the request wrote, or let it go."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memcastle.model import RequestKey
from memcastle.store.sql.base import Role, dumps


class RequestKeyTables(Role):
    """`request_key`: one row per key; `pending` while its request runs, `done` with the result once it has."""

    def claim_request_key(
        self, key: str, operation: str, digest: str, *, now: str, stale_before: str, expire_before: str
    ) -> RequestKey | None:
        """None when this request now holds the key; else the earlier request's record. A `pending` claim older
        than `stale_before` was left by a request that never finished (a crash) and is taken over."""
        with self._write() as tx:
            tx.run("DELETE FROM request_key WHERE created_at < ?", (expire_before,))
            claimed = tx.run(
                "INSERT INTO request_key(key, operation, digest, state, created_at) VALUES (?,?,?,'pending',?) "
                "ON CONFLICT (key) DO NOTHING",
                (key, operation, digest, now),
            )
            if claimed:
                return None
            row = tx.one("SELECT * FROM request_key WHERE key = ?" + self.FOR_UPDATE, (key,))
            if row is None:
                return None
            if row["state"] == "pending" and row["created_at"] < stale_before:
                tx.run(
                    "UPDATE request_key SET operation = ?, digest = ?, created_at = ? WHERE key = ?",
                    (operation, digest, now, key),
                )
                return None
            result = json.loads(row["result"]) if row["result"] else None
            return RequestKey(
                key=row["key"],
                operation=row["operation"],
                digest=row["digest"],
                state=row["state"],
                result=result,
                created_at=row["created_at"],
            )

    def complete_request_key(self, key: str, result: Mapping[str, Any]) -> None:
        with self._write() as tx:
            tx.run("UPDATE request_key SET state = 'done', result = ? WHERE key = ?", (dumps(dict(result)), key))

    def release_request_key(self, key: str) -> None:
        with self._write() as tx:
            tx.run("DELETE FROM request_key WHERE key = ? AND state = 'pending'", (key,))
