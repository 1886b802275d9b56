"""Mining the judged corpus into a real palace through settings → build → start, step by step."""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import OVERRIDES
from bench.judged.data import LIMIT, START, Corpus, load_corpus
from memcastle.app import Palace, build
from memcastle.clock import utc_now
from memcastle.config import Settings, load_settings
from memcastle.model import Drawer, JobStatus, SearchResult
from memcastle.model.requests import MineRequest
from memcastle.services import SearchRequest


def open_settings(workdir: Path, store_url: str = "") -> Settings:
    """Settings for a palace under `workdir`: builtin embeddings on 2 threads, no user config file; kept in SQLite
    in the palace directory, or in the PostgreSQL database `store_url` names."""
    config = workdir / "config.toml"
    if not config.exists():
        config.write_text("", encoding="utf-8")
    return load_settings(
        flags={
            "palace": str(workdir / "palace"),
            "embeddings.provider": "builtin",
            "embeddings.threads": 2,
            "store.url": store_url,
            "mining.roots": [str(workdir)],
            **OVERRIDES,
        },
        env={},
        config_file=config,
    )


@dataclass
class MinedPalace:
    """A started palace holding the judged corpus after every supersession step."""

    palace: Palace
    corpus: Corpus
    workdir: Path
    instants: dict[str, str]  # "start", "0", "1", … → the instant after that step's mine
    sources: dict[str, str]  # source id → mined folder (its path under the corpus root)
    timings: dict[str, float] = field(default_factory=dict)
    store_url: str = ""  # empty: SQLite in the palace directory

    @property
    def services(self) -> Any:
        return self.palace.services

    def doc_key(self, drawer: Drawer) -> str | None:
        """The document's path under the corpus root, or None for a drawer that was not mined from the corpus."""
        origin = drawer.source.origin
        if origin is None or origin.source_id not in self.sources:
            return None
        return f"{self.sources[origin.source_id]}/{origin.document}"

    def request(
        self,
        text: str,
        filters: Mapping[str, Any],
        ranking: str,
        *,
        limit: int = LIMIT,
        expand: bool = False,
        preferences: str = "on",
    ) -> SearchRequest:
        """A service request from judged filters; steps become the instants recorded while mining."""

        def instant(step: Any) -> str:
            return self.instants[str(step)]

        return SearchRequest(
            query=text,
            limit=limit,
            wing=filters.get("wing"),
            room=filters.get("room"),
            tags=tuple(filters.get("tags", ())),
            source_kind=filters.get("source_kind"),
            connector=filters.get("connector"),
            ranking=ranking,
            # Steps are instants of mining: what the palace knew then (record time), not when the sources say things
            # happened (a note's date, a file's modification time).
            known_at=instant(filters["as_of_step"]) if "as_of_step" in filters else None,
            known_from=instant(filters["from_step"]) if "from_step" in filters else None,
            known_until=instant(filters["until_step"]) if "until_step" in filters else None,
            include_historical=bool(filters.get("include_historical", False)),
            expand=expand,
            preferences=preferences,
        )

    def in_scope(self, drawer: Drawer, filters: Mapping[str, Any]) -> bool:
        """Whether the drawer passes the judged scope filters (wing, room, tags, source kind, connector)."""
        origin = drawer.source.origin
        return (
            filters.get("wing", drawer.wing) == drawer.wing
            and filters.get("room", drawer.room) == drawer.room
            and set(filters.get("tags", ())) <= set(drawer.tags)
            and filters.get("source_kind", drawer.source.kind) == drawer.source.kind
            and ("connector" not in filters or (origin is not None and origin.connector == filters["connector"]))
        )

    def is_eligible(self, drawer: Drawer, filters: Mapping[str, Any]) -> bool:
        """Whether the drawer passes the judged filters: scope, then the SPEC §3 temporal rule."""
        if not self.in_scope(drawer, filters):
            return False
        if filters.get("include_historical"):
            return True
        if "as_of_step" in filters:
            start = end = self.instants[str(filters["as_of_step"])]
            return drawer.created_at <= start and (drawer.closed_at is None or drawer.closed_at > end)
        if "from_step" in filters:
            start, end = self.instants[str(filters["from_step"])], self.instants[str(filters["until_step"])]
            return drawer.created_at < end and (drawer.closed_at is None or drawer.closed_at > start)
        return drawer.valid_to is None

    def search(self, request: SearchRequest) -> SearchResult:
        result: SearchResult = self.services.search.search(request)
        return result

    def all_drawers(self) -> list[Drawer]:
        """Every drawer of the corpus, current and superseded."""
        seen: dict[str, Drawer] = {}
        wings = [w.name for w in self.services.drawers.list_wings()]
        for wing in wings:
            after = None
            while True:
                page = self.services.drawers.list_drawers(wing, None, 200, after)
                for drawer in page.items:
                    for version in self.services.drawers.drawer_history(drawer.id):
                        seen[version.id] = version
                if page.next_after is None:
                    break
                after = page.next_after
        return [d for d in seen.values() if self.doc_key(d) is not None]

    def stop(self) -> None:
        self.palace.stop()


