"""The domain's closed vocabularies, each written once: as a `Literal` (so every interface's schema lists the allowed
values) with the tuple the domain validates against derived from it by `get_args`."""

from __future__ import annotations

from typing import Literal, get_args

SourceKind = Literal["file", "note", "transcript", "commit", "manual", "other"]
Ranking = Literal["auto", "lexical", "semantic", "hybrid"]
Predicate = Literal["works_on", "member_of", "depends_on", "uses", "owns", "part_of", "located_in", "related_to"]
EntityKind = Literal["person", "organization", "project", "tool", "place", "concept", "other"]
FactState = Literal["current", "conflicting", "superseded", "invalidated", "historical"]
JobState = Literal["queued", "running", "paused", "completed", "failed", "cancelled"]
ExplicitLink = Literal["confirms", "contradicts", "refines"]
Switch = Literal["on", "off"]
Rerank = Literal["off", "on", "auto"]

# The same vocabularies as tuples, for validation and listings: derived, so each is written once.
SOURCE_KINDS: tuple[str, ...] = get_args(SourceKind)
RANKINGS: tuple[str, ...] = get_args(Ranking)
PREDICATES: tuple[str, ...] = get_args(Predicate)
ENTITY_KINDS: tuple[str, ...] = get_args(EntityKind)
FACT_STATES: tuple[str, ...] = get_args(FactState)
EXPLICIT_LINKS: tuple[str, ...] = get_args(ExplicitLink)
SWITCH: tuple[str, ...] = get_args(Switch)
RERANK_MODES: tuple[str, ...] = get_args(Rerank)
