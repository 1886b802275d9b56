"""Clocks handed to `app.build(settings, now=…)`, so that tests never sleep to separate two timestamps."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from memcastle.clock import format_instant


class DistinctClock:
    """Real time, but never the same stamp twice: each reading is at least a microsecond after the one before.

    Two writes in a row therefore get two instants, and "between them" is an instant of its own."""

    def __init__(self) -> None:
        self._last = datetime.now(UTC) - timedelta(microseconds=1)
        self._lock = threading.Lock()

    def __call__(self) -> str:
        with self._lock:
            self._last = max(datetime.now(UTC), self._last + timedelta(microseconds=1))
            return format_instant(self._last)


class ManualClock:
    """A clock a test moves by hand (`advance`), never the same stamp twice: for what depends on time passing (an
    expiry, a schedule) without waiting for it."""

    def __init__(self, start: datetime | None = None) -> None:
        self._at = start or datetime.now(UTC)
        self._lock = threading.Lock()

    def advance(self, **delta: float) -> None:
        with self._lock:
            self._at += timedelta(**delta)

    def __call__(self) -> str:
        with self._lock:
            self._at += timedelta(microseconds=1)
            return format_instant(self._at)
