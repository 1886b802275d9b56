"""Room kept back on the palace's disk for the writes that give space back.

When a mine fills the disk, the user's next moves — cancel it, pause it, forget what it filed — are writes too, and
SQLite needs a little room for each (its log grows before anything is freed). A file of `storage.reserve_bytes`
beside the palace holds that room: a control write refused for a full disk releases it and is tried once more
(`spending_reserve`). The reserve is laid again once the disk has room for it twice over.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

from memcastle.errors import StorageFull

log = logging.getLogger(__name__)

RESERVE_FILE = "reserve"
T = TypeVar("T")


class StorageReserve:
    """A file of `size` bytes in the palace folder (none when `size` is 0), released when a control write needs
    its room."""

    def __init__(
        self, folder: Path, size: int, *, exclusive: Callable[[], AbstractContextManager[Any]] = nullcontext
    ) -> None:
        self.path = folder / RESERVE_FILE
        self.size = size
        # Held from the release to the end of the write it is for: no other write of the palace takes the room.
        self.exclusive = exclusive
        self._lock = threading.Lock()

    @property
    def held(self) -> bool:
        try:
            return self.path.stat().st_size >= self.size > 0
        except OSError:
            return False

    def lay(self) -> bool:
        """Lay the reserve when it is missing and the disk has room for it twice over; whether it is held."""
        if self.size <= 0:
            return False
        with self._lock:
            if self.held:
                return True
            try:
                if shutil.disk_usage(self.path.parent).free < 2 * self.size:
                    return False
                descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
                try:
                    os.posix_fallocate(descriptor, 0, self.size)  # blocks really taken, not a sparse file
                finally:
                    os.close(descriptor)
            except OSError as exc:
                log.info("no storage reserve laid at %s: %s", self.path, exc.strerror or exc)
                self.path.unlink(missing_ok=True)
                return False
            return True

    def keep_what_is_free(self) -> None:
        """After a write on a full disk: keep back what room is left, up to the reserve's size, for the next one."""
        if self.size <= 0:
            return
        with self._lock:
            try:
                room = min(self.size, shutil.disk_usage(self.path.parent).free)
                if room <= 0:
                    return
                descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
                try:
                    os.posix_fallocate(descriptor, 0, room)
                finally:
                    os.close(descriptor)
            except OSError:
                pass  # what could be kept is kept

    def release(self) -> bool:
        """Give the reserve's room back to the disk; whether there was any to give."""
        with self._lock:
            try:
                held = self.path.stat().st_size > 0
                self.path.unlink()
            except OSError:
                return False
        if held:
            log.warning("released the storage reserve (%s) for a write on a full disk", self.path)
        return held


def spending_reserve(reserve: StorageReserve | None, write: Callable[[], T]) -> T:
    """Run a write that gives space back or stops what fills the disk; refused for a full disk, run it again once
    the reserve's room is released."""
    try:
        return write()
    except StorageFull:
        if reserve is None:
            raise
        with reserve.exclusive():
            if not reserve.release():
                raise
            try:
                return write()
            finally:
                reserve.keep_what_is_free()
