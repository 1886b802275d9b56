"""Extraction providers against real text, a real child process and a real local HTTP server; normalization rules."""

from __future__ import annotations

import http.server
import json
import math
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcastle.errors import ConfigError, ProviderError
from memcastle.knowledge.extraction import (
    ENTITY_KINDS,
    PREDICATES,
    CommandProvider,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    ExtractionInput,
    ExtractionProvider,
    HeuristicProvider,
    HttpProvider,
    NoneProvider,
    build_extraction_provider,
    normalize_extraction,
)


def _input(
    id: str,
    text: str,
    *,
    level: str = "normal",
    connector: str = "notes",
    document: str = "atlas.md",
    criterion: dict[str, Any] | None = None,
) -> ExtractionInput:
    return ExtractionInput(
        id=id,
        text=text,
        provenance={
            "connector": connector,
            "document": document,
            "uri": f"file:///palace/{document}",
            "occurred_at": "2024-05-01T09:00:00Z",
        },
        preference={"level": level, "connector": connector, "criterion": criterion},
    )


def _read(text: str, **options: Any) -> Extraction:
    (extraction,) = HeuristicProvider(**options).extract([_input("d1", text)])
    return extraction


def _kinds(extraction: Extraction) -> dict[str, str]:
    return {entity.name: entity.kind for entity in extraction.entities}


def _triples(extraction: Extraction) -> list[tuple[str, str, str]]:
    return [(r.subject, r.predicate, r.object) for r in extraction.relations]


# -------------------------------------------------------------------------------------------------- heuristic


@pytest.mark.parametrize(
    ("text", "triple"),
    [
        ("Ana Lopez works on Atlas.", ("Ana Lopez", "works_on", "Atlas")),
        ("Since spring, Ana Lopez is working on the Atlas rewrite.", ("Ana Lopez", "works_on", "Atlas")),
        ("Atlas uses Postgres for its job queue.", ("Atlas", "uses", "Postgres")),
        # The subject is the thing the sentence is about, not the name before it (issue: "The Harbor build server
        # is located in Frankfurt" is no claim about Harbor).
        ("The Atlas importer is using Kafka again.", ("Atlas importer", "uses", "Kafka")),
        ("Ana lives in Lisbon with her partner.", ("Ana", "located_in", "Lisbon")),
        ("Acme Corp is based in Berlin.", ("Acme Corp", "located_in", "Berlin")),
        ("The Atlas data centre is located in New York.", ("Atlas data centre", "located_in", "New York")),
        ("Atlas depends on Redis for caching.", ("Atlas", "depends_on", "Redis")),
        ("Orion is part of the Atlas platform.", ("Orion", "part_of", "Atlas")),
        ("Ben Hart owns Orion.", ("Ben Hart", "owns", "Orion")),
        ("Carla is a member of the Platform Guild.", ("Carla", "member_of", "Platform Guild")),
        ("Last year Dmitri joined Acme Corp.", ("Dmitri", "member_of", "Acme Corp")),
    ],
)
def test_heuristic_reads_each_phrase_of_the_table(text: str, triple: tuple[str, str, str]) -> None:
    extraction = _read(text)
    assert extraction.relations == (ExtractedRelation(*triple, confidence=0.6),)
    assert {triple[0], triple[2]} <= set(_kinds(extraction))


def test_heuristic_gives_kinds_from_form_suffix_and_role() -> None:
    text = (
        "Ana Lopez works on Atlas. Atlas uses Kafka and depends on `redis-py`. Ben lives in Lisbon. "
        "Carla joined Acme Corp. @dmitri reviewed the change. Orion Labs is based in Berlin. "
        "Atlas is part of Northwind."
    )
    assert _kinds(_read(text)) == {
        "Ana Lopez": "person",  # subject of works_on
        "Atlas": "project",  # object of works_on
        "Kafka": "tool",  # object of uses
        "redis-py": "tool",  # `code`
        "Ben": "person",  # subject of lives in
        "Lisbon": "place",  # object of located_in
        "Carla": "person",  # subject of member_of
        "Acme Corp": "organization",  # suffix
        "@dmitri": "person",  # handle
        "Orion Labs": "organization",  # suffix; the subject of "is based in" is not taken for a person
        "Berlin": "place",
        "Northwind": "other",
    }


def test_heuristic_skips_sentence_initial_function_words_and_capitalised_non_names() -> None:
    text = (
        "The Atlas team shipped on Friday. We deployed it. It works. This is fine. I checked with Ana. "
        "Yesterday Ana Lopez joined Acme Corp. In March the Orion launch slipped. Thanks Ben!"
    )
    assert list(_kinds(_read(text))) == ["Atlas", "Ana", "Ana Lopez", "Acme Corp", "Orion", "Ben"]


