"""The search pipeline (SPEC §3): eligible candidates from each leg, fusion, pool relevance, truncation.

Scope and time are applied inside each leg, before any ranking or limit. A neutral pipeline leaves scores as the
base signal of the ranking used (BM25, cosine or RRF); `relevance` is that signal min-max normalized in the pool."""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from memcastle.clock import Clock, utc_now
from memcastle.errors import InvalidRequest, ProviderError
from memcastle.knowledge.standing import Standing, marked, marked_signals, stand_first, standings
from memcastle.model import AsOf, Assertion, Drawer, Hit, LexicalQuery, Scope, ScoredDrawer, SearchQuery, SearchResult
from memcastle.preferences import NEUTRAL, Policy, PoolEntry, pools_for, rerank
from memcastle.search.embeddings import EmbeddingProvider
from memcastle.search.expansion import expand
from memcastle.search.fusion import Ranked, fuse, pool_relevance
from memcastle.search.lexical import query_terms
from memcastle.search.passage_bm25 import best_passage_scores, fill_below, idf, rescored
from memcastle.search.second_stage import StagedText, stage_candidates
from memcastle.search.snippets import TermMatcher, snippet
from memcastle.search.tuning import DEFAULT_TUNING, EngineTuning
from memcastle.search.turns import Turns
from memcastle.store import KnowledgeStore

log = logging.getLogger(__name__)


class SemanticLeg(Protocol):
    """Passage vectors searched by meaning: in memory (`semantic.SemanticIndex`) or in the store (`stored`)."""

    dimension: int | None

    def refresh(self, *, wait: bool = True) -> None: ...
    @property
    def loading(self) -> bool: ...
    def describe(self) -> dict[str, Any]: ...
    def has_vector(self, drawer_id: str) -> bool: ...
    def waiting_among(self, drawer_ids: Sequence[str]) -> set[str]: ...
    def forget(self, drawer_ids: Sequence[str]) -> None:
        """Drop what is held of drawers the store has erased."""
        ...

    def nearest_passages(self, vector: npt.NDArray[np.float32], drawer_ids: Sequence[str]) -> dict[str, int]:
        """Each drawer's passage nearest the query, by its number (drawers without vectors are left out)."""
        ...

    def candidates(
        self,
        vector: npt.NDArray[np.float32],
        need: int,
        scope: Scope,
    ) -> list[ScoredDrawer]: ...


MIN_LEG = 20
PASSAGE_DEPTH = 2  # lexical candidates fetched per one kept, to be ranked again by their best passages
# How many of the lexical leg's best BM25 candidates are ranked again by their best passage, whatever its depth: what
# the hybrid leg of a default search (limit 10) rescored before every search ranked a pool of 50 (docs/adr/0024).
RESCORE_DEPTH = 40
PALACE_SIZE_TTL = 60.0  # seconds a count of the palace's drawers is used before it is taken again


