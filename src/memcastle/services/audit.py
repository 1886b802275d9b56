"""The read audit (docs/security.md, "The read audit"): every answer that returns memory — a search, a recall, a
wake-up bundle, a diary, a drawer, its history or copies, facts — is recorded with who asked (token, interface, MCP
client and session), when, the operation, the query as redacted and the ids returned; never the text.

Recording costs a list append on the request's path: records are written in batches by one thread (at most a second
late, or when `BATCH` wait), so a search never waits on a write transaction. A daemon killed mid-second loses that
second's records. Records older than `audit.retention`, and the oldest beyond `audit.max_records`, are pruned by
the same thread; a forgotten drawer's ids leave the audit with it (the forget cascade).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from dataclasses import replace
from datetime import timedelta
from typing import Protocol

from memcastle.clock import Clock, format_instant, parse_instant, to_datetime, utc_now
from memcastle.connectors.secrets import Redactor
from memcastle.errors import MemCastleError
from memcastle.model.audit import ReadQuery, ReadRecord
from memcastle.services.reader import INTERNAL, palace_wide, reader
from memcastle.services.validation import check_limit
from memcastle.store import AuditStore

log = logging.getLogger(__name__)


class Record(Protocol):
    """`ReadAudit.record`, as the services are handed it."""

    def __call__(
        self, operation: str, *, query: str | None = None, drawer_ids: Iterable[str] = (), fact_ids: Iterable[str] = ()
    ) -> None: ...


def unrecorded(
    operation: str, *, query: str | None = None, drawer_ids: Iterable[str] = (), fact_ids: Iterable[str] = ()
) -> None:
    """A service built without an audit (a test's) records nothing."""


BATCH = 256  # records that make a write at once
FLUSH_SECONDS = 1.0  # the longest a record waits to be written
PRUNE_SECONDS = 3600.0  # how often retention is applied
MAX_IDS = 200  # ids kept per record (a search returns at most that many)
MAX_QUERY = 1000  # characters of a query kept


# A word of a query that looks like a key with no shape the redactor knows: 24 or more characters of a token's
# alphabet, holding a digit, a small and a capital letter — or 32 or more hexadecimal digits. A query is asked, not
# stored knowledge: such a word in it is far likelier a pasted secret than a thing to look up later by.
_BARE_TOKEN = re.compile(
    r"(?<![\w/+=-])(?:(?=[\w+/=-]*\d)(?=[\w+/=-]*[a-z])(?=[\w+/=-]*[A-Z])[\w+/=-]{24,}|[0-9a-fA-F]{32,})(?![\w/+=-])"
)


def bare_tokens_redacted(query: str) -> str:
    """The query with the words that look like bare secrets replaced by `[redacted:token]` (what the redactor
    already replaced by shape stays as it is)."""
    return _BARE_TOKEN.sub("[redacted:token]", query)


class ReadAudit:
    def __init__(
        self,
        store: AuditStore,
        *,
        enabled: bool = True,
        retention_seconds: float = 30 * 86400,
        max_records: int = 1_000_000,
        now: Clock = utc_now,
    ) -> None:
        self._store = store
        self.enabled = enabled
        self._retention = retention_seconds
        self._max_records = max_records
        self._now = now
        self._redactor = Redactor()
        self._buffer: list[ReadRecord] = []
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def record(
        self,
        operation: str,
        *,
        query: str | None = None,
        drawer_ids: Iterable[str] = (),
        fact_ids: Iterable[str] = (),
    ) -> None:
        """Note an answer that returned memory, for the current client (an internal read is not recorded)."""
        who = reader()
        if not self.enabled or who.interface == INTERNAL:
            return
        text = bare_tokens_redacted(self._redactor.text(query[:MAX_QUERY]).text) if query else None
        entry = ReadRecord(
            at=self._now(),
            interface=who.interface,
            operation=operation,
            token=who.token,
            client=who.client,
            session=who.session,
            query=text,
            drawer_ids=tuple(drawer_ids)[:MAX_IDS],
            fact_ids=tuple(fact_ids)[:MAX_IDS],
        )
        with self._lock:
            self._buffer.append(entry)
            full = len(self._buffer) >= BATCH
        if full:
            self.flush()

    def flush(self) -> None:
        """Write what is waiting (in the order it was recorded)."""
        with self._write_lock:
            with self._lock:
                waiting, self._buffer = self._buffer, []
            if not waiting:
                return
            try:
                self._store.record_reads(waiting)
            except MemCastleError as exc:  # a full disk: the audit does not stop reads; the records are lost
                log.warning("%d read audit records could not be written: %s", len(waiting), exc.message)

    def count(self) -> int:
        """The read-audit records kept now (those still buffered included)."""
        self.flush()
        return self._store.count_reads()

    def prune(self) -> int:
        """Apply retention now: records older than it, and the oldest beyond the most kept, go."""
        before = format_instant(to_datetime(self._now()) - timedelta(seconds=self._retention))
        return self._store.prune_reads(before, self._max_records)

    def reads(
        self,
        *,
        token: str | None = None,
        client: str | None = None,
        item: str | None = None,
        since: str | None = None,
        limit: int = 50,
    ) -> list[ReadRecord]:
        """What was read, newest first: by a token, an MCP client (an agent), a drawer or fact it returned, since an
        instant. The audit covers the whole palace: a client limited to some wings may not list it."""
        palace_wide("the read audit")
        self.flush()
        since = parse_instant(since, field="since") if since else None
        return self._store.reads(ReadQuery(token, client, item, since, check_limit(limit)))

    def drop(self, drawer_ids: Iterable[str]) -> None:
        """Take forgotten drawers' ids out of the records not written yet (those written went with the forget)."""
        gone = set(drawer_ids)
        with self._lock:
            self._buffer = without(self._buffer, gone)

    # --- the writer thread ---------------------------------------------------------------------------------------

    def start(self) -> None:
        if not self.enabled or self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="read-audit", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            thread.join(timeout=10)
        self.flush()

    def _run(self) -> None:
        waited = PRUNE_SECONDS  # prune once at start
        while not self._stop.is_set():
            try:
                self.flush()
                if waited >= PRUNE_SECONDS:
                    self.prune()
                    waited = 0.0
            except Exception:
                log.exception("the read audit could not be written")
            self._stop.wait(FLUSH_SECONDS)
            waited += FLUSH_SECONDS


def without(records: list[ReadRecord], drawer_ids: set[str]) -> list[ReadRecord]:
    """Records with these drawers' ids taken out (what a forget erases from records not yet written)."""
    return [replace(r, drawer_ids=tuple(i for i in r.drawer_ids if i not in drawer_ids)) for r in records]