def test_heuristic_counts_a_lone_sentence_initial_word_that_is_a_name() -> None:
    assert list(_kinds(_read("Kafka is fast. Redis too."))) == ["Kafka", "Redis"]


def test_heuristic_joins_particles_and_stops_names_at_punctuation_and_possessives() -> None:
    text = "Ana's team at the Bank of America met Ben, Carla and Dmitri Ivanov; Node.js came up."
    assert list(_kinds(_read(text))) == ["Ana", "Bank of America", "Ben", "Carla", "Dmitri Ivanov", "Node.js"]


def test_heuristic_links_only_within_one_sentence() -> None:
    extraction = _read("Ana is busy. She works on Atlas.")
    assert extraction.relations == ()
    assert set(_kinds(extraction)) == {"Ana", "Atlas"}


def test_heuristic_reads_list_items_and_lines_as_separate_sentences() -> None:
    extraction = _read("Standup notes\n- Ana works on Atlas\n- Ben uses Vim\n\nCarla owns Orion")
    assert _triples(extraction) == [("Ana", "works_on", "Atlas"), ("Ben", "uses", "Vim"), ("Carla", "owns", "Orion")]


def test_heuristic_ignores_negated_and_passive_claims() -> None:
    extraction = _read("Ana no longer works on Atlas. Ben never joined Acme Corp. Ana was joined by Carla.")
    assert extraction.relations == ()


def test_heuristic_takes_handles_but_not_emails_and_code_spans_but_not_code_blocks() -> None:
    text = (
        "Please mail ana@acme.com or ping @ana_l; run `make test` before `git push`.\n\n"
        "```python\nclass WidgetFactory:\n    Owner = 'Zed'\n```\n"
        "The `x = compute(a, b) + 1` line is wrong."
    )
    assert _kinds(_read(text)) == {"@ana_l": "person", "make test": "tool", "git push": "tool"}


def test_heuristic_skips_titles_and_decorators() -> None:
    text = "Dr. Ana Lopez reviewed it. The fix adds @dataclass(frozen=True) to Widget, as @ben asked."
    assert _kinds(_read(text)) == {"Ana Lopez": "other", "Widget": "other", "@ben": "person"}


def test_heuristic_reads_a_long_unpunctuated_drawer_quickly() -> None:
    text = "Ana Lopez works on Atlas and uses Kafka while Ben depends on Redis and lives in Lisbon " * 70
    started = time.monotonic()
    extraction = _read(text)
    assert time.monotonic() - started < 1
    assert ("Ana Lopez", "works_on", "Atlas") in _triples(extraction)


@pytest.mark.parametrize(
    "text",
    [
        # Sentences from real documentation that the nearest-name reading turned into facts.
        "Whether it is destroyed or pooled depends on the `keepAlive` option.",  # no name before the phrase
        "V8 in Node.js depends on the ICU version supplied by Node.js.",  # the name sits in a phrase of the subject
        "Almost everybody uses DEFAULT_ABBREV to refer to the default.",  # a capitalised word that is no name
        "Node.js only uses JSON string literals within this property.",  # the object qualifies a noun
        "/usr/bin/pinentry-gnome Graphical PIN entry program that uses GNOME's gcr prompter.",  # a possessive
        "Solution: Make FEAT_SESSION depend on FEAT_EVAL.",  # an imperative after a colon
        "For this to work, Memcheck uses a great deal of compression.",  # no name after the phrase
        "Issue 1234 was filed on a Mac. Issue works on Mac Aqua, says the issue.",  # issue is written in lower case
        "Vim uses the GDB/MI interface.",  # the object is part of a longer token
        "Node.js uses a KeyObject class to represent a key.",  # "a … class": the name qualifies the noun
        "Ana Lopez works on Atlas and uses Kafka.",  # "and uses" has no subject of its own
        "- replace ToLocalChecked uses with ToLocal",  # "uses" is a noun here
    ],
)
def test_heuristic_files_no_fact_from_a_sentence_it_cannot_parse(text: str) -> None:
    assert [t for t in _triples(_read(text)) if t[0] != "Ana Lopez"] == []


