"""The domain's closed vocabularies as types, so every interface's schema lists the allowed values (tests/mcp checks
they match the tuples the domain validates against)."""

from __future__ import annotations

from typing import Literal

SourceKind = Literal["file", "note", "transcript", "commit", "manual", "other"]
Ranking = Literal["auto", "lexical", "semantic", "hybrid"]
Predicate = Literal["works_on", "member_of", "depends_on", "uses", "owns", "part_of", "located_in", "related_to"]
EntityKind = Literal["person", "organization", "project", "tool", "place", "concept", "other"]
FactState = Literal["current", "conflicting", "superseded", "invalidated", "historical"]
JobState = Literal["queued", "running", "paused", "completed", "failed", "cancelled"]
ExplicitLink = Literal["confirms", "contradicts", "refines"]
Switch = Literal["on", "off"]
