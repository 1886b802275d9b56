"""The `extract` job: read current drawers with the active extractor and file entities, mentions, facts and links.

Each batch is written in one transaction together with its drawers' "read" markers, so a crash re-reads a batch
instead of losing it, and a provider failure writes nothing of the batch.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memcastle.clock import Clock, utc_now
from memcastle.jobs.context import JobContext
from memcastle.knowledge.entities import EntityResolver
from memcastle.knowledge.extraction import EMPTY, ExtractionInput, ExtractionProvider
from memcastle.knowledge.facts import LINK_FANOUT, infer_links
from memcastle.model import SINGLE_VALUED_PREDICATES, Assertion, Drawer, EntityHint, FactLink, GraphWrite, Mention
from memcastle.model.jobs import JobKind
from memcastle.preferences import Policy, resolve
from memcastle.store import KnowledgeStore

KIND = JobKind.EXTRACT.value
COALESCE_KEY = "extract"
_NAMESPACE = uuid.UUID("9d3c1c52-7f0b-4e3a-8d0e-1b6f4f2e9a77")


def extractor_key(provider: ExtractionProvider) -> str:
    return f"{provider.name}:{provider.model}" if provider.model else provider.name


def assertion_id_for(extractor: str, drawer_id: str, subject: str, predicate: str, object_: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{extractor}\x00{drawer_id}\x00{subject}\x00{predicate}\x00{object_}"))


def extraction_input(drawer: Drawer, policy: Policy) -> ExtractionInput:
    """The text with its provenance and effective preference: context for the provider, never a verdict."""
    origin = drawer.source.origin
    match = resolve(policy, origin)
    return ExtractionInput(
        id=drawer.id,
        text=drawer.content,
        provenance={
            "connector": origin.connector if origin else None,
            "document": origin.document if origin else None,
            "uri": drawer.source.uri,
            "occurred_at": origin.occurred_at if origin else None,
        },
        preference={
            "level": match.level,
            "connector": match.connector,
            "criterion": match.criterion.to_json() if match.criterion else None,
        },
    )


@dataclass(frozen=True)
class ExtractionLimits:
    """What an extracted fact must reach to be kept (`extraction.min_confidence`) and the most entities and
    relations kept per drawer (0: no cap)."""

    min_confidence: float
    max_entities: int = 0
    max_relations: int = 0


class ExtractionSweep:
    """Runs `extract` jobs over current drawers not yet read by the active extractor."""

    def __init__(
        self,
        store: KnowledgeStore,
        provider: ExtractionProvider,
        policy: Policy,
        limits: ExtractionLimits,
        *,
        batch_size: int = 16,
        code: bool = False,
        fuzzy: bool = True,
        now: Clock = utc_now,
    ) -> None:
        self._code = code
        # Per drawer, the most entities and relations kept (0: no cap): a provider that answers a list of every
        # capitalised word cannot fill the graph with it. `fuzzy`: `dedup.entity_fuzzy`.
        self._max_entities = limits.max_entities
        self._max_relations = limits.max_relations
        self._fuzzy = fuzzy
        self._store = store
        self._now = now
        self._provider = provider
        self._policy = policy
        self._min_confidence = limits.min_confidence
        self._batch_size = batch_size

    def run(self, ctx: JobContext) -> Mapping[str, Any]:
        extractor = extractor_key(self._provider)
        tally = {
            "drawers": 0,
            "entities": 0,
            "facts": 0,
            "links": 0,
            "dropped_below_floor": 0,
            "dropped_over_cap": 0,
            **{k: int(v) for k, v in ctx.state.items() if isinstance(v, int) and k != "after_seq"},
        }
        # The walk goes by `seq` from where the last checkpoint left it; the pending count is taken once, so no batch
        # costs a pass over the palace. Drawers filed while the sweep runs come after the cursor and are read too.
        after_seq = int(ctx.state.get("after_seq", 0))
        started_with = tally["drawers"]
        pending = self._store.graph.count_to_extract(extractor)
        while True:
            drawers, after_seq = self._store.graph.next_to_extract(extractor, self._batch_size, after_seq=after_seq)
            if not drawers:
                break
            write, counts = self.read_batch(drawers, extractor, ctx.job_id)
            self._store.graph.apply_graph(write)
            for key, value in counts.items():
                tally[key] += value
            left = max(0, pending - (tally["drawers"] - started_with))
            ctx.checkpoint(
                {**tally, "after_seq": after_seq},
                current=tally["drawers"],
                total=tally["drawers"] + left,
                message=f"{tally['facts']} facts",
            )
        return {**tally, "extractor": extractor}

    def read_batch(
        self, drawers: list[Drawer], extractor: str, job_id: str | None
    ) -> tuple[GraphWrite, dict[str, int]]:
        """Extract a batch and turn it into one graph write (nothing is written here)."""
        # Source code and data files are read (so they are not asked again) but not extracted, unless configured:
        # over code the names found are identifiers and keywords ("Return True member_of TypeError"), a third of a
        # palace in entities and mentions for nothing a question asks about.
        prose = [d for d in drawers if self._code or not is_code(d)]
        found = self._provider.extract([extraction_input(d, self._policy) for d in prose]) if prose else []
        extracted = dict(zip((d.id for d in prose), found, strict=True))
        results = [extracted.get(d.id, EMPTY) for d in drawers]
        resolver = EntityResolver(self._store.entities, now=self._now, fuzzy=self._fuzzy)
        mentions: dict[tuple[str, str, str], Mention] = {}
        hints: list[EntityHint] = []
        assertions: list[Assertion] = []
        dropped = over_cap = 0
        now = self._now()
        for drawer, result in zip(drawers, results, strict=True):
            ids_by_name: dict[str, str] = {}
            entities, relations = list(result.entities), list(result.relations)
            if self._max_entities and len(entities) > self._max_entities:
                over_cap += len(entities) - self._max_entities
                entities = entities[: self._max_entities]  # in the provider's order: the first it named
            kept_relations = [r for r in relations if r.confidence >= self._min_confidence]
            dropped += len(relations) - len(kept_relations)
            if self._max_relations and len(kept_relations) > self._max_relations:
                over_cap += len(kept_relations) - self._max_relations
                kept_relations = sorted(kept_relations, key=lambda r: -r.confidence)[: self._max_relations]
            for entity in entities:
                resolution = resolver.resolve(entity.name, entity.kind)
                ids_by_name[entity.name] = resolution.entity.id
                hints.extend(resolution.hints)
                mentions[(drawer.id, resolution.entity.id, entity.name)] = Mention(
                    drawer.id, resolution.entity.id, entity.name
                )
            origin = drawer.source.origin
            # The floor applied above whatever the source's preference: trust does not make a claim true.
            for relation in kept_relations:
                subject = ids_by_name.get(relation.subject) or resolver.resolve(relation.subject, "other").entity.id
                object_ = ids_by_name.get(relation.object) or resolver.resolve(relation.object, "other").entity.id
                assertions.append(
                    Assertion(
                        id=assertion_id_for(extractor, drawer.id, subject, relation.predicate, object_),
                        subject=subject,
                        predicate=relation.predicate,
                        object=object_,
                        confidence=relation.confidence,
                        valid_from=(origin.occurred_at if origin and origin.occurred_at else drawer.valid_from),
                        valid_to=None,
                        drawer_id=drawer.id,
                        extractor=extractor,
                        job_id=job_id,
                        origin=origin.to_json() if origin else None,
                        explicit=False,
                        created_at=now,
                    )
                )
        links = self._infer(assertions, drawers, now)
        write = GraphWrite(
            extractor=extractor,
            read_drawers=tuple(d.id for d in drawers),
            entities=tuple(resolver.created),
            aliases=tuple(resolver.aliases),
            hints=tuple(hints),
            mentions=tuple(mentions.values()),
            assertions=tuple(assertions),
            links=tuple(links),
        )
        return write, {
            "drawers": len(drawers),
            "entities": len(resolver.created),
            "facts": len(assertions),
            "links": len(links),
            "dropped_below_floor": dropped,
            "dropped_over_cap": over_cap,
        }

    def _infer(self, assertions: list[Assertion], drawers: list[Drawer], at: str) -> list[FactLink]:
        predecessor = {d.id: d.supersedes for d in drawers}
        links: list[FactLink] = []
        seen: list[Assertion] = []
        for new in assertions:
            before = predecessor.get(new.drawer_id or "")
            # Bounded: a claim repeated in ten thousand drawers links each new copy to the newest few, and agreement
            # stays connected through them, instead of every copy linking to every other.
            stored = self._store.facts.facts_to_link(
                new, predecessor_drawer=before, rivals=new.predicate in SINGLE_VALUED_PREDICATES, limit=LINK_FANOUT
            )
            existing = _bounded([*stored, *seen], new, before)
            explicit_pairs = {
                frozenset((lk.from_id, lk.to_id))
                for lk in self._store.facts.explicit_links_of([e.id for e in existing])
            }
            links.extend(infer_links(new, existing, predecessor_drawer=before, explicit_pairs=explicit_pairs, at=at))
            seen.append(new)
        return links


# Files whose text is code or data, not prose (Markdown, plain text, reStructuredText and the like stay prose).
CODE_EXTENSIONS = frozenset(
    "py pyi pyx js mjs cjs jsx ts tsx java kt kts scala go rs c h cc cpp cxx hh hpp m mm cs fs swift rb php pl pm "
    "lua r jl hs ml mli ex exs erl clj cljs dart sh bash zsh fish ps1 bat sql vue svelte css scss sass less html htm "
    "xml json jsonl yaml yml toml ini cfg conf lock gradle cmake mk proto graphql tf ipynb".split()
)


def is_code(drawer: Drawer) -> bool:
    """Whether a mined drawer is a source code or data file's (by its extension in the metadata snapshot)."""
    origin = drawer.source.origin
    if drawer.source.kind != "file" or origin is None:
        return False
    extension = origin.metadata.get("extension") if isinstance(origin.metadata, Mapping) else None
    return isinstance(extension, str) and extension.lower() in CODE_EXTENSIONS


def _bounded(candidates: list[Assertion], new: Assertion, before: str | None) -> list[Assertion]:
    """The stored facts and those read earlier in the batch that a new fact is compared with: the newest LINK_FANOUT
    of the same claim, the newest LINK_FANOUT of a rival value, and every fact of the drawer its evidence replaced."""
    same = sorted(
        {
            f.id: f for f in candidates if f.subject == new.subject and f.predicate == new.predicate and f.id != new.id
        }.values(),
        key=lambda f: (f.valid_from, f.id),
    )
    agreeing = [f for f in same if f.object == new.object][-LINK_FANOUT:]
    rivals = [f for f in same if f.object != new.object][-LINK_FANOUT:]
    superseded = [f for f in same if before is not None and f.drawer_id == before]
    return list({f.id: f for f in (*agreeing, *rivals, *superseded)}.values())