class SearchEngine:
    """Runs a validated `SearchQuery` against the store and the semantic index."""

    def __init__(
        self,
        store: KnowledgeStore,
        provider: EmbeddingProvider | None = None,
        index: SemanticLeg | None = None,
        *,
        tuning: EngineTuning = DEFAULT_TUNING,
        pending: Callable[[str], int] | None = None,
        policy: Policy = NEUTRAL,
        now: Clock = utc_now,
    ) -> None:
        self._store = store
        self._context_weight = tuning.context_weight
        self.second_stage = tuning.second_stage
        # At most `parallel` searches compute at once (0: one per CPU core); the others wait their turn. Sixteen
        # searches on two cores at once spent a third more CPU each (their threads trading the interpreter and the
        # cores) than the same searches taken two or three at a time (docs/adr/0015-search-at-scale.md).
        turns = tuning.parallel or os.cpu_count() or 1
        self._turns = Turns(turns)
        self._legs = ThreadPoolExecutor(turns, thread_name_prefix="lexical-leg")
        self._now = now
        # The model that embeds queries and the vectors it is searched against, always read as one pair: a palace
        # moving to another model switches both at once (`switch`), and a search under way keeps the pair it began
        # with (`_pinned`), so no ranking mixes two models' spaces.
        self._pair: tuple[EmbeddingProvider | None, SemanticLeg | None] = (provider, index)
        self._pinned = threading.local()
        self._weights = tuning.weights
        self._pending = pending or (lambda model: 0)  # how many drawers still wait for a model's vectors
        self._pending_seen: tuple[float, int] | None = None
        self._pending_ttl = tuning.pending_ttl
        self._size_seen: tuple[float, int] | None = None
        self._pending_lock = threading.Lock()
        self._counting: Future[None] | None = None
        self._counter = ThreadPoolExecutor(1, thread_name_prefix="pending-count")
        self._passages = tuning.passages
        self._fill_rows = tuning.fill_rows or None
        self.policy = policy
        self.freshness = tuning.freshness

    @property
    def _provider(self) -> EmbeddingProvider | None:
        return (getattr(self._pinned, "pair", None) or self._pair)[0]

    @property
    def _index(self) -> SemanticLeg | None:
        return (getattr(self._pinned, "pair", None) or self._pair)[1]

    def switch(self, provider: EmbeddingProvider, index: SemanticLeg) -> EmbeddingProvider | None:
        """Rank by another model from the next search on (its vectors complete and loaded); returns the provider
        it replaces (to be closed by the caller once searches under way are done with it)."""
        previous = self._pair[0]
        self._pair = (provider, index)
        return previous

    def close(self) -> None:
        """Let the threads of the lexical leg, of the pending count and of the model's runs go (before the store
        closes)."""
        self._counter.shutdown(wait=True)
        self._legs.shutdown(wait=True)
        close = getattr(self._provider, "close", None)
        if close is not None:
            close()

    def forget(self, drawer_ids: Sequence[str]) -> None:
        """Drop the vectors of erased drawers from the semantic leg (memory and any file of its own)."""
        if self._index is not None and drawer_ids:
            self._index.forget(drawer_ids)

    def _adjusts(self, query: SearchQuery) -> bool:
        return (query.preferences and not self.policy.is_neutral) or not self.freshness.is_off

    def _rerank(self, query: SearchQuery, entries: list[PoolEntry], drawers: Mapping[str, Drawer]) -> list[Hit]:
        """The policy's adjustment (unless the search turned preferences off) and the freshness boost, which is
        counted from the instant the search is about."""
        policy = self.policy if query.preferences else NEUTRAL
        return rerank(policy, entries, drawers, freshness=self.freshness, at=self._at(query))

    def _at(self, query: SearchQuery) -> str:
        """The instant a search is about: its `as_of` on the valid axis, else now."""
        when = query.scope.when
        return when.at if isinstance(when, AsOf) and when.axis == "valid" else self._now()

    def _standing(self, query: SearchQuery, drawer_ids: Sequence[str]) -> dict[str, Standing]:
        """The pool's drawers that evidence a contested fact, with the standing signal of each
        (`memcastle.knowledge.standing`); facts whose evidence lies outside the client's places are not seen."""
        places = query.scope.places

        def readable(facts: Sequence[Assertion]) -> set[str]:
            allowed = set(places or ())
            where = self._store.search.drawer_places([f.drawer_id for f in facts if f.drawer_id])
            seen = {d for d, p in where.items() if (p.wing, None) in allowed or (p.wing, p.room) in allowed}
            return {f.id for f in facts if f.drawer_id in seen}

        return standings(
            self._store, drawer_ids, self.policy, self._at(query), readable=None if places is None else readable
        )

    @property
    def fill_rows(self) -> int | None:
        """The bound on the hybrid lexical leg's fill (`search.fill_rows`)."""
        return self._fill_rows

    @property
    def dimension(self) -> int | None:
        """The stored vectors' dimension (None until the first vector is loaded). Never waits for a load under way:
        the first one at a daemon's start reads every vector (most of a minute at a million), and status is asked
        meanwhile."""
        if self._index is None:
            return None
        self._index.refresh(wait=False)
        return self._index.dimension

    @property
    def ranks_by(self) -> str | None:
        """The model whose vectors the semantic leg ranks by now (None without embeddings)."""
        if self._index is None or not self.has_embeddings:
            return None
        model = getattr(self._index, "model", None)
        return str(model) if model is not None else None

    def take_new_vectors(self) -> None:
        """Have the semantic leg load vectors stored outside the embed sweep, without waiting for it."""
        if self._index is not None:
            self._index.refresh(wait=False)

    @property
    def semantic_leg(self) -> SemanticLeg | None:
        """The semantic leg searches rank by now (None without embeddings)."""
        return self._index

    def index_status(self) -> dict[str, Any] | None:
        """How the semantic leg searches (see `SemanticIndex.describe`) and by which model's vectors (`ranks_by`:
        an older model's while a palace moves to the configured one, `search.transition`); None without embeddings."""
        index = self._index
        if index is None:
            return None
        return {**index.describe(), "ranks_by": getattr(index, "model", None)}

    @property
    def has_embeddings(self) -> bool:
        return self._provider is not None and self._provider.is_enabled and self._index is not None

    def waiting_for_vector(self, drawer_id: str) -> bool:
        """Whether the drawer has no vectors yet (hybrid fusion stands its lexical rank in for the missing one)."""
        return self._index is not None and not self._index.has_vector(drawer_id)

    def search(self, query: SearchQuery) -> SearchResult:
        with self._turns:
            self._pinned.pair = self._pair
            try:
                return self._search(query)
            finally:
                self._pinned.pair = None

    def _search(self, query: SearchQuery) -> SearchResult:
        warnings: list[str] = []
        # Fixed pools whatever the limit and the policy: the first k hits are the same at any limit from k up, and a
        # neutral policy equals a palace without preferences (docs/adr/0024).
        pools = pools_for(query.limit)
        matcher = TermMatcher(query.text)  # one per search: its stages read the same drawers' words
        early: Future[tuple[list[ScoredDrawer], bool]] | None = None
        if query.ranking in ("auto", "hybrid") and self.has_embeddings:
            # The lexical leg runs beside the query's embedding and the semantic leg: both release the interpreter
            # while they compute (SQLite, onnxruntime), so one hybrid search takes about as long as its slower leg.
            early = self._legs.submit(
                self.lexical_leg_exact, query, self._leg_depth(pools[0]), self._fill_rows, near=True, matcher=matcher
            )
        ranking, vector = self._choose_ranking(query, warnings)
        if ranking == "lexical" and early is not None:
            early.cancel()
            early = None
        direct: list[Hit] = []
        rescoring = self.second_stage.applies(query.text, query.rerank)
        for size in pools:
            pooled = self._pool(query, ranking, vector, size, early, matcher)
            early = None
            if rescoring:
                pooled = self.second_stage.rescore(
                    query.text,
                    pooled,
                    self._texts,
                    self._idf,
                    asked=query.rerank,
                    measure=self._store.search.content_lengths,
                    matcher=matcher,
                )
            shown = {hit.drawer.id for hit in direct}
            direct += self._ranked(query, pooled, shown, min(size, query.limit) - len(direct))
            if len(pooled) < size:
                break  # every candidate there is was in this pool: a larger one holds no more
        if ranking != "lexical" and self._index is not None and self._index.loading:
            warnings.append(
                f"the stored vectors are still being read after the start ({self._index.describe()['vectors']:,} so "
                "far); the semantic leg searched those"
            )
        # Expanded hits come after the direct ones, never interleaved.
        related = []
        if query.expand:
            found = expand(self._store, query, direct, self._now(), pools[0], self._palace_drawers())
            related = self._explained(query, found)
        return SearchResult(
            hits=tuple(self._with_snippets(query, direct + related, vector, matcher)),
            ranking=ranking,
            warnings=tuple(warnings),
        )

    def _texts(self, drawer_ids: Sequence[str]) -> dict[str, StagedText]:
        """What the second stage reads of the candidates: their texts, and a file's path (not the whole drawers)."""
        return stage_candidates(self._store.search.stage_texts(list(drawer_ids)))

    def _idf(self, words: Sequence[str]) -> list[float]:
        stats = self._store.search.term_statistics(list(words))
        return idf(stats.drawers, stats.frequencies)

    def _palace_drawers(self) -> int:
        """How many drawers the palace holds, counted at most once a minute: expansion measures how generic an
        entity is against it, and a count walks an index."""
        seen = self._size_seen
        if seen is None or time.monotonic() - seen[0] > PALACE_SIZE_TTL:
            seen = (time.monotonic(), self._store.drawers.count_drawers())
            self._size_seen = seen
        return seen[1]

    @staticmethod
    def _leg_depth(pool: int) -> int:
        return max(2 * pool, MIN_LEG)

    def _pool(
        self,
        query: SearchQuery,
        ranking: str,
        vector: npt.NDArray[np.float32] | None,
        size: int,
        early: Future[tuple[list[ScoredDrawer], bool]] | None,
        matcher: TermMatcher | None = None,
    ) -> list[Ranked]:
        """The `size` best candidates by the ranking's base signal (a hybrid one fuses legs twice that deep)."""
        if ranking == "lexical":
            found = self.lexical_leg_exact(query, size, matcher=matcher)[0]
            return [Ranked(c.drawer_id, c.signal, {"lexical": c.signal}) for c in found]
        assert vector is not None and self._index is not None
        if ranking == "semantic":
            found = self._index.candidates(vector, size, query.scope)
            return [Ranked(c.drawer_id, c.signal, {"semantic": c.signal}) for c in found]
        leg = self._leg_depth(size)
        semantic = self._index.candidates(vector, leg, query.scope)
        lexical, exact = (
            early.result()
            if early is not None
            else self.lexical_leg_exact(query, leg, self._fill_rows, near=True, matcher=matcher)
        )
        by_meaning = {c.drawer_id for c in semantic}
        waiting = self._index.waiting_among([c.drawer_id for c in lexical if c.drawer_id not in by_meaning])
        return fuse(lexical, semantic, self._weights, waiting=waiting.__contains__, exact=exact)[:size]

    def _ranked(self, query: SearchQuery, pooled: list[Ranked], shown: set[str], wanted: int) -> list[Hit]:
        """The pool ranked (relevance normalized over all of it, a policy's bounded adjustment), then its first
        `wanted` hits not `shown` already."""
        if wanted <= 0:
            return []
        found = self._standing(query, [r.drawer_id for r in pooled])
        if self._adjusts(query):
            # The policy reads every pooled drawer's origin.
            drawers = self._store.drawers.get_drawers([r.drawer_id for r in pooled])
            pooled = [r for r in pooled if r.drawer_id in drawers]
            relevance = pool_relevance([r.base for r in pooled])
            entries = [PoolEntry(r.drawer_id, r.base, r.signals, rel) for r, rel in zip(pooled, relevance, strict=True)]
            reranked = self._rerank(query, entries, drawers)
            if found:
                reranked = stand_first(
                    [marked(h, found) for h in reranked],
                    found,
                    drawer_of=lambda h: h.drawer.id,
                    score_of=lambda h: h.score,
                    rescored=lambda h, score, s: dataclasses.replace(
                        h, score=score, signals={**h.signals, "standing": s.to_json()}
                    ),
                )
            return [hit for hit in reranked if hit.drawer.id not in shown][:wanted]
        # The order is the base signal's: only the drawers shown are read.
        relevance = pool_relevance([r.base for r in pooled])
        scored = list(zip(pooled, relevance, strict=True))
        if found:
            scored = stand_first(
                [
                    (Ranked(r.drawer_id, r.base, marked_signals(r.drawer_id, r.signals, found)), rel)
                    for r, rel in scored
                ],
                found,
                drawer_of=lambda pair: pair[0].drawer_id,
                score_of=lambda pair: pair[0].base,
                rescored=lambda pair, score, s: (
                    Ranked(pair[0].drawer_id, score, {**pair[0].signals, "standing": s.to_json()}),
                    pair[1],
                ),
            )
        hits: list[Hit] = []
        ranked = [(r, rel) for r, rel in scored if r.drawer_id not in shown]
        while ranked and len(hits) < wanted:
            batch, ranked = ranked[: wanted - len(hits)], ranked[wanted - len(hits) :]
            drawers = self._store.drawers.get_drawers([r.drawer_id for r, _ in batch])
            hits += [
                Hit(drawer=drawers[r.drawer_id], score=r.base, signals={**r.signals, "relevance": rel})
                for r, rel in batch
                if r.drawer_id in drawers
            ]
        return hits

    def _with_snippets(
        self,
        query: SearchQuery,
        hits: list[Hit],
        vector: npt.NDArray[np.float32] | None,
        matcher: TermMatcher | None = None,
    ) -> list[Hit]:
        """Each hit with its snippet (`memcastle.search.snippets`): for a drawer longer than one passage, the semantic
        leg says which passage is nearest the query, when the query was embedded."""
        matcher = matcher if matcher is not None else TermMatcher(query.text)
        long = [hit.drawer.id for hit in hits if len(hit.drawer.content) > self._passages[0]]
        nearest = self._index.nearest_passages(vector, long) if vector is not None and long and self._index else {}
        out = []
        for hit in hits:
            origin = hit.drawer.source.origin
            found = snippet(
                hit.drawer.content,
                matcher,
                nearest_passage=nearest.get(hit.drawer.id),
                # Numbered as memcastle_get_drawer reads them: the document's lines, else the drawer's own from 1
                # (a transcript, a note), so every hit names the lines to read.
                first_line=origin.lines[0] if origin is not None and origin.lines else 1,
                passages=self._passages,
            )
            # How much of the query the drawer holds, in absolute terms: relevance is relative to the pool (its best
            # hit is 1.0 even for a query nothing matches), the cosine says how near by meaning, this says by words.
            coverage = round(found.terms_found / len(matcher.words), 3) if matcher.words else None
            out.append(dataclasses.replace(hit, snippet=found, signals={**hit.signals, "coverage": coverage}))
        return out

    def _explained(self, query: SearchQuery, related: list[Hit]) -> list[Hit]:
        """Expanded hits explained and cut as direct ones are (ADR 048): their graph scores normalized within the
        expanded pool into `relevance`, with a policy the same bounded preference adjustment and its explanation, and
        only then the first `query.limit` kept; they stay after every direct hit."""
        if not related:
            return []
        relevance = pool_relevance([hit.score for hit in related])
        if not self._adjusts(query):
            return [
                dataclasses.replace(hit, signals={**hit.signals, "relevance": rel})
                for hit, rel in zip(related, relevance, strict=True)
            ][: query.limit]
        entries = [
            PoolEntry(hit.drawer.id, hit.score, hit.signals, rel) for hit, rel in zip(related, relevance, strict=True)
        ]
        via = {hit.drawer.id: hit.via for hit in related}
        reranked = self._rerank(query, entries, {hit.drawer.id: hit.drawer for hit in related})
        return [dataclasses.replace(hit, via=via[hit.drawer.id]) for hit in reranked[: query.limit]]

    def _choose_ranking(self, query: SearchQuery, warnings: list[str]) -> tuple[str, npt.NDArray[np.float32] | None]:
        """`auto` is hybrid when the query can be embedded, else lexical with a warning; never a silent downgrade
        of an explicit `semantic` or `hybrid`."""
        if query.ranking == "lexical":
            return "lexical", None
        explicit = query.ranking in ("semantic", "hybrid")
        if not self.has_embeddings:
            if explicit:
                raise InvalidRequest(
                    f"ranking {query.ranking!r} needs embeddings, and embeddings.provider is 'none'",
                    field="ranking",
                    help="use ranking 'lexical' or 'auto', or configure an embeddings provider",
                )
            return "lexical", None
        assert self._provider is not None
        if not explicit and query.vector is None and getattr(self._provider, "loading", False):
            # Being loaded on a thread since the start (`warm`): `auto` does not wait for it, an explicit ranking does.
            warnings.append("the meaning model is still loading after the start; ranked lexically")
            return "lexical", None
        try:
            vector = self._query_vector(query)
        except ProviderError as exc:
            if explicit:
                raise
            warnings.append(f"embeddings unavailable ({exc.message}); ranked lexically")
            return "lexical", None
        pending = self._pending_count()
        if pending:
            warnings.append(f"{pending} drawer(s) are still waiting for embeddings; the semantic leg misses them")
        return ("hybrid" if query.ranking == "auto" else query.ranking), vector

    def _query_vector(self, query: SearchQuery) -> npt.NDArray[np.float32]:
        """The query's vector: the caller's own (`query_embedding`, of the dimension the palace's vectors have,
        normalized here), or the provider's embedding of its text."""
        if query.vector is None:
            assert self._provider is not None
            embedded: npt.NDArray[np.float32] = self._provider.embed([query.text], kind="query")[0]
            return embedded
        dimension = self.dimension
        if dimension is not None and len(query.vector) != dimension:
            raise InvalidRequest(
                f"query_embedding has {len(query.vector)} dimensions; this palace's vectors have {dimension}",
                field="query_embedding",
            )
        vector = np.asarray(query.vector, dtype=np.float32)
        return vector / np.float32(np.linalg.norm(vector))

    def _pending_count(self) -> int:
        """Drawers still waiting for vectors. The count only feeds a warning, and taking it reads the whole palace
        (80 ms at a million drawers): the first search counts, and after that a count older than `pending_ttl` is
        taken again on a thread of its own while searches go on with the last one."""
        seen = self._pending_seen
        if seen is None:
            count = self._waiting()
            self._pending_seen = (time.monotonic(), count)
            return count
        checked, count = seen
        if time.monotonic() - checked >= self._pending_ttl:
            with self._pending_lock:
                if self._counting is None or self._counting.done():
                    self._counting = self._counter.submit(self._recount)
        return count

    def _recount(self) -> None:
        self._pending_seen = (time.monotonic(), self._waiting())

    def warm(self, query: SearchQuery) -> None:
        """Run `query` as a first search would, then forget its pending count: a client's first search counts anew."""
        self.search(query)
        self._pending_seen = None

    def _waiting(self) -> int:  # the drawers the semantic leg misses: those the model it ranks by has not embedded
        model = getattr(self._pair[1], "model", None)
        return self._pending(str(model)) if model is not None else 0

    def count_matching(self, query: SearchQuery, at_most: int) -> int:
        """How many drawers in the search's scope and time hold every word of its query, up to `at_most`."""
        terms = tuple(query_terms(query.text))
        if not terms:
            return 0
        return self._store.search.count_matching(LexicalQuery(terms, require_all=True), query.scope, at_most)

    def lexical_leg(self, query: SearchQuery, limit: int, fill_rows: int | None = None) -> list[ScoredDrawer]:
        """See `lexical_leg_exact`: the candidates alone."""
        return self.lexical_leg_exact(query, limit, fill_rows)[0]

    def lexical_leg_exact(
        self,
        query: SearchQuery,
        limit: int,
        fill_rows: int | None = None,
        *,
        near: bool = False,
        matcher: TermMatcher | None = None,
    ) -> tuple[list[ScoredDrawer], bool]:
        """BM25 candidates: the drawers holding every term first; when they are fewer than `limit` and the query has
        2+ words, the drawers holding some of the terms fill the leg below them (`fill_below`), matched on the
        rarest terms only when all of them are found in more than `fill_rows` drawers. With `fill_rows`, a query
        none of whose terms can rank (each in half the palace or more, the rarest in more than `fill_rows`) leaves
        the leg empty (`LexicalQuery.matches_nothing`, ADR 0032). Each group is taken
        `PASSAGE_DEPTH` times deeper than needed and ranked again by its drawers' best passages
        (`memcastle.search.passage_bm25`). Also says whether a drawer holds every term (an exact match).

        With `near` (the hybrid ranking's leg), a drawer also matches by its neighbours' words, at the palace's
        `search.context_weight` (ADR 0056); the lexical ranking matches the words a drawer holds itself."""
        terms = tuple(query_terms(query.text))
        if not terms:
            return [], False
        depth = limit * PASSAGE_DEPTH
        weight = self._context_weight if near else 0.0
        every = LexicalQuery(terms, require_all=True, max_rows=fill_rows, context_weight=weight)
        found = self._store.search.lexical_candidates(every, query.scope, depth)
        some: list[ScoredDrawer] = []
        # The fill is read only when fewer than `limit` drawers hold every term: `fill_below` keeps `found[:limit]`,
        # whatever passage scoring does to their order, and adds the fill only below fewer than `limit` of them.
        if len(found) < limit and len(terms) >= 2:
            held = {c.drawer_id for c in found}
            some = [
                c
                for c in self._store.search.lexical_candidates(
                    LexicalQuery(terms, require_all=False, max_rows=fill_rows, context_weight=weight),
                    query.scope,
                    depth,
                )
                if c.drawer_id not in held
            ]
        exact = any(c.own for c in found)  # a drawer holds the words itself, not only beside it
        found, some = self._by_passage(query.text, found, some, matcher)
        return fill_below(found[:limit], some, limit), exact

    def _by_passage(
        self, text: str, found: list[ScoredDrawer], some: list[ScoredDrawer], matcher: TermMatcher | None = None
    ) -> tuple[list[ScoredDrawer], list[ScoredDrawer]]:
        """Both groups ranked again, the drawers longer than one passage scored by their best passage: the first
        `RESCORE_DEPTH` of each group, whatever the depth fetched (reading and scoring long drawers is what a lexical
        search spends most on); the rest follow them in BM25 order (`fill_below`)."""
        matcher = matcher if matcher is not None else TermMatcher(text)
        if not matcher or not (found or some):
            return found, some
        # A drawer found by its neighbours' words alone has no passage of its own that holds them: it keeps its score.
        head = [c.drawer_id for c in (*found[:RESCORE_DEPTH], *some[:RESCORE_DEPTH]) if c.own]
        long = self._store.search.long_contents(head, self._passages[0])
        if not long:
            return found, some
        stats = self._store.search.term_statistics(matcher.words)
        weights = idf(stats.drawers, stats.frequencies)
        scores = best_passage_scores(long, matcher, weights, stats.average_length, self._passages)

        def again(group: list[ScoredDrawer]) -> list[ScoredDrawer]:
            first = rescored(group[:RESCORE_DEPTH], scores)
            return fill_below(first, group[RESCORE_DEPTH:], len(group))

        return again(found), again(some)
