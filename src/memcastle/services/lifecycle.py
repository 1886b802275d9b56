"""Erasing what expired long enough ago (docs/lifecycle.md, "Expiry"): a `[[lifecycle]]` rule with `forget_after`
erases the drawers it expired that long ago for good, through the same forget cascade a person's forget runs (a
tombstone says `lifecycle` asked). A background job does it; the daemon asks for one at start and every hour
(`memcastle.triggers.expiry`), and `request_erase` asks at once."""

from __future__ import annotations

from typing import Any

from memcastle.clock import Clock, utc_now
from memcastle.jobs.context import JobContext
from memcastle.model import Job
from memcastle.model.jobs import JobKind
from memcastle.services.forgetting import ForgetRequest, ForgetService
from memcastle.services.jobs import JobService
from memcastle.store import DrawerStore

KIND = JobKind.LIFECYCLE.value
REQUESTER = "lifecycle"
BATCH = 200  # drawers looked up at a time; each is forgotten in a transaction of its own


class LifecycleService:
    def __init__(
        self, store: DrawerStore, jobs: JobService, forgetting: ForgetService, *, now: Clock = utc_now
    ) -> None:
        self._store = store
        self._jobs = jobs
        self._forgetting = forgetting
        self._now = now

    @property
    def erases(self) -> bool:
        return self._store.lifecycle.erases

    def request_erase(self, *, requested_by: str = REQUESTER) -> Job | None:
        """Queue the erase job (or join the queued one); None when no rule erases anything."""
        if not self.erases:
            return None
        return self._jobs.submit_job(
            KIND, {}, priority="background", requested_by=requested_by, coalesce_key=KIND, joins_paused=True
        ).job

    def erase_expired(self, ctx: JobContext) -> dict[str, Any]:
        """The job: forget every drawer a rule has erased by now, a batch at a time (a drawer with its history)."""
        drawers = int(ctx.state.get("drawers", 0))
        versions = int(ctx.state.get("versions", 0))
        at = self._now()
        while found := self._store.erasable_drawers(at, BATCH):
            for drawer_id in found:
                report = self._forgetting.forget(
                    ForgetRequest(kind="drawer", drawer_id=drawer_id), dry_run=False, requested_by=REQUESTER
                )
                drawers += 1
                versions += int(report.counts.get("versions", 0))
            ctx.checkpoint({"drawers": drawers, "versions": versions}, current=drawers, message=f"{drawers} erased")
        return {"drawers": drawers, "versions": versions}