def _wait_job(palace: Palace, job_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job = palace.services.jobs.get_job(job_id)
        if job.is_finished:
            if job.status is not JobStatus.COMPLETED:
                raise RuntimeError(f"{job.kind} job {job.id} ended {job.status.value}: {job.error}")
            return dict(job.result or {})
        if time.monotonic() > deadline:
            raise RuntimeError(f"{job.kind} job {job.id} still {job.status.value} after {timeout:.0f}s")
        time.sleep(0.02)


def wait_for_background(palace: Palace, timeout: float) -> None:
    """Until the background sweeps are done: every drawer embedded and read for facts, no embed or extract job
    queued or running."""
    deadline = time.monotonic() + timeout
    services = palace.services
    while True:
        jobs = [*services.jobs.list_jobs(None, "embed"), *services.jobs.list_jobs(None, "extract")]
        failed = [j for j in jobs if j.status is JobStatus.FAILED]
        if failed:
            raise RuntimeError(f"{failed[0].kind} job {failed[0].id} failed: {failed[0].error}")
        if (
            not any(not j.is_finished for j in jobs)
            and services.status.embedding_status().pending == 0
            and services.status.extraction_status().pending == 0
        ):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"embedding or extraction still pending after {timeout:.0f}s")
        time.sleep(0.05)


def _mine_all(palace: Palace, corpus: Corpus, sources_root: Path, timeout: float) -> dict[str, str]:
    submitted = []
    for mine in corpus.mines:
        job = palace.services.mining.submit_mine(
            MineRequest(mine.connector, str(sources_root / mine.path), {}, wing=mine.wing), requested_by="cli"
        ).job
        submitted.append((mine, job.id))
    sources: dict[str, str] = {}
    for mine, job_id in submitted:
        result = _wait_job(palace, job_id, timeout)
        if result.get("skipped") or result.get("errors"):
            raise RuntimeError(
                f"mining {mine.path} skipped or failed documents: "
                f"{result.get('skipped_documents')} {result.get('warnings')}"
            )
        sources[str(result["source_id"])] = mine.path.rstrip("/")
    return sources


def _tick() -> str:
    """An instant strictly between the writes before and after it."""
    time.sleep(0.005)
    now = utc_now()
    time.sleep(0.005)
    return now


def build_palace(
    workdir: Path, corpus: Corpus | None = None, *, timeout: float = 300.0, store_url: str = ""
) -> MinedPalace:
    """Copy the sources, build and start a palace, mine step 0, then every supersession step, embedding as it goes."""
    corpus = corpus or load_corpus()
    sources_root = workdir / "sources"
    for mine in corpus.mines:
        shutil.copytree(corpus.root / mine.path, sources_root / mine.path, dirs_exist_ok=True)
    started = time.monotonic()
    palace = build(open_settings(workdir, store_url))
    palace.start()
    timings: dict[str, float] = {"start": time.monotonic() - started}
    try:
        instants = {START: _tick()}
        sources = _mine_all(palace, corpus, sources_root, timeout)
        wait_for_background(palace, timeout)
        instants["0"] = _tick()
        for step in corpus.steps:
            for name in step.files:
                target = sources_root / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(corpus.root / "steps" / str(step.number) / name, target)
            sources.update(_mine_all(palace, corpus, sources_root, timeout))
            wait_for_background(palace, timeout)
            instants[str(step.number)] = _tick()
    except BaseException:
        palace.stop()
        raise
    timings["mine_and_embed"] = time.monotonic() - started
    return MinedPalace(
        palace=palace,
        corpus=corpus,
        workdir=workdir,
        instants=instants,
        sources=sources,
        timings=timings,
        store_url=store_url,
    )


def reopen_with_policy(mined: MinedPalace, policy_toml: str | None, *, timeout: float = 60.0) -> MinedPalace:
    """Start the (stopped) palace again with `<palace>/preferences.toml` written (or removed): the policy is read
    at start-up, the drawers and their frozen snapshots stay as mined."""
    policy_file = mined.workdir / "palace" / "preferences.toml"
    if policy_toml is None:
        policy_file.unlink(missing_ok=True)
    else:
        policy_file.write_text(policy_toml, encoding="utf-8")
    palace = build(open_settings(mined.workdir, mined.store_url))
    palace.start()
    try:
        wait_for_background(palace, timeout)
    except BaseException:
        palace.stop()
        raise
    return MinedPalace(
        palace=palace,
        corpus=mined.corpus,
        workdir=mined.workdir,
        instants=mined.instants,
        sources=mined.sources,
        timings=mined.timings,
        store_url=mined.store_url,
    )
