"""Extraction that does not invent conflicts: the subject of "The X build server is located in …" is the build
server, an agent's explicit fact about the same thing joins the same entity (and so the same conflict), and flags,
punctuation and sentence fragments in code spans make no entities."""

from __future__ import annotations

from memcastle.knowledge.extraction.contract import ExtractionInput
from memcastle.knowledge.extraction.heuristic import HeuristicProvider
from memcastle.model.requests import FactSpec

from .support import Palaces, extracted


def read(text: str) -> tuple[set[str], set[tuple[str, str, str]]]:
    [found] = HeuristicProvider().extract([ExtractionInput(id="d", text=text, provenance={}, preference={})])
    return {e.name for e in found.entities}, {(r.subject, r.predicate, r.object) for r in found.relations}


def test_the_subject_is_the_thing_not_the_name_before_it() -> None:
    _, relations = read("The Harbor build server is located in Frankfurt.")
    assert relations == {("Harbor build server", "located_in", "Frankfurt")}
    _, relations = read("Harbor is located in Frankfurt.")
    assert relations == {("Harbor", "located_in", "Frankfurt")}
    # A person's claims keep the person; an adverb or a function word ends the tail.
    assert read("Ana from the team works on Atlas.")[1] == {("Ana", "works_on", "Atlas")}
    assert read("Harbor mostly uses Docker.")[1] == {("Harbor", "uses", "Docker")}


def test_flags_punctuation_and_fragments_make_no_entities() -> None:
    entities, _ = read("then `--` and `--bar --foo`; `echo uses Windows` prints; run `git rebase` or `pip`.")
    assert entities == {"git rebase", "pip"}


def test_an_agents_explicit_fact_joins_the_extracted_entity_and_its_conflict(palaces: Palaces) -> None:
    palace = palaces.open()
    palace.services.drawers.save_note("The Harbor build server is located in Frankfurt.", wing="harbor")
    palace.services.jobs.request_extraction()
    extracted(palace)
    [mined] = palace.services.facts.list_facts(limit=10)
    assert mined.subject_name == "Harbor build server"
    stated = palace.services.facts.add(FactSpec("the Harbor build server", "located_in", "Berlin"))
    assert stated.fact.subject == mined.fact.subject, "the article does not make another entity"
    states = {v.object_name: v.state for v in palace.services.facts.list_facts(limit=10)}
    assert states == {"Frankfurt": "conflicting", "Berlin": "conflicting"}
