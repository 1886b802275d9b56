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
