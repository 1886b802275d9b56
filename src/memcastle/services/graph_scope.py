"""What of the knowledge graph the current client may see (ADR 0030, ADR 0049): facts are placed by their evidence
drawer, entities are seen through a readable drawer that mentions them or a visible fact that names them."""

from __future__ import annotations

from collections.abc import Sequence

from memcastle.model import Assertion
from memcastle.services.reader import visibility
from memcastle.store import KnowledgeStore


class GraphScope:
    """The current client's view of facts and entities: everything, or for a scoped token what its wings hold."""

    def __init__(self, store: KnowledgeStore) -> None:
        self._store = store

    def places_of(self, facts: Sequence[Assertion]) -> dict[str, tuple[str, str] | None]:
        """The wing and room of each fact's evidence drawer (None for a fact stated without evidence)."""
        places = self._store.search.drawer_places([f.drawer_id for f in facts if f.drawer_id])
        return {
            f.id: ((places[f.drawer_id].wing, places[f.drawer_id].room) if f.drawer_id in places else None)
            for f in facts
        }

    def facts(self, facts: Sequence[Assertion]) -> list[Assertion]:
        """Those of the facts the client may read: all of them, or for a scoped client those whose evidence drawer
        lies in a wing it reads (a fact stated without evidence belongs to no wing, so to no scope)."""
        seen = visibility()
        if seen.reads_everything:
            return list(facts)
        places = self.places_of(facts)
        return [f for f in facts if (place := places[f.id]) is not None and seen.can_read(*place)]

    def visible_fact_ids(self, fact_ids: Sequence[str]) -> set[str]:
        return {f.id for f in self.facts(list(self._store.facts.get_assertions(fact_ids).values()))}

    def readable_drawers(self, drawer_ids: Sequence[str]) -> set[str]:
        seen = visibility()
        places = self._store.search.drawer_places(drawer_ids)
        return {i for i, place in places.items() if seen.can_read(place.wing, place.room)}

    def entity_visible(self, entity_id: str) -> bool:
        """An entity a scoped client may see: mentioned in a drawer of its wings, or named by a fact it sees."""
        mentioned = [m.drawer_id for m in self._store.entities.entity_mentions(entity_id, 200)]
        if self.readable_drawers(mentioned):
            return True
        return bool(self.facts(self._store.facts.assertions_touching([entity_id], 200)))

    def visible_entities(self, entity_ids: Sequence[str]) -> set[str]:
        """Those of the entities the client may see (a write resolves names among these alone, ADR 0049)."""
        if visibility().reads_everything:
            return set(entity_ids)
        return {i for i in entity_ids if self.entity_visible(i)}
