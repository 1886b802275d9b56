"""What the extract job and every provider share: the vocabularies, the values and the provider protocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from memcastle.errors import ProviderError
from memcastle.model.vocabulary import ENTITY_KINDS as ENTITY_KINDS  # the contract's vocabulary: the domain's
from memcastle.model.vocabulary import PREDICATES as PREDICATES

DEFAULT_MIN_CONFIDENCE = 0.3
HEURISTIC_CONFIDENCE = 0.6
MISSING_CONFIDENCE = 0.5
MAX_ENTITIES = 50
MAX_RELATIONS = 50
# A "name" longer than this is a provider pasting a passage into a field, not naming something.
MAX_NAME_CHARS = 200
# Chat models reading a batch of drawers are far slower than an embedding call.
DEFAULT_TIMEOUT = 120.0


@dataclass(frozen=True)
class ExtractionInput:
    """One text to read, with the context ADR 048 passes to providers."""

    id: str
    text: str
    provenance: Mapping[str, Any]  # {connector, document, uri, occurred_at}; values may be None
    preference: Mapping[str, Any]  # {level, connector, criterion}: the effective source preference


@dataclass(frozen=True)
class ExtractedEntity:
    """An entity as named in one text."""

    name: str
    kind: str


@dataclass(frozen=True)
class ExtractedRelation:
    """A claimed fact between two entities of the same text, named as in its entities."""

    subject: str
    predicate: str
    object: str
    confidence: float


@dataclass(frozen=True)
class Extraction:
    """What one text yielded, already normalized."""

    entities: tuple[ExtractedEntity, ...]
    relations: tuple[ExtractedRelation, ...]

    def to_json(self) -> dict[str, Any]:
        """The wire shape providers answer in; `normalize_extraction` of it gives this value back."""
        return {
            "entities": [{"name": e.name, "kind": e.kind} for e in self.entities],
            "relations": [
                {"subject": r.subject, "predicate": r.predicate, "object": r.object, "confidence": r.confidence}
                for r in self.relations
            ],
        }


EMPTY = Extraction(entities=(), relations=())


@runtime_checkable
class ExtractionProvider(Protocol):
    """Reads texts into entities and relations: exactly one normalized Extraction per input, in order."""

    name: str  # heuristic, command, http or none
    model: str  # "" for heuristic and none
    is_enabled: bool

    def extract(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]:
        """One Extraction per input, in input order, or a ProviderError for the whole batch."""
        ...


class NoneProvider:
    """Extraction switched off: no facts are read from drawers."""

    name = "none"
    model = ""
    is_enabled = False

    def extract(self, inputs: Sequence[ExtractionInput]) -> list[Extraction]:
        """Always refuses: there is nothing to extract with."""
        raise ProviderError("extraction is disabled", help="set extraction.provider to heuristic, command or http")
