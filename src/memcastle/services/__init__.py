"""The application seam: every interface (HTTP, MCP, CLI through HTTP) calls these methods and nothing below."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memcastle import __version__, integrity
from memcastle.clock import Clock, parse_instant, utc_now
from memcastle.connectors.registry import ConnectorRegistry
from memcastle.errors import InvalidRequest, NotFound
from memcastle.jobs.queue import JobQueue
from memcastle.knowledge.dedup import DuplicateFinder
from memcastle.knowledge.extraction import ExtractionProvider
from memcastle.knowledge.sweep import COALESCE_KEY as EXTRACT_KEY
from memcastle.knowledge.sweep import KIND as EXTRACT
from memcastle.knowledge.sweep import extractor_key
from memcastle.mining.pipeline import KIND as MINE
from memcastle.model import (
    PRIORITY_NAMES,
    RANKINGS,
    SOURCE_KINDS,
    Drawer,
    Job,
    JobStatus,
    MinerSpec,
    NewDrawer,
    NewJob,
    Page,
    Provenance,
    Room,
    Scope,
    SearchQuery,
    SearchResult,
    Source,
    TimeWindow,
    Wing,
    content_hash,
)
from memcastle.preferences import Policy, explain
from memcastle.search.backfill import COALESCE_KEY as EMBED_KEY
from memcastle.search.backfill import KIND as EMBED
from memcastle.search.backfill import model_key
from memcastle.search.embeddings import EmbeddingProvider
from memcastle.search.engine import SearchEngine
from memcastle.services.facts import FactService
from memcastle.services.validation import (
    MAX_LIMIT,
    check_limit,
    check_name,
    check_tags,
    require_name,
)
from memcastle.store import Store

DEFAULT_WING = "default"
NOTES_ROOM = "notes"
DIARY_ROOM = "diary"
CHECKPOINT_ROOM = "checkpoints"
CHECKPOINT_TAG = "checkpoint"


@dataclass(frozen=True)
class SearchRequest:
    """A search as the interfaces receive it, before validation."""

    query: str
    limit: int = 10
    wing: str | None = None
    room: str | None = None
    tags: Sequence[str] = ()
    source_kind: str | None = None
    connector: str | None = None
    ranking: str = "auto"
    as_of: str | None = None
    from_: str | None = None
    until: str | None = None
    include_historical: bool = False
    expand: bool = False
    preferences: str = "on"


class Services:
    """One palace's operations."""

    def __init__(
        self,
        *,
        store: Store,
        queue: JobQueue,
        search: SearchEngine,
        palace: Path,
        connectors: ConnectorRegistry,
        miners: Mapping[str, MinerSpec],
        embeddings: EmbeddingProvider,
        policy: Policy,
        extraction: ExtractionProvider,
        duplicates: DuplicateFinder,
        now: Clock = utc_now,
    ) -> None:
        self.store = store
        self.policy = policy
        self.facts = FactService(store, policy, now=now)
        self._extraction = extraction
        self._duplicates = duplicates
        self._embeddings = embeddings
        self.queue = queue
        self._search = search
        self.palace = palace
        self._connectors = connectors
        self._miners = dict(miners)

    # --- status ---------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        jobs = self.store.count_jobs()
        return {
            "ok": True,
            "version": __version__,
            "palace": str(self.palace),
            "store": {"backend": self.store.backend, "location": self.store.location},
            "drawers": self.store.count_drawers(current_only=True),
            "drawers_total": self.store.count_drawers(),
            "jobs": jobs,
            "embeddings": self.embedding_status(),
            "extraction": self.extraction_status(),
            "warnings": self._warnings(),
        }

    def embedding_status(self) -> dict[str, Any]:
        provider = self._embeddings
        if not provider.is_enabled:
            return {"provider": provider.name, "model": None, "dimension": None, "pending": 0}
        return {
            "provider": provider.name,
            "model": provider.model,
            "dimension": self._search.dimension,
            "pending": self.store.count_missing_embeddings(model_key(provider)),
        }

    def extraction_status(self) -> dict[str, Any]:
        provider = self._extraction
        if not provider.is_enabled:
            return {"provider": provider.name, "model": None, "pending": 0, "facts": self.store.count_facts()}
        return {
            "provider": provider.name,
            "model": provider.model or None,
            "pending": self.store.count_to_extract(extractor_key(provider)),
            "facts": self.store.count_facts(),
        }

    def _warnings(self) -> list[str]:
        warnings = []
        if self._embeddings.is_enabled:
            latest = self.store.list_jobs(None, EMBED, 1)
            if latest and latest[0].status is JobStatus.FAILED:
                warnings.append(f"the embedding provider failed: {latest[0].error}; search falls back to lexical")
        if self._extraction.is_enabled:
            latest = self.store.list_jobs(None, EXTRACT, 1)
            if latest and latest[0].status is JobStatus.FAILED:
                warnings.append(f"the extraction provider failed: {latest[0].error}")
        return warnings

    def request_embedding(self, *, requested_by: str = "job") -> Job | None:
        """Queue the background embed sweep (joining a queued one); None when embeddings are off."""
        if not self._embeddings.is_enabled:
            return None
        job, _ = self.submit_job(EMBED, {}, priority="background", requested_by=requested_by, coalesce_key=EMBED_KEY)
        return job

    def request_extraction(self, *, requested_by: str = "job") -> Job | None:
        """Queue the background extraction sweep (joining a queued one); None when extraction is off."""
        if not self._extraction.is_enabled:
            return None
        job, _ = self.submit_job(
            EXTRACT, {}, priority="background", requested_by=requested_by, coalesce_key=EXTRACT_KEY
        )
        return job

    def after_job(self, job: Job) -> None:
        """Follow-ups of a finished job: new drawers get embeddings and are read for facts."""
        if job.kind == MINE and job.status is JobStatus.COMPLETED and job.result:
            if int(job.result.get("created", 0)) + int(job.result.get("superseded", 0)) > 0:
                self.request_embedding()
                self.request_extraction()

    def _after_write(self, drawer: Drawer) -> None:
        self._duplicates.link(drawer)
        self.request_embedding()
        self.request_extraction()

    def duplicates(self, drawer_id: str) -> list[dict[str, Any]]:
        """Drawers linked to this one as exact, normalized or near copies (linked, never merged)."""
        self.store.get_drawer(drawer_id)
        links = self.store.drawer_links(drawer_id)
        others = self.store.get_drawers([lk.to_id if lk.from_id == drawer_id else lk.from_id for lk in links])
        out = []
        for link in links:
            other = others.get(link.to_id if link.from_id == drawer_id else link.from_id)
            if other is not None:
                out.append(
                    {
                        "drawer": other.to_json(),
                        "verdict": link.verdict,
                        "similarity": link.similarity,
                        "linked_at": link.created_at,
                    }
                )
        return out

    # --- drawers --------------------------------------------------------------------------------

    def save_note(
        self,
        content: str,
        *,
        wing: str | None = None,
        room: str | None = None,
        tags: Sequence[str] = (),
        agent: str | None = None,
        name: str | None = None,
        requested_by: str = "http",
        kind: str = "note",
    ) -> tuple[Drawer, bool]:
        """File a manual note; an unnamed exact copy in the same room returns the existing drawer instead."""
        if not content.strip():
            raise InvalidRequest("content must not be empty", field="content")
        wing = check_name(wing, "wing") or DEFAULT_WING
        room = check_name(room, "room") or NOTES_ROOM
        tags = check_tags(tags)
        if name is None:
            # A diary is one agent's: the same words from another agent are that agent's own entry.
            existing = self.store.find_current_copy(
                wing, room, content_hash(content), agent if room == DIARY_ROOM else None
            )
            if existing is not None:
                return existing, False
        drawer = self.store.add_drawer(
            NewDrawer(
                wing=wing,
                room=room,
                content=content,
                name=check_name(name, "name"),
                tags=tags,
                source=Source(kind=kind, agent=agent),
                provenance=Provenance(requested_by=requested_by),
            )
        )
        self._after_write(drawer)
        return drawer, True

    def get_drawer(self, drawer_id: str) -> Drawer:
        return self.store.get_drawer(drawer_id)

    def drawer_history(self, drawer_id: str) -> list[Drawer]:
        return self.store.drawer_history(drawer_id)

    def supersede_drawer(
        self, drawer_id: str, content: str, *, reason: str | None = None, requested_by: str = "http"
    ) -> Drawer:
        if not content.strip():
            raise InvalidRequest("content must not be empty", field="content")
        if reason is not None and not reason.strip():
            raise InvalidRequest("reason must not be blank when given", field="reason")
        old = self.store.get_drawer(drawer_id)
        replacement = self.store.supersede_drawer(
            drawer_id,
            NewDrawer(
                wing=old.wing,
                room=old.room,
                content=content,
                name=old.name,
                tags=old.tags,
                source=Source(kind=old.source.kind, uri=old.source.uri, agent=old.source.agent),
                provenance=Provenance(requested_by=requested_by, reason=reason),
            ),
        )
        self._after_write(replacement)
        return replacement

    def preference_trace(self, drawer_id: str) -> dict[str, Any]:
        """How the effective policy resolves this drawer, from its frozen origin snapshot."""
        drawer = self.store.get_drawer(drawer_id)
        return {"drawer_id": drawer.id, **explain(self.policy, drawer.source.origin)}

    def list_wings(self) -> list[Wing]:
        return self.store.list_wings()

    def list_rooms(self, wing: str) -> list[Room]:
        return self.store.list_rooms(wing)

    def list_drawers(self, wing: str | None, room: str | None, limit: int, after: str | None) -> Page[Drawer]:
        return self.store.list_drawers(wing, room, check_limit(limit), after)

    # --- search ---------------------------------------------------------------------------------

    def search(self, request: SearchRequest) -> SearchResult:
        return self._search.search(build_query(request))

    def recall(self, request: SearchRequest) -> SearchResult:
        """The agent-facing search: a wing at most, never a room."""
        if request.room is not None:
            raise InvalidRequest("recall searches a whole wing; drop room or use search", field="room")
        return self._search.search(build_query(request))

    # --- agent memory ---------------------------------------------------------------------------

    def write_diary(self, agent: str, content: str, *, wing: str | None = None, requested_by: str = "http") -> Drawer:
        """A diary entry: a drawer in room `diary`, keyed by the agent's identity."""
        agent = require_name(agent, "agent")
        drawer, _ = self.save_note(
            content, wing=wing, room=DIARY_ROOM, agent=agent, requested_by=requested_by, kind="manual"
        )
        return drawer

    def read_diary(self, agent: str, *, wing: str | None = None, limit: int = 10) -> list[Drawer]:
        """The agent's diary entries, newest first."""
        scope = Scope(wing=check_name(wing, "wing"), room=DIARY_ROOM, agent=require_name(agent, "agent"))
        return self.store.latest_drawers(scope, check_limit(limit))

    def checkpoint(
        self, items: Sequence[Mapping[str, Any]], *, agent: str | None = None, requested_by: str = "http"
    ) -> list[Drawer]:
        """Save decisions and state as checkpoint drawers (tag `checkpoint`), all or nothing validated first."""
        if not items:
            raise InvalidRequest("items must not be empty", field="items")
        prepared = []
        for index, item in enumerate(items):
            content = item.get("content")
            if not isinstance(content, str) or not content.strip():
                raise InvalidRequest("content must not be empty", field=f"items[{index}].content")
            fact = item.get("fact")
            if fact is not None:
                if not isinstance(fact, Mapping):
                    raise InvalidRequest("fact must be an object", field=f"items[{index}].fact")
                try:
                    self.facts.check_spec(fact)
                except InvalidRequest as exc:
                    raise InvalidRequest(exc.message, field=f"items[{index}].fact.{exc.field}") from None
            prepared.append(item)
        saved = []
        for item in prepared:
            tags = tuple(dict.fromkeys((*check_tags(item.get("tags") or ()), CHECKPOINT_TAG)))
            drawer, _ = self.save_note(
                item["content"],
                wing=item.get("wing"),
                room=item.get("room") or CHECKPOINT_ROOM,
                tags=tags,
                agent=agent,
                name=item.get("name"),
                requested_by=requested_by,
                kind="manual",
            )
            if item.get("fact"):
                self.facts.add(item["fact"], evidence_drawer=drawer.id, requested_by=requested_by)
            saved.append(drawer)
        return saved

    def wake_up(
        self, agent: str, *, wing: str | None = None, max_items: int = 10, max_bytes: int = 8192
    ) -> dict[str, Any]:
        """What an agent needs at the start of a session: its latest diary entry and the most recent checkpoints,
        trimmed by whole drawers to the budget."""
        agent = require_name(agent, "agent")
        if not 1 <= max_items <= MAX_LIMIT:
            raise InvalidRequest(f"max_items must be from 1 to {MAX_LIMIT}", field="max_items")
        if not 256 <= max_bytes <= 1_048_576:
            raise InvalidRequest("max_bytes must be from 256 to 1048576", field="max_bytes")
        wing = check_name(wing, "wing")
        diary = self.store.latest_drawers(Scope(wing=wing, room=DIARY_ROOM, agent=agent), 1)
        checkpoints = self.store.latest_drawers(Scope(wing=wing, tags=(CHECKPOINT_TAG,)), max_items)
        chosen: list[Drawer] = []
        used = 0
        omitted = 0
        for drawer in [*diary, *checkpoints]:
            size = len(drawer.content.encode("utf-8"))
            if len(chosen) >= max_items or used + size > max_bytes:
                omitted += 1
                continue
            chosen.append(drawer)
            used += size
        return {
            "agent": agent,
            "wing": wing,
            "diary": [d.to_json() for d in chosen if d.room == DIARY_ROOM and d.source.agent == agent],
            "checkpoints": [d.to_json() for d in chosen if CHECKPOINT_TAG in d.tags],
            "bytes": used,
            "omitted": omitted,
        }

    # --- mining -------------------------------------------------------------------------------

    def submit_mine(
        self,
        connector: str,
        locator: str,
        options: Mapping[str, Any] | None = None,
        *,
        wing: str | None = None,
        full: bool = False,
        requested_by: str = "http",
    ) -> tuple[Job, bool]:
        """Queue a background mine; a request for the same source joins one that is still queued."""
        spec = self._connectors.source_spec(connector, locator, options or {})
        source_id = self._connectors.get(connector).identify(spec)
        wing = check_name(wing, "wing")
        params = {
            "connector": connector,
            "locator": spec.locator,
            "options": dict(spec.options),
            "wing": wing,
            "full": bool(full),
        }
        return self.submit_job(
            MINE,
            params,
            priority="background",
            requested_by=requested_by,
            coalesce_key=f"mine:{source_id}:{wing or ''}:{int(bool(full))}",
        )

    def list_connectors(self) -> list[dict[str, Any]]:
        return self._connectors.describe()

    def list_miners(self) -> list[MinerSpec]:
        return list(self._miners.values())

    def run_miner(self, name: str, *, requested_by: str = "http") -> tuple[Job, bool]:
        miner = self._miners.get(name)
        if miner is None:
            known = ", ".join(sorted(self._miners)) or "none configured"
            raise NotFound(f"no miner named {name!r} ({known})", help="declare one with [[miners]] in config.toml")
        return self.submit_mine(
            miner.connector, miner.locator, miner.options, wing=miner.wing, full=miner.full, requested_by=requested_by
        )

    def submit_verify(self, *, batch: int, pace_ms: int, priority: str = "normal", requested_by: str = "http") -> Job:
        """Re-hash every current drawer in the background (`integrity`)."""
        job, _ = self.submit_job(
            integrity.KIND, {"batch": batch, "pace_ms": pace_ms}, priority=priority, requested_by=requested_by
        )
        return job

    # --- jobs -----------------------------------------------------------------------------------

    def submit_job(
        self,
        kind: str,
        params: Mapping[str, Any],
        *,
        priority: str = "normal",
        requested_by: str = "http",
        coalesce_key: str | None = None,
    ) -> tuple[Job, bool]:
        if priority not in PRIORITY_NAMES:
            raise InvalidRequest(f"unknown priority {priority!r}; one of {', '.join(PRIORITY_NAMES)}", field="priority")
        return self.queue.submit(
            NewJob(
                kind=kind,
                params=dict(params),
                priority=PRIORITY_NAMES[priority],
                requested_by=requested_by,
                coalesce_key=coalesce_key,
            )
        )

    def get_job(self, job_id: str) -> Job:
        return self.store.get_job(job_id)

    def list_jobs(self, status: str | None, kind: str | None, limit: int = 50) -> list[Job]:
        if status is not None and status not in {s.value for s in JobStatus}:
            raise InvalidRequest(
                f"unknown job status {status!r}; one of {', '.join(s.value for s in JobStatus)}", field="status"
            )
        return self.store.list_jobs(status, kind, check_limit(limit))

    def control_job(self, job_id: str, action: str) -> Job:
        actions = {
            "pause": self.queue.pause,
            "resume": self.queue.resume,
            "cancel": self.queue.cancel,
            "retry": self.queue.retry,
        }
        if action not in actions:
            raise InvalidRequest(f"unknown job action {action!r}; one of {', '.join(actions)}", field="action")
        return actions[action](job_id)


