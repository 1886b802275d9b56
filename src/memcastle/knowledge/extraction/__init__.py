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

import math
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
    model = config.get("model") or ""
    if not isinstance(model, str):
        raise ConfigError(f"must be a string, got {model!r}", key="extraction.model")
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
    if kind in ("command", "http") and not model:
        # The model names the extractor that read a drawer; without it a change of model could not be noticed.
        raise ConfigError(f"the {kind} provider needs a model name", key="extraction.model")
    timeout = _timeout(config.get("timeout"))
    if kind == "command":
        command = config.get("command")
        if not isinstance(command, (list, tuple)):
            raise ConfigError(f"must be a list of strings (argv, no shell), got {command!r}", key="extraction.command")
        form = config.get("command_format") or "objects"
        return CommandProvider(list(command), model, timeout, min_confidence=floor, format=str(form))
    if kind == "http":
        url = config.get("url") or ""
        if not isinstance(url, str) or not url:
            raise ConfigError("the http provider needs the endpoint's base URL", key="extraction.url")
        api_key = config.get("api_key") or None
        if api_key is not None and not isinstance(api_key, str):
            raise ConfigError("must be a string", key="extraction.api_key")
        return HttpProvider(url, model, api_key, timeout, min_confidence=floor)
    raise ConfigError(
        f"unknown extraction provider {kind!r}; choose heuristic, command, http or none", key="extraction.provider"
    )


def _timeout(value: object) -> float:
    if value is None:
        return DEFAULT_TIMEOUT
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ConfigError(f"must be a positive number of seconds, got {value!r}", key="extraction.timeout")
    return float(value)


def _min_confidence(value: object) -> float:
    if value is None:
        return DEFAULT_MIN_CONFIDENCE
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ConfigError(f"must be a number from 0 to 1, got {value!r}", key="extraction.min_confidence")
    return float(value)
