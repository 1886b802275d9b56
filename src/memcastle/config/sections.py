"""The settings read by attribute, typed: each `[section]` a frozen value (`settings.server.port`). Generated from the
declarations (`config/declared.py`) with cog — `cog -r src/memcastle/config/sections.py`; `cog --check` in CI fails
when a setting was declared without it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# [[[cog
# import cog
# from memcastle.config.reference import section_classes
# cog.out(section_classes())
# ]]]


@dataclass(frozen=True)
class ServerSettings:
    """[server]"""

    host: str
    port: int
    max_body_bytes: int
    allowed_hosts: list[str]


@dataclass(frozen=True)
class LoggingSettings:
    """[logging]"""

    level: str
    format: str


@dataclass(frozen=True)
class StoreSettings:
    """[store]"""

    url: str


@dataclass(frozen=True)
class JobsSettings:
    """[jobs]"""

    workers: int
    background_share: float
    drain_seconds: float
    lease_seconds: float
    resume_free_bytes: int


@dataclass(frozen=True)
class MiningSettings:
    """[mining]"""

    chunk_chars: int
    github_api_url: str
    github_wiki_url: str
    max_documents: int
    max_file_bytes: int
    hard_links: bool
    roots: list[str]


@dataclass(frozen=True)
class StorageSettings:
    """[storage]"""

    reserve_bytes: int


@dataclass(frozen=True)
class SearchSettings:
    """[search]"""

    fusion: str
    rrf_k: int
    lexical_weight: float
    semantic_weight: float
    ann_min_rows: int
    fill_rows: int
    context_weight: float
    parallel: int
    rerank: str
    rerank_depth: int
    rerank_weight: float
    freshness: str


@dataclass(frozen=True)
class EmbeddingsSettings:
    """[embeddings]"""

    provider: str
    model: str
    command: list[str]
    url: str
    api_key: str
    query_prefix: str
    document_prefix: str
    input_type: str
    timeout: float
    threads: int
    batch_size: int
    passage_chars: int
    passage_overlap: int
    sentence_chars: int


@dataclass(frozen=True)
class ExtractionSettings:
    """[extraction]"""

    provider: str
    model: str
    command: list[str]
    url: str
    command_format: str
    max_entities: int
    max_relations: int
    api_key: str
    timeout: float
    min_confidence: float
    batch_size: int
    code: bool


@dataclass(frozen=True)
class AuditSettings:
    """[audit]"""

    enabled: bool
    retention: str
    max_records: int


@dataclass(frozen=True)
class AuthSettings:
    """[auth]"""

    enabled: bool
    allow_remote: bool
    token: str


@dataclass(frozen=True)
class DedupSettings:
    """[dedup]"""

    near_threshold: float
    enabled: bool
    entity_fuzzy: bool


@dataclass(frozen=True)
class WebSettings:
    """[web]"""

    enabled: bool


@dataclass(frozen=True)
class McpSettings:
    """[mcp]"""

    allowed_hosts: list[str]
    max_chars: int
    tools: str


@dataclass(frozen=True)
class HooksSettings:
    """[hooks]"""

    reminder: str


@dataclass(frozen=True)
class Sections:
    """Every section; the top-level keys."""

    server: ServerSettings
    logging: LoggingSettings
    store: StoreSettings
    jobs: JobsSettings
    mining: MiningSettings
    storage: StorageSettings
    search: SearchSettings
    embeddings: EmbeddingsSettings
    extraction: ExtractionSettings
    audit: AuditSettings
    auth: AuthSettings
    dedup: DedupSettings
    web: WebSettings
    mcp: McpSettings
    hooks: HooksSettings
    mode: str


def sections(values: Mapping[str, Any]) -> Sections:
    """The typed view of the values."""
    return Sections(
        server=ServerSettings(
            host=values["server.host"],
            port=values["server.port"],
            max_body_bytes=values["server.max_body_bytes"],
            allowed_hosts=values["server.allowed_hosts"],
        ),
        logging=LoggingSettings(
            level=values["logging.level"],
            format=values["logging.format"],
        ),
        store=StoreSettings(
            url=values["store.url"],
        ),
        jobs=JobsSettings(
            workers=values["jobs.workers"],
            background_share=values["jobs.background_share"],
            drain_seconds=values["jobs.drain_seconds"],
            lease_seconds=values["jobs.lease_seconds"],
            resume_free_bytes=values["jobs.resume_free_bytes"],
        ),
        mining=MiningSettings(
            chunk_chars=values["mining.chunk_chars"],
            github_api_url=values["mining.github_api_url"],
            github_wiki_url=values["mining.github_wiki_url"],
            max_documents=values["mining.max_documents"],
            max_file_bytes=values["mining.max_file_bytes"],
            hard_links=values["mining.hard_links"],
            roots=values["mining.roots"],
        ),
        storage=StorageSettings(
            reserve_bytes=values["storage.reserve_bytes"],
        ),
        search=SearchSettings(
            fusion=values["search.fusion"],
            rrf_k=values["search.rrf_k"],
            lexical_weight=values["search.lexical_weight"],
            semantic_weight=values["search.semantic_weight"],
            ann_min_rows=values["search.ann_min_rows"],
            fill_rows=values["search.fill_rows"],
            context_weight=values["search.context_weight"],
            parallel=values["search.parallel"],
            rerank=values["search.rerank"],
            rerank_depth=values["search.rerank_depth"],
            rerank_weight=values["search.rerank_weight"],
            freshness=values["search.freshness"],
        ),
        embeddings=EmbeddingsSettings(
            provider=values["embeddings.provider"],
            model=values["embeddings.model"],
            command=values["embeddings.command"],
            url=values["embeddings.url"],
            api_key=values["embeddings.api_key"],
            query_prefix=values["embeddings.query_prefix"],
            document_prefix=values["embeddings.document_prefix"],
            input_type=values["embeddings.input_type"],
            timeout=values["embeddings.timeout"],
            threads=values["embeddings.threads"],
            batch_size=values["embeddings.batch_size"],
            passage_chars=values["embeddings.passage_chars"],
            passage_overlap=values["embeddings.passage_overlap"],
            sentence_chars=values["embeddings.sentence_chars"],
        ),
        extraction=ExtractionSettings(
            provider=values["extraction.provider"],
            model=values["extraction.model"],
            command=values["extraction.command"],
            url=values["extraction.url"],
            command_format=values["extraction.command_format"],
            max_entities=values["extraction.max_entities"],
            max_relations=values["extraction.max_relations"],
            api_key=values["extraction.api_key"],
            timeout=values["extraction.timeout"],
            min_confidence=values["extraction.min_confidence"],
            batch_size=values["extraction.batch_size"],
            code=values["extraction.code"],
        ),
        audit=AuditSettings(
            enabled=values["audit.enabled"],
            retention=values["audit.retention"],
            max_records=values["audit.max_records"],
        ),
        auth=AuthSettings(
            enabled=values["auth.enabled"],
            allow_remote=values["auth.allow_remote"],
            token=values["auth.token"],
        ),
        dedup=DedupSettings(
            near_threshold=values["dedup.near_threshold"],
            enabled=values["dedup.enabled"],
            entity_fuzzy=values["dedup.entity_fuzzy"],
        ),
        web=WebSettings(
            enabled=values["web.enabled"],
        ),
        mcp=McpSettings(
            allowed_hosts=values["mcp.allowed_hosts"],
            max_chars=values["mcp.max_chars"],
            tools=values["mcp.tools"],
        ),
        hooks=HooksSettings(
            reminder=values["hooks.reminder"],
        ),
        mode=values["mode"],
    )


# [[[end]]]
