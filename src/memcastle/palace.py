"""A built palace, running: started (jobs a crashed daemon left recovered, workers, triggers, the query model loaded
on a thread) and stopped (drained, requeued, closed). `memcastle.app.build` makes one."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from memcastle.clock import Clock, utc_now
from memcastle.config import Settings
from memcastle.jobs.worker import WorkerPool
from memcastle.search import snippets
from memcastle.search.embeddings import EmbeddingProvider
from memcastle.search.maintainer import IndexMaintainer
from memcastle.services import Services
from memcastle.store import Store
from memcastle.store.reserve import StorageReserve
from memcastle.triggers import TriggerManager
from memcastle.triggers.expiry import ExpiryTimer

log = logging.getLogger(__name__)
# After the drain, a requeued job's thread finishes the unit of work it is in (a provider call on a loaded machine)
# before the store is closed: waited for in steps of the grace, up to the most (a provider stuck past its timeout).
STOP_GRACE_SECONDS = 30.0
STOP_WAIT_SECONDS = 600.0


WARM_MODEL_AFTER = 1.0  # seconds after a start before the query model is loaded, so that the start does not wait


@dataclass
class Palace:
    """A built palace: its store, worker pool and services."""

    settings: Settings
    store: Store
    pool: WorkerPool
    services: Services
    now: Clock = utc_now  # the clock every timestamp of this palace comes from
    maintainer: IndexMaintainer | None = None  # keeps the semantic leg's graph, when there are embeddings
    triggers: TriggerManager | None = None  # the miners' watch and schedule triggers
    expiry: ExpiryTimer | None = None  # asks for the erase of what `[[lifecycle]]` rules expired long ago
    reserve: StorageReserve | None = None  # room held back for cancel, pause and forget on a full disk
    model: EmbeddingProvider | None = None  # the model queries are embedded with, loaded at the start (`warm`)
    started: bool = field(default=False)
    stopped: bool = field(default=False)

    def start(self) -> None:
        """Recover jobs a crashed daemon left running, then start the workers. Returns without loading the vectors:
        the semantic index's background thread does (most of a minute at a million), while the daemon serves."""
        if self.reserve is not None:
            self.reserve.lay()
        for job in self.pool.recover():
            log.warning("job %s (%s) was interrupted; now %s", job.id, job.kind, job.status.value)
        if self.services.status.embeddings_pending():
            self.services.jobs.request_embedding()
        if self.services.status.extraction_status().pending:
            self.services.jobs.request_extraction()
        if self.store.near.count_pending():
            self.services.jobs.request_linking()  # what a mine filed and a stop or crash left unlinked
        self.pool.start()
        if self.maintainer is not None:
            self.maintainer.start()
        if self.triggers is not None:
            self.triggers.start()
        if self.expiry is not None:
            self.expiry.start()
        self.services.audit.start()
        # The query model loads lazily (the builtin one; its first load on a machine makes its int8 copy: seconds):
        # loaded on a thread a moment after the start, off the start and the request path; an `auto` search ranks
        # lexically until then and says so.
        warm = getattr(self.model, "warm", None)
        if callable(warm):
            warm(WARM_MODEL_AFTER, then=self.services.search.warm)
        stemmers = threading.Timer(WARM_MODEL_AFTER, snippets.warm)  # the words' stemmers, as the first search would
        stemmers.daemon = True
        stemmers.start()
        self.started = True

    def stop(self) -> list[str]:
        """Drain running jobs within `jobs.drain_seconds`, requeue the rest, close the store. A second call does
        nothing."""
        if self.stopped:
            return []
        self.stopped = True
        if self.started and self.triggers is not None:
            self.triggers.stop()  # no new runs are asked for while the jobs drain
        if self.started and self.expiry is not None:
            self.expiry.stop()
        requeued = self.pool.drain(self.settings.jobs.drain_seconds) if self.started else []
        if self.started and self.maintainer is not None:
            self.maintainer.stop()
        if self.started:
            # The store is closed only once no worker uses it: a unit of work (a batch of embeddings on a loaded
            # machine) finishes, finds its lease gone at its checkpoint and ends. Only a worker stuck past every
            # provider timeout is left behind, fenced (its lease is gone), after `STOP_WAIT_SECONDS`.
            waited = 0.0
            while not self.pool.join(STOP_GRACE_SECONDS):
                waited += STOP_GRACE_SECONDS
                if waited >= STOP_WAIT_SECONDS:
                    log.warning("a worker is still inside a unit of work after %.0f s; closing the store", waited)
                    break
                log.info("waiting for a worker to finish its unit of work (%.0f s so far)", waited)
        self.services.audit.stop()  # what was recorded is written before the store closes
        self.services.search.close()
        self.store.close()
        return requeued
