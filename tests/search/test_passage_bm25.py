"""Lexical scoring by passage: a long drawer ranks by its best passage, scored by the full-text index's own BM25."""

from __future__ import annotations

from memcastle.model import ScoredDrawer
from memcastle.search.passage_bm25 import best_passage_scores, idf, rescored
from memcastle.search.snippets import TermMatcher

FILLER = "The archive keeps ledgers of grain, wool and timber for every season of the year. "
PASSAGES = (700, 0)


def test_a_passage_about_the_query_beats_words_scattered_over_a_long_drawer() -> None:
    focused = FILLER * 16 + "The drawbridge winch jammed; the drawbridge winch was greased. " + FILLER * 16
    scattered = "drawbridge " + FILLER * 16 + " winch " + FILLER * 16
    matcher = TermMatcher("drawbridge winch")
    weights = idf(1000, [10, 10])
    scores = best_passage_scores({"focused": focused, "scattered": scattered}, matcher, weights, 40.0, PASSAGES)
    assert scores["focused"] > scores["scattered"] > 0
    assert [c.drawer_id for c in rescored([ScoredDrawer("scattered", 9.0), ScoredDrawer("focused", 3.0)], scores)] == [
        "focused",
        "scattered",
    ]


def test_rarer_words_weigh_more_and_a_drawer_without_them_scores_zero() -> None:
    matcher = TermMatcher("portcullis stone")
    weights = idf(1000, [3, 600])
    assert weights[0] > 1.0 and weights[1] == 1e-6, "a word in most drawers is floored, as in FTS5"
    scores = best_passage_scores(
        {"rare": "the portcullis", "common": "a stone, a stone", "none": "bread"}, matcher, weights, 3.0, PASSAGES
    )
    assert scores["rare"] > scores["common"] > 0 and scores["none"] == 0.0
