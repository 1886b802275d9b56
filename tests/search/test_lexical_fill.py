"""The lexical leg's any-term fill: read only when fewer drawers than the leg needs hold every term, and in hybrid
bounded by `search.fill_rows` (the rarest terms only, when all of them are found in more drawers than that)."""

from __future__ import annotations

import sys
from pathlib import Path

from search.test_search_service import EMBEDDER, settle

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.model import LexicalQuery, NewDrawer, Provenance, SearchQuery, Source
from memcastle.search.engine import SearchEngine
from memcastle.services import SearchRequest
from memcastle.store.sqlite import SQLiteStore


def test_a_lexical_budget_takes_the_rarest_terms_that_fit_and_always_the_rarest() -> None:
    terms = ("alpha", "beta", "gamma", "delta")
    rows = [500, 20, 300, 20]
    assert LexicalQuery(terms, require_all=False).within_budget(rows) == (0, 1, 2, 3), "no budget: every term"
    assert LexicalQuery(terms, require_all=False, max_rows=339).within_budget(rows) == (1, 3)
    assert LexicalQuery(terms, require_all=False, max_rows=340).within_budget(rows) == (1, 2, 3)
    assert LexicalQuery(terms, require_all=False, max_rows=40).within_budget(rows) == (1, 3)
    assert LexicalQuery(terms, require_all=False, max_rows=39).within_budget(rows) == (1,), "ties: the query's order"
    assert LexicalQuery(terms, require_all=False, max_rows=0).within_budget(rows) == (1,), "the rarest always"
    assert LexicalQuery(terms, require_all=True, max_rows=0).within_budget(rows) == (0, 1, 2, 3), "all required"


def add(store: SQLiteStore, content: str) -> str:
    drawer = NewDrawer(
        wing="w", room="r", content=content, source=Source(kind="note"), provenance=Provenance(requested_by="cli")
    )
    return store.drawers.add_drawer(drawer).id


def test_the_fill_is_bounded_to_the_rarest_terms_only_when_asked(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "palace")
    try:
        lanterns = {add(store, f"lantern story number {i}") for i in range(6)}
        zeppelins = {add(store, f"a zeppelin tale number {i}") for i in range(2)}
        both = add(store, "the zeppelin lantern")
        for i in range(30):
            add(store, f"filler text {i} about nothing at all")
        engine = SearchEngine(store)
        query = SearchQuery(text="zeppelin lantern", limit=10)
        exact = [c.drawer_id for c in engine.lexical_leg(query, 10)]
        assert exact[0] == both and set(exact) == lanterns | zeppelins | {both}, "the fill: any term, below `both`"
        assert [c.drawer_id for c in engine.lexical_leg(query, 10, 100)] == exact, "every term fits: unchanged"
        bounded = [c.drawer_id for c in engine.lexical_leg(query, 10, 3)]
        assert bounded[0] == both and set(bounded) == zeppelins | {both}, "lantern (7 drawers) is left out"
        assert [c.drawer_id for c in engine.lexical_leg(query, 1, 3)] == [both], "no fill when every term fills it"
        engine.close()
    finally:
        store.close()


def test_the_palace_setting_bounds_the_hybrid_fill_and_leaves_lexical_ranking_exact(tmp_path: Path) -> None:
    flags = {
        "palace": str(tmp_path / "palace"),
        "embeddings.provider": "command",
        "embeddings.model": "bow",  # the bag-of-words test embedder
        "embeddings.command": [sys.executable, EMBEDDER],
        "search.fill_rows": 2,
    }
    palace = build(load_settings(flags=flags, env={}))
    palace.start()
    try:
        # Notes written one by one are each other's neighbours (ADR 0056): the zeppelin's is a filler, which holds
        # none of the words and so is found by them as `neighbours`, not `lexical`.
        for text in ["the zeppelin", "filler", "a lantern", "another lantern", "a third lantern", "more filler"]:
            palace.services.drawers.save_note(text)
        settle(palace)

        def lexical_hits(ranking: str) -> set[str]:
            result = palace.services.search.search(SearchRequest(query="zeppelin lantern", ranking=ranking))
            assert result.ranking == ranking
            return {hit.drawer.content for hit in result.hits if "lexical" in hit.signals}

        assert lexical_hits("lexical") == {"the zeppelin", "a lantern", "another lantern", "a third lantern"}
        assert lexical_hits("hybrid") == {"the zeppelin"}, "lantern (3 drawers) is left to the semantic leg"
    finally:
        palace.stop()
