"""Freshness (`search.freshness`, docs/preferences.md): an optional, bounded boost for recent evidence. Like a
preference it moves only what the search already found relevant and eligible, by at most the preference bound, drops
nothing, and says what it added on each hit."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from clocks import ManualClock
from hypothesis import given, settings
from hypothesis import strategies as st
from preferences.test_search_rerank import drawer

from memcastle.app import build
from memcastle.clock import format_instant
from memcastle.config import load_settings
from memcastle.errors import ConfigError
from memcastle.model import NewDrawer
from memcastle.model.requests import SearchRequest
from memcastle.preferences import BOUND, NEUTRAL, Freshness, PoolEntry, rerank
from memcastle.search.fusion import pool_relevance

NOW = "2026-06-01T00:00:00.000000Z"


def aged(drawer_id: str, days: float) -> object:
    moment = datetime(2026, 6, 1, tzinfo=UTC) - timedelta(days=days)
    return replace(drawer(drawer_id, None), valid_from=format_instant(moment))


@settings(max_examples=200, deadline=None)
@given(
    candidates=st.lists(st.tuples(st.floats(-20, 20, allow_nan=False), st.floats(0, 3650)), min_size=1, max_size=40),
    half_life=st.floats(3600, 86400 * 365),
)
def test_freshness_adds_at_most_the_bound_drops_nothing_and_says_so(
    candidates: list[tuple[float, float]], half_life: float
) -> None:
    drawers = {f"d{i:03d}": aged(f"d{i:03d}", days) for i, (_, days) in enumerate(candidates)}
    bases = [base for base, _ in candidates]
    pool = [
        PoolEntry(f"d{i:03d}", base, {"lexical": base}, relevance)
        for i, (base, relevance) in enumerate(zip(bases, pool_relevance(bases), strict=True))
    ]
    hits = rerank(NEUTRAL, pool, drawers, freshness=Freshness(half_life), at=NOW)  # type: ignore[arg-type]
    assert sorted(hit.drawer.id for hit in hits) == sorted(drawers)
    for hit in hits:
        boost = hit.signals["freshness"]["adjustment"]
        assert 0 <= boost <= BOUND
        assert hit.score == pytest.approx(hit.signals["relevance"] + boost, abs=1e-6)
    ages = {hit.drawer.id: hit.signals["freshness"]["age_days"] for hit in hits}
    boosts = {hit.drawer.id: hit.signals["freshness"]["adjustment"] for hit in hits}
    for a in ages:
        for b in ages:
            if ages[a] < ages[b]:
                assert boosts[a] >= boosts[b], "younger never gets less"


def test_a_half_life_halves_the_boost() -> None:
    fresh = Freshness(half_life=30 * 86400)
    assert fresh.adjustment(NOW, NOW) == (BOUND, 0.0)
    boost, age = fresh.adjustment(format_instant(datetime(2026, 5, 2, tzinfo=UTC)), NOW)
    assert boost == pytest.approx(BOUND / 2) and age == pytest.approx(30)


def test_the_newer_of_two_equal_hits_comes_first_and_a_wide_gap_holds(tmp_path: Path) -> None:
    clock = ManualClock(datetime(2026, 6, 1, tzinfo=UTC))
    settings_ = load_settings(
        flags={"palace": str(tmp_path / "p"), "embeddings.provider": "none", "search.freshness": "30d"},
        env={},
        config_file=None,
    )
    palace = build(settings_, now=clock)
    palace.start()
    try:
        store = palace.store
        old = store.drawers.add_drawer(
            NewDrawer(wing="w", room="a", content="the pier gate code", valid_from="2025-06-01")
        )
        new = store.drawers.add_drawer(NewDrawer(wing="w", room="b", content="the pier gate code"))
        strong = store.drawers.add_drawer(
            NewDrawer(wing="w", room="c", content="pier gate code: pier gate code", valid_from="2020-01-01")
        )
        weak = store.drawers.add_drawer(NewDrawer(wing="w", room="d", content="a gate " + "and more words " * 40))
        result = palace.services.search.search(SearchRequest(query="pier gate code", ranking="lexical", wing="w"))
        order = [hit.drawer.id for hit in result.hits]
        assert order.index(new.id) < order.index(old.id), "same text: the recent one first"
        assert order.index(strong.id) < order.index(weak.id), "a fresh but barely relevant drawer stays below"
        by_id = {hit.drawer.id: hit for hit in result.hits}
        assert by_id[new.id].signals["freshness"]["adjustment"] == pytest.approx(BOUND, rel=1e-3)
        assert by_id[old.id].signals["freshness"]["age_days"] == pytest.approx(365, abs=1)
        past = palace.services.search.search(
            SearchRequest(query="pier gate code", ranking="lexical", wing="w", as_of="2025-06-02")
        )
        (only,) = [hit for hit in past.hits if hit.drawer.id == old.id]
        assert only.signals["freshness"]["age_days"] == pytest.approx(1, abs=0.01), "counted from the instant asked"
        compact = palace.services.search.search(SearchRequest(query="pier gate code", ranking="lexical", wing="w"))
        from memcastle.services.views import hit_view

        assert "days old" in hit_view(compact.hits[0])["freshness"]
    finally:
        palace.stop()


def test_a_malformed_half_life_names_the_setting(tmp_path: Path) -> None:
    settings_ = load_settings(
        flags={"palace": str(tmp_path / "p"), "embeddings.provider": "none", "search.freshness": "soon"},
        env={},
        config_file=None,
    )
    with pytest.raises(ConfigError) as refused:
        build(settings_)
    assert refused.value.key == "search.freshness"
