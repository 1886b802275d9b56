"""The watch trigger: a miner's source folder (or file) watched through `watchfiles`, debounced.

Changes that would mine nothing never fire: what `watchfiles.DefaultFilter` leaves out (editor swap and backup
files, `.git` and other tool folders, byte code), and what the directory connectors skip — dot files and folders,
build outputs, and whatever `.gitignore` / `.memcastleignore` files exclude. After `debounce` quiet seconds the batch
asks for one run.

The watched folder may go away and come back (a checkout, a synced vault): while it is missing the thread waits for
it, checking every `RECHECK` seconds, and when it appears (or is replaced by another folder of the same name) the
watch starts again on it and asks for a run, since its contents may have changed meanwhile.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from watchfiles import Change, DefaultFilter, watch

from memcastle.connectors.files import SKIPPED_DIRS
from memcastle.connectors.ignore import IgnoreRules
from memcastle.model import MinerSpec

log = logging.getLogger(__name__)

RECHECK = 1.0  # seconds between two looks at a missing folder, and the watch's own timeout to notice a replacement


class MineableFilter(DefaultFilter):
    """A change the directory connectors would mine: not ignored by watchfiles' defaults, nor by the connectors."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self._root = root

    def __call__(self, change: Change, path: str) -> bool:
        if not super().__call__(change, path):
            return False
        try:
            relative = Path(path).relative_to(self._root)
        except ValueError:
            return True  # the watched file itself
        parts = relative.parts
        if any(part.startswith(".") or part in SKIPPED_DIRS or part.endswith(".egg-info") for part in parts):
            return False
        rules = IgnoreRules(self._root)
        folder = self._root
        for part in parts[:-1]:
            folder = folder / part
            rules.enter(folder)
            if rules.ignored(folder, is_dir=True):
                return False
        return not rules.ignored(Path(path), is_dir=Path(path).is_dir())


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


class SourceWatch:
    """One miner's watch, on a thread of its own; `request(name, "watch", changes=n)` asks for a run."""

    def __init__(self, spec: MinerSpec, request: Callable[..., None], *, first_run: bool = False) -> None:
        self.spec = spec
        self._first_run = first_run
        self._request = request
        self._root = Path(os.path.expanduser(spec.locator)).absolute()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"watch-{spec.name}", daemon=True)
        self.state = "starting"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        first = True
        while not self._stop.is_set():
            identity = _identity(self._root)
            if identity is None:
                self.state = f"waiting for {self._root}"
                self._stop.wait(RECHECK)
                first = False
                continue
            if not first:
                self._ask(changes=0, reason="the folder appeared")  # its contents may be new
            elif self._first_run:
                self._ask(changes=0, reason="the miner never ran")
            first = False
            self.state = "watching"
            try:
                self._watch(identity)
            except Exception:
                log.exception("watching %s for miner %s failed; starting again", self._root, self.spec.name)
                self._stop.wait(RECHECK)

    def _watch(self, identity: tuple[int, int]) -> None:
        """Until the folder goes or is replaced, or the watch is stopped. Changes are gathered until the folder has
        been quiet for `debounce` seconds, then ask for one run: a burst of saves is one run, however long it lasts
        (watchfiles' own debounce caps how long it gathers, so a long burst would come out as several batches)."""
        quiet = self.spec.debounce
        tick = max(0.05, min(RECHECK, quiet / 4))  # how often the quiet time is looked at
        changes = watch(
            self._root,
            watch_filter=MineableFilter(self._root),
            debounce=max(1, int(min(quiet, tick) * 1000)),
            stop_event=self._stop,
            rust_timeout=max(1, int(tick * 1000)),
            yield_on_timeout=True,
            raise_interrupt=False,
            ignore_permission_denied=True,
        )
        pending, last = 0, 0.0
        for batch in changes:
            if _identity(self._root) != identity:
                if pending:
                    self._ask(changes=pending)
                return  # gone or replaced: the loop waits for it and watches the new one
            now = time.monotonic()
            if batch:
                pending, last = pending + len(batch), now
            if pending and now - last >= quiet:
                self._ask(changes=pending)
                pending = 0

    def _ask(self, **details: object) -> None:
        self._request(self.spec.name, "watch", **details)
