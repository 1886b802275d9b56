"""The expiry trigger: while a `[[lifecycle]]` rule erases what it expired (`forget_after`), ask for the erase job at
start and then every `period` seconds (an hour by default). It only asks: the job itself joins a queued one, so a
slow erase never piles up requests."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

PERIOD = 3600.0


class ExpiryTimer:
    def __init__(self, request: Callable[[], object], *, period: float = PERIOD) -> None:
        self._request = request
        self._period = period
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> None:
        """Ask once (a failure is logged, never raised: the next tick asks again)."""
        try:
            self._request()
        except Exception:
            log.exception("could not ask for the expiry erase job")

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="expiry-timer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self.tick()
            self._stopping.wait(self._period)

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
