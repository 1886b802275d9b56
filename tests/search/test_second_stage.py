"""The second stage (docs/adr/0047-second-stage.md): what it reads, that it is bounded, that it leaves the
candidates below its depth in the fusion's order, and that `rerank=off` is the ranking without it, exactly."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from clocks import DistinctClock

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.errors import InvalidRequest
from memcastle.search.fusion import Ranked
from memcastle.search.second_stage import SecondStage, StagedText, path_evidence, term_evidence
from memcastle.search.snippets import TermMatcher
from memcastle.services import SearchRequest


def test_coverage_counts_each_word_by_its_weight_and_nearness_the_tightest_window() -> None:
    matcher = TermMatcher("harbor build server frankfurt")
    assert matcher.words == ["harbor", "build", "server", "frankfurt"]
    even = [1.0, 1.0, 1.0, 1.0]
    assert term_evidence(matcher, "The Harbor build server is in Frankfurt.", even) == (1.0, pytest.approx(4 / 6))
    assert term_evidence(matcher, "harbor: Build-server, Frankfurt", even) == (1.0, 1.0)
    coverage, near = term_evidence(matcher, "Frankfurt. " + "filler words here " * 30 + "harbor", even)
    assert coverage == 0.5 and 0 < near < 0.1, "two words, far apart"
    assert term_evidence(matcher, "nothing of it", even) == (0.0, 0.0)
    assert term_evidence(matcher, "builds, builds", even) == (0.25, 0.0), "one word is no window"
    rare = [1.0, 1.0, 1.0, 7.0]
    assert term_evidence(matcher, "frankfurt", rare)[0] == pytest.approx(0.7), "a rare word held counts more"


def ranked(n: int) -> list[Ranked]:
    return [Ranked(f"d{i:02d}", 1.0 - i / n, {"lexical": 1.0 - i / n}) for i in range(n)]


def test_the_stage_is_bounded_and_keeps_the_rest_below() -> None:
    pool = ranked(50)
    texts = {r.drawer_id: "" for r in pool}
    texts["d01"] = "the harbor build server is in frankfurt"  # second by the fusion, holds every word
    texts["d39"] = "the harbor build server is in frankfurt"  # last re-scored: far below, cannot be lifted
    texts["d45"] = "the harbor build server is in frankfurt"  # below the depth: not read, not moved
    stage = SecondStage("on", depth=40, weight=0.3)
    read: list[Sequence[str]] = []

    def reader(ids: Sequence[str]) -> Mapping[str, StagedText]:
        read.append(ids)
        return {i: StagedText(texts[i]) for i in ids}

    out = stage.rescore("where is the harbor build server", pool, reader)
    assert len(read) == 1 and len(read[0]) == 40, "only the depth is read, once"
    order = [r.drawer_id for r in out]
    assert order[0] == "d01", "a near second holding every word goes first"
    assert order.index("d39") > 20, "the bound: the stage reorders neighbours, it does not lift the bottom"
    assert order[40:] == [f"d{i:02d}" for i in range(40, 50)], "below the depth, the fusion's order"
    assert min(r.base for r in out[:40]) > max(r.base for r in out[40:])
    assert out[0].signals["fused"] == pool[1].base and out[0].signals["lexical"] == pool[1].signals["lexical"]
    assert out[0].signals["rerank"]["coverage"] == 1.0 and 0 < out[0].signals["rerank"]["added"] <= 0.3
    assert all(0 <= r.signals["rerank"]["added"] <= 0.3 for r in out[:40])


def test_auto_applies_to_questions_of_two_words_or_more() -> None:
    stage = SecondStage("auto")
    assert stage.applies("harbor build server") and not stage.applies("harbor")
    assert not stage.applies("the of and harbor"), "stop words are not words of the question"
    assert SecondStage("off").applies("harbor build", "on") and not SecondStage("on").applies("a b c", "off")


def test_auto_leaves_a_pool_of_short_drawers_alone_and_says_so_on_each() -> None:
    """Conversation turns did not move with the stage (LoCoMo); code, documents and history did (ADR 0054)."""
    pool = ranked(50)
    short = {r.drawer_id: "Caroline: the harbor build server is in frankfurt" for r in pool}
    long = {r.drawer_id: "def build(server):\n" + "    frankfurt = harbor(server)\n" * 30 for r in pool}
    long["d03"] = "the harbor build server is in frankfurt\n" * 20

    def reader(texts: Mapping[str, str]) -> Callable[[Sequence[str]], Mapping[str, StagedText]]:
        return lambda ids: {i: StagedText(texts[i]) for i in ids}

    auto = SecondStage("auto")
    kept = auto.rescore("where is the harbor build server", pool, reader(short))
    assert [r.drawer_id for r in kept] == [r.drawer_id for r in pool] and [r.base for r in kept] == [
        r.base for r in pool
    ], "the fusion's order, exactly"
    assert kept[0].signals["rerank"] == {"skipped": "auto: short drawers (median 49 characters)"}
    assert "rerank" not in kept[45].signals, "below the depth, nothing is said"
    rescored = auto.rescore("where is the harbor build server", pool, reader(long))
    assert "added" in rescored[0].signals["rerank"], "a pool of longer drawers is re-scored"
    on = SecondStage("auto").rescore("where is the harbor build server", pool, reader(short), asked="on")
    assert "added" in on[0].signals["rerank"], "asked for, the stage runs whatever the drawers"


@pytest.fixture
def notes_palace(tmp_path: Path) -> Iterator[Palace]:
    settings = load_settings(
        flags={"palace": str(tmp_path / "palace"), "embeddings.provider": "none", "search.rerank": "on"},
        env={},
        config_file=None,
    )
    palace = build(settings, now=DistinctClock())
    palace.start()
    rng = random.Random(7)
    words = "harbor build server frankfurt staging port retry lantern skiff deploy cluster night watch".split()
    for i in range(120):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(3, 40)))
        palace.services.drawers.save_note(f"note {i}: {text}", wing="w")
    yield palace
    palace.stop()


def test_rerank_off_is_the_ranking_without_the_stage_exactly(notes_palace: Palace) -> None:
    search = notes_palace.services.search
    rng = random.Random(11)
    words = "harbor build server frankfurt staging port retry lantern skiff deploy".split()
    moved = 0
    for _ in range(30):
        query = " ".join(rng.sample(words, rng.randint(2, 4)))
        off = search.search(SearchRequest(query=query, limit=10, ranking="lexical", rerank="off"))
        again = search.search(SearchRequest(query=query, limit=10, ranking="lexical", rerank="off"))
        on = search.search(SearchRequest(query=query, limit=10, ranking="lexical"))  # the palace's: on
        assert [(h.drawer.id, h.score) for h in off.hits] == [(h.drawer.id, h.score) for h in again.hits]
        assert all("rerank" not in h.signals and "fused" not in h.signals for h in off.hits)
        assert all("rerank" in h.signals for h in on.hits)
        moved += [h.drawer.id for h in off.hits] != [h.drawer.id for h in on.hits]
        # The top k does not depend on the limit, with the stage as without it.
        five = search.search(SearchRequest(query=query, limit=5, ranking="lexical"))
        assert [h.drawer.id for h in five.hits] == [h.drawer.id for h in on.hits][:5]
    assert moved, "the stage changed some ranking (else this test could not fail)"
    with pytest.raises(InvalidRequest) as refused:
        search.search(SearchRequest(query="harbor", rerank="sometimes"))
    assert refused.value.field == "rerank"


def test_a_file_named_by_the_behaviour_comes_before_its_tests_and_docs() -> None:
    matcher = TermMatcher("how does json encode floats")
    assert path_evidence(matcher, "json/encoder.py", [1.0] * len(matcher.words)) == pytest.approx(2 / 3)
    text = "json encode floats: the encoder writes floats with repr"
    pool = [Ranked("doc", 1.0, {}), Ranked("test", 0.98, {}), Ranked("code", 0.96, {}), Ranked("other", 0.5, {})]
    files = {
        "doc": StagedText(text, "Doc/library/json.rst"),
        "test": StagedText(text, "test/test_json/test_float.py"),
        "code": StagedText(text, "json/encoder.py"),
        "other": StagedText("nothing", "xml/dom.py"),
    }
    stage = SecondStage("on")
    order = [r.drawer_id for r in stage.rescore("how does json encode floats", pool, lambda ids: files)]
    assert order[0] == "code" and set(order[1:3]) == {"doc", "test"}
    first = stage.rescore("how does json encode floats", pool, lambda ids: files)[0]
    assert first.signals["rerank"]["path"] > 0 and "support" not in first.signals["rerank"]
    asked = [r.drawer_id for r in stage.rescore("json float tests", pool, lambda ids: files)]
    assert asked[0] == "test", "a query that asks for the tests gets them"
