"""Hybrid ranking during the embedding backlog: a drawer's rank does not depend on whether its vector exists yet."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clocks import DistinctClock

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.search.backfill import model_key
from memcastle.search.embeddings import BuiltinProvider, split_passages
from memcastle.services import SearchRequest

COOKIES = "Parsing HTTP cookies: the http.cookies module turns a Cookie header into morsels."
GARDEN = "Tomatoes want full sun, deep watering twice a week and a stake once they reach knee height."


@pytest.fixture
def unstarted(xdg_home: Any, palace_dir: Path) -> Iterator[Palace]:
    """A palace with the builtin model whose workers never start: vectors exist only where a test puts them."""
    settings = load_settings(
        flags={"palace": str(palace_dir), "embeddings.provider": "builtin"}, env={}, config_file=None
    )
    palace = build(settings, now=DistinctClock())
    try:
        yield palace
    finally:
        palace.stop()


def embed_only(palace: Palace, drawer_id: str, text: str) -> None:
    provider = BuiltinProvider()
    palace.store.embeddings.put_embeddings(model_key(provider), [(drawer_id, provider.embed(split_passages(text)))])


def test_an_unrelated_embedded_drawer_never_outranks_a_relevant_one_still_waiting(unstarted: Palace) -> None:
    cookies = unstarted.services.drawers.save_note(COOKIES, wing="w").drawer
    garden = unstarted.services.drawers.save_note(GARDEN, wing="w").drawer
    embed_only(unstarted, garden.id, GARDEN)  # only the unrelated note has a vector, as right after a mine
    result = unstarted.services.search.search(SearchRequest(query="HTTP cookie parsing", ranking="auto"))
    assert result.ranking == "hybrid"
    ids = [hit.drawer.id for hit in result.hits]
    assert ids == [cookies.id], "the garden note is below the semantic floor and is not brought in at all"
    assert result.hits[0].signals["semantic_pending"] == 1.0
    # The waiting drawer scores as if both legs agreed on it: what it will score once its vector exists.
    embed_only(unstarted, cookies.id, COOKIES)
    later = unstarted.services.search.search(SearchRequest(query="HTTP cookie parsing", ranking="auto"))
    assert [hit.drawer.id for hit in later.hits] == [cookies.id]
    assert later.hits[0].score == pytest.approx(result.hits[0].score)


def test_a_near_zero_cosine_never_brings_a_drawer_into_the_semantic_leg(unstarted: Palace) -> None:
    garden = unstarted.services.drawers.save_note(GARDEN, wing="w").drawer
    embed_only(unstarted, garden.id, GARDEN)
    result = unstarted.services.search.search(SearchRequest(query="HTTP cookie parsing", ranking="semantic"))
    assert result.hits == ()