@pytest.mark.parametrize(
    ("text", "triple"),
    [
        (
            "The software it works with, such as OpenSSL, is optional.  As Wget uses the GNU\nAutoconf, it is built.",
            ("Wget", "uses", "GNU Autoconf"),
        ),
        ("Node.js uses [V8](https://v8.dev/) as its JavaScript engine.", ("Node.js", "uses", "V8")),
        ("<p>GnuTLS uses Nettle internally.</p>", ("GnuTLS", "uses", "Nettle")),
        ("Cairo support depends on the Cairo library.", ("Cairo support", "depends_on", "Cairo")),
        ("If SHELL is not set, Vim uses PRIMARY when reading.", ("Vim", "uses", "PRIMARY")),
        ("Ana also works on Atlas.", ("Ana", "works_on", "Atlas")),
    ],
)
def test_heuristic_reads_wrapped_lines_links_tags_and_adverbs(text: str, triple: tuple[str, str, str]) -> None:
    assert _triples(_read(text)) == [triple]


def test_heuristic_is_deterministic_and_reads_each_text_on_its_own() -> None:
    text = (
        "Ana Lopez works on Atlas. Atlas depends on Redis and uses `celery`. Ben Hart lives in Porto. "
        "Orion is part of Atlas. @carla owns Orion. Acme Corp is based in Berlin."
    )
    alone = _read(text)
    assert _read(text) == alone
    batch = HeuristicProvider().extract(
        [_input("a", "Ben uses Vim."), _input("b", text, level="high"), _input("c", "")]
    )
    assert batch[1] == alone
    assert batch[0] == Extraction(
        entities=(ExtractedEntity("Ben", "other"), ExtractedEntity("Vim", "tool")),
        relations=(ExtractedRelation("Ben", "uses", "Vim", 0.6),),
    )
    assert batch[2] == Extraction(entities=(), relations=())


def test_heuristic_relations_meet_the_configured_floor() -> None:
    assert _read("Ana works on Atlas.", min_confidence=0.6).relations
    strict = _read("Ana works on Atlas.", min_confidence=0.7)
    assert strict.relations == () and set(_kinds(strict)) == {"Ana", "Atlas"}


def test_heuristic_provider_identity() -> None:
    provider = HeuristicProvider()
    assert (provider.name, provider.model, provider.is_enabled) == ("heuristic", "", True)
    assert isinstance(provider, ExtractionProvider)


# ---------------------------------------------------------------------------------------------- normalization


def _normalize(raw: Any, floor: float = 0.3, **caps: int) -> Extraction:
    return normalize_extraction(raw, min_confidence=floor, **caps)


def _relation(
    confidence: Any = ..., subject: Any = "Ana", obj: Any = "Atlas", predicate: Any = "works_on"
) -> dict[str, Any]:
    relation = {"subject": subject, "predicate": predicate, "object": obj}
    if confidence is not ...:
        relation["confidence"] = confidence
    return relation


def test_unknown_kinds_become_other_and_known_ones_are_case_folded() -> None:
    extraction = _normalize(
        {
            "entities": [
                {"name": "Ana", "kind": " Person "},
                {"name": "Atlas", "kind": "software"},
                {"name": "Orion"},
                {"name": "Kafka", "kind": 3},
            ]
        }
    )
    assert _kinds(extraction) == {"Ana": "person", "Atlas": "other", "Orion": "other", "Kafka": "other"}


def test_unknown_predicates_become_related_to_and_spellings_of_known_ones_are_kept() -> None:
    raw = {
        "relations": [
            _relation(0.9, predicate="Works On"),
            _relation(0.9, obj="Orion", predicate="admires"),
            _relation(0.9, obj="Kafka", predicate=None),
            _relation(0.9, obj="Lisbon", predicate="located-in"),
        ]
    }
    assert [r.predicate for r in _normalize(raw).relations] == ["works_on", "related_to", "related_to", "located_in"]


def test_missing_confidence_counts_as_one_half() -> None:
    raw = {"relations": [_relation(), _relation(None, obj="Orion")]}
    assert [r.confidence for r in _normalize(raw).relations] == [0.5, 0.5]


@pytest.mark.parametrize("confidence", [math.nan, math.inf, -math.inf, "0.9", True, [0.9], {"value": 0.9}])
def test_a_relation_with_a_non_finite_or_non_numeric_confidence_is_dropped(confidence: Any) -> None:
    extraction = _normalize({"relations": [_relation(confidence), _relation(0.9, obj="Orion")]})
    assert _triples(extraction) == [("Ana", "works_on", "Orion")]


