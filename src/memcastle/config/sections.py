"""The settings read by attribute, typed: each `[section]` a frozen value (`settings.server.port`). Generated from the
declarations (`config/declared.py`) with cog — `cog -r src/memcastle/config/sections.py`; `cog --check` in CI fails
when a setting was declared without it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def _section(values: Mapping[str, Any], section: str) -> dict[str, Any]:
    """A section's settings by their names within it."""
    prefix = section + "."
    return {key.removeprefix(prefix): value for key, value in values.items() if key.startswith(prefix)}


# [[[cog
# import cog
# from memcastle.config.generate import section_classes
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
        server=ServerSettings(**_section(values, "server")),
        logging=LoggingSettings(**_section(values, "logging")),
        store=StoreSettings(**_section(values, "store")),
        jobs=JobsSettings(**_section(values, "jobs")),
        mining=MiningSettings(**_section(values, "mining")),
        storage=StorageSettings(**_section(values, "storage")),
        search=SearchSettings(**_section(values, "search")),
        embeddings=EmbeddingsSettings(**_section(values, "embeddings")),
        extraction=ExtractionSettings(**_section(values, "extraction")),
        audit=AuditSettings(**_section(values, "audit")),
        auth=AuthSettings(**_section(values, "auth")),
        dedup=DedupSettings(**_section(values, "dedup")),
        web=WebSettings(**_section(values, "web")),
        mcp=McpSettings(**_section(values, "mcp")),
        hooks=HooksSettings(**_section(values, "hooks")),
        mode=values["mode"],
    )


# [[[end]]]