# --- validation at the service seam ---------------------------------------------------------------


def build_query(request: SearchRequest) -> SearchQuery:
    """Validate a search request into a `SearchQuery`; every refusal names the option."""
    if not isinstance(request.query, str) or not request.query.strip():
        raise InvalidRequest("query must not be empty", field="query")
    if request.ranking not in RANKINGS:
        raise InvalidRequest(f"unknown ranking {request.ranking!r}; one of {', '.join(RANKINGS)}", field="ranking")
    if request.source_kind is not None and request.source_kind not in SOURCE_KINDS:
        raise InvalidRequest(
            f"unknown source_kind {request.source_kind!r}; one of {', '.join(SOURCE_KINDS)}", field="source_kind"
        )
    if request.preferences not in ("on", "off"):
        raise InvalidRequest("preferences must be 'on' or 'off'", field="preferences")
    forms = [
        name
        for name, present in (
            ("as_of", request.as_of is not None),
            ("from/until", request.from_ is not None or request.until is not None),
            ("include_historical", request.include_historical),
        )
        if present
    ]
    if len(forms) > 1:
        raise InvalidRequest(f"choose one temporal form, not {' and '.join(forms)}", field=",".join(forms))
    window: TimeWindow | None = None
    if request.as_of is not None:
        instant = parse_instant(request.as_of, field="as_of")
        window = TimeWindow(start=instant, end=instant, is_instant=True)
    elif request.from_ is not None or request.until is not None:
        if request.from_ is None or request.until is None:
            raise InvalidRequest("from and until go together", field="from" if request.from_ is None else "until")
        start = parse_instant(request.from_, field="from")
        end = parse_instant(request.until, field="until")
        if end <= start:
            raise InvalidRequest("until must be later than from", field="until")
        window = TimeWindow(start=start, end=end)
    return SearchQuery(
        text=request.query,
        limit=check_limit(request.limit),
        scope=Scope(
            wing=check_name(request.wing, "wing"),
            room=check_name(request.room, "room"),
            tags=check_tags(request.tags),
            source_kind=request.source_kind,
            connector=check_name(request.connector, "connector"),
        ),
        ranking=request.ranking,
        window=window,
        include_historical=request.include_historical,
        expand=request.expand,
        preferences=request.preferences == "on",
    )
