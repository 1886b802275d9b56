"""The bounded preference rerank in search (SPEC §3, §5), through real palaces and as properties of `rerank`.

Only already-relevant, in-scope, temporally eligible candidates are touched. Every search ranks one pool, max(50,
limit) candidates, whatever the policy: a neutral policy changes nothing; otherwise the pool's base signal is min-max
normalized into `relevance` and `score = relevance + adjustment` (±0.08 at most), ties by base signal then id,
truncated to `limit`.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcastle.app import Palace
from memcastle.config.layers import parse_layer
from memcastle.model import Drawer, Hit, Origin, Provenance, SearchResult, Source
from memcastle.preferences import (
    BOUND,
    LEVELS,
    POOL,
    PoolEntry,
    load_policy,
    rerank,
    resolve,
)
from memcastle.search.fusion import pool_relevance

if TYPE_CHECKING:
    from conftest import Bench  # tests/preferences/conftest.py

# Floating-point slack for `relevance + adjustment - relevance` (e.g. 0.1 + 0.08 - 0.1 == 0.08000000000000002).
EPSILON = 1e-12

# Four notes that match "harbor" with distinct BM25 signals: relevance d 1.0 > a ≈ 0.73 > b ≈ 0.70 > c 0.0.
HARBOR: dict[str, tuple[dict[str, Any], str]] = {
    "d.md": ({"status": "final"}, "harbor harbor harbor crane"),
    "a.md": ({"status": "final"}, "harbor crane schedule"),
    "b.md": ({"status": "draft"}, "harbor crane schedule today"),
    "c.md": ({"status": "draft"}, "harbor " + "filler words " * 30),
    "e.md": ({"status": "draft"}, "an unrelated ferry timetable"),
}
UNADJUSTED_ORDER = ["d.md", "a.md", "b.md", "c.md"]

DRAFTS_HIGH = """\
[[preferences.sources.notes.criteria]]
path = "status"
equals = "draft"
level = "high"

