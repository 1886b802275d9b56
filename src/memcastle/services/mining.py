"""Mining at the service seam: queue a mine (joining a queued one of the same source), the connectors."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from memcastle.connectors.contract import Connector, SourceSpec, refused_by_os
from memcastle.connectors.registry import ConnectorRegistry
from memcastle.errors import Conflict, InvalidRequest, MemCastleError
from memcastle.mining.params import MineParams
from memcastle.mining.pipeline import KIND as MINE
from memcastle.mining.pipeline import notices_removal
from memcastle.mining.roots import MiningRoots
from memcastle.model import Job, Submitted
from memcastle.model.requests import MineRequest
from memcastle.services.jobs import JobService
from memcastle.services.validation import MAX_LOCATOR_CHARS, check_name, check_text
from memcastle.store import MiningStore


class MiningService:
    """Sources into drawers, in the background."""

    def __init__(
        self,
        connectors: ConnectorRegistry,
        jobs: JobService,
        roots: MiningRoots | None = None,
        *,
        sources: MiningStore | None = None,
    ) -> None:
        self._sources = sources
        self._connectors = connectors
        self._roots = roots or MiningRoots()
        self._jobs = jobs

    def submit_mine(self, request: MineRequest, *, requested_by: str = "http") -> Submitted:
        """Queue a background mine; a request for the same source joins one that is still queued."""
        adapter, spec = self.check_source(request.connector, request.locator, request.options)
        self._one_reader_of(adapter, spec)
        source_id = adapter.identify(spec)
        notices_removal(adapter, spec, request.notice_removed)  # refused now, not when the job runs
        params = MineParams(
            connector=request.connector,
            locator=spec.locator,
            options=dict(spec.options),
            wing=check_name(request.wing, "wing"),
            full=bool(request.full),
            notice_removed=request.notice_removed,
        )
        return self._jobs.submit_job(
            MINE,
            params.to_json(),
            # Asked for by someone waiting for it: above the background sweeps, which give way between batches.
            priority="normal",
            requested_by=requested_by,
            # Options that do not name the source (a session, a date) still make another mine: only the same
            # request joins a queued one.
            coalesce_key=f"mine:{source_id}:{params.wing or ''}:{int(params.full)}:{params.notice_removed}:"
            f"{options_digest(spec)}",
        )

    def _one_reader_of(self, adapter: Connector, spec: SourceSpec) -> None:
        """One folder, one source: a folder whose files another connector mined, or is mining now (a job queued or
        running), is refused by name (every file would be filed twice, and its facts doubled); forgetting that
        source first frees it."""
        if self._sources is None or not adapter.reads_files:
            return
        # The mines under way first, then the sources recorded: a mine that ends between the two has recorded its
        # source when it started, so it is seen one way or the other.
        others = [
            (params.connector, source_id)
            for job, source_id, _ in self.active_mines()
            if (params := MineParams.from_json(job.params)).locator == spec.locator
        ]
        others += [(other.connector, other.id) for other in self._sources.sources_at(spec.locator)]
        for connector, source_id in others:
            if connector == adapter.name:
                continue
            try:
                theirs = self._connectors.get(connector)
            except MemCastleError:
                continue
            if theirs.reads_files:
                short = source_id[:8]
                raise Conflict(
                    f"{spec.locator} is already mined by connector {connector!r} (source {short}); mining it "
                    f"with {adapter.name!r} too would file every file twice",
                    existing_id=source_id,
                    help=f"mine it with connector {connector!r}, or forget source {short} first",
                )

    def change_token(self, connector: str, locator: str, options: Mapping[str, Any] | None = None) -> str | None:
        """A cheap fingerprint of the source (its connector's `change_token`): a poll asks for a run when it differs
        from the last one; None when the connector has no cheap check."""
        adapter, spec = self.check_source(connector, locator, options)
        return adapter.change_token(spec)

    def check_source(
        self, connector: str, locator: str, options: Mapping[str, Any] | None = None
    ) -> tuple[Connector, SourceSpec]:
        """The connector and the source it would read, or a 400 naming what is wrong (a locator outside
        `mining.roots`, an unknown connector or option, a source the connector could never read)."""
        if not isinstance(locator, str) or "\x00" in locator or len(locator) > MAX_LOCATOR_CHARS:
            raise InvalidRequest(
                f"locator must be text of at most {MAX_LOCATOR_CHARS} characters without NUL", field="locator"
            )
        check_text(locator, "locator")
        check_text(dict(options or {}), "options")
        try:
            spec = self._connectors.source_spec(connector, locator, options or {})
            adapter = self._connectors.get(connector)
            self._roots.check_source(adapter, spec)
            adapter.check(spec)
        except PermissionError as exc:
            # What the operating system will not let the daemon look at is refused as what mining.roots refuses.
            raise refused_by_os(locator, exc) from None
        return adapter, spec

    def active_mines(self) -> list[tuple[Job, str, str]]:
        """The mine jobs queued, running or paused, with the source each reads and the wing it files into."""
        found = []
        for status in ("queued", "running", "paused"):
            for job in self._jobs.list_jobs(status, MINE, 200):
                try:
                    params = MineParams.from_json(job.params)
                    adapter = self._connectors.get(params.connector)
                    spec = self._connectors.source_spec(params.connector, params.locator, params.options)
                    found.append((job, adapter.identify(spec), params.wing or adapter.default_wing(spec)))
                except (KeyError, MemCastleError):
                    continue  # a connector no longer installed: that job cannot write anything
        return found

    def list_connectors(self) -> list[dict[str, Any]]:
        return self._connectors.describe()


def options_digest(spec: SourceSpec) -> str:
    """A short digest of a source's options (empty when there are none)."""
    if not spec.options:
        return ""
    return hashlib.sha256(json.dumps(dict(spec.options), sort_keys=True).encode()).hexdigest()[:12]
