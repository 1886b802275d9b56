"""What SQLite's failures mean to a caller: a full disk, an I/O error, a damaged file — said as such, with the path.

SQLite answers a write that found no room with `SQLITE_FULL` (and, when the disk filled mid-`fsync` or the shared
memory could not grow, with an `SQLITE_IOERR` while nothing is free); a page it cannot make sense of with
`SQLITE_CORRUPT` or `SQLITE_NOTADB`. Each becomes the `memcastle.errors.StorageError` that says what happened and
what to do, instead of a traceback; anything else is left as it is.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memcastle.errors import InvalidRequest, MemCastleError, PalaceDamaged, StorageError, StorageFull

# Below this much room, an I/O error while writing is taken for a full disk.
NEARLY_FULL_BYTES = 1 << 20

DAMAGED_HELP = (
    "stop the daemon and check the file with `sqlite3 palace.sqlite3 'PRAGMA integrity_check'`; restore the palace "
    "from a backup or an export (`memcastle import`), or move the damaged palace away and start a new one"
)


def free_bytes(path: Path) -> int | None:
    """Free bytes on the file system holding `path` (its folder when it does not exist yet), None when unknown."""
    for candidate in (path, *path.parents):
        try:
            return shutil.disk_usage(candidate).free
        except OSError:
            continue
    return None


def storage_failure(exc: BaseException, path: Path) -> MemCastleError | None:
    """The error a failure of the palace's storage means, or None when it is not one."""
    if isinstance(exc, OSError) and not isinstance(exc, sqlite3.Error):
        import errno

        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return StorageFull.of(str(path), free_bytes(path))
        if exc.errno in (errno.EIO, errno.EFBIG, errno.EROFS):
            return StorageError(f"the palace's storage failed at {path}: {exc.strerror or exc}")
        return None
    if not isinstance(exc, sqlite3.Error):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    if primary == sqlite3.SQLITE_FULL:
        return StorageFull.of(str(path), free_bytes(path))
    if primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return PalaceDamaged(f"the palace file is damaged: {path} ({exc})", help=DAMAGED_HELP)
    if primary in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN):
        free = free_bytes(path)
        if free is not None and free < NEARLY_FULL_BYTES:
            return StorageFull.of(str(path), free)
        return StorageError(f"the palace's storage failed at {path}: {exc}")
    return None


@contextmanager
def sqlite_errors(path: Path) -> Iterator[None]:
    """Translate storage failures (and text SQLite cannot bind) raised inside into MemCastle's errors."""
    try:
        yield
    except UnicodeEncodeError:
        # SQLite text is UTF-8: a lone surrogate cannot be bound. Said as a bad request, as no other value is refused.
        raise InvalidRequest(
            "text values may not contain lone surrogates (not valid Unicode)",
            help="send valid UTF-8; a surrogate must come in a pair",
        ) from None
    except (sqlite3.Error, OSError) as exc:
        failure = storage_failure(exc, path)
        if failure is None:
            raise
        raise failure from exc