def test_confidence_is_clamped_to_the_unit_interval() -> None:
    raw = {
        "relations": [
            _relation(1.7),
            _relation(-0.2, obj="Orion"),
            _relation(3, obj="Kafka"),
            _relation(10**400, obj="Redis"),
            _relation(0.42, obj="Vim"),
        ]
    }
    assert [r.confidence for r in _normalize(raw, floor=0.0).relations] == [1.0, 0.0, 1.0, 1.0, 0.42]


def test_blank_and_non_string_names_are_dropped() -> None:
    raw = {
        "entities": [{"name": "  ", "kind": "person"}, {"name": None}, {"name": 7}, "Ana", {"name": " Ben\n Hart "}],
        "relations": [_relation(0.9, subject=" "), _relation(0.9, obj=None), _relation(0.9, obj="x" * 201)],
    }
    extraction = _normalize(raw)
    assert extraction.entities == (ExtractedEntity("Ben Hart", "other"),)
    assert extraction.relations == ()


def test_self_loops_are_dropped_after_whitespace_and_case_normalization() -> None:
    raw = {
        "relations": [
            _relation(0.9, subject="Atlas", obj="  atlas "),
            _relation(0.9, subject="Ana  Lopez", obj="ana lopez"),
        ]
    }
    assert _normalize(raw).relations == ()


def test_relation_endpoints_missing_from_entities_are_added_as_other_in_the_entities_spelling() -> None:
    raw = {
        "entities": [{"name": "Atlas", "kind": "project"}],
        "relations": [_relation(0.8, subject="Ana", obj="ATLAS")],
    }
    extraction = _normalize(raw)
    assert extraction.entities == (ExtractedEntity("Atlas", "project"), ExtractedEntity("Ana", "other"))
    assert extraction.relations == (ExtractedRelation("Ana", "works_on", "Atlas", 0.8),)


def test_duplicates_are_merged_keeping_the_known_kind_and_the_highest_confidence() -> None:
    raw = {
        "entities": [
            {"name": "Atlas", "kind": "other"},
            {"name": "atlas", "kind": "project"},
            {"name": "ATLAS", "kind": "tool"},
            {"name": "Ana", "kind": "person"},
        ],
        "relations": [_relation(0.4), _relation(0.9, subject="ana", obj="atlas"), _relation(0.7)],
    }
    extraction = _normalize(raw)
    assert extraction.entities == (ExtractedEntity("Atlas", "project"), ExtractedEntity("Ana", "person"))
    assert extraction.relations == (ExtractedRelation("Ana", "works_on", "Atlas", 0.9),)


def test_entities_and_relations_are_capped_per_text() -> None:
    pairs = [(i, j) for i in range(12) for j in range(i + 1, 12)]  # 66 relations among 12 entities
    raw = {
        "entities": [{"name": f"Entity {i}", "kind": "concept"} for i in range(80)],
        "relations": [_relation(0.9, subject=f"Entity {i}", obj=f"Entity {j}") for i, j in pairs],
    }
    extraction = _normalize(raw)
    assert [e.name for e in extraction.entities] == [f"Entity {i}" for i in range(50)]
    assert _triples(extraction) == [(f"Entity {i}", "works_on", f"Entity {j}") for i, j in pairs[:50]]


def test_a_relation_whose_endpoints_would_pass_the_entity_cap_gives_way() -> None:
    chain = [_relation(0.9, subject=f"Entity {i}", obj=f"Entity {i + 1}") for i in range(80)]
    extraction = _normalize({"relations": chain}, max_entities=50, max_relations=80)
    # The fiftieth link would need a fifty-first entity; every relation kept names an entity kept.
    assert len(extraction.entities) == 50 and len(extraction.relations) == 49


def test_the_entity_cap_keeps_relation_endpoints_first() -> None:
    raw = {
        "entities": [{"name": name} for name in ("Ana", "Ben", "Carla", "Dmitri", "Eve")],
        "relations": [_relation(0.9, subject="Dmitri", obj="Eve"), _relation(0.9, subject="Ana", obj="Ben")],
    }
    extraction = _normalize(raw, max_entities=3)
    assert [e.name for e in extraction.entities] == ["Ana", "Dmitri", "Eve"]
    assert _triples(extraction) == [("Dmitri", "works_on", "Eve")]


def test_relations_below_the_floor_are_dropped_and_the_floor_itself_is_kept() -> None:
    raw = {"relations": [_relation(0.29), _relation(0.3, obj="Orion"), _relation(0.31, obj="Kafka")]}
    assert [r.confidence for r in _normalize(raw, floor=0.3).relations] == [0.3, 0.31]


