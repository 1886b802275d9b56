"""The daemon as its operator sees it: the process (pid, address, uptime), how it admits clients, its schema, and
its effective configuration with secrets masked (`GET /api/status`'s `daemon` and `schema`, `GET /api/config`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memcastle.clock import Clock, to_datetime, utc_now
from memcastle.model.answers import DaemonInfo, SchemaInfo
from memcastle.store import Store
from memcastle.store.migrate import load_migrations


@dataclass(frozen=True)
class Admission:
    """How the daemon was configured to admit clients and log, read once by the composition root."""

    mode: str = "full"
    auth: bool = False
    log_level: str = "info"
    log_format: str = "text"


class RuntimeService:
    """What the daemon knows about itself; the process part is told by the daemon once it listens."""

    def __init__(
        self,
        store: Store,
        *,
        admission: Admission = Admission(),
        describe: Callable[[], Sequence[Mapping[str, Any]]] = list,
        config_file: str | None = None,
        now: Clock = utc_now,
    ) -> None:
        self._store = store
        self._admission = admission
        self._describe = describe
        self._config_file = config_file
        self._now = now
        self._process: tuple[int, str, str] | None = None

    def serving(self, *, pid: int, address: str, started_at: str) -> None:
        """The daemon listens: its pid, its address and when it started."""
        self._process = (pid, address, started_at)

    def daemon(self) -> DaemonInfo:
        admission = self._admission
        pid, address, started_at = self._process or (None, None, None)
        uptime = None
        if started_at is not None:
            uptime = round((to_datetime(self._now()) - to_datetime(started_at)).total_seconds(), 1)
        return DaemonInfo(
            pid, address, started_at, uptime, admission.mode, admission.auth, admission.log_level, admission.log_format
        )

    def schema(self) -> SchemaInfo:
        """The palace's schema version against the migrations this code ships (a daemon migrates at start, so a
        pending migration here means one that a newer release added and this palace has not been opened by)."""
        version = self._store.schema_version()
        migrations = load_migrations(self._store.backend)
        pending = tuple(f"{m.version:04d}_{m.name}" for m in migrations if m.version > version)
        return SchemaInfo(version, max((m.version for m in migrations), default=0), pending)

    def config(self) -> dict[str, Any]:
        """Every effective setting, its value (secrets masked) and where it came from."""
        return {"config_file": self._config_file, "settings": [dict(row) for row in self._describe()]}
