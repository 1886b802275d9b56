"""The daemon registry: one small JSON file per palace under `$XDG_STATE_HOME/memcastle/run/`.

It records the pid, address and version of the daemon serving a palace, so every other command can find it.
A file whose pid is dead is stale: it is reported and removed, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import platformdirs

from memcastle.clock import utc_now


@dataclass(frozen=True)
class DaemonEntry:
    pid: int
    address: str
    version: str
    palace: str
    started_at: str


def state_dir() -> Path:
    """This user's state directory ($XDG_STATE_HOME/memcastle): where the registry of running daemons lives."""
    return Path(platformdirs.user_state_dir("memcastle"))


def registry_file(state_dir: Path, palace: Path) -> Path:
    key = hashlib.sha256(str(palace.expanduser().resolve()).encode("utf-8")).hexdigest()[:16]
    return state_dir / "run" / f"{key}.json"


def write_entry(state_dir: Path, palace: Path, address: str, version: str) -> DaemonEntry:
    path = registry_file(state_dir, palace)
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = DaemonEntry(
        pid=os.getpid(),
        address=address,
        version=version,
        palace=str(palace.expanduser().resolve()),
        started_at=utc_now(),
    )
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(asdict(entry), indent=2), encoding="utf-8")
    temporary.replace(path)
    return entry


def remove_entry(state_dir: Path, palace: Path) -> None:
    path = registry_file(state_dir, palace)
    try:
        entry = read_entry(path)
        if entry is None or entry.pid == os.getpid():
            path.unlink(missing_ok=True)
    except OSError:
        pass


def find_daemon(state_dir: Path, palace: Path) -> tuple[DaemonEntry | None, str | None]:
    """The live daemon of `palace`, or (None, why not) — a stale file is removed and explained."""
    path = registry_file(state_dir, palace)
    if not path.exists():
        return None, f"no daemon registered for palace {palace}"
    entry = read_entry(path)
    if entry is None:
        path.unlink(missing_ok=True)
        return None, f"the registry file {path} was unreadable and has been removed"
    if not is_alive(entry.pid):
        path.unlink(missing_ok=True)
        return None, f"a stale registry file named pid {entry.pid}, which is not running; it has been removed"
    return entry, None


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _is_not_zombie(pid)


def _is_not_zombie(pid: int) -> bool:
    # A killed child that its parent has not reaped still answers kill(0); /proc tells the truth on Linux.
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return True


def read_entry(path: Path) -> DaemonEntry | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return DaemonEntry(
            pid=int(data["pid"]),
            address=str(data["address"]),
            version=str(data["version"]),
            palace=str(data["palace"]),
            started_at=str(data["started_at"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
