"""Idempotency keys for agent writes: a retry after a timeout answers with what the first request wrote.

A client sends the same key with the same request again (REST: the `Idempotency-Key` header or the
`idempotency_key` field; MCP: the `idempotency_key` argument). The first request claims the key before it writes;
a retry while it still runs is a 409 to retry later, a retry after it finished gets the same drawers back without
writing (`replayed`), and the same key with a different request is a 409. Keys are kept for a day.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from memcastle.clock import Clock, format_instant, to_datetime
from memcastle.errors import Conflict, InvalidRequest
from memcastle.store import RequestKeyStore

KEEP = timedelta(days=1)
# A claim this old was left by a request that never finished (the daemon stopped under it): it may be taken over.
ABANDONED = timedelta(minutes=10)
MAX_KEY_CHARS = 200
_KEY = re.compile(r"[\x21-\x7e]+")
FIELD = "idempotency_key"


def check_key(key: str | None) -> str | None:
    if key is None:
        return None
    if not 1 <= len(key) <= MAX_KEY_CHARS or not _KEY.fullmatch(key):
        raise InvalidRequest(
            f"must be 1 to {MAX_KEY_CHARS} printable ASCII characters without spaces",
            field=FIELD,
            help="a UUID is a good key: one per logical request, the same on every retry of it",
        )
    return key


class RequestKeys:
    """Runs a write once per key: `once(key, operation, request, write)` returns (result, replayed).

    With `sole_writer` (one daemon per palace: SQLite), a claim still pending from before this daemon started was
    left by a daemon that died under its request: a retry takes it over at once, not after `ABANDONED`."""

    def __init__(self, store: RequestKeyStore, now: Clock, *, sole_writer: bool = False) -> None:
        self._store = store
        self._now = now
        self._started = now() if sole_writer else None

    def once(
        self,
        key: str | None,
        operation: str,
        request: Mapping[str, Any],
        write: Callable[[], Mapping[str, Any]],
    ) -> tuple[Mapping[str, Any], bool]:
        if check_key(key) is None:
            return write(), False
        assert key is not None
        text = json.dumps(dict(request), sort_keys=True, default=str, ensure_ascii=True, separators=(",", ":"))
        digest = hashlib.sha256(text.encode("ascii")).hexdigest()
        now = self._now()
        moment = to_datetime(now)
        stale_before = format_instant(moment - ABANDONED)
        if self._started is not None:
            stale_before = max(stale_before, self._started)
        earlier = self._store.claim_request_key(
            key,
            operation,
            digest,
            now=now,
            stale_before=stale_before,
            expire_before=format_instant(moment - KEEP),
        )
        if earlier is not None:
            if earlier.state != "done" or earlier.result is None:
                raise Conflict(
                    "a request with this idempotency key is still being written",
                    help="retry the same request with the same key in a moment",
                )
            if earlier.operation != operation or earlier.digest != digest:
                raise Conflict(
                    f"this idempotency key was used for a different request ({earlier.operation})",
                    help="send a new key with a new request; reuse a key only to retry the same request",
                )
            return earlier.result, True
        try:
            result = write()
        except BaseException:
            self._store.release_request_key(key)
            raise
        self._store.complete_request_key(key, result)
        return result, False