@pytest.mark.parametrize("raw", ["Ana works on Atlas", None, [], {"entities": "Ana"}, {"relations": {"a": 1}}])
def test_a_result_of_the_wrong_shape_is_a_provider_error(raw: Any) -> None:
    with pytest.raises(ProviderError):
        _normalize(raw)


def test_an_empty_result_is_an_empty_extraction() -> None:
    assert _normalize({}) == _normalize({"entities": None, "relations": []}) == Extraction((), ())


@pytest.mark.parametrize("floor", [-0.1, 1.5, math.nan])
def test_a_floor_outside_the_unit_interval_is_refused(floor: float) -> None:
    with pytest.raises(ValueError):
        _normalize({}, floor=floor)


_names = st.sampled_from(["Ana", "ana", " Ana ", "Atlas", "ATLAS", "Ben Hart", "ben  hart", "", "  ", "Orion"])
_confidences = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3), st.just("0.7"))
_raw_results = st.fixed_dictionaries(
    {
        "entities": st.lists(
            st.fixed_dictionaries({"name": _names, "kind": st.sampled_from([*ENTITY_KINDS, "x"])}), max_size=8
        ),
        "relations": st.lists(
            st.fixed_dictionaries(
                {
                    "subject": _names,
                    "object": _names,
                    "predicate": st.sampled_from([*PREDICATES, "likes"]),
                    "confidence": _confidences,
                }
            ),
            max_size=8,
        ),
    }
)


@settings(max_examples=300, deadline=None)
@given(raw=_raw_results, floor=st.floats(0, 1), max_entities=st.integers(0, 6), max_relations=st.integers(0, 6))
def test_normalization_is_idempotent_and_every_relation_names_an_entity(
    raw: dict[str, Any], floor: float, max_entities: int, max_relations: int
) -> None:
    once = normalize_extraction(raw, min_confidence=floor, max_entities=max_entities, max_relations=max_relations)
    again = normalize_extraction(once, min_confidence=floor, max_entities=max_entities, max_relations=max_relations)
    assert again == once
    names = {e.name for e in once.entities}
    assert len(names) == len(once.entities) <= max_entities and len(once.relations) <= max_relations
    for relation in once.relations:
        assert {relation.subject, relation.object} <= names
        assert relation.subject.casefold() != relation.object.casefold()
        assert floor <= relation.confidence <= 1 and relation.predicate in PREDICATES
    assert all(e.kind in ENTITY_KINDS for e in once.entities)


# ---------------------------------------------------------------------------------------------------- command

FAKE_COMMAND = """
import json, os, subprocess, sys, time

mode = sys.argv[1]
request = json.load(sys.stdin)
texts = request["texts"]


def echo(text):
    # Names carry the context back, so a test can see it reached the provider; the confidence is the text's last word.
    provenance, preference = text["provenance"], text["preference"]
    source = "source " + provenance["connector"] + ":" + provenance["document"]
    level = "preference " + preference["level"] + " via " + json.dumps(preference["criterion"], sort_keys=True)
    return {
        "id": text["id"],
        "entities": [{"name": source, "kind": "concept"}, {"name": level, "kind": "concept"}],
        "relations": [{"subject": source, "predicate": "related_to", "object": level,
                       "confidence": float(text["text"].split()[-1])}],
    }


if mode == "echo":
    with open(sys.argv[2], "w") as out:
        json.dump(request, out)
    json.dump({"results": [echo(t) for t in texts]}, sys.stdout)
elif mode == "messy":
    json.dump({"results": [{"entities": [{"name": " Ana ", "kind": "Human"}], "relations": [
        {"subject": "Ana", "predicate": "admires", "object": "Atlas"},
        {"subject": "Ana", "predicate": "uses", "object": "ana", "confidence": 0.9},
        {"subject": "Ana", "predicate": "owns", "object": "Orion", "confidence": "high"},
    ]} for t in texts]}, sys.stdout)
elif mode == "fail":
    print("model " + request["model"] + " is not loaded", file=sys.stderr)
    sys.exit(4)
elif mode == "garbage":
    print("Sure! Here are the entities: Ana, Atlas")
elif mode == "short":
    json.dump({"results": [{"entities": [], "relations": []}] * (len(texts) - 1)}, sys.stdout)
elif mode == "unlabelled":
    json.dump({"answers": []}, sys.stdout)
elif mode == "misaligned":
    json.dump({"results": [{"id": t["id"], "entities": []} for t in reversed(texts)]}, sys.stdout)
elif mode == "not-an-object":
    json.dump({"results": ["Ana works on Atlas"] * len(texts)}, sys.stdout)
elif mode == "secret":
    if "MEMCASTLE_SECRET" in os.environ or "MEMCASTLE_EXTRACTION_API_KEY" in os.environ:
        print("a MEMCASTLE_ variable leaked", file=sys.stderr)
        sys.exit(9)
    if os.environ.get("EXTRACTION_TEST_VISIBLE") != "yes":
        print("the ordinary environment is missing", file=sys.stderr)
        sys.exit(8)
    json.dump({"results": [{"entities": [{"name": "clean", "kind": "concept"}]} for t in texts]}, sys.stdout)
elif mode == "hang":
    # A grandchild holding stdout open too: the timeout must end it as well.
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    time.sleep(60)
"""

