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
from memcastle.search.embeddings import BuiltinProvider
from memcastle.search.passages import split_passages
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
    assert ids[0] == cookies.id
    # The garden note is below the semantic floor: it comes in only as the note written beside the cookie one, which
    # its signals say (ADR 0056), and after it.
    assert ids[1:] == [garden.id] and set(result.hits[1].signals) >= {"neighbours"}
    assert "lexical" not in result.hits[1].signals and "semantic" not in result.hits[1].signals
    assert result.hits[0].signals["semantic_pending"] == 1.0
    # The waiting drawer scores as if both legs agreed on it: what it will score once its vector exists.
    embed_only(unstarted, cookies.id, COOKIES)
    later = unstarted.services.search.search(SearchRequest(query="HTTP cookie parsing", ranking="auto"))
    assert [hit.drawer.id for hit in later.hits] == [cookies.id, garden.id]
    assert later.hits[0].score == pytest.approx(result.hits[0].score)


def test_a_near_zero_cosine_never_brings_a_drawer_into_the_semantic_leg(unstarted: Palace) -> None:
    garden = unstarted.services.drawers.save_note(GARDEN, wing="w").drawer
    embed_only(unstarted, garden.id, GARDEN)
    result = unstarted.services.search.search(SearchRequest(query="HTTP cookie parsing", ranking="semantic"))
    assert result.hits == ()


TOKENS = "Browsers keep small session tokens that the server set and send them back with every request."
NEIGHBOURS = (
    "HTTP headers: a server answers with status, headers and a body.",
    "Parsing dates in headers is harder than it looks.",
    "A cookie jar in the test client keeps what the server set between requests.",
    "HTTP/2 multiplexes requests over one connection.",
)


def test_an_embedded_drawer_without_the_words_stays_below_the_waiting_neighbours_of_an_exact_match(
    unstarted: Palace,
) -> None:
    """While the lexical leg's drawers wait for vectors, the semantic leg cannot compare them with the drawers it
    does see: one of those holding none of the query's words comes after every waiting drawer the words found."""
    exact = unstarted.services.drawers.save_note(COOKIES, wing="w").drawer
    waiting = [unstarted.services.drawers.save_note(text, wing="w").drawer for text in NEIGHBOURS]
    tokens = unstarted.services.drawers.save_note(TOKENS, wing="w").drawer
    embed_only(unstarted, tokens.id, TOKENS)
    result = unstarted.services.search.search(SearchRequest(query="HTTP cookie parsing", ranking="auto", limit=10))
    ids = [hit.drawer.id for hit in result.hits]
    assert ids[0] == exact.id
    assert tokens.id in ids, "the embedded drawer is related by meaning: it stays in the answer"
    assert set(ids[: ids.index(tokens.id)]) == {exact.id, *(d.id for d in waiting)}
    held = result.hits[ids.index(tokens.id)]
    assert "lexical" not in held.signals and held.signals["semantic"] > 0
    # Once every drawer has its vector, ranking is by both legs again, with no such rule.
    for drawer, text in ((exact, COOKIES), *zip(waiting, NEIGHBOURS, strict=True)):
        embed_only(unstarted, drawer.id, text)
    later = unstarted.services.search.search(SearchRequest(query="HTTP cookie parsing", ranking="auto", limit=10))
    assert all("semantic_pending" not in hit.signals for hit in later.hits)
