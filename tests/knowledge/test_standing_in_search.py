"""Truth shows in search (docs/adr/0043-truth-shows-in-search.md): a hit evidencing a contested fact says so, and when
a search's pool holds both sides of the question, the claim that stands comes first — bounded, explained, nothing
hidden; correcting a fact changes what the next search ranks first."""

from __future__ import annotations

from typing import Any

import pytest

from memcastle.app import Palace
from memcastle.model.requests import FactCorrection, SearchRequest

from .support import Palaces, extracted

# The older note says more about the build server, so it is the more relevant one by words alone.
OLD = (
    "The Harbor build server is located in Frankfurt. The build server runs the nightly builds, and the build "
    "server keeps the release artifacts."
)
NEW = "Moved last week: the Harbor build server is located in Berlin now."
QUERY = "Harbor build server location"


def palace_with_a_conflict(palaces: Palaces) -> tuple[Palace, str, str]:
    palace = palaces.open()
    old = palace.services.drawers.save_note(OLD, wing="harbor").drawer.id
    new = palace.services.drawers.save_note(NEW, wing="harbor").drawer.id
    palace.services.jobs.request_extraction()
    extracted(palace)
    return palace, old, new


def ranked(palace: Palace, **options: Any) -> list[Any]:
    return list(palace.services.search.search(SearchRequest(query=QUERY, ranking="lexical", **options)).hits)


def facts_of(palace: Palace, drawer_id: str) -> list[Any]:
    return [v for v in palace.services.facts.list_facts(limit=100) if v.fact.drawer_id == drawer_id]


def test_the_standing_claim_comes_first_and_both_hits_say_so(palaces: Palaces) -> None:
    palace, old, new = palace_with_a_conflict(palaces)
    [old_fact] = facts_of(palace, old)
    [new_fact] = facts_of(palace, new)
    assert old_fact.state == new_fact.state == "conflicting"
    assert old_fact.conflict is not None and old_fact.conflict.preferred_id == new_fact.fact.id, "fresher evidence"

    hits = ranked(palace)
    assert [h.drawer.id for h in hits] == [new, old]
    first, second = hits
    assert first.signals["relevance"] < second.signals["relevance"], "by words alone the stale note was first"
    stands, outranked = first.signals["standing"], second.signals["standing"]
    assert stands["stands"] is True and outranked["stands"] is False
    assert outranked["state"] == "conflicting" and outranked["standing_id"] == new_fact.fact.id
    assert "Berlin" in outranked["standing"] and "Frankfurt" in outranked["fact"] and outranked["basis"]
    # The two traded places and scores, and say by how much; the original signals stay visible.
    assert first.score > second.score and stands["adjustment"] == pytest.approx(-outranked["adjustment"])
    assert all("lexical" in hit.signals for hit in hits)


def test_a_pool_with_one_side_is_marked_but_not_moved(palaces: Palaces) -> None:
    palace, old, _ = palace_with_a_conflict(palaces)
    hits = list(palace.services.search.search(SearchRequest(query="nightly", ranking="lexical")).hits)
    assert [h.drawer.id for h in hits] == [old]
    assert hits[0].signals["standing"]["adjustment"] == 0.0 and hits[0].signals["standing"]["stands"] is False
    assert "Berlin" in hits[0].signals["standing"]["standing"], "the hit names the claim that stands"


@pytest.mark.parametrize("correction", ["invalidate", "supersede"])
def test_correcting_a_fact_changes_what_search_ranks_first(palaces: Palaces, correction: str) -> None:
    """The agent decides the other way: the claim it keeps stands, the one it closed falls behind, marked."""
    palace, old, new = palace_with_a_conflict(palaces)
    [new_fact] = facts_of(palace, new)
    [old_fact] = facts_of(palace, old)
    if correction == "invalidate":  # the Berlin note is the wrong one
        palace.services.facts.invalidate(new_fact.fact.id, "the move was cancelled")
        kept = old
    else:  # the Berlin claim is replaced by a corrected claim evidenced by the old note
        palace.services.facts.supersede(
            new_fact.fact.id, FactCorrection(object="Frankfurt", evidence_drawer=old, reason="the move was cancelled")
        )
        kept = old
    hits = ranked(palace)
    assert [h.drawer.id for h in hits] == [kept, new]
    closed = hits[1].signals["standing"]
    assert closed["state"] == ("invalidated" if correction == "invalidate" else "superseded")
    assert closed["adjustment"] <= 0 and "Frankfurt" in closed["standing"] and closed["basis"]
    assert hits[0].signals["standing"]["stands"] is True
    assert old_fact.fact.id  # the old claim itself was never touched
