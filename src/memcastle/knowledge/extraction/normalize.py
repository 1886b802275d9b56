"""Every provider's answer made safe: vocabularies, deduplication, caps and the confidence floor."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from memcastle.errors import ProviderError
from memcastle.knowledge.extraction.contract import (
    ENTITY_KINDS,
    MAX_ENTITIES,
    MAX_NAME_CHARS,
    MAX_RELATIONS,
    MISSING_CONFIDENCE,
    PREDICATES,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
)


def normalize_extraction(
    raw: Any, *, min_confidence: float, max_entities: int = MAX_ENTITIES, max_relations: int = MAX_RELATIONS
) -> Extraction:
    """One provider result brought into the vocabularies, deduplicated, capped and cut at the confidence floor.

    The floor is applied to the provider's confidence as given, never to a value weighted by source preference.
    Idempotent: normalizing a normalized result with the same arguments returns it unchanged.
    """
    if (
        isinstance(min_confidence, bool)
        or not isinstance(min_confidence, (int, float))
        or not 0.0 <= min_confidence <= 1.0
    ):
        raise ValueError(f"min_confidence must be a number in [0, 1], got {min_confidence!r}")
    if max_entities < 0 or max_relations < 0:
        raise ValueError(f"caps must not be negative, got {max_entities} and {max_relations}")
    if isinstance(raw, Extraction):
        raw = raw.to_json()
    if not isinstance(raw, Mapping):
        raise ProviderError(f"an extraction result must be a JSON object, not {_json_kind(raw)}")

    named = _named_entities(raw)
    spelled: dict[str, str] = {key: entity.name for key, entity in named.items()}
    claims: dict[tuple[str, str, str], ExtractedRelation] = {}
    for item in _list_field(raw, "relations"):
        if not isinstance(item, Mapping):
            continue
        subject, obj = _clean_name(item.get("subject")), _clean_name(item.get("object"))
        if subject is None or obj is None:
            continue
        subject_key, object_key = _key(subject), _key(obj)
        if subject_key == object_key:
            continue
        confidence = _clean_confidence(item)
        if confidence is None or confidence < min_confidence:
            continue
        # An endpoint keeps the spelling its entity (or its first mention) gave it, so relations name entities.
        subject = spelled.setdefault(subject_key, subject)
        obj = spelled.setdefault(object_key, obj)
        predicate = _clean_predicate(item.get("predicate"))
        claim = (subject_key, predicate, object_key)
        prior = claims.get(claim)
        if prior is None or confidence > prior.confidence:
            claims[claim] = ExtractedRelation(subject, predicate, obj, confidence)

    # Relations are admitted in order while their endpoints fit the entity cap; the endpoints are then kept
    # first and other entities fill the slots left, so every relation names an entity of the result.
    relations: list[ExtractedRelation] = []
    endpoints: set[str] = set()
    for (subject_key, _, object_key), relation in claims.items():
        if len(relations) >= max_relations:
            break
        new = {subject_key, object_key} - endpoints
        if len(endpoints) + len(new) > max_entities:
            continue
        endpoints |= new
        relations.append(relation)

    order = list(named) + [key for key in spelled if key not in named and key in endpoints]
    spare = max_entities - len(endpoints)
    entities: list[ExtractedEntity] = []
    for key in order:
        if key in endpoints:
            entities.append(named.get(key) or ExtractedEntity(spelled[key], "other"))
        elif spare > 0:
            entities.append(named[key])
            spare -= 1
    return Extraction(entities=tuple(entities), relations=tuple(relations))


def _named_entities(raw: Mapping[str, Any]) -> dict[str, ExtractedEntity]:
    """Entity key -> entity, in the provider's order: a name given twice keeps its first spelling and its most
    particular kind."""
    named: dict[str, ExtractedEntity] = {}
    for item in _list_field(raw, "entities"):
        if not isinstance(item, Mapping):
            continue
        name = _clean_name(item.get("name"))
        if name is None:
            continue
        kind = _clean_kind(item.get("kind"))
        key = _key(name)
        seen = named.get(key)
        if seen is None:
            named[key] = ExtractedEntity(name, kind)
        elif seen.kind == "other" and kind != "other":
            named[key] = ExtractedEntity(seen.name, kind)
    return named


def _key(name: str) -> str:
    return name.casefold()


def _clean_name(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    name = " ".join(value.split())
    return name if name and len(name) <= MAX_NAME_CHARS else None


def _clean_kind(value: Any) -> str:
    kind = value.strip().lower() if isinstance(value, str) else ""
    return kind if kind in ENTITY_KINDS else "other"


def _clean_predicate(value: Any) -> str:
    # "works on", "Works-On" and "works_on" are one predicate; anything outside the vocabulary is related_to.
    predicate = re.sub(r"[\s-]+", "_", value.strip().lower()) if isinstance(value, str) else ""
    return predicate if predicate in PREDICATES else "related_to"


def _clean_confidence(item: Mapping[str, Any]) -> float | None:
    """The confidence clamped to [0, 1]; MISSING_CONFIDENCE when absent; None (drop it) when not a finite number."""
    value = item.get("confidence")
    if value is None:
        return MISSING_CONFIDENCE
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int):  # JSON integers may be too large for float()
        return 1.0 if value >= 1 else 0.0
    if not math.isfinite(value):
        return None
    return min(1.0, max(0.0, float(value)))


def _list_field(raw: Mapping[str, Any], field: str) -> list[Any]:
    value = raw.get(field)
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise ProviderError(f'an extraction result\'s "{field}" must be a list, not {_json_kind(value)}')
    return list(value)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__
