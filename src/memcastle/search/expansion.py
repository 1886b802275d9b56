"""Graph expansion (SPEC §3): drawers related to the direct hits through shared entities, after the direct hits.

A drawer scores 1.0 for each entity it shares with the direct hits and 0.5 for each entity one current fact away;
it must share one *specific* entity with a direct hit, pass the same scope and time filters, and says `via` which
entities brought it. An entity mentioned all over the palace (a file name every commit touches, a word like "Files")
names no topic: it neither brings a drawer nor counts in its score (docs/adr/0034-expansion-on-topic.md).
"""

from __future__ import annotations

from memcastle.knowledge.facts import state_of
from memcastle.model import AsOf, Hit, SearchQuery
from memcastle.store import KnowledgeStore

SHARED = 1.0
NEIGHBOUR = 0.5
PER_ENTITY = 200
# An entity is generic when more drawers mention it than this share of the palace, and more than GENERIC_MIN: in a
# small palace every entity is rare enough to follow.
GENERIC_SHARE = 0.005
GENERIC_MIN = 10


def generic_limit(palace_drawers: int) -> int:
    """The most drawers a specific entity is mentioned in, in a palace of this many drawers."""
    return max(GENERIC_MIN, int(GENERIC_SHARE * palace_drawers))


def specific(store: KnowledgeStore, entity_ids: set[str], palace_drawers: int) -> set[str]:
    """Those of the entities mentioned in no more drawers than `generic_limit` (counted up to one past it)."""
    if not entity_ids:
        return set()
    limit = generic_limit(palace_drawers)
    counts = store.entities.mention_counts(sorted(entity_ids), limit + 1)
    return {e for e in entity_ids if counts.get(e, 0) <= limit}


def expand(
    store: KnowledgeStore, query: SearchQuery, direct: list[Hit], now: str, pool: int, palace_drawers: int
) -> list[Hit]:
    """Up to `pool` related drawers not among the direct hits, best first (ties by id): the pool the search ranks,
    with the policy, before it keeps `query.limit` of them — as it pools direct hits (ADR 048)."""
    direct_ids = {hit.drawer.id for hit in direct}
    mentioned = store.entities.entities_of_drawers(list(direct_ids))
    seeds = specific(store, set().union(*mentioned.values()) if mentioned else set(), palace_drawers)
    if not seeds:
        return []
    # The graph is read at the instant the search asks about, and now for any other time.
    when = query.scope.when
    at = when.at if isinstance(when, AsOf) and when.axis == "valid" else now
    facts = store.facts.assertions_touching(list(seeds))
    links = store.facts.links_of([f.id for f in facts])
    everything = {f.id: f for f in facts}
    everything.update(
        store.facts.get_assertions([i for link in links for i in (link.from_id, link.to_id) if i not in everything])
    )
    neighbours: set[str] = set()
    for fact in facts:
        if state_of(fact, links, everything, at) not in ("current", "conflicting"):
            continue
        for end, other in ((fact.subject, fact.object), (fact.object, fact.subject)):
            if end in seeds and other not in seeds:
                neighbours.add(other)
    neighbours = specific(store, neighbours, palace_drawers)
    reached = store.entities.drawers_mentioning([*seeds, *neighbours], PER_ENTITY)
    scores: dict[str, float] = {}
    via: dict[str, set[str]] = {}
    for drawer_id, entity_ids in reached.items():
        if drawer_id in direct_ids or not entity_ids & seeds:
            continue  # a drawer reached only through a neighbour shares nothing with the direct hits
        scores[drawer_id] = sum(SHARED if e in seeds else NEIGHBOUR for e in entity_ids)
        via[drawer_id] = set(entity_ids)
    eligible = store.search.eligible_ids(list(scores), query.scope)
    ranked = sorted((d for d in scores if d in eligible), key=lambda d: (-scores[d], d))[:pool]
    drawers = store.drawers.get_drawers(ranked)
    names = store.entities.get_entities([e for d in ranked for e in via[d]])
    return [
        Hit(
            drawer=drawers[d],
            score=scores[d],
            signals={"graph": scores[d]},
            via=tuple(sorted(names[e].name for e in via[d] if e in names)),
        )
        for d in ranked
        if d in drawers
    ]
