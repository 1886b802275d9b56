"""Facts and entities at the service seam: listings with lifecycle, history, and the explicit operations."""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from memcastle.clock import Clock, parse_instant, utc_now
from memcastle.connectors.secrets import Redactor
from memcastle.errors import AccessDenied, Conflict, InvalidRequest, NotFound
from memcastle.knowledge.entities import EntityResolver
from memcastle.knowledge.facts import LINK_FANOUT, infer_links, make_link, present
from memcastle.model import (
    FACT_STATES,
    SINGLE_VALUED_PREDICATES,
    Assertion,
    Entity,
    EntityHint,
    GraphWrite,
    Mention,
    normalize_text,
)
from memcastle.model.answers import EntityView, FactView, Linked, Superseded
from memcastle.model.requests import FactCorrection, FactSpec
from memcastle.model.vocabulary import ENTITY_KINDS as ENTITY_KINDS
from memcastle.model.vocabulary import EXPLICIT_LINKS
from memcastle.model.vocabulary import PREDICATES as PREDICATES
from memcastle.preferences import Policy
from memcastle.services.audit import Record, unrecorded
from memcastle.services.graph_scope import GraphScope
from memcastle.services.ids import resolve_id
from memcastle.services.reader import visibility
from memcastle.services.validation import check_limit, require_name
from memcastle.store import KnowledgeStore

EXPLICIT = "explicit"
_WHOLE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


class ValidFact(NamedTuple):
    """A `FactSpec` once validated: names redacted, kinds defaulted, the instant it holds from."""

    subject: str
    predicate: str
    object: str
    confidence: float
    subject_kind: str
    object_kind: str
    valid_from: str


