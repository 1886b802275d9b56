"""The schedule trigger: every miner with `every` asks for a run a period after the last one it asked for.

The period is counted from the last run the palace recorded (so a restart does not run everything again), or from
start when there is none — a miner that never ran runs at once. `tick(now)` is the whole decision, given the time:
the thread only sleeps until the next one is due (or a change of miners wakes it), so a test drives `tick` with its
own clock and never sleeps.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Mapping

from memcastle.model import MinerSpec, MinerState

log = logging.getLogger(__name__)

MAX_SLEEP = 60.0  # the thread looks again at least this often (a clock that jumps, a lost wake-up)


def utc_clock() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def parse_time(stamp: str) -> dt.datetime:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


class DueLoop:
    """The one loop of the timed triggers (schedule and poll): a thread that runs `tick` and sleeps until the next
    miner is due, or a change of miners wakes it. A trigger says what is due (`_next`) and what a tick does."""

    thread_name = "miner-trigger"

    def __init__(self, request: Callable[..., None], *, clock: Callable[[], dt.datetime] = utc_clock) -> None:
        self._request = request
        self._clock = clock
        self._lock = threading.Lock()
        self._miners: dict[str, MinerSpec] = {}
        self._next: dict[str, dt.datetime] = {}
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self, now: dt.datetime | None = None) -> list[str]:
        raise NotImplementedError

    def next_due(self) -> dt.datetime | None:
        with self._lock:
            return min(self._next.values(), default=None)

    def start(self) -> None:
        if self._thread is None:
            self._stopping.clear()
            self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                self.tick()
            except Exception:
                log.exception("the %s failed; it tries again", self.thread_name)
            due = self.next_due()
            wait = MAX_SLEEP if due is None else (due - self._clock()).total_seconds()
            self._wake.wait(min(max(wait, 0.05), MAX_SLEEP))
            self._wake.clear()


class Schedule(DueLoop):
    thread_name = "miner-schedule"

    def follow(self, miners: Mapping[str, tuple[MinerSpec, MinerState]]) -> None:
        """The scheduled miners from now on: new ones are due a period after their last run (or now)."""
        now = self._clock()
        with self._lock:
            for name in set(self._next) - set(miners):
                del self._next[name]
            for name, (spec, state) in miners.items():
                assert spec.every is not None
                known = self._miners.get(name)
                if name not in self._next or known is None or known.every != spec.every:
                    last = parse_time(state.last_run_at) if state.last_run_at else None
                    self._next[name] = last + dt.timedelta(seconds=spec.every) if last else now
            self._miners = {name: spec for name, (spec, _) in miners.items()}
        self._wake.set()

    def tick(self, now: dt.datetime | None = None) -> list[str]:
        """Ask for a run of every miner that is due at `now`; the miners asked for."""
        now = now or self._clock()
        with self._lock:
            due = sorted(name for name, at in self._next.items() if at <= now)
            for name in due:
                every = self._miners[name].every
                assert every is not None
                # The next run is a period after this one: a daemon that slept through several does one, not many.
                self._next[name] = now + dt.timedelta(seconds=every)
        for name in due:
            self._request(name, "schedule")
        return due
