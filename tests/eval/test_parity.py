"""The parity rule another backend is held to: every metric over all queries within parity both ways, and no
category worse unless the difference is explained (`bench.judged.metrics.STEMMER_DIFFERENCES`)."""

from __future__ import annotations


def test_parity_fails_a_category_worse_on_another_backend_unless_it_is_explained() -> None:
    from bench.judged.metrics import METRICS, parity_problems

    base = {"all": dict.fromkeys(METRICS, 0.8), "paraphrase": dict.fromkeys(METRICS, 0.65)}
    worse = {"all": dict.fromkeys(METRICS, 0.79), "paraphrase": dict.fromkeys(METRICS, 0.60)}
    assert parity_problems(worse, base, "hybrid", known={}), "a category worse by more than parity is a problem"
    assert parity_problems(worse, base, "hybrid", known={"hybrid/paraphrase": "why"}) == []
    far = {"all": dict.fromkeys(METRICS, 0.70), "paraphrase": dict.fromkeys(METRICS, 0.60)}
    assert parity_problems(far, base, "hybrid", known={"hybrid/paraphrase": "why"}), "all queries stay at parity"
