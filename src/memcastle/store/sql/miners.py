"""Miners on either SQL backend: the ones defined through the API, every miner's enabled state and last run."""

from __future__ import annotations

import json

from memcastle.model import MinerSpec, MinerState
from memcastle.store.sql.base import Role, Row, dumps


class MinerTables(Role):
    """`miner`: one row per miner the palace knows something of (see migration 0010)."""

    def list_miner_states(self) -> list[MinerState]:
        return [_state(row) for row in self._all("SELECT * FROM miner ORDER BY name", ())]

    def get_miner_state(self, name: str) -> MinerState | None:
        row = self._one("SELECT * FROM miner WHERE name = ?", (name,))
        return _state(row) if row else None

    def define_miner(self, spec: MinerSpec, *, at: str) -> MinerState:
        """Keep a miner defined through the API; a definition of the same name replaces it (its state stays)."""
        with self._write() as tx:
            tx.run(
                "INSERT INTO miner(name, spec, enabled, updated_at) VALUES (?,?,?,?) "
                "ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, updated_at = excluded.updated_at",
                (spec.name, dumps(spec.to_json()), 0 if spec.created_disabled else 1, at),
            )
        found = self.get_miner_state(spec.name)
        assert found is not None
        return found

    def remove_miner(self, name: str) -> bool:
        """Forget a miner's definition and state; whether there was one."""
        with self._write() as tx:
            return bool(tx.run("DELETE FROM miner WHERE name = ?", (name,)))

    def set_miner_enabled(self, name: str, enabled: bool, *, at: str) -> MinerState:
        with self._write() as tx:
            tx.run(
                "INSERT INTO miner(name, enabled, updated_at) VALUES (?,?,?) "
                "ON CONFLICT (name) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at",
                (name, int(enabled), at),
            )
        found = self.get_miner_state(name)
        assert found is not None
        return found

    def note_miner_run(self, name: str, job_id: str, trigger: str, *, at: str, enabled: bool = True) -> None:
        """Record a run; `enabled` is the state a miner first recorded here starts in (a run by hand does not enable
        a miner created disabled)."""
        with self._write() as tx:
            tx.run(
                "INSERT INTO miner(name, enabled, last_job_id, last_run_at, last_trigger, updated_at) "
                "VALUES (?,?,?,?,?,?) ON CONFLICT (name) DO UPDATE SET last_job_id = excluded.last_job_id, "
                "last_run_at = excluded.last_run_at, last_trigger = excluded.last_trigger, "
                "updated_at = excluded.updated_at",
                (name, int(enabled), job_id, at, trigger, at),
            )

    def note_delivery(self, miner: str, delivery_id: str, *, at: str, forget_before: str) -> bool:
        """Keep a webhook delivery's id; False when the miner already had it (a replay). Ids older than
        `forget_before` are forgotten first."""
        with self._write() as tx:
            tx.run("DELETE FROM webhook_delivery WHERE received_at < ?", (forget_before,))
            return (
                tx.run(
                    "INSERT INTO webhook_delivery(miner, delivery_id, received_at) VALUES (?,?,?) "
                    "ON CONFLICT DO NOTHING",
                    (miner, delivery_id, at),
                )
                > 0
            )


def _state(row: Row) -> MinerState:
    spec = MinerSpec.from_json({**json.loads(row["spec"]), "origin": "api"}) if row["spec"] else None
    return MinerState(
        name=row["name"],
        enabled=bool(row["enabled"]),
        last_job_id=row["last_job_id"],
        last_run_at=row["last_run_at"],
        last_trigger=row["last_trigger"],
        spec=spec,
    )
