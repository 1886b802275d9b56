"""The poll trigger: every miner with `poll` is checked for a change that often, and a change asks for a run.

The check is cheap by design: the connector's `change_token` (a folder's newest modification time and file count, a
repository's HEAD, a session folder's newest file) — a fraction of what a mine reads. A check that sees the same token
again backs off: the next one waits twice as long, up to `MAX_BACKOFF` times the period, and a change brings it back
to the period. A connector without a token asks for a run at every check (the mine's own revision check then skips
what did not change). `tick(now)` is the whole decision given the time, so a test drives it with its own clock.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping

from memcastle.model import MinerSpec, MinerState
from memcastle.triggers.schedule import DueLoop, utc_clock

log = logging.getLogger(__name__)

MAX_BACKOFF = 8  # a source that keeps not changing is checked at most this many periods apart
Probe = Callable[[MinerSpec], "str | None"]  # the connector's change token for the miner's source, None: no cheap check


class Poller(DueLoop):
    thread_name = "miner-poll"

    def __init__(
        self, request: Callable[..., None], probe: Probe, *, clock: Callable[[], dt.datetime] = utc_clock
    ) -> None:
        super().__init__(request, clock=clock)
        self._probe = probe
        self._wait: dict[str, float] = {}  # the current period of each, backed off while nothing changes
        self._seen: dict[str, str | None] = {}

    def follow(self, miners: Mapping[str, tuple[MinerSpec, MinerState]]) -> None:
        """The polled miners from now on: a new one is checked at once (its first token is taken, and a run asked
        for if it never ran)."""
        now = self._clock()
        with self._lock:
            for name in set(self._next) - set(miners):
                for table in (self._next, self._wait, self._seen):
                    table.pop(name, None)
            for name, (spec, state) in miners.items():
                assert spec.poll is not None
                known = self._miners.get(name)
                if known is None or known.poll != spec.poll or known.connector != spec.connector:
                    self._next[name] = now
                    self._wait[name] = spec.poll
                    if state.last_run_at is not None and name not in self._seen:
                        self._seen[name] = self._token(spec)  # ran before: only a later change asks again
            self._miners = {name: spec for name, (spec, _) in miners.items()}
        self._wake.set()

    def tick(self, now: dt.datetime | None = None) -> list[str]:
        """Check every miner that is due; ask for a run of those whose source changed. The miners asked for."""
        now = now or self._clock()
        with self._lock:
            due = [(name, self._miners[name]) for name, at in sorted(self._next.items()) if at <= now]
        asked = []
        for name, spec in due:
            token = self._token(spec)
            assert spec.poll is not None
            with self._lock:
                changed = token is None or name not in self._seen or self._seen[name] != token
                self._seen[name] = token
                wait = spec.poll if changed else min(self._wait.get(name, spec.poll) * 2, spec.poll * MAX_BACKOFF)
                self._wait[name] = wait
                self._next[name] = now + dt.timedelta(seconds=wait)
            if changed:
                asked.append(name)
                self._request(name, "poll")
        return asked

    def period(self, name: str) -> float | None:
        """How long until the miner is checked again after its last check (its backed-off period)."""
        with self._lock:
            return self._wait.get(name)

    def _token(self, spec: MinerSpec) -> str | None:
        try:
            return self._probe(spec)
        except Exception as exc:  # noqa: BLE001 - a check that fails asks for a run: the mine says what is wrong
            log.warning("the change check of miner %s failed: %s", spec.name, exc)
            return None