CRITERION = {"path": "status", "equals": "draft", "level": "low"}


def _floor_batch() -> list[ExtractionInput]:
    return [
        _input("d-high", "claimed with 0.2", level="high", document="decisions.md"),
        _input("d-low", "claimed with 0.8", level="low", criterion=CRITERION),
        _input("d-normal", "claimed with 0.3", connector="git", document="log"),
    ]


@pytest.fixture()
def fake_command(tmp_path: Path) -> list[str]:
    script = tmp_path / "fake_extractor.py"
    script.write_text(FAKE_COMMAND)
    return [sys.executable, str(script)]


def _command(fake_command: list[str], *mode: str, timeout: float = 10) -> CommandProvider:
    return CommandProvider([*fake_command, *mode], model="fake-extractor", timeout=timeout)


def test_command_provider_passes_provenance_and_preference_and_keeps_confidence_at_the_floor(
    fake_command: list[str], tmp_path: Path
) -> None:
    report = tmp_path / "request.json"
    high, low, normal = _command(fake_command, "echo", str(report)).extract(_floor_batch())

    request = json.loads(report.read_text())
    assert request["model"] == "fake-extractor"
    assert request["entity_kinds"] == list(ENTITY_KINDS) and request["predicates"] == list(PREDICATES)
    assert request["texts"][1] == {
        "id": "d-low",
        "text": "claimed with 0.8",
        "provenance": {
            "connector": "notes",
            "document": "atlas.md",
            "uri": "file:///palace/atlas.md",
            "occurred_at": "2024-05-01T09:00:00Z",
        },
        "preference": {"level": "low", "connector": "notes", "criterion": CRITERION},
    }
    # The context came back through the provider's answer, one result per text in order.
    assert [e.name for e in high.entities] == ["source notes:decisions.md", "preference high via null"]
    assert [e.name for e in normal.entities] == ["source git:log", "preference normal via null"]
    # A high source's claim below the floor is dropped; a low source's claim above it is kept as given.
    assert high.relations == ()
    criterion = json.dumps(CRITERION, sort_keys=True)
    assert low.relations == (
        ExtractedRelation("source notes:atlas.md", "related_to", f"preference low via {criterion}", 0.8),
    )
    assert [r.confidence for r in normal.relations] == [0.3]


def test_command_provider_normalizes_what_the_command_answers(fake_command: list[str]) -> None:
    (extraction,) = _command(fake_command, "messy").extract([_input("d1", "anything")])
    assert extraction == Extraction(
        entities=(ExtractedEntity("Ana", "other"), ExtractedEntity("Atlas", "other")),
        relations=(ExtractedRelation("Ana", "related_to", "Atlas", 0.5),),
    )


def test_command_provider_hides_memcastle_variables_from_the_child(
    fake_command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCASTLE_SECRET", "hunter2")
    monkeypatch.setenv("MEMCASTLE_EXTRACTION_API_KEY", "sk-secret")
    monkeypatch.setenv("EXTRACTION_TEST_VISIBLE", "yes")
    (extraction,) = _command(fake_command, "secret").extract([_input("d1", "x")])
    assert extraction.entities == (ExtractedEntity("clean", "concept"),)


def test_command_provider_reports_a_failed_exit_with_its_stderr(fake_command: list[str]) -> None:
    with pytest.raises(ProviderError, match=r"status 4.*model fake-extractor is not loaded"):
        _command(fake_command, "fail").extract([_input("d1", "x")])


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("garbage", "did not print JSON"),
        ("short", "answered 1 results for 2 texts"),
        ("unlabelled", 'without a "results" list'),
        ("misaligned", "answered result 0 for id 'd2', but text 0 is 'd1'"),
        ("not-an-object", r"answered badly for text 0 \(d1\): .*must be a JSON object"),
    ],
)
def test_command_provider_refuses_a_malformed_answer(fake_command: list[str], mode: str, message: str) -> None:
    with pytest.raises(ProviderError, match=message):
        _command(fake_command, mode).extract([_input("d1", "x"), _input("d2", "y")])


