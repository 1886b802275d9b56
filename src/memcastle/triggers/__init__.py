"""Triggers that ask for work by themselves (SPEC §2.3): a filesystem watch, a schedule and a poll for miners (here),
and the expiry timer (`triggers.expiry`); webhooks ask through the HTTP API (`services.webhooks`).

`TriggerManager` follows the enabled miners: one `SourceWatch` thread per miner with `watch = true`, one
`Schedule` thread for every miner with `every`. Both only *ask* for a run (`run(name, trigger, …)`, which queues an
ordinary mine job or joins the miner's queued one), so a burst of changes, a slow mine or a schedule that fires
during a run never piles up more than one waiting run. They start with the daemon and stop with it; a change to the
miners (defined, removed, enabled, disabled) is followed by `reconcile()`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from memcastle.events import Changes
from memcastle.model import MinerSpec, MinerState
from memcastle.triggers.poll import Poller, Probe
from memcastle.triggers.schedule import Schedule, utc_clock
from memcastle.triggers.watch import SourceWatch

log = logging.getLogger(__name__)

Miners = Callable[[], Mapping[str, tuple[MinerSpec, MinerState]]]
RunRequest = Callable[..., object]  # run(name, trigger=..., requested_by=..., **details)
Refusal = Callable[[MinerSpec], str | None]  # why a miner's source may not be read (outside mining.roots), or None


class TriggerManager:
    def __init__(
        self,
        miners: Miners,
        run: RunRequest,
        *,
        schedule: Schedule | None = None,
        refusal: Refusal | None = None,
        probe: Probe | None = None,
        changes: Changes | None = None,
    ) -> None:
        self._miners = miners
        self._run = run
        # A folder outside mining.roots is not watched either: a watch lists the folders it watches.
        self._refusal = refusal or (lambda spec: None)
        self.refused: dict[str, str] = {}
        self._lock = threading.Lock()
        self._watches: dict[str, tuple[MinerSpec, SourceWatch]] = {}
        self.schedule = schedule or Schedule(self._request, clock=utc_clock)
        self.poller = Poller(self._request, probe or (lambda spec: None), clock=utc_clock)
        self._started = False
        if changes is not None:
            changes.follow(self.reconcile)  # what is enabled, followed as it changes

    def _request(self, name: str, trigger: str, **details: Any) -> None:
        try:
            self._run(name, trigger=trigger, requested_by=trigger, **details)
        except Exception as exc:  # noqa: BLE001 - a trigger that cannot run now must not stop watching
            log.warning("the %s trigger of miner %s could not queue a run: %s", trigger, name, exc)

    def start(self) -> None:
        with self._lock:
            self._started = True
        self.reconcile()
        self.schedule.start()
        self.poller.start()

    def stop(self) -> None:
        with self._lock:
            self._started = False
            watches = [watch for _, watch in self._watches.values()]
            self._watches.clear()
        self.schedule.stop()
        self.poller.stop()
        for watch in watches:
            watch.stop()

    def reconcile(self) -> None:
        """Start the watches of enabled watching miners, stop the others; give the schedule the current miners."""
        miners = {name: pair for name, pair in self._miners().items() if pair[1].enabled}
        refused = {
            name: reason
            for name, (spec, _) in miners.items()
            if spec.watch and (reason := self._refusal(spec)) is not None
        }
        for name, reason in refused.items():
            log.warning("miner %s is not watched: %s", name, reason)
        with self._lock:
            if not self._started:
                return
            self.refused = refused
            wanted = {name: spec for name, (spec, _) in miners.items() if spec.watch and name not in refused}
            never_ran = {name for name, (_, state) in miners.items() if state.last_run_at is None}
            stale = [name for name, (spec, _) in self._watches.items() if wanted.get(name) != spec]
            stopping = [self._watches.pop(name)[1] for name in stale]
            starting = []
            for name, spec in wanted.items():
                if name not in self._watches:
                    # A miner that never ran has nothing in the palace yet: its watch starts with a run.
                    watch = SourceWatch(spec, self._request, first_run=name in never_ran)
                    self._watches[name] = (spec, watch)
                    starting.append(watch)
        for watch in stopping:
            watch.stop()
        for watch in starting:
            watch.start()
        self.schedule.follow({name: (spec, state) for name, (spec, state) in miners.items() if spec.every})
        self.poller.follow({name: (spec, state) for name, (spec, state) in miners.items() if spec.poll})

    def describe(self) -> dict[str, str]:
        """Each watched miner's state: `watching`, `waiting for <path>` while its folder does not exist, or why it
        is not watched."""
        with self._lock:
            states = {name: watch.state for name, (_, watch) in self._watches.items()}
            return {**states, **{name: f"not watched: {reason}" for name, reason in self.refused.items()}}
