"""Entity resolution (SPEC §4): exact name, normalized key, recorded alias, one 1-edit candidate (an edit of a
number is no typo: `same_numbers`); else a new entity.

Entities are never merged or deleted automatically. When resolution is unsure, a new entity is created with a
`possibly_same` hint pointing at the candidates, for a person to decide.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memcastle.clock import Clock, utc_now
from memcastle.model import EDIT_MIN_CHARS, Entity, EntityHint, key_variants, normalize_text
from memcastle.store import EntityStore

_NAMESPACE = uuid.UUID("0e5b9a5e-2f63-4c55-9a1e-3d8b8f1c7a21")


def entity_id_for(kind: str, key: str) -> str:
    """Deterministic, so a replayed extraction creates the same entity."""
    return str(uuid.uuid5(_NAMESPACE, f"{kind}\x00{key}"))


def within_one_edit(a: str, b: str) -> bool:
    """True when `a` and `b` differ by exactly one insertion, deletion or substitution."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1 :] == b[i + 1 :]
    return a[i:] == b[i + 1 :]


def same_numbers(a: str, b: str) -> bool:
    """Whether two names hold the same numbers: one edit apart is a typo in words, but another thing in numbers
    (port 5432 and port 5433, Python 3.11 and 3.12, RFC 9110 and 9111)."""
    return _NUMBERS.findall(a) == _NUMBERS.findall(b)


_NUMBERS = re.compile(r"\d+")


@dataclass
class Resolution:
    entity: Entity
    created: bool
    how: str
    hints: list[EntityHint] = field(default_factory=list)


class EntityResolver:
    """Resolves names against the palace's entities plus those created earlier in the same batch.

    Every step is an index lookup (name, key, alias, key variants), so resolving a name costs the same in a palace of
    a hundred entities or of a million; what it has looked up or created is remembered for the batch.

    `visible`, for a write on behalf of a scoped client, keeps the palace's entities it may see (ADR 0049): one it
    may not is as if it did not exist — the name makes a new entity, under an id of its own.
    """

    def __init__(
        self,
        store: EntityStore,
        *,
        now: Clock = utc_now,
        fuzzy: bool = True,
        visible: Callable[[Sequence[str]], set[str]] | None = None,
    ) -> None:
        self._store = store
        self._now = now
        self._fuzzy = fuzzy  # `dedup.entity_fuzzy`: off, a name one edit from a known one is another entity
        self._visible = visible
        self.created: list[Entity] = []
        self.aliases: list[tuple[str, str]] = []  # (entity id, spelling) learnt by one-edit matches
        self._learnt: dict[str, list[str]] = {}  # alias key -> entity ids learnt in this batch

    @staticmethod
    def _compatible(entity: Entity, kind: str) -> bool:
        return entity.kind == kind or "other" in (entity.kind, kind)

    def _seen(self, entities: Sequence[Entity]) -> list[Entity]:
        """Those of the palace's entities the write may resolve to: all, or the client's visible ones."""
        if self._visible is None or not entities:
            return list(entities)
        kept = self._visible([e.id for e in entities])
        return [e for e in entities if e.id in kept]

    def _new_id(self, kind: str, key: str) -> str:
        """The deterministic id; for a scoped write whose (kind, key) an invisible entity already holds, a fresh one
        (the answer must not be that entity)."""
        wanted = entity_id_for(kind, key)
        if self._visible is not None and self._store.get_entities([wanted]):
            return str(uuid.uuid4())
        return wanted

    def _named(self, name: str, key: str) -> list[Entity]:
        found = {e.id: e for e in self._seen(self._store.entities_named(name, key))}
        found.update({e.id: e for e in self.created if e.name == name or e.key == key})
        return list(found.values())

    def _aliased(self, key: str) -> list[Entity]:
        found = {e.id: e for e in self._seen(self._store.entities_with_alias(key))}
        learnt = set(self._learnt.get(key, ()))
        if learnt:
            known = {e.id: e for e in self.created if e.id in learnt}
            missing = learnt - known.keys() - found.keys()
            known.update(self._store.get_entities(sorted(missing)) if missing else {})
            found.update(known)
        return list(found.values())

    def _near(self, key: str) -> list[Entity]:
        variants = key_variants(key) if self._fuzzy else set()
        if not variants:
            return []
        found = {e.id: e for e in self._seen(self._store.entities_sharing_variants(sorted(variants)))}
        found.update({e.id: e for e in self.created if key_variants(e.key) & variants})
        return [
            e
            for e in found.values()
            if len(e.key) >= EDIT_MIN_CHARS and within_one_edit(e.key, key) and same_numbers(e.key, key)
        ]

    def resolve(self, name: str, kind: str) -> Resolution:
        name = " ".join(name.split())
        key = normalize_text(name)
        named = self._named(name, key)
        found = self._known(name, key, kind, named)
        if found is not None:
            return found
        bare = _ARTICLE.sub("", name)
        if bare and bare != name:  # "the Harbor build server" is the Harbor build server a note named
            bare_key = normalize_text(bare)
            found = self._known(bare, bare_key, kind, self._named(bare, bare_key), learn=False)
            if found is not None:
                return Resolution(entity=found.entity, created=False, how=f"{found.how} without the article")
        near = [e for e in self._near(key) if self._compatible(e, kind)]
        entity = Entity(id=self._new_id(kind, key), name=name, kind=kind, key=key, aliases=(), created_at=self._now())
        self.created.append(entity)
        hints = [
            EntityHint(entity.id, other.id, "possibly_same", f"{name!r} is one edit from {other.name!r}")
            for other in near
        ]
        same_key = sorted((e for e in named if e.key == key and e.id != entity.id), key=lambda e: (e.created_at, e.id))
        hints += [
            EntityHint(entity.id, other.id, "possibly_same", f"same name as {other.name!r}, a {other.kind}")
            for other in same_key
        ]
        return Resolution(entity=entity, created=True, how="new", hints=hints)

    def _known(self, name: str, key: str, kind: str, named: list[Entity], *, learn: bool = True) -> Resolution | None:
        """An existing entity the name resolves to: by exact name, key, recorded alias, or the single entity one
        edit away (whose alias the spelling then becomes, when `learn`); None when there is none."""
        for how, matches in (
            ("name", [e for e in named if e.name == name and self._compatible(e, kind)]),
            ("key", [e for e in named if e.key == key and self._compatible(e, kind)]),
            ("alias", [e for e in self._aliased(key) if self._compatible(e, kind)]),
        ):
            if matches:
                return Resolution(entity=_oldest(matches), created=False, how=how)
        near = [e for e in self._near(key) if self._compatible(e, kind)]
        if len(near) == 1 and learn:
            # The spelling becomes an alias, so the same spelling resolves the same way later on.
            self.aliases.append((near[0].id, name))
            self._learnt.setdefault(key, []).append(near[0].id)
            return Resolution(entity=near[0], created=False, how="one edit")
        return None


_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)


def _oldest(matches: list[Entity]) -> Entity:
    return min(matches, key=lambda e: (e.created_at, e.id))