def test_command_provider_stops_a_hanging_command_and_its_children_at_the_timeout(fake_command: list[str]) -> None:
    started = time.monotonic()
    with pytest.raises(ProviderError, match="no answer within 0.5 s"):
        _command(fake_command, "hang", timeout=0.5).extract([_input("d1", "x")])
    # Had the grandchild survived, it would hold the pipes open and the provider would wait seconds longer.
    assert time.monotonic() - started < 4


def test_command_provider_reports_a_missing_executable(tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match="could not start"):
        CommandProvider([str(tmp_path / "no-such-extractor")], model="m", timeout=5).extract([_input("d1", "x")])


def test_command_provider_runs_nothing_for_no_texts(fake_command: list[str]) -> None:
    provider = _command(fake_command, "fail")
    assert provider.extract([]) == []
    assert (provider.name, provider.model, provider.is_enabled) == ("command", "fake-extractor", True)


# ------------------------------------------------------------------------------------------------------- http


class _ChatServer(http.server.ThreadingHTTPServer):
    requests: list[tuple[str, dict[str, str], Any]]


class _ChatHandler(http.server.BaseHTTPRequestHandler):
    server: _ChatServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, dict(self.headers), body))
        mode = self.path.strip("/").split("/")[0]
        texts = json.loads(body["messages"][1]["content"].split("\n", 1)[1])["texts"]
        if mode == "fail":
            self._answer(500, "the model ran out of memory")
            return
        if mode == "nochoices":
            self._answer(200, json.dumps({"choices": []}))
            return
        if mode == "good":
            content = json.dumps({"results": [self._echo(t) for t in texts]})
        elif mode == "fenced":
            content = "```json\n" + json.dumps({"results": [self._echo(t) for t in texts]}) + "\n```"
        elif mode == "short":
            content = json.dumps({"results": [self._echo(t) for t in texts[:-1]]})
        else:
            content = "Ana works on Atlas, and Atlas uses Kafka."
        completion = {
            "object": "chat.completion",
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        }
        self._answer(200, json.dumps(completion))

    @staticmethod
    def _echo(text: dict[str, Any]) -> dict[str, Any]:
        source = f"source {text['provenance']['connector']}:{text['provenance']['document']}"
        level = f"preference {text['preference']['level']}"
        return {
            "id": text["id"],
            "entities": [{"name": source, "kind": "concept"}, {"name": level, "kind": "concept"}],
            "relations": [
                {
                    "subject": source,
                    "predicate": "related_to",
                    "object": level,
                    "confidence": float(text["text"].split()[-1]),
                }
            ],
        }

    def _answer(self, status: int, text: str) -> None:
        raw = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[_ChatServer]:
    httpd = _ChatServer(("127.0.0.1", 0), _ChatHandler)
    httpd.requests = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _http(server: _ChatServer, mode: str, api_key: str | None = None) -> HttpProvider:
    return HttpProvider(
        f"http://127.0.0.1:{server.server_address[1]}/{mode}/v1", model="llama3.1:8b", api_key=api_key, timeout=5
    )


def test_http_provider_sends_one_chat_request_with_the_context_and_keeps_confidence_at_the_floor(
    server: _ChatServer,
) -> None:
    high, low, normal = _http(server, "good", api_key="sk-test").extract(_floor_batch())

    path, headers, body = server.requests[-1]
    assert path == "/good/v1/chat/completions"
    assert headers["Authorization"] == "Bearer sk-test"
    assert body["model"] == "llama3.1:8b" and body["response_format"] == {"type": "json_object"}
    system, user = body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    assert all(kind in system["content"] for kind in ENTITY_KINDS)
    assert all(predicate in system["content"] for predicate in PREDICATES)
    assert '"results"' in system["content"] and "information, not a verdict" in system["content"]
    texts = json.loads(user["content"].split("\n", 1)[1])["texts"]
    assert [t["id"] for t in texts] == ["d-high", "d-low", "d-normal"]
    assert texts[1]["preference"] == {"level": "low", "connector": "notes", "criterion": CRITERION}
    assert texts[2]["provenance"]["connector"] == "git"

    assert [e.name for e in high.entities] == ["source notes:decisions.md", "preference high"]
    assert high.relations == ()
    assert low.relations == (ExtractedRelation("source notes:atlas.md", "related_to", "preference low", 0.8),)
    assert [r.confidence for r in normal.relations] == [0.3]


