"""What the daemon did on its own that a person should know of until they say they have seen it.

A damaged vector cache is rebuilt from the palace without a word to any client; a log line is easily missed. Each
such event is a notice in `<palace>/notices.json` — kept across restarts — shown among `status.warnings` until
acknowledged (`memcastle status --acknowledge`, `POST /api/status/acknowledge`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from memcastle.clock import Clock, utc_now

log = logging.getLogger(__name__)

NOTICES_FILE = "notices.json"
MAX_NOTICES = 50  # the oldest go first: a notice is about the palace now, not a log


@dataclass(frozen=True)
class Notice:
    at: str
    kind: str  # one notice per kind and subject is kept: the latest
    subject: str
    text: str


class Notices:
    """The palace's unacknowledged notices."""

    def __init__(self, folder: Path, *, now: Clock = utc_now) -> None:
        self.path = folder / NOTICES_FILE
        self._now = now
        self._lock = threading.Lock()

    def add(self, kind: str, subject: str, text: str) -> None:
        with self._lock:
            kept = [n for n in self._read() if (n.kind, n.subject) != (kind, subject)]
            kept.append(Notice(self._now(), kind, subject, text))
            self._write(kept[-MAX_NOTICES:])

    def current(self) -> list[Notice]:
        with self._lock:
            return self._read()

    def acknowledge(self) -> int:
        """Clear every notice; how many there were."""
        with self._lock:
            count = len(self._read())
            if count:
                self._write([])
            return count

    def _read(self) -> list[Notice]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return [Notice(**item) for item in raw]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, TypeError) as exc:
            log.warning("unreadable notices file %s (%s): starting afresh", self.path, exc)
            return []

    def _write(self, notices: list[Notice]) -> None:
        try:
            if not notices:
                self.path.unlink(missing_ok=True)
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_suffix(".tmp")
            temporary.write_text(json.dumps([asdict(n) for n in notices], indent=1), encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError as exc:  # a full disk: the notice is in the log at least
            log.warning("could not write %s: %s", self.path, exc)