[[preferences.sources.notes.criteria]]
path = "status"
equals = "final"
level = "low"
"""
# With DRAFTS_HIGH: b (draft, +0.08) passes a (final, −0.08), 0.04 ahead of it; c (draft) cannot pass a, 0.73 ahead.
ADJUSTED_ORDER = ["d.md", "b.md", "a.md", "c.md"]

NEUTRAL_POLICIES = {
    "an empty palace file": "",
    "explicit normal levels": '[preferences]\ndefault = "normal"\n\n[preferences.sources.notes]\nlevel = "normal"\n'
    '[[preferences.sources.notes.criteria]]\npath = "status"\nequals = "draft"\n'
    'level = "normal"\n',
}


def names(result: SearchResult) -> list[str | None]:
    return [hit.drawer.name for hit in result.hits]


def comparable(result: SearchResult) -> list[tuple[str | None, float, dict[str, Any]]]:
    """What a client sees of a ranking, without the drawer ids (two palaces mint different ids)."""
    return [(hit.drawer.name, hit.score, dict(hit.signals)) for hit in result.hits]


def harbor_palace(bench: Bench, name: str, preferences: str | None = None, config: str | None = None) -> Palace:
    palace = bench.open(name, preferences=preferences, config=config)
    bench.mine(palace, "notes", bench.notes("harbor", HARBOR), wing="w")
    return palace


def assert_bounded(hits: Sequence[Hit]) -> None:
    """The invariants every adjusted hit list keeps."""
    for hit in hits:
        preference = hit.signals["preference"]
        assert abs(hit.score - hit.signals["relevance"]) <= BOUND + EPSILON
        assert hit.score == hit.signals["relevance"] + preference["adjustment"]
        assert preference["adjustment"] == LEVELS[preference["level"]]
    for earlier, later in itertools.combinations(hits, 2):
        assert later.signals["relevance"] - earlier.signals["relevance"] <= 2 * BOUND, (earlier, later)


# --- neutral: nothing changes -------------------------------------------------------------------------


@pytest.mark.parametrize("preferences", list(NEUTRAL_POLICIES.values()), ids=list(NEUTRAL_POLICIES))
def test_a_neutral_policy_gives_exactly_the_results_of_a_palace_without_one(bench: Bench, preferences: str) -> None:
    plain = harbor_palace(bench, "plain")
    neutral = harbor_palace(bench, "neutral", preferences=preferences)
    assert neutral.services.policy.is_neutral and neutral.services.policy.layers
    for limit in (1, 2, 3, 10):
        expected = bench.search(plain, "harbor", wing="w", limit=limit)
        assert comparable(bench.search(neutral, "harbor", wing="w", limit=limit)) == comparable(expected)
    # The scores are the base signal's, normalized in the same pool as without a policy.
    two = bench.search(neutral, "harbor", wing="w", limit=2)
    assert two.hits[0].signals["relevance"] == 1.0 and 0.0 < two.hits[1].signals["relevance"] < 1.0
    assert [hit.score for hit in two.hits] == [hit.signals["lexical"] for hit in two.hits]
    assert all("preference" not in hit.signals for hit in two.hits)


def test_a_neutral_global_policy_also_leaves_results_untouched(bench: Bench) -> None:
    plain = harbor_palace(bench, "plain")
    neutral = harbor_palace(
        bench,
        "neutral",
        config='[preferences]\ndefault = "normal"\n[palace.preferences.sources.claude]\nlevel = "normal"\n',
    )
    assert neutral.services.policy.is_neutral
    for limit in (1, 3):
        assert comparable(bench.search(neutral, "harbor", wing="w", limit=limit)) == comparable(
            bench.search(plain, "harbor", wing="w", limit=limit)
        )


def test_preferences_off_shows_the_ranking_of_a_palace_without_a_policy(bench: Bench) -> None:
    plain = harbor_palace(bench, "plain")
    preferring = harbor_palace(bench, "preferring", preferences=DRAFTS_HIGH)
    for limit in (1, 2, 3, 10):
        off = bench.search(preferring, "harbor", wing="w", limit=limit, preferences="off")
        assert comparable(off) == comparable(bench.search(plain, "harbor", wing="w", limit=limit))
    assert names(bench.search(preferring, "harbor", wing="w", preferences="off")) == UNADJUSTED_ORDER
    assert names(bench.search(preferring, "harbor", wing="w")) == ADJUSTED_ORDER


# --- non-neutral: bounded rerank within the pool ----------------------------------------------------------


def test_a_preference_reorders_close_hits_but_never_across_a_wide_relevance_gap(bench: Bench) -> None:
    palace = harbor_palace(bench, "palace", preferences=DRAFTS_HIGH)
    result = bench.search(palace, "harbor", wing="w")
    assert names(result) == ADJUSTED_ORDER
    relevance = {hit.drawer.name: hit.signals["relevance"] for hit in result.hits}
    assert relevance["a.md"] - relevance["b.md"] < 2 * BOUND < relevance["a.md"] - relevance["c.md"]
    assert_bounded(result.hits)


def test_relevance_is_the_base_signal_min_max_normalized_within_the_pool(bench: Bench) -> None:
    palace = harbor_palace(bench, "palace", preferences=DRAFTS_HIGH)
    # The pool (50) holds the 4 candidates, so even a limit of 1 is normalized against all of them.
    everything = bench.search(palace, "harbor", wing="w", limit=10)
    base = {hit.drawer.name: hit.signals["lexical"] for hit in everything.hits}
    low, high = min(base.values()), max(base.values())
    for hit in everything.hits:
        assert hit.signals["relevance"] == pytest.approx((base[hit.drawer.name] - low) / (high - low), abs=1e-12)
    [top] = bench.search(palace, "harbor", wing="w", limit=1).hits
    assert top.drawer.name == "d.md" and top.signals["relevance"] == 1.0 and top.score == 1.0 - BOUND
    second = bench.search(palace, "harbor", wing="w", limit=2).hits[1]
    assert second.drawer.name == "b.md" and 0.0 < second.signals["relevance"] < 1.0


def test_each_hit_shows_its_base_signal_relevance_and_preference(bench: Bench, tmp_path: Path) -> None:
    palace = harbor_palace(bench, "palace", preferences=DRAFTS_HIGH + '[preferences]\ndefault = "low"\n')
    project = tmp_path / "project"
    project.mkdir()
    (project / "harbor.txt").write_text("harbor crane operations manual")
    bench.mine(palace, "directory", project, wing="w")
    palace.services.drawers.save_note("harbor crane note typed by hand", wing="w")
    hits = {hit.drawer.name: hit for hit in bench.search(palace, "harbor", wing="w", limit=10).hits}
    draft = hits["b.md"]
    assert set(draft.signals) == {"lexical", "coverage", "relevance", "preference"}
    assert draft.signals["preference"] == {
        "level": "high",
        "connector": "notes",
        "criterion": {"path": "status", "equals": "draft", "level": "high"},
        "adjustment": 0.08,
    }
    assert draft.to_json()["origin"]["metadata"]["status"] == "draft"
    assert hits["harbor.txt"].signals["preference"] == {
        "level": "low",
        "connector": "directory",
        "criterion": None,
        "adjustment": -0.08,
    }
    [manual] = [hit for name, hit in hits.items() if name is None]
    assert manual.signals["preference"] == {"level": "low", "connector": None, "criterion": None, "adjustment": -0.08}
    assert_bounded(list(hits.values()))


def test_all_equal_base_signals_give_relevance_1_and_ties_go_by_id(bench: Bench) -> None:
    palace = bench.open(preferences='[preferences]\ndefault = "high"\n')
    bench.mine(palace, "notes", bench.notes("same", {f"n{i}.md": ({}, f"zebra alpha{i}") for i in range(6)}), wing="w")
    result = bench.search(palace, "zebra", wing="w", limit=6)
    assert [hit.signals["relevance"] for hit in result.hits] == [1.0] * 6
    assert [hit.score for hit in result.hits] == [1.0 + BOUND] * 6
    assert [hit.drawer.id for hit in result.hits] == sorted(hit.drawer.id for hit in result.hits)


def test_search_reranks_exactly_its_fixed_pools(bench: Bench) -> None:
    """Every candidate has the same base signal, so a high preference lifts any drawer inside a pool to the top of
    the hits that pool gives (the first 50 come from a pool of 50, the next 50 from one of 100, the rest from one of
    200), while one just outside the pool never appears at all."""
    palace = bench.open()
    bench.mine(
        palace,
        "notes",
        bench.notes("same", {f"n{i:03d}.md": ({"key": f"k{i:03d}"}, f"zebra alpha{i:03d}") for i in range(205)}),
        wing="w",
    )
    by_id: list[Drawer] = []
    after = None
    while True:
        page = palace.services.drawers.list_drawers("w", None, 200, after)
        by_id.extend(page.items)
        if (after := page.next_after) is None:
            break
    by_id.sort(key=lambda d: d.id)
    assert len(by_id) == 205

    def favour(drawer: Drawer) -> str:
        key = drawer.source.origin.metadata["key"]  # type: ignore[union-attr]
        return f'[[preferences.sources.notes.criteria]]\npath = "key"\nequals = "{key}"\nlevel = "high"\n'

    for limit, pool, first in ((1, POOL, 0), (5, POOL, 0), (50, POOL, 0), (60, 100, 50), (200, 200, 100)):
        palace = bench.restart(palace, preferences=favour(by_id[pool - 1]))
        hits = bench.search(palace, "zebra", wing="w", limit=limit).hits
        assert [h.drawer.id for h in hits[:first]] == [d.id for d in by_id[:first]], f"limit {limit}: earlier pools"
        assert hits[first].drawer.id == by_id[pool - 1].id, f"limit {limit}: the last drawer of the pool is lifted"
        assert [h.signals["relevance"] for h in hits] == [1.0] * limit
        palace = bench.restart(palace, preferences=favour(by_id[pool]))
        hits = bench.search(palace, "zebra", wing="w", limit=limit).hits
        assert [h.drawer.id for h in hits] == [d.id for d in by_id[:limit]], f"limit {limit}: outside the pool"


# A tiny command embeddings provider (the process edge): a bag of words over three dimensions.
BAG_OF_WORDS = """
import json, sys
texts = json.load(sys.stdin)["texts"]
rows = [[t.lower().count("harbor") + 0.0, t.lower().count("crane") + 0.0, 1.0] for t in texts]
json.dump({"embeddings": rows}, sys.stdout)
"""


@pytest.mark.parametrize(("ranking", "base"), [("hybrid", "fusion"), ("semantic", "semantic")])
def test_hybrid_and_semantic_hits_keep_their_own_base_signal_beside_relevance(
    bench: Bench,
    tmp_path: Path,
    poll: Any,
    ranking: str,
    base: str,
) -> None:
    script = tmp_path / "bag_of_words.py"
    script.write_text(BAG_OF_WORDS)
    palace = bench.open(
        preferences=DRAFTS_HIGH,
        flags={
            "embeddings.provider": "command",
            "embeddings.model": "bag-3d",
            "embeddings.command": [sys.executable, str(script)],
        },
    )
    bench.mine(palace, "notes", bench.notes("harbor", HARBOR), wing="w")
    poll(lambda: palace.services.status.embedding_status().pending == 0, timeout=20, what="embeddings")
    result = bench.search(palace, "harbor crane", wing="w", ranking=ranking)
    assert result.ranking == ranking and result.hits
    signals = [hit.signals[base] for hit in result.hits]
    low, high = min(signals), max(signals)
    for hit in result.hits:
        expected = 1.0 if high == low else (hit.signals[base] - low) / (high - low)
        assert hit.signals["relevance"] == pytest.approx(expected, abs=1e-9)
        assert hit.signals["preference"]["connector"] == "notes"
    assert_bounded(result.hits)


def test_graph_expanded_hits_stay_after_the_direct_hits_whatever_their_preference(bench: Bench, poll: Any) -> None:
    palace = bench.open(preferences=DRAFTS_HIGH)
    bench.mine(
        palace,
        "notes",
        bench.notes(
            "graph",
            {
                "crane.md": ({"status": "final"}, "The harbor crane is run by Alice Moreau."),
                "noon.md": ({"status": "final"}, "The harbor closes at noon."),
                "tea.md": ({"status": "draft"}, "Alice Moreau prefers green tea."),
            },
        ),
        wing="w",
    )
    poll(
        lambda: (jobs := palace.services.jobs.list_jobs(None, "extract")) and all(j.is_finished for j in jobs),
        timeout=20,
        what="fact extraction",
    )
    for preferences in ("on", "off"):
        result = bench.search(palace, "harbor", wing="w", expand=True, preferences=preferences)
        direct, expanded = result.hits[:2], result.hits[2:]
        assert {hit.drawer.name for hit in direct} == {"crane.md", "noon.md"}
        assert [(hit.drawer.name, hit.via) for hit in expanded] == [("tea.md", ("Alice Moreau",))], (
            "a preferred related drawer is not pulled forward"
        )
        (tea,) = expanded
        assert tea.signals["graph"] == 1.0 and tea.signals["relevance"] == 1.0, "explained as a direct hit is"
        if preferences == "on":
            preference = tea.signals["preference"]
            assert preference["level"] == "high" and preference["adjustment"] == pytest.approx(0.08)
            assert abs(tea.score - tea.signals["relevance"]) <= 0.08 + 1e-9, "the bound holds on expanded hits too"
        else:
            assert "preference" not in tea.signals and tea.score == 1.0


def test_expanded_hits_get_their_preference_before_the_cut_to_the_limit(bench: Bench, poll: Any) -> None:
    """Related drawers of equal graph score: the preferred one is kept at limit 1, whatever the ids say. Expanded hits
    are pooled as direct hits are, ranked with the policy, then cut (ADR 048, C9)."""
    palace = bench.open(preferences=DRAFTS_HIGH)
    # Nine related drawers and the hit: Alice Moreau stays a specific entity (`expansion.generic_limit`).
    related = {f"final-{n:02}.md": ({"status": "final"}, f"Alice Moreau filed report {n} today.") for n in range(8)}
    related["draft.md"] = ({"status": "draft"}, "Alice Moreau filed an unfinished report today.")
    notes = {"crane.md": ({"status": "final"}, "The harbor crane is run by Alice Moreau."), **related}
    bench.mine(palace, "notes", bench.notes("graph", notes), wing="w")
    poll(
        lambda: (jobs := palace.services.jobs.list_jobs(None, "extract")) and all(j.is_finished for j in jobs),
        timeout=20,
        what="fact extraction",
    )
    full = bench.search(palace, "harbor", wing="w", expand=True, limit=20)
    assert [hit.drawer.name for hit in full.hits[:1]] == ["crane.md"]
    assert {hit.signals["graph"] for hit in full.hits[1:]} == {1.0}, "every related drawer scores the same"
    assert {hit.drawer.name for hit in full.hits[1:]} == set(related)
    assert full.hits[1].drawer.name == "draft.md", "the preferred related drawer leads the expanded ones"
    one = bench.search(palace, "harbor", wing="w", expand=True, limit=1)
    assert [(hit.drawer.name, hit.via) for hit in one.hits] == [("crane.md", None), ("draft.md", ("Alice Moreau",))]
    assert one.hits[1].signals["preference"]["level"] == "high"
    # Without preferences the cut follows the graph score, then the id.
    off = bench.search(palace, "harbor", wing="w", expand=True, limit=1, preferences="off")
    smallest = min((hit.drawer.id, hit.drawer.name) for hit in full.hits[1:])[1]
    assert [hit.drawer.name for hit in off.hits[1:]] == [smallest]


# --- eligibility comes first ----------------------------------------------------------------------------


def test_a_preferred_drawer_outside_the_scope_never_appears(bench: Bench, tmp_path: Path) -> None:
    palace = bench.open(
        preferences='[preferences.sources.notes]\nlevel = "high"\n[preferences.sources.directory]\nlevel = "low"\n'
    )
    bench.mine(palace, "notes", bench.notes("inside", {"in.md": ({}, "harbor crane")}), wing="inside")
    bench.mine(palace, "notes", bench.notes("outside", {"out.md": ({}, "harbor harbor harbor")}), wing="outside")
    project = tmp_path / "project"
    project.mkdir()
    (project / "manual.txt").write_text("harbor crane manual for the inside team")
    bench.mine(palace, "directory", project, wing="inside")
    assert names(bench.search(palace, "harbor", wing="inside", limit=50)) == ["in.md", "manual.txt"]
    assert names(bench.search(palace, "harbor", connector="directory", limit=50)) == ["manual.txt"]
    assert names(bench.search(palace, "harbor", source_kind="file", limit=50)) == ["manual.txt"]
    assert set(names(bench.search(palace, "harbor", limit=50))) == {"in.md", "out.md", "manual.txt"}


def test_a_superseded_drawer_never_appears_in_current_search_however_preferred(bench: Bench) -> None:
    palace = bench.open(preferences=DRAFTS_HIGH)
    folder = bench.notes("plan", {"plan.md": ({"status": "draft"}, "harbor crane rollout plan")})
    bench.mine(palace, "notes", folder, wing="w")
    [old] = bench.drawers(palace, "w").values()
    bench.notes("plan", {"plan.md": ({"status": "final"}, "harbor crane rollout plan")})
    bench.mine(palace, "notes", folder, wing="w")
    [new] = bench.drawers(palace, "w").values()
    for preferences in ("on", "off"):
        current = bench.search(palace, "harbor", wing="w", limit=50, preferences=preferences)
        assert [hit.drawer.id for hit in current.hits] == [new.id]
    historical = bench.search(palace, "harbor", wing="w", include_historical=True)
    assert [hit.drawer.id for hit in historical.hits] == [old.id, new.id]  # draft (high) before final (low)


# --- the policy is read at read time ------------------------------------------------------------------------


def test_changing_the_palace_policy_and_restarting_reranks_old_drawers_without_re_mining(bench: Bench) -> None:
    palace = harbor_palace(bench, "palace")
    before = bench.search(palace, "harbor", wing="w")
    assert names(before) == UNADJUSTED_ORDER
    ids = {hit.drawer.name: hit.drawer.id for hit in before.hits}

    palace = bench.restart(palace, preferences=DRAFTS_HIGH)
    after = bench.search(palace, "harbor", wing="w")
    assert names(after) == ADJUSTED_ORDER
    assert {hit.drawer.name: hit.drawer.id for hit in after.hits} == ids, "the same drawers, not new ones"
    assert len(palace.services.jobs.list_jobs(None, "mine")) == 1 and palace.store.drawers.count_drawers() == len(
        HARBOR
    )

    palace = bench.restart(palace, preferences=None)
    assert comparable(bench.search(palace, "harbor", wing="w")) == comparable(before)


# --- `rerank` as a property -----------------------------------------------------------------------------

POLICY = load_policy(
    [parse_layer("test", {"sources": {"up": {"level": "high"}, "down": {"level": "low"}, "even": {"level": "normal"}}})]
)
CONNECTOR = st.sampled_from(("up", "down", "even", "unknown", None))
BASE = st.one_of(st.floats(-50, 50, allow_nan=False), st.sampled_from((0.0, 1.0, 0.5)))


def drawer(drawer_id: str, connector: str | None) -> Drawer:
    origin = (
        Origin(connector=connector, source_id="s", document=drawer_id, chunk=0, revision="r") if connector else None
    )
    return Drawer(
        id=drawer_id,
        wing="w",
        room="r",
        name=drawer_id,
        content="text",
        content_hash="h",
        fingerprint="f",
        source=Source(kind="note", origin=origin),
        tags=(),
        provenance=Provenance(),
        valid_from="2025-01-01T00:00:00Z",
        valid_to=None,
        supersedes=None,
        superseded_by=None,
        created_at="2025-01-01T00:00:00Z",
    )


@settings(max_examples=300, deadline=None)
@given(candidates=st.lists(st.tuples(BASE, CONNECTOR), min_size=1, max_size=60), default=st.sampled_from(list(LEVELS)))
def test_rerank_moves_a_hit_by_at_most_the_bound_and_drops_nothing(
    candidates: list[tuple[float, str | None]], default: str
) -> None:
    policy = load_policy([*POLICY.layers, parse_layer("default", {"default": default})])
    drawers = {f"d{i:03d}": drawer(f"d{i:03d}", connector) for i, (_, connector) in enumerate(candidates)}
    bases = [base for base, _ in candidates]
    pool = [
        PoolEntry(drawer_id=f"d{i:03d}", base=base, signals={"lexical": base}, relevance=relevance)
        for i, (base, relevance) in enumerate(zip(bases, pool_relevance(bases), strict=True))
    ]
    hits = rerank(policy, pool, drawers)

    assert sorted(hit.drawer.id for hit in hits) == sorted(drawers), "nothing is dropped or added"
    entries = {entry.drawer_id: entry for entry in pool}
    for hit in hits:
        entry = entries[hit.drawer.id]
        assert hit.signals["lexical"] == entry.base and hit.signals["relevance"] == entry.relevance
        assert hit.signals["preference"] == resolve(policy, hit.drawer.source.origin).to_json()
        assert abs(hit.score - entry.relevance) <= BOUND + EPSILON
    keys = [(-hit.score, -entries[hit.drawer.id].base, hit.drawer.id) for hit in hits]
    assert keys == sorted(keys), "by score, then base signal, then id"
    for earlier, later in itertools.combinations(hits, 2):
        lead = entries[later.drawer.id].relevance - entries[earlier.drawer.id].relevance
        assert not lead > 2 * BOUND, f"{later.drawer.id} led {earlier.drawer.id} by {lead} and was overtaken"


def test_a_low_hit_just_over_the_double_bound_ahead_keeps_its_place_when_the_scores_meet() -> None:
    """In floating point the two scores can come out equal at the boundary; the base signal then keeps the order."""
    ahead, behind = 0.5667689179897262, 0.40676891798972614
    assert ahead - behind > 2 * BOUND and ahead - BOUND == behind + BOUND
    pool = [PoolEntry("b-high", 0.4, {"lexical": 0.4}, behind), PoolEntry("z-low", 0.6, {"lexical": 0.6}, ahead)]
    hits = rerank(POLICY, pool, {"b-high": drawer("b-high", "up"), "z-low": drawer("z-low", "down")})
    assert [hit.drawer.id for hit in hits] == ["z-low", "b-high"]


@settings(max_examples=150, deadline=None)
@given(candidates=st.lists(st.tuples(BASE, CONNECTOR), min_size=1, max_size=40))
def test_when_every_hit_has_the_same_preference_the_ranking_is_the_base_ranking(
    candidates: list[tuple[float, str | None]],
) -> None:
    policy = load_policy([parse_layer("all high", {"default": "high"})])
    bases = [base for base, _ in candidates]
    pool = [
        PoolEntry(f"d{i:03d}", base, {"lexical": base}, relevance)
        for i, (base, relevance) in enumerate(zip(bases, pool_relevance(bases), strict=True))
    ]
    hits = rerank(policy, pool, {entry.drawer_id: drawer(entry.drawer_id, "any") for entry in pool})
    assert [hit.drawer.id for hit in hits] == [e.drawer_id for e in sorted(pool, key=lambda e: (-e.base, e.drawer_id))]


@given(bases=st.lists(BASE, min_size=1, max_size=50))
def test_pool_relevance_spans_0_to_1_keeps_order_and_is_1_when_all_equal(bases: list[float]) -> None:
    relevance = pool_relevance(bases)
    assert all(0.0 <= r <= 1.0 for r in relevance)
    if len(set(bases)) == 1:
        assert relevance == [1.0] * len(bases)
    else:
        assert max(relevance) == 1.0 and min(relevance) == 0.0
    for (b1, r1), (b2, r2) in itertools.combinations(zip(bases, relevance, strict=True), 2):
        assert (b1 < b2) <= (r1 <= r2) and (b1 == b2) <= (r1 == r2)


def test_numbers_in_front_matter_compare_as_json_numbers(bench: Bench) -> None:
    """`equals = 1` matches front matter `version: 1` and `version: 1.0` (JSON has one number type), never `"1"`,
    `true` or `1.5`: mined through the notes connector, resolved from each drawer's frozen snapshot."""
    palace = bench.open(
        preferences='[[preferences.sources.notes.criteria]]\npath = "version"\nequals = 1\nlevel = "high"\n'
    )
    folder = bench.notes(
        "numbers",
        {
            "int.md": ({"version": 1}, "release notes"),
            "float.md": ({"version": 1.0}, "release notes"),
            "text.md": ({"version": "1"}, "release notes"),
            "bool.md": ({"version": True}, "release notes"),
            "other.md": ({"version": 1.5}, "release notes"),
        },
    )
    (folder / "float.md").write_text("---\nversion: 1.0\n---\nrelease notes\n", encoding="utf-8")  # YAML keeps 1.0
    bench.mine(palace, "notes", folder, wing="numbers")
    levels = {
        hit.drawer.name: palace.services.drawers.preference_trace(hit.drawer.id).trace["result"]["level"]
        for hit in bench.search(palace, "release notes", wing="numbers", limit=10).hits
    }
    assert levels == {
        "int.md": "high",
        "float.md": "high",
        "text.md": "normal",
        "bool.md": "normal",
        "other.md": "normal",
    }
