"""The background thread that keeps the semantic index's graph up to date (ADR 0015)."""

from __future__ import annotations

import logging
import threading

from memcastle.search.semantic import SemanticIndex

log = logging.getLogger(__name__)


class IndexMaintainer:
    """The background thread that keeps a `SemanticIndex`'s graph: steps while there is work, else waits `poll`
    seconds; `stop` saves the graph."""

    def __init__(self, index: SemanticIndex, *, poll: float = 2.0) -> None:
        self._index = index
        self._poll = poll
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="vector-index", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                added = self._index.maintain()
            except Exception:  # the store closing under a last step, a damaged file: the exact scan still answers
                log.exception("keeping the vector index failed; searches scan exactly meanwhile")
                added = 0
            if not added:
                self._stop.wait(self._poll)

    def switch(self, index: SemanticIndex) -> None:
        """Keep another index's graph from now on (a palace moved to another model): the old one's file goes."""
        old, self._index = self._index, index
        old.discard()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._index.save()
