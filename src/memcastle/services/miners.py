"""Named miners at the service seam: the config file's and the API's, enabled or not, run by hand or by a trigger.

The config file's miners and those defined through the API (kept in the palace) are listed together; on a name
clash the config file wins and the palace's definition is reported as shadowed, not used (docs/triggers.md). Whether
a miner is enabled, and its last run, are kept in the palace for both kinds. A run is an ordinary mine job; a run
asked for while one of the same miner is queued joins it, so a miner has at most one running and one waiting.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from memcastle.clock import Clock, parse_instant, utc_now
from memcastle.errors import AccessDenied, ConfigError, Conflict, InvalidRequest, MemCastleError, NotFound
from memcastle.events import Changes
from memcastle.model import MinerSpec, MinerState, Submitted
from memcastle.model.answers import LastRun, MinerView
from memcastle.model.mining import MAX_DEBOUNCE, MIN_EVERY, check_triggers, parse_duration
from memcastle.model.requests import MinerDefinition, MineRequest
from memcastle.services.events import Publish, ignore_event
from memcastle.services.mining import MiningService
from memcastle.services.validation import check_name, require_name
from memcastle.store import JobStore, MinerStore


class MinerService:
    def __init__(
        self,
        store: MinerStore,
        jobs: JobStore,
        mining: MiningService,
        configured: Mapping[str, MinerSpec],
        *,
        publish: Publish = ignore_event,
        now: Clock = utc_now,
        changes: Changes | None = None,
        reread: Callable[[], Mapping[str, MinerSpec]] | None = None,
    ) -> None:
        self._reread = reread  # the config file's [[miners]] read again (None: they are fixed)
        self._store = store
        self._jobs = jobs
        self._mining = mining
        self._configured = dict(configured)
        self._publish = publish
        self._now = now
        self._changes = changes or Changes()  # the triggers follow what is enabled

    # --- what there is -------------------------------------------------------------------------------

    def refusal(self, spec: MinerSpec) -> str | None:
        """Why a miner's source may never be read (outside mining.roots, or a locator naming nothing), else None; a
        folder that does not exist yet is no refusal (a watch waits for it)."""
        try:
            self._mining.check_source(spec.connector, spec.locator, spec.options)
        except (AccessDenied, InvalidRequest) as exc:
            return exc.message
        except MemCastleError:
            return None
        return None

    def effective(self) -> dict[str, tuple[MinerSpec, MinerState]]:
        """Every miner by name: the config file's first, then the palace's that no config miner shadows."""
        states = {s.name: s for s in self._store.list_miner_states()}
        out = {
            name: (spec, states.get(name) or MinerState(name, enabled=not spec.created_disabled))
            for name, spec in self._configured.items()
        }
        for name, state in states.items():
            if state.spec is not None and name not in out:
                out[name] = (state.spec, state)
        return out

    def list_miners(self) -> list[MinerView]:
        """Each miner with its triggers, whether it is enabled, its last run and its result, and its next run."""
        states = {s.name: s for s in self._store.list_miner_states()}
        listed = [self._describe(spec, state) for spec, state in self.effective().values()]
        for name, state in sorted(states.items()):
            if state.spec is not None and name in self._configured:
                listed.append(replace(self._describe(state.spec, state), shadowed=True))
        return listed

    def get_miner(self, name: str) -> MinerView:
        """One miner as `list_miners` describes it."""
        spec, state = self._find(name)
        return self._describe(spec, state)

    def _describe(self, spec: MinerSpec, state: MinerState) -> MinerView:
        last: LastRun | None = None
        if state.last_job_id is not None:
            try:
                job = self._jobs.get_job(state.last_job_id)
                last = LastRun(job.id, job.status.value, state.last_run_at, state.last_trigger, job.result, job.error)
            except NotFound:
                last = LastRun(state.last_job_id, "gone", state.last_run_at, state.last_trigger)
        next_run = self.next_run(spec, state) if state.enabled else None
        return MinerView(spec, state.enabled, last, next_run)

    def next_run(self, spec: MinerSpec, state: MinerState) -> str | None:
        """When the schedule asks next: a period after the last run, or now when it never ran; None unscheduled."""
        if spec.every is None:
            return None
        if state.last_run_at is None:
            return self._now()
        at = dt.datetime.fromisoformat(parse_instant(state.last_run_at, field="last_run_at").replace("Z", "+00:00"))
        due = at + dt.timedelta(seconds=spec.every)
        return due.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def _find(self, name: str) -> tuple[MinerSpec, MinerState]:
        found = self.effective().get(name)
        if found is None:
            known = ", ".join(sorted(self.effective())) or "none defined"
            raise NotFound(
                f"no miner named {name!r} ({known})",
                help="declare one with [[miners]] in config.toml, or POST /api/miners (memcastle miner add)",
            )
        return found

    # --- changes --------------------------------------------------------------------------------------

    def define(self, definition: MinerDefinition) -> MinerView:
        """Keep a miner defined through the API (the source is checked as a mine request is)."""
        name = require_name(definition.name, "name")
        if name in self._configured:
            raise Conflict(
                f"miner {name!r} is defined in the config file, which wins; choose another name",
                help="edit [[miners]] in config.toml to change it",
            )
        every = definition.every

        def refuse(key: str, message: str) -> InvalidRequest:
            return InvalidRequest(f"{key}: {message}", field=key)

        poll, webhook, secret_env = check_triggers(definition.poll, definition.webhook, definition.secret_env, refuse)
        spec = MinerSpec(
            name=name,
            connector=definition.connector,
            locator=definition.locator,
            options=dict(definition.options or {}),
            wing=check_name(definition.wing, "wing"),
            full=definition.full,
            watch=definition.watch,
            debounce=_seconds(definition.debounce, "debounce", most=MAX_DEBOUNCE),
            every=_seconds(every, "every", least=MIN_EVERY) if every is not None else None,
            origin="api",
            poll=poll,
            webhook=webhook,
            secret_env=secret_env,
        )
        self._mining.check_source(spec.connector, spec.locator, spec.options)
        state = self._store.define_miner(spec, at=self._now())
        self._changed()
        return self._describe(spec, state)

    def reload(self) -> list[MinerView]:
        """Read the config file's `[[miners]]` again and follow them from now on (a malformed file is refused, naming
        its line, and the miners stay as they were); every miner after it."""
        if self._reread is None:
            raise InvalidRequest("this palace's miners come from no config file to read again", field="miners")
        try:
            configured = dict(self._reread())
        except ConfigError as exc:  # the request is what could not be applied: a 400 naming the file's line and key
            raise InvalidRequest(exc.message, field=exc.key or "miners", help="fix config.toml and reload") from None
        self._configured = configured
        self._changed()
        return self.list_miners()

    def remove(self, name: str) -> None:
        if name in self._configured:
            raise Conflict(f"miner {name!r} is defined in the config file; remove it there", help="or disable it")
        state = self._store.get_miner_state(name)
        if state is None or state.spec is None:
            raise NotFound(f"no miner named {name!r} was defined through the API")
        self._store.remove_miner(name)
        self._changed()

    def set_enabled(self, name: str, enabled: bool) -> MinerView:
        spec, _ = self._find(name)
        state = self._store.set_miner_enabled(name, enabled, at=self._now())
        self._changed()
        return self._describe(spec, state)

    def _changed(self) -> None:
        self._changes.changed()

    # --- runs -----------------------------------------------------------------------------------------

    def run(self, name: str, *, trigger: str = "request", requested_by: str = "http", **details: Any) -> Submitted:
        """Queue a run of the miner (or join its queued one). A trigger runs only an enabled miner; a person may
        run a disabled one by hand."""
        spec, state = self._find(name)
        if trigger != "request" and not state.enabled:
            raise Conflict(f"miner {name!r} is disabled", help=f"memcastle miner enable {name}")
        request = MineRequest(spec.connector, spec.locator, spec.options, wing=spec.wing, full=spec.full)
        submitted = self._mining.submit_mine(request, requested_by=requested_by)
        self._store.note_miner_run(name, submitted.job.id, trigger, at=self._now(), enabled=state.enabled)
        if trigger != "request":
            self._publish("trigger", {"miner": name, "trigger": trigger, "job_id": submitted.job.id,
                                      "joined": not submitted.created, **details})  # fmt: skip
        return submitted


def _seconds(value: object, field: str, *, least: float = 0.0, most: float | None = None) -> float:
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        raise InvalidRequest(f"{field}: {exc}", field=field) from None
    if seconds < least:
        raise InvalidRequest(f"{field} must be at least {least:.0f} s", field=field)
    if most is not None and seconds > most:
        raise InvalidRequest(f"{field} must be at most {most:.0f} s", field=field)
    return seconds
