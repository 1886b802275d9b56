"""Fusing the two legs: calibrated fusion (the default) keeps how far apart the scores are, reciprocal rank fusion
keeps only ranks; both treat a drawer waiting for its vectors as if the semantic leg agreed with the lexical one."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memcastle.model import ScoredDrawer
from memcastle.search.fusion import ANCHOR_RANK, FusionWeights, fuse

CALIBRATED = FusionWeights(method="calibrated", lexical=1.0, semantic=1.0)
RRF = FusionWeights(method="rrf", lexical=1.0, semantic=1.0)


def leg(*pairs: tuple[str, float]) -> list[ScoredDrawer]:
    return [ScoredDrawer(drawer_id, signal) for drawer_id, signal in pairs]


def test_calibrated_fusion_weighs_normalized_scores() -> None:
    default = FusionWeights()
    assert (default.method, default.lexical, default.semantic) == ("calibrated", 0.6, 0.4), "as measured: ADR 0019"
    lexical = leg(("a", 12.0), ("b", 11.9), ("c", 2.0))
    semantic = leg(("c", 0.80), ("a", 0.30), ("d", 0.29))
    fused = {r.drawer_id: r.base for r in fuse(lexical, semantic, CALIBRATED)}
    # lexical: a 1, b 0.99, c 0; semantic: c 1, a 0.0196…, d 0 — each halved
    assert fused["a"] == pytest.approx((1.0 + (0.30 - 0.29) / (0.80 - 0.29)) / 2)
    assert fused["b"] == pytest.approx(0.99 / 2)
    assert fused["c"] == pytest.approx(0.5)
    assert fused["d"] == pytest.approx(0.0)
    assert [r.drawer_id for r in fuse(lexical, semantic, CALIBRATED)] == ["a", "c", "b", "d"]


def test_a_strong_match_is_not_flattened_to_a_rank_as_in_rank_fusion() -> None:
    """b is a hair behind a lexically and far ahead semantically: calibrated fusion puts b first, rank fusion
    cannot tell it from a."""
    lexical = leg(("a", 10.0), ("b", 9.99), ("z", 1.0))
    semantic = leg(("b", 0.9), ("a", 0.2), ("z", 0.19))
    assert fuse(lexical, semantic, CALIBRATED)[0].drawer_id == "b"
    ranks = fuse(lexical, semantic, RRF)
    assert ranks[0].base == ranks[1].base, "rank fusion ties them"


def test_ties_break_by_id_and_weights_count() -> None:
    lexical = leg(("b", 1.0), ("a", 1.0))
    assert [r.drawer_id for r in fuse(lexical, [], CALIBRATED)] == ["a", "b"]
    assert [r.drawer_id for r in fuse(lexical, [], RRF)] == ["b", "a"], "rank fusion keeps the leg's order"
    heavy = FusionWeights(lexical=0.2, semantic=0.8, method="calibrated")
    fused = {r.drawer_id: r.base for r in fuse(leg(("x", 5.0), ("y", 1.0)), leg(("y", 0.9), ("x", 0.1)), heavy)}
    assert fused["y"] == pytest.approx(0.8) and fused["x"] == pytest.approx(0.2)


@pytest.mark.parametrize("weights", [CALIBRATED, RRF])
def test_a_drawer_waiting_for_vectors_is_fused_as_if_the_legs_agreed(weights: FusionWeights) -> None:
    lexical = leg(("waiting", 9.0), ("embedded", 8.0), ("other", 1.0))
    semantic = leg(("embedded", 0.5), ("unrelated", 0.4), ("other", 0.3))
    fused = fuse(lexical, semantic, weights, waiting=lambda drawer_id: drawer_id == "waiting")
    assert fused[0].drawer_id == "waiting" and fused[0].signals["semantic_pending"] == 1.0
    without = fuse(lexical, semantic, weights)
    assert without[0].drawer_id == "embedded"


def test_the_any_term_fill_stays_below_the_all_term_drawers() -> None:
    from memcastle.search.passage_bm25 import fill_below

    first = leg(("a", 9.0), ("b", 4.0))
    more = leg(("x", 30.0), ("a", 20.0), ("y", 15.0), ("z", 1.0))
    filled = fill_below(first, more, 4)
    assert [c.drawer_id for c in filled] == ["a", "b", "x", "y"], "no repeats, up to the limit"
    assert filled[2].signal == filled[3].signal == pytest.approx(0.999 * 4.0), "capped just below the last of all"
    weak = fill_below(first, leg(("w", 1.5), ("v", 0.5)), 4)
    assert [c.signal for c in weak[2:]] == [1.5, 0.5], "a weak match keeps its own score, far below"
    assert fill_below([], more, 2) == more[:2], "nothing holds every word: the any-term drawers as they are"
    assert fill_below(first, more, 2) == first


@settings(max_examples=200, deadline=None)
@example(lexical=[], semantic=[0.4] * 40, shallow=20, extra=20)  # a tie the shallow fetch cuts through
@given(
    lexical=st.lists(st.floats(0.1, 30.0), min_size=0, max_size=120),
    semantic=st.lists(st.floats(-1.0, 1.0), min_size=0, max_size=120),
    shallow=st.integers(ANCHOR_RANK, 60),
    extra=st.integers(0, 60),
)
def test_calibrated_fusion_of_the_best_candidates_does_not_depend_on_how_deep_the_legs_go(
    lexical: list[float], semantic: list[float], shallow: int, extra: int
) -> None:
    """Each leg is scaled between its best and its ANCHOR_RANK-th best score, so fetching the legs deeper adds
    candidates below; it never moves the ones a shallower fetch ranked first."""
    lex = sorted((ScoredDrawer(f"l{i}", s) for i, s in enumerate(lexical)), key=lambda c: -c.signal)
    sem = sorted((ScoredDrawer(f"s{i % 40}", s) for i, s in enumerate(semantic)), key=lambda c: -c.signal)
    sem = list({c.drawer_id: c for c in reversed(sem)}.values())[::-1]  # one candidate per drawer
    deep = shallow + extra
    few = fuse(lex[:shallow], sem[:shallow], FusionWeights())
    many = fuse(lex[:deep], sem[:deep], FusionWeights())
    scored = [r for r in few if r.base > 0]
    top = many[: len(scored)]
    # The drawers the shallow fetch ranked keep their scores and their order, whatever else a deeper fetch finds.
    shallow_ids = {r.drawer_id for r in few}
    kept = [r for r in many if r.drawer_id in {s.drawer_id for s in scored}]
    assert [(r.drawer_id, r.base) for r in kept] == [(r.drawer_id, r.base) for r in scored]
    # A deeper fetch brings above them only a drawer a leg scores exactly as the last one the shallow fetch took
    # of that leg: the shallow fetch cut through a tie (ties go by id).
    cut = {
        leg: ranked[shallow - 1].signal
        for leg, ranked in (("lexical", lex), ("semantic", sem))
        if len(ranked) > shallow
    }
    signal = {c.drawer_id: ("lexical", c.signal) for c in lex} | {c.drawer_id: ("semantic", c.signal) for c in sem}
    for r in top:
        if r.drawer_id not in shallow_ids:
            leg, value = signal[r.drawer_id]
            assert cut.get(leg) == value, "only ties at the cut"


@pytest.mark.parametrize("method", ["calibrated", "rrf"])
def test_during_a_backlog_a_meaning_only_drawer_follows_the_waiting_ones_only_beside_an_exact_match(
    method: str,
) -> None:
    lexical = leg(("exact", 1.5), ("near", 0.6), ("weak", 0.5), ("faint", 1.2e-6), ("fainter", 1.0e-6))
    semantic = leg(("meaning", 0.42), ("other", 0.3))
    weights = FusionWeights(method=method)
    waiting = {"exact", "near", "weak", "faint", "fainter"}.__contains__
    held = [r.drawer_id for r in fuse(lexical, semantic, weights, waiting=waiting, exact=True)]
    assert held[:5] == ["exact", "near", "weak", "faint", "fainter"]
    assert held[5:] == ["meaning", "other"], "their own order stands"
    marked = {r.drawer_id for r in fuse(lexical, semantic, weights, waiting=waiting, exact=True)
              if "semantic_backlog" in r.signals}  # fmt: skip
    assert marked == {"meaning", "other"}
    # No exact match (a paraphrase), or nothing waiting: the legs as they are.
    for loose in (
        fuse(lexical, semantic, weights, waiting=waiting, exact=False),
        fuse(lexical, semantic, weights, waiting=lambda _: False, exact=True),
    ):
        assert not any("semantic_backlog" in r.signals for r in loose)
    if method == "calibrated":  # there a meaning-only drawer's 0.4 passes the weak lexical matches
        loose_order = [r.drawer_id for r in fuse(lexical, semantic, weights, waiting=waiting, exact=False)]
        assert loose_order.index("meaning") < loose_order.index("weak")


# Scores as the legs give them during a backlog: zeros, ties and empty legs included; the legs share drawers (ids
# from one small pool) and any subset of the lexical leg is waiting for its vectors.
SCORES = st.one_of(st.just(0.0), st.sampled_from([0.5, 1.0]), st.floats(0.0, 30.0, allow_nan=False))
LEG = st.dictionaries(st.integers(0, 40), SCORES, max_size=30)


@settings(max_examples=500, deadline=None)
# The failure a backlog met: the best meaning-only drawer and the lowest waiting one both fused to 0.
@example(lexical={0: 2.0, 1: 1.0}, semantic={0: 0.5, 2: 0.1}, waiting_ids={1}, exact=True, method="calibrated")
@example(lexical={0: 0.0, 1: 0.0}, semantic={0: 0.0}, waiting_ids={0, 1}, exact=True, method="calibrated")
@given(
    lexical=LEG,
    semantic=LEG,
    waiting_ids=st.sets(st.integers(0, 40)),
    exact=st.booleans(),
    method=st.sampled_from(["calibrated", "rrf"]),
)
def test_fusion_during_a_backlog_never_fails_and_keeps_every_candidate_once(
    lexical: dict[int, float], semantic: dict[int, float], waiting_ids: set[int], exact: bool, method: str
) -> None:
    """Whatever the legs score — both 0, all tied, one leg empty — fusion answers: every candidate once, finite
    non-negative scores, best first, and with an exact match the meaning-only drawers behind every waiting one."""
    lex = sorted((ScoredDrawer(f"d{i:02}", s) for i, s in lexical.items()), key=lambda c: -c.signal)
    # A drawer waiting for its vectors cannot be in the semantic leg.
    waiting = {f"d{i:02}" for i in waiting_ids if i in lexical}
    sem_items = [(f"d{i:02}", s) for i, s in semantic.items() if f"d{i:02}" not in waiting]
    sem = sorted((ScoredDrawer(d, s) for d, s in sem_items), key=lambda c: -c.signal)
    fused = fuse(lex, sem, FusionWeights(method=method), waiting=waiting.__contains__, exact=exact)
    assert sorted(r.drawer_id for r in fused) == sorted({c.drawer_id for c in [*lex, *sem]})
    assert all(0.0 <= r.base < float("inf") for r in fused)
    assert [r.base for r in fused] == sorted((r.base for r in fused), reverse=True)
    pending = [i for i, r in enumerate(fused) if "semantic_pending" in r.signals]
    if exact and pending:
        meaning_only = [i for i, r in enumerate(fused) if "lexical" not in r.signals]
        assert all(i > max(pending) for i in meaning_only), "meaning-only drawers come after every waiting one"