class FactService:
    """Read facts with their computed state; record explicit decisions as immutable links."""

    def __init__(
        self,
        store: KnowledgeStore,
        policy: Policy,
        *,
        now: Clock = utc_now,
        record: Record = unrecorded,
        fuzzy: bool = True,
    ) -> None:
        self._fuzzy = fuzzy  # `dedup.entity_fuzzy`
        self._store = store
        self._record = record
        self._now = now
        self._policy = policy
        self._redactor = Redactor()  # a stated fact is text like a note: credentials never reach the graph
        self._scope = GraphScope(store)  # what of the graph the current client may see

    # --- reading --------------------------------------------------------------------------------

    def list_facts(
        self,
        *,
        subject: str | None = None,
        predicate: str | None = None,
        object: str | None = None,
        state: str | None = None,
        as_of: str | None = None,
        limit: int = 50,
    ) -> list[FactView]:
        at = parse_instant(as_of, field="as_of") if as_of else self._now()
        if state is not None and state not in FACT_STATES:
            raise InvalidRequest(f"unknown state {state!r}; one of {', '.join(FACT_STATES)}", field="state")
        if predicate is not None and predicate not in PREDICATES:
            raise InvalidRequest(f"unknown predicate {predicate!r}; one of {', '.join(PREDICATES)}", field="predicate")
        subjects = self._entity_ids(subject, "subject")
        objects = self._entity_ids(object, "object")
        if subjects == [] or objects == []:
            return []
        facts: dict[str, Assertion] = {}
        subject_ids: list[str | None] = list(subjects) if subjects else [None]
        for subject_id in subject_ids:
            for found in self._store.facts.find_assertions(subject=subject_id, predicate=predicate, limit=5000):
                if objects is None or found.object in objects:
                    facts[found.id] = found
        described = self._describe(list(facts.values()), at)
        if state is not None:
            described = [d for d in described if d.state == state]
        listed = described[: check_limit(limit)]
        asked = " ".join(f"{k}={v}" for k, v in (("subject", subject), ("predicate", predicate), ("object", object),
                                                  ("state", state)) if v)  # fmt: skip
        fact_ids, drawer_ids = _ids(listed)
        self._record("facts", query=asked or None, fact_ids=fact_ids, drawer_ids=drawer_ids)
        return listed

    def resolve(self, fact_id: str, *, field: str = "fact_id") -> str:
        """The whole id a fact id or unique prefix of it stands for (`memcastle.services.ids`), among the facts the
        client may see."""
        seen = visibility()
        visible = None if seen.reads_everything else self._scope.visible_fact_ids
        return resolve_id(self._store, "fact", fact_id, field=field, visible=visible)

    def _readable(self, fact_id: str) -> Assertion:
        fact = self._store.facts.get_assertion(self.resolve(fact_id))
        if not self._scope.facts([fact]):
            raise NotFound(f"no fact {fact_id}")
        return fact

    def _writable(self, fact: Assertion) -> None:
        """A change to a fact: its evidence's wing must be in the client's write scope."""
        seen = visibility()
        if seen.write is not None:
            place = self._scope.places_of([fact])[fact.id]
            if place is None:
                raise AccessDenied(
                    f"fact {fact.id} has no evidence drawer, so no wing; this token may write only to "
                    f"{', '.join(sorted(seen.write)) or 'no wing'}",
                    help="correct it with a token without --write limits",
                )
            seen.writable(*place)

    def get_fact(self, fact_id: str, *, as_of: str | None = None) -> FactView:
        """A fact read (recorded in the read audit)."""
        view = self._view(fact_id, as_of=as_of)
        facts, drawers = _ids([view])
        self._record("fact", fact_ids=facts, drawer_ids=drawers)
        return view

    def _view(self, fact_id: str, *, as_of: str | None = None) -> FactView:
        at = parse_instant(as_of, field="as_of") if as_of else self._now()
        return self._describe([self._readable(fact_id)], at)[0]

    def fact_history(self, fact_id: str, *, as_of: str | None = None) -> list[FactView]:
        """The fact and everything transitively linked to it, ordered by valid_from; with `as_of`, the history as it
        stood then: the facts valid from that instant or before, in the states they had at it."""
        at = parse_instant(as_of, field="as_of") if as_of else self._now()
        fact_id = self._readable(fact_id).id
        seen = {fact_id: self._store.facts.get_assertion(fact_id)}
        frontier = [fact_id]
        while frontier:
            links = self._store.facts.links_of(frontier)
            frontier = []
            for link in links:
                for other in (link.from_id, link.to_id):
                    if other not in seen:
                        seen[other] = self._store.facts.get_assertion(other)
                        frontier.append(other)
        known = [f for f in self._scope.facts(list(seen.values())) if as_of is None or f.valid_from <= at]
        ordered = sorted(known, key=lambda f: (f.valid_from, f.id))
        history = self._describe(ordered, at)
        facts, drawers = _ids(history)
        self._record("facts", fact_ids=facts, drawer_ids=drawers)
        return history

    def _describe(self, facts: Sequence[Assertion], at: str) -> list[FactView]:
        """The facts with their state and links, computed among the facts the client may see: for a scoped client a
        conflict, a supersession or a link with a fact outside its wings does not exist."""
        facts = self._scope.facts(facts)
        links = self._store.facts.links_of([f.id for f in facts])
        related = self._store.facts.get_assertions([i for link in links for i in (link.from_id, link.to_id)])
        if not visibility().reads_everything:
            related = {f.id: f for f in self._scope.facts(list(related.values()))}
            known = related.keys() | {f.id for f in facts}
            links = [link for link in links if link.from_id in known and link.to_id in known]
        everything = {**related, **{f.id: f for f in facts}}
        entities = self._store.entities.get_entities([i for f in everything.values() for i in (f.subject, f.object)])
        ordered = sorted(facts, key=lambda f: (f.valid_from, f.id))
        return present(ordered, links, everything, entities, self._policy, at)

    def _entity_ids(self, name: str | None, field: str) -> list[str] | None:
        if name is None:
            return None
        resolver = EntityResolver(self._store.entities, now=self._now, fuzzy=self._fuzzy)
        matches = [
            e.id
            for e in self._store.entities.list_entities(name, None, 200)
            if name.casefold() in (e.name.casefold(), e.key) or name in e.aliases
        ]
        if not matches:
            found = resolver.resolve(name, "other")
            return [] if found.created else [found.entity.id]
        return matches

    def _named(self, name: str) -> list[str]:
        """The entities a name (or an alias) stands for, exactly, that this reader may see; none when it names none
        (an id is then tried)."""
        found = [
            e.id
            for e in self._store.entities.list_entities(name, None, 200)
            if name.casefold() in (e.name.casefold(), e.key) or name in e.aliases
        ]
        return found if visibility().reads_everything else [i for i in found if self._scope.entity_visible(i)]

    # --- entities -------------------------------------------------------------------------------

    def list_entities(self, name: str | None, kind: str | None, limit: int = 50) -> list[Entity]:
        if kind is not None and kind not in ENTITY_KINDS:
            raise InvalidRequest(f"unknown kind {kind!r}; one of {', '.join(ENTITY_KINDS)}", field="kind")
        limit = check_limit(limit)
        if visibility().reads_everything:
            return self._store.entities.list_entities(name, kind, limit)
        found = self._store.entities.list_entities(name, kind, 1000)
        return [e for e in found if self._scope.entity_visible(e.id)][:limit]

    def _resolver(self) -> EntityResolver:
        """The resolver of a write made for the current client: among the entities it may see (ADR 0049), so a
        name only another wing's memory uses makes a new entity rather than answering with that one."""
        scoped = not visibility().reads_everything
        return EntityResolver(
            self._store.entities,
            now=self._now,
            fuzzy=self._fuzzy,
            visible=self._scope.visible_entities if scoped else None,
        )

    def get_entity(self, entity_id: str) -> EntityView:
        seen = visibility()
        visible = None if seen.reads_everything else (lambda ids: {i for i in ids if self._scope.entity_visible(i)})
        resolved = resolve_id(self._store, "entity", entity_id, field="entity_id", visible=visible)
        entity = self._store.entities.get_entity(resolved)
        mentions = self._store.entities.entity_mentions(entity.id, 200)
        hints = self._store.entities.entity_hints(entity.id)
        if not seen.reads_everything:
            if not self._scope.entity_visible(entity.id):
                raise NotFound(f"no entity {entity_id}")
            readable = self._scope.readable_drawers([m.drawer_id for m in mentions])
            mentions = [m for m in mentions if m.drawer_id in readable]
            hints = [
                h for h in hints if self._scope.entity_visible(h.other_id if h.entity_id == entity.id else h.entity_id)
            ]
        return EntityView(entity, tuple(mentions), tuple(hints))

    def find_entity(self, name: str) -> tuple[EntityView, list[Entity]]:
        """The entity a name, an alias or an id (or its 8-character prefix) stands for, and the other entities the
        same name stands for (one name, several entities: a person decides whether they are one)."""
        name = require_name(name, "entity")
        named = self._named(name)
        if not named:
            try:
                return self.get_entity(name), []
            except NotFound:
                raise NotFound(
                    f"no entity named {name!r}",
                    help="names and aliases match whatever their case; fact_list shows the entities facts name",
                ) from None
        others = self._store.entities.get_entities(named[1:])
        return self.get_entity(named[0]), [others[i] for i in named[1:] if i in others]

    # --- a person's hand on entities: aliases, mentions, candidates, relationships -------------------

    def add_alias(self, entity_id: str, alias: str) -> EntityView:
        """Teach an entity another spelling: later names in that spelling resolve to it. An alias another entity
        already answers to is refused, naming it."""
        alias = require_name(alias, "alias")
        entity = self.get_entity(entity_id).entity
        key = normalize_text(alias)
        named = self._store.entities.entities_named(alias, key) + self._store.entities.entities_with_alias(key)
        visible = self._scope.visible_entities([e.id for e in named if e.id != entity.id])
        others = [e for e in named if e.id in visible]  # one the client may not see does not exist for it
        if others:
            raise Conflict(
                f"{alias!r} already names entity {others[0].id} ({others[0].name!r})",
                existing_id=others[0].id,
                help="one spelling, one entity: give the alias to that one, or choose another",
            )
        self._store.graph.apply_graph(GraphWrite(extractor=EXPLICIT, read_drawers=(), aliases=((entity.id, alias),)))
        return self.get_entity(entity.id)

    def mention(self, drawer_id: str, entity: str, *, kind: str = "other") -> EntityView:
        """Record that a drawer mentions an entity (named, or by id; a new name makes the entity): what extraction
        would have found, said by a person. The drawer must be one the client may write."""
        if kind not in ENTITY_KINDS:
            raise InvalidRequest(f"unknown kind {kind!r}; one of {', '.join(ENTITY_KINDS)}", field="kind")
        drawer = self._store.drawers.get_drawer(resolve_id(self._store, "drawer", drawer_id, field="drawer_id"))
        seen = visibility()
        if not seen.can_read(drawer.wing, drawer.room):
            raise NotFound(f"no drawer {drawer_id}")
        seen.writable(drawer.wing, drawer.room)
        name = require_name(entity, "entity")
        known = self._store.ids_with_prefix("entity", name, 2) if len(name) >= 8 else []
        known = sorted(self._scope.visible_entities(known))
        if not known and _WHOLE_ID.fullmatch(name):
            # A whole id names an entity, never a new one called by it: one the client may not see is as unknown.
            raise NotFound(f"no entity {name}", help="mention an entity by its name (a new name makes one) or id")
        created: tuple[Entity, ...] = ()
        hints: tuple[EntityHint, ...] = ()
        if len(known) == 1:
            target, spelling = self._store.entities.get_entity(known[0]), name
        else:
            resolver = self._resolver()
            resolution = resolver.resolve(name, kind)
            target, spelling = resolution.entity, name
            created, hints = tuple(resolver.created), tuple(resolution.hints)
        mention = Mention(drawer.id, target.id, spelling if not known else target.name)
        self._store.graph.apply_graph(
            GraphWrite(extractor=EXPLICIT, read_drawers=(), entities=created, hints=hints, mentions=(mention,))
        )
        return self.get_entity(target.id)

    def candidates(self, limit: int = 50) -> list[dict[str, Any]]:
        """Pairs of entities that may be one (a name one edit from another, the same key): for a person to look at;
        nothing is merged."""
        hints = self._store.entities.list_hints(check_limit(limit))
        names = self._store.entities.get_entities([i for h in hints for i in (h.entity_id, h.other_id)])
        if not visibility().reads_everything:
            hints = [
                h for h in hints if self._scope.entity_visible(h.entity_id) and self._scope.entity_visible(h.other_id)
            ]
        return [
            {
                "entity": h.entity_id,
                "entity_name": names[h.entity_id].name if h.entity_id in names else None,
                "other": h.other_id,
                "other_name": names[h.other_id].name if h.other_id in names else None,
                "kind": h.kind,
                "reason": h.reason,
            }  # fmt: skip
            for h in hints
        ]

    def relationships(self, entity_id: str, *, limit: int = 50) -> list[FactView]:
        """The facts an entity takes part in, as subject or object, with their state: its relationships."""
        entity = self.get_entity(entity_id).entity
        touching = self._store.facts.assertions_touching([entity.id], check_limit(limit))
        described = self._describe(touching, self._now())
        fact_ids, drawer_ids = _ids(described)
        self._record("relationships", query=f"entity={entity.id}", fact_ids=fact_ids, drawer_ids=drawer_ids)
        return described

    # --- the graph around an entity or a drawer --------------------------------------------------

    def graph(
        self, *, entity: str | None = None, drawer: str | None = None, depth: int = 1, limit: int = 50
    ) -> dict[str, Any]:
        """The entities and facts around one entity — by its name or alias, else its id — (or those a drawer
        mentions), `depth` steps out (1 or 2), at most `limit` facts (1–200), as nodes and edges for a picture: an
        entity node per entity, a fact node per fact (subject → fact → object), its agreement, conflict and
        supersession links between fact nodes, and the drawer's mentions. `truncated` says when the bound cut it."""
        if (entity is None) == (drawer is None):
            raise InvalidRequest("name exactly one of entity and drawer", field="entity")
        if depth not in (1, 2):
            raise InvalidRequest("depth must be 1 or 2", field="depth")
        limit = check_limit(limit)
        nodes: dict[str, dict[str, Any]] = {}
        edges: list[dict[str, Any]] = []
        if entity is not None:
            seeds = self._named(entity) or [self.find_entity(entity)[0].entity.id]
        else:
            assert drawer is not None
            found = self._store.drawers.get_drawer(resolve_id(self._store, "drawer", drawer, field="drawer"))
            if not visibility().can_read(found.wing, found.room):
                raise NotFound(f"no drawer {drawer}")
            seeds = sorted(self._store.entities.entities_of_drawers([found.id]).get(found.id, set()))
            nodes[found.id] = {
                "id": found.id,
                "kind": "drawer",
                "label": found.name or found.id[:8],
                "wing": found.wing,
            }
            edges.extend({"from": found.id, "to": e, "kind": "mentions"} for e in seeds)
        facts: dict[str, Assertion] = {}
        frontier, reached = list(seeds), set(seeds)
        truncated = False
        for _ in range(depth):
            touching = self._scope.facts(self._store.facts.assertions_touching(frontier, limit + 1))
            fresh = [f for f in touching if f.id not in facts]
            if len(facts) + len(fresh) > limit:
                truncated = True
                fresh = fresh[: limit - len(facts)]
            facts.update((f.id, f) for f in fresh)
            frontier = [i for f in fresh for i in (f.subject, f.object) if i not in reached]
            reached.update(frontier)
            if truncated or not frontier:
                break
        views = self._describe(list(facts.values()), self._now())
        entities = self._store.entities.get_entities(
            sorted(reached | {i for f in facts.values() for i in (f.subject, f.object)})
        )
        for entity_id, known in entities.items():
            nodes[entity_id] = {"id": entity_id, "kind": "entity", "label": known.name, "type": known.kind,
                                "seed": entity_id in seeds}  # fmt: skip
        shown = {v.id for v in views}
        for view in views:
            fact = view.fact
            nodes[fact.id] = {"id": fact.id, "kind": "fact", "label": fact.predicate.replace("_", " "),
                              "state": view.state, "level": view.level}  # fmt: skip
            edges.append({"from": fact.subject, "to": fact.id, "kind": "subject"})
            edges.append({"from": fact.id, "to": fact.object, "kind": "object"})
            for link in view.links:
                if link.from_id == fact.id and link.to_id in shown:
                    edges.append({"from": link.from_id, "to": link.to_id, "kind": link.kind})
        self._record("graph", query=f"entity={entity}" if entity else f"drawer={drawer}", fact_ids=sorted(shown))
        return {"nodes": list(nodes.values()), "edges": edges, "truncated": truncated}

    # --- explicit operations --------------------------------------------------------------------

    def add(self, spec: FactSpec, *, requested_by: str = "http") -> FactView:
        """An explicit fact: entities are resolved (or created), the assertion is marked explicit."""
        self._may_state(spec.evidence_drawer)
        fact, write = self._new_fact(self._validated(spec), spec.evidence_drawer)
        self._store.graph.apply_graph(write)
        return self._view(fact.id)

    def supersede(self, fact_id: str, change: FactCorrection, *, requested_by: str = "http") -> Superseded:
        """Close the fact and open its replacement in one transaction, linked `supersedes`."""
        old = self._readable(fact_id)
        fact_id = old.id
        self._writable(old)
        self._may_state(change.evidence_drawer if change.evidence_drawer is not None else old.drawer_id)
        if old.valid_to is not None:
            raise Conflict(f"fact {fact_id} was already closed at {old.valid_to}", existing_id=fact_id)
        names = self._store.entities.get_entities([old.subject, old.object])
        at = self._now()
        merged = FactSpec(
            subject=change.subject if change.subject is not None else names[old.subject].name,
            predicate=change.predicate if change.predicate is not None else old.predicate,
            object=change.object if change.object is not None else names[old.object].name,
            confidence=change.confidence if change.confidence is not None else old.confidence,
            subject_kind=change.subject_kind,
            object_kind=change.object_kind,
            valid_from=at,
        )
        fact, write = self._new_fact(self._validated(merged), change.evidence_drawer)
        reason = self._redacted(_reason(change.reason, default="superseded explicitly"))
        link = make_link(fact.id, old.id, "supersedes", EXPLICIT, reason, at, fact.drawer_id)
        self._store.graph.apply_graph(
            GraphWrite(
                extractor=EXPLICIT,
                read_drawers=(),
                entities=write.entities,
                aliases=write.aliases,
                hints=write.hints,
                mentions=write.mentions,
            )
        )
        # The replacement is compared with what the palace holds as any stated fact is (`_new_fact`): inside a
        # conflict it contradicts the open rivals of the fact it replaces, and joins their group (ADR 048). What it
        # replaces is closed by this decision, not contradicted.
        compared = [lk for lk in write.links if old.id not in (lk.from_id, lk.to_id)]
        self._store.facts.record_decision(new=fact, close=(old.id, at), links=[link, *compared])
        return Superseded(self._view(fact.id), self._view(old.id))

    def invalidate(self, fact_id: str, reason: str | None) -> FactView:
        """Close the fact without a replacement; the reason is recorded on an `invalidates` link."""
        fact = self._readable(fact_id)
        fact_id = fact.id
        self._writable(fact)
        at = self._now()
        link = make_link(fact_id, fact_id, "invalidates", EXPLICIT, self._redacted(_reason(reason)), at)
        self._store.facts.record_decision(close=(fact_id, at), links=[link])
        return self._view(fact_id)

    def link(self, from_id: str, to_id: str, kind: str, reason: str | None) -> Linked:
        if kind not in EXPLICIT_LINKS:
            raise InvalidRequest(f"kind must be one of {', '.join(EXPLICIT_LINKS)}", field="kind")
        from_id, to_id = self.resolve(from_id, field="from"), self.resolve(to_id, field="to")
        if from_id == to_id:
            raise InvalidRequest("a fact cannot be linked to itself", field="to")
        self._writable(self._readable(from_id))
        self._readable(to_id)
        link = make_link(from_id, to_id, kind, EXPLICIT, self._redacted(_reason(reason)), self._now())
        self._store.facts.record_decision(links=[link])
        stored = next(lk for lk in self._store.facts.links_of([from_id]) if lk.id == link.id)
        return Linked(stored, self._view(from_id), self._view(to_id))

    def _may_state(self, evidence_drawer: str | None) -> None:
        """A scoped writer states facts only from evidence in its wings (a fact without evidence has no wing)."""
        seen = visibility()
        if seen.is_whole:
            return
        if evidence_drawer is None:
            if seen.write is not None:
                raise AccessDenied(
                    f"this token may write only to {', '.join(sorted(seen.write)) or 'no wing'}: a fact needs an "
                    "evidence drawer there",
                    help="pass evidence_drawer, a drawer of a wing the token writes to",
                )
            return
        places = self._store.search.drawer_places([evidence_drawer])
        place = places.get(evidence_drawer)
        if place is None or not (seen.can_read(place.wing, place.room) or seen.can_write(place.wing, place.room)):
            raise NotFound(f"no drawer {evidence_drawer}")
        seen.writable(place.wing, place.room)

    def check_spec(self, spec: FactSpec) -> None:
        """Validate an explicit fact without writing anything (for all-or-nothing batches)."""
        self._validated(spec)

    def _validated(self, spec: FactSpec) -> ValidFact:
        subject = self._redacted(require_name(spec.subject, "subject"))
        object_ = self._redacted(require_name(spec.object, "object"))
        if spec.predicate not in PREDICATES:
            raise InvalidRequest(f"predicate must be one of {', '.join(PREDICATES)}", field="predicate")
        confidence = spec.confidence
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
            raise InvalidRequest("confidence must be a number from 0 to 1", field="confidence")
        for side, kind in (("subject_kind", spec.subject_kind), ("object_kind", spec.object_kind)):
            if kind is not None and kind not in ENTITY_KINDS:
                raise InvalidRequest(f"{side} must be one of {', '.join(ENTITY_KINDS)}", field=side)
        if subject.casefold() == object_.casefold():
            raise InvalidRequest("subject and object must differ", field="object")
        valid_from = parse_instant(spec.valid_from, field="valid_from") if spec.valid_from else self._now()
        return ValidFact(subject, spec.predicate, object_, float(confidence), spec.subject_kind or "other",
                         spec.object_kind or "other", valid_from)  # fmt: skip

    def _redacted(self, text: str) -> str:
        return self._redactor.text(text).text

    def _new_fact(self, valid: ValidFact, evidence_drawer: str | None) -> tuple[Assertion, GraphWrite]:
        subject, predicate, object_, confidence = valid.subject, valid.predicate, valid.object, valid.confidence
        origin = None
        if evidence_drawer:
            drawer = self._store.drawers.get_drawer(evidence_drawer)
            origin = drawer.source.origin.to_json() if drawer.source.origin else None
        resolver = self._resolver()
        subject_entity = resolver.resolve(subject, valid.subject_kind)
        object_entity = resolver.resolve(object_, valid.object_kind)
        fact = Assertion(
            id=str(uuid.uuid4()),
            subject=subject_entity.entity.id,
            predicate=predicate,
            object=object_entity.entity.id,
            confidence=float(confidence),
            valid_from=valid.valid_from,
            valid_to=None,
            drawer_id=evidence_drawer,
            extractor=EXPLICIT,
            job_id=None,
            origin=origin,
            explicit=True,
            created_at=self._now(),
        )
        # A stated fact meets what the palace holds as an extracted one does: the same claim confirms, another value
        # of a single-valued predicate contradicts (two agents' checkpoints can disagree).
        stored = self._store.facts.facts_to_link(
            fact, predecessor_drawer=None, rivals=predicate in SINGLE_VALUED_PREDICATES, limit=LINK_FANOUT
        )
        decided = {
            frozenset((lk.from_id, lk.to_id)) for lk in self._store.facts.explicit_links_of([f.id for f in stored])
        }
        links = infer_links(fact, stored, predecessor_drawer=None, explicit_pairs=decided, at=self._now())
        write = GraphWrite(
            extractor=EXPLICIT,
            read_drawers=(),
            entities=tuple(resolver.created),
            aliases=tuple(resolver.aliases),
            hints=tuple(subject_entity.hints + object_entity.hints),
            assertions=(fact,),
            links=tuple(links),
            # The drawer that states it mentions both ends: its entity pages list it at once, not after extraction.
            mentions=tuple(
                Mention(evidence_drawer, end.entity.id, spelling)
                for end, spelling in ((subject_entity, subject), (object_entity, object_))
                if evidence_drawer
            ),
        )
        return fact, write


def _ids(views: Sequence[FactView]) -> tuple[list[str], list[str]]:
    """What a read of these facts returned, for the read audit: the facts and their evidence drawers."""
    return [v.id for v in views], list(dict.fromkeys(v.fact.drawer_id for v in views if v.fact.drawer_id))


def _reason(value: Any, *, field: str = "reason", default: str | None = None) -> str:
    if value is None and default is not None:
        return default
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest("a non-blank reason is required", field=field)
    return value.strip()
