"""One store contract, two backends: the `store` fixture is parametrized over SQLite and PostgreSQL.

PostgreSQL is the session's server (`postgres_server` in tests/conftest.py, see tests/postgres_support.py). A test
gets the worker's shared migrated database emptied by one `TRUNCATE … RESTART IDENTITY` of every table (54 ms,
measured against 89 ms for a `CREATE DATABASE … TEMPLATE` clone, before its drop); a palace shared by a module gets a
database of its own, cloned from the template migrated once. Under `CI=true` an unavailable server fails the tests
instead of skipping.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from postgres_support import PostgresServer, as_url, dbname  # noqa: F401 - re-exported for the store tests

from memcastle.store import Store
from memcastle.store.sqlite import SQLiteStore

BACKENDS = ("sqlite", "postgres")


@dataclass
class BackendPalace:
    """One empty palace on one backend; `open()` opens a store on it (again), every store is closed at teardown.
    `open(now=...)` gives the store a clock of the test's own."""

    backend: str
    opener: Callable[..., Store]
    location: str
    opened: list[Store] = field(default_factory=list)

    def open(self, **options: Any) -> Store:
        store = self.opener(**options)
        self.opened.append(store)
        return store

    def close_all(self) -> None:
        for store in self.opened:
            store.close()
        self.opened.clear()


def _palace(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[BackendPalace]:
    if backend == "sqlite":
        folder = tmp_path / "palace"
        palace = BackendPalace(backend, lambda **options: SQLiteStore(folder, **options), str(folder))
        yield palace
        palace.close_all()
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    private = request.scope != "function"  # a palace shared by a module keeps a database of its own
    conninfo = server.create_database() if private else server.clean_database()
    from memcastle.store.postgres import PostgresStore

    palace = BackendPalace(backend, lambda **options: PostgresStore(conninfo, max_connections=4, **options), conninfo)
    try:
        yield palace
    finally:
        palace.close_all()
        if private:
            server.drop_database(conninfo)


@pytest.fixture(params=BACKENDS)
def palace_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendPalace]:
    """An empty palace on each backend in turn."""
    yield from _palace(request.param, tmp_path, request)


@pytest.fixture
def store(palace_backend: BackendPalace) -> Store:
    """A store on an empty palace, on each backend in turn."""
    return palace_backend.open()


@pytest.fixture(scope="module", params=BACKENDS)
def module_palace(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackendPalace]:
    """One palace per backend shared by a module's tests (property tests, where each example writes its own rows)."""
    yield from _palace(request.param, tmp_path_factory.mktemp(f"shared-{request.param}"), request)


@pytest.fixture(scope="module")
def shared_store(module_palace: BackendPalace) -> Store:
    return module_palace.open()
