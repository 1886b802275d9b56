"""What a scoped status counts, the same on both backends: the drawers of some places, those still without vectors
or unread by an extractor, and the facts whose evidence lies there."""

from __future__ import annotations

import numpy as np

from memcastle.model import ANY_TIME, Assertion, Entity, GraphWrite, NewDrawer, Scope
from memcastle.store import Store

NOW = "2026-11-01T10:00:00.000000Z"


def test_counts_cover_only_the_places_of_the_scope(store: Store) -> None:
    team = store.drawers.add_drawer(NewDrawer(wing="team", room="notes", content="team note"))
    store.drawers.add_drawer(NewDrawer(wing="team", room="notes", content="another team note"))
    public = store.drawers.add_drawer(NewDrawer(wing="shared", room="public", content="public note"))
    private = store.drawers.add_drawer(NewDrawer(wing="shared", room="private", content="private note"))
    store.drawers.supersede_drawer(public.id, NewDrawer(wing="shared", room="public", content="public note, v2"))
    store.embeddings.put_embeddings("m", [(team.id, np.ones((1, 4), dtype=np.float32))])
    fact = Assertion(
        id="f1", subject="s", predicate="uses", object="o", confidence=1.0, valid_from=NOW, valid_to=None,
        drawer_id=private.id, extractor="x", job_id=None, origin=None, explicit=False, created_at=NOW,
    )  # fmt: skip
    entities = tuple(Entity(id=i, name=i.upper(), kind="other", key=i, aliases=(), created_at=NOW) for i in ("s", "o"))
    store.graph.apply_graph(GraphWrite(extractor="x", read_drawers=(team.id,), entities=entities, assertions=(fact,)))

    scope = Scope(places=(("team", None), ("shared", "public")))
    assert store.search.count_in_scope(scope) == 3, "two team notes and the current public one"
    assert store.search.count_in_scope(Scope(places=(("team", None), ("shared", "public")), when=ANY_TIME)) == 4
    assert store.search.count_in_scope(scope, missing_vectors="m") == 2
    assert store.search.count_in_scope(scope, unread_by="x") == 2
    assert store.search.count_in_scope(Scope(places=())) == 0, "no place: nothing"
    assert store.search.count_facts_in(scope) == 0
    assert store.search.count_facts_in(Scope(places=(("shared", None),))) == 1


def test_the_drawers_holding_every_word_are_counted_within_scope_and_up_to_a_bound(store: Store) -> None:
    from memcastle.model import LexicalQuery

    for n in range(7):
        store.drawers.add_drawer(NewDrawer(wing="team", room="notes", content=f"The harbour pump {n} leaks oil."))
    store.drawers.add_drawer(NewDrawer(wing="shared", room="public", content="The harbour pump is painted red."))
    store.drawers.add_drawer(NewDrawer(wing="shared", room="public", content="The harbour crane leaks."))
    every = LexicalQuery(("harbour", "pump"), require_all=True)
    assert store.search.count_matching(every, Scope(), 100) == 8
    assert store.search.count_matching(every, Scope(wing="shared"), 100) == 1
    assert store.search.count_matching(every, Scope(), 5) == 5, "counted up to the bound"
    assert store.search.count_matching(LexicalQuery(("harbour", "leaks"), require_all=True), Scope(), 100) == 8
    assert store.search.count_matching(LexicalQuery(("nowhere",), require_all=True), Scope(), 100) == 0
    assert store.search.count_matching(LexicalQuery(("crane", "pump"), require_all=False), Scope(), 100) == 9
