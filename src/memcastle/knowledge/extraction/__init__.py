"""Fact extraction (SPEC §4, ADR 048): drawer texts with their context in, entities and relations out.

    ExtractionProvider     the protocol the extract job depends on: one Extraction per input, in order
    ├── HeuristicProvider  capitalised names, @handles, `code` and a fixed phrase table; offline, deterministic
    ├── CommandProvider    argv without a shell: stdin {"texts", ...} -> stdout {"results"}
    ├── HttpProvider       an OpenAI-compatible POST /chat/completions endpoint answering JSON
    └── NoneProvider       extraction disabled

Every answer, the heuristic's included, passes through `normalize_extraction`: vocabularies, deduplication, caps
and the confidence floor. Providers see each text's provenance and effective source preference, but the confidence
they give is kept as given and the floor applies whatever the preference: a trusted source does not make a claim
true, and a distrusted one does not make it false. Every failure of a provider is a `ProviderError` raised before
any result is returned, so a batch is all or nothing; every bad setting is a `ConfigError` naming its key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memcastle.errors import ConfigError
from memcastle.knowledge.extraction.contract import (
    DEFAULT_MIN_CONFIDENCE,
    DEFAULT_TIMEOUT,
    EMPTY,
    ENTITY_KINDS,
    PREDICATES,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    ExtractionInput,
    ExtractionProvider,
    NoneProvider,
)
from memcastle.knowledge.extraction.heuristic import HeuristicProvider
from memcastle.knowledge.extraction.normalize import normalize_extraction
from memcastle.knowledge.extraction.remote import (
    SYSTEM_PROMPT,
    CommandProvider,
    HttpProvider,
)
from memcastle.providers.settings import model_name, remote_settings

__all__ = [
    "EMPTY",
    "ENTITY_KINDS",
    "PREDICATES",
    "SYSTEM_PROMPT",
    "CommandProvider",
    "ExtractedEntity",
    "ExtractedRelation",
    "Extraction",
    "ExtractionInput",
    "ExtractionProvider",
    "HeuristicProvider",
    "HttpProvider",
    "NoneProvider",
    "build_extraction_provider",
    "normalize_extraction",
]


def build_extraction_provider(config: Mapping[str, Any]) -> ExtractionProvider:
    """The provider the `extraction.*` settings ask for (keys without the `extraction.` prefix)."""
    kind = config.get("provider") or "heuristic"
    model = model_name("extraction", config)
    floor = _min_confidence(config.get("min_confidence"))
    if kind == "heuristic":
        if model:
            raise ConfigError(
                f"the heuristic provider runs no model, not {model!r}; use the command or http provider for a model",
                key="extraction.model",
            )
        return HeuristicProvider(min_confidence=floor)
    if kind == "none":
        return NoneProvider()
    if kind not in ("command", "http"):
        raise ConfigError(
            f"unknown extraction provider {kind!r}; choose heuristic, command, http or none", key="extraction.provider"
        )
    remote = remote_settings("extraction", kind, config, DEFAULT_TIMEOUT)
    if kind == "command":
        form = config.get("command_format") or "objects"
        return CommandProvider(
            list(remote.command), remote.model, remote.timeout, min_confidence=floor, format=str(form)
        )
    return HttpProvider(remote.url, remote.model, remote.api_key, remote.timeout, min_confidence=floor)


def _min_confidence(value: object) -> float:
    if value is None:
        return DEFAULT_MIN_CONFIDENCE
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ConfigError(f"must be a number from 0 to 1, got {value!r}", key="extraction.min_confidence")
    return float(value)