def test_http_provider_reads_json_inside_a_code_fence_and_sends_no_key_when_none_is_set(
    server: _ChatServer,
) -> None:
    (extraction,) = _http(server, "fenced").extract([_input("d1", "claimed with 0.9")])
    assert extraction.relations[0].confidence == 0.9
    assert "Authorization" not in server.requests[-1][1]


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("fail", "HTTP 500: the model ran out of memory"),
        ("garbage", "content that is not JSON: Ana works on Atlas"),
        ("short", "answered 1 results for 2 texts"),
        ("nochoices", r"without choices\[0\].message.content"),
    ],
)
def test_http_provider_refuses_a_failed_or_malformed_answer(server: _ChatServer, mode: str, message: str) -> None:
    with pytest.raises(ProviderError, match=message):
        _http(server, mode).extract([_input("d1", "claimed with 0.9"), _input("d2", "claimed with 0.9")])


def test_http_provider_reports_a_refused_connection() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ProviderError, match="failed"):
        HttpProvider(f"http://127.0.0.1:{port}/v1", model="m", timeout=2).extract([_input("d1", "x")])


def test_http_provider_asks_nothing_for_no_texts(server: _ChatServer) -> None:
    before = len(server.requests)
    assert _http(server, "fail").extract([]) == []
    assert len(server.requests) == before


# ------------------------------------------------------------------------------------------------ none, build


def test_none_provider_is_disabled_and_refuses_to_extract() -> None:
    provider = NoneProvider()
    assert (provider.name, provider.model, provider.is_enabled) == ("none", "", False)
    with pytest.raises(ProviderError, match="extraction is disabled"):
        provider.extract([_input("d1", "Ana works on Atlas.")])


def test_build_extraction_provider_makes_each_kind_from_settings(fake_command: list[str]) -> None:
    assert isinstance(build_extraction_provider({}), HeuristicProvider)
    assert isinstance(build_extraction_provider({"provider": "heuristic", "model": ""}), HeuristicProvider)
    assert isinstance(build_extraction_provider({"provider": "none"}), NoneProvider)
    command = build_extraction_provider({"provider": "command", "model": "m", "command": [*fake_command, "echo"]})
    assert isinstance(command, CommandProvider) and command.model == "m"
    http = build_extraction_provider(
        {"provider": "http", "model": "m", "url": "http://127.0.0.1:11434/v1/", "api_key": "", "timeout": 30}
    )
    assert isinstance(http, HttpProvider) and http.endpoint == "http://127.0.0.1:11434/v1/chat/completions"
    for provider in (command, http, NoneProvider(), HeuristicProvider()):
        assert isinstance(provider, ExtractionProvider)


def test_build_extraction_provider_applies_the_configured_floor() -> None:
    provider = build_extraction_provider({"provider": "heuristic", "min_confidence": 0.65})
    assert provider.extract([_input("d1", "Ana works on Atlas.")])[0].relations == ()


@pytest.mark.parametrize(
    ("settings_", "key"),
    [
        ({"provider": "spacy"}, "extraction.provider"),
        ({"provider": "heuristic", "model": "gpt-4o"}, "extraction.model"),
        ({"provider": "command", "model": 5, "command": ["x"]}, "extraction.model"),
        ({"provider": "command", "command": ["extract"]}, "extraction.model"),
        ({"provider": "command", "model": "m", "command": "extract --json"}, "extraction.command"),
        ({"provider": "command", "model": "m", "command": []}, "extraction.command"),
        ({"provider": "command", "model": "m", "command": ["extract", ""]}, "extraction.command"),
        ({"provider": "http", "model": "m", "url": ""}, "extraction.url"),
        ({"provider": "http", "model": "m", "url": "localhost:11434"}, "extraction.url"),
        ({"provider": "http", "url": "http://127.0.0.1:1/v1"}, "extraction.model"),
        ({"provider": "http", "model": "m", "url": "http://h/v1", "api_key": 42}, "extraction.api_key"),
        ({"provider": "http", "model": "m", "url": "http://h/v1", "timeout": 0}, "extraction.timeout"),
        ({"provider": "http", "model": "m", "url": "http://h/v1", "timeout": "30"}, "extraction.timeout"),
        ({"provider": "heuristic", "min_confidence": 1.5}, "extraction.min_confidence"),
        ({"provider": "heuristic", "min_confidence": True}, "extraction.min_confidence"),
    ],
)
def test_build_extraction_provider_names_the_bad_setting(settings_: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        build_extraction_provider(settings_)
    assert raised.value.key == key
