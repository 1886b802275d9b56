"""The background `extract` sweep (SPEC §4, ADR 048) through real palaces: when it runs, what it reads, what a
provider sees, and that a batch is written whole — together with its read markers — or not at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from store_reads import all_entities, drawers_to_extract

from memcastle.app import Palace
from memcastle.knowledge.extraction import HeuristicProvider
from memcastle.knowledge.facts import LINK_FANOUT
from memcastle.knowledge.sweep import ExtractionLimits, ExtractionSweep
from memcastle.model import JobStatus

from .support import (
    GraphSnapshot,
    Palaces,
    client_of,
    command_flags,
    extracted,
    facts_named,
    failed_extraction,
    graph_of,
    mine,
    triple,
    wait_for_job,
    write_notes,
)

PREFERENCES = """\
[preferences]
default = "normal"

[preferences.sources.notes]
level = "normal"

[[preferences.sources.notes.criteria]]
path = "status"
equals = "final"
level = "high"

[[preferences.sources.notes.criteria]]
path = "status"
equals = "draft"
level = "low"
"""


# --- when the sweep runs --------------------------------------------------------------------------


def test_a_saved_note_is_read_by_a_background_sweep(client: TestClient, palace: Palace) -> None:
    note = client.post("/api/notes", json={"content": "Ana Lopez works on Atlas.", "wing": "w"}).json()["drawer"]

    job = extracted(palace)

    assert job.kind == "extract" and job.status is JobStatus.COMPLETED
    assert job.priority == 0  # background: never delays a user's write
    assert job.result is not None and job.result["extractor"] == "heuristic" and job.result["facts"] == 1
    (fact,) = facts_named(palace)
    assert triple(fact) == ("Ana Lopez", "works_on", "Atlas")
    assert fact["explicit"] is False and fact["confidence"] == 0.6
    assert fact["valid_from"] == note["valid_from"]  # no occurred_at on a manual note: the drawer's valid_from
    assert fact["provenance"] == {"drawer": note["id"], "extractor": "heuristic", "job_id": job.id, "origin": None}


def test_a_mine_that_files_drawers_queues_a_sweep_and_one_that_files_nothing_does_not(
    palaces: Palaces, tmp_path: Path
) -> None:
    palace = palaces.open()
    folder = write_notes(
        tmp_path / "notes",
        {
            "ana.md": ({"date": "2024-05-01", "team": {"name": "core"}}, "Ana Lopez works on Atlas."),
        },
    )

    mine(palace, "notes", folder, wing="w")
    first = extracted(palace)
    again = mine(palace, "notes", folder, wing="w")

    assert again["created"] == 0 and again["superseded"] == 0
    assert [j.id for j in palace.services.jobs.list_jobs(None, "extract", 50)] == [first.id]
    (fact,) = facts_named(palace)
    # valid_from is the evidence's occurred_at; the origin snapshot travels with the fact.
    assert fact["valid_from"] == "2024-05-01T00:00:00.000000Z"
    origin = fact["provenance"]["origin"]
    assert origin["connector"] == "notes" and origin["document"] == "ana.md"
    assert origin["metadata"]["team"] == {"name": "core"} and origin["occurred_at"] == fact["valid_from"]


def test_post_extract_answers_202_and_joins_the_queued_sweep(palaces: Palaces) -> None:
    palace = palaces.open(start=False)
    palace.services.drawers.save_note("Ana Lopez works on Atlas.", wing="w")
    palace.services.drawers.save_note("Ben Hart uses `ripgrep`.", wing="w")
    http = client_of(palace)

    first = http.post("/api/extract", json={})
    second = http.post("/api/extract", json={})

    assert first.status_code == second.status_code == 202
    assert first.json()["job"]["id"] == second.json()["job"]["id"]
    assert first.json()["job"]["kind"] == "extract" and first.json()["job"]["status"] == "queued"
    assert len(palace.services.jobs.list_jobs("queued", "extract", 50)) == 1
    assert http.get("/api/status").json()["extraction"]["pending"] == 2

    palace.start()
    job = wait_for_job(palace, first.json()["job"]["id"])

    assert job.status is JobStatus.COMPLETED and job.result is not None and job.result["drawers"] == 2
    assert http.get("/api/status").json()["extraction"] == {
        "provider": "heuristic",
        "model": None,
        "pending": 0,
        "facts": 2,
    }


# --- what the sweep reads -------------------------------------------------------------------------


def test_the_sweep_reads_only_current_drawers(palaces: Palaces) -> None:
    palace = palaces.open(start=False)
    old = palace.services.drawers.save_note("Ana Lopez lives in Lisbon.", wing="w").drawer
    new = palace.services.drawers.supersede_drawer(old.id, "Ana Lopez lives in Porto.")

    palace.start()
    job = extracted(palace)

    assert job.result is not None and job.result["drawers"] == 1
    assert palace.store.entities.entities_of_drawers([old.id]) == {}
    assert [triple(f) for f in facts_named(palace)] == [("Ana Lopez", "located_in", "Porto")]
    assert {f["provenance"]["drawer"] for f in facts_named(palace)} == {new.id}


def test_a_drawer_the_active_extractor_read_is_not_read_again(client: TestClient, palace: Palace) -> None:
    client.post("/api/notes", json={"content": "Ana Lopez works on Atlas.", "wing": "w"})
    extracted(palace)
    before = graph_of(palace.store)

    job_id = client.post("/api/extract", json={}).json()["job"]["id"]
    job = wait_for_job(palace, job_id)

    assert job.status is JobStatus.COMPLETED and job.result is not None
    assert job.result["drawers"] == 0 and job.result["facts"] == 0
    assert graph_of(palace.store) == before


def test_a_new_extractor_reads_every_current_drawer_again(palaces: Palaces) -> None:
    palace = palaces.open()
    palace.services.drawers.save_note("Ana Lopez works on Atlas.", wing="w")
    palace.services.drawers.save_note("ENTITY Kim Park|person\nCLAIM Kim Park|uses|Vim|0.9", wing="w")
    assert extracted(palace).result["extractor"] == "heuristic"  # type: ignore[index]

    palace = palaces.reopen(palace, flags=command_flags())
    job = extracted(palace)

    assert job.result is not None
    assert job.result["extractor"] == "command:claims-v1" and job.result["drawers"] == 2
    by_extractor = {(triple(f), f["provenance"]["extractor"]) for f in facts_named(palace)}
    assert (("Ana Lopez", "works_on", "Atlas"), "heuristic") in by_extractor
    assert (("Kim Park", "uses", "Vim"), "command:claims-v1") in by_extractor


def _replay_everything(palace: Palace) -> None:
    """What a crash-replayed or concurrent sweep does: read drawers already read, and write the batch."""
    sweep = ExtractionSweep(palace.store, HeuristicProvider(), palace.services.policy, ExtractionLimits(0.3))
    drawers = list(palace.store.drawers.list_drawers("w", None, 200, None).items)
    write, _ = sweep.read_batch(drawers, "heuristic", "a-replayed-job")
    palace.store.graph.apply_graph(write)


CONTRADICTING_NOTES = (
    "Ana Lopez lives in Lisbon.",
    "Ana Lopez lives in Porto.",
    "Ana Lopez works on Atlas.",
    "Atlas uses Postgres. Ben Hart works on Atlas.",
    "Ana Lopez is working on Atlas.",
)


def test_replaying_a_batch_writes_no_new_entity_fact_or_mention(client: TestClient, palace: Palace) -> None:
    for content in CONTRADICTING_NOTES:
        client.post("/api/notes", json={"content": content, "wing": "w"})
    extracted(palace)
    before = graph_of(palace.store)
    assert len(before.facts) == 6 and len(before.entities) == 6

    _replay_everything(palace)
    after = graph_of(palace.store)

    assert (after.entities, after.facts, after.mentions) == (before.entities, before.facts, before.mentions)


def test_two_sweeps_reading_the_same_drawers_record_each_link_once(palaces: Palaces) -> None:
    palace = palaces.open(flags={"extraction.provider": "none"})
    for content in ("Ana Lopez lives in Lisbon.", "Ana Lopez lives in Porto.", "Ana Lopez lives in Porto!"):
        palace.services.drawers.save_note(content, wing="w")
    sweep = ExtractionSweep(palace.store, HeuristicProvider(), palace.services.policy, ExtractionLimits(0.3))
    # Both sweeps took the same unread drawers; the second infers only after the first wrote its batch.
    unread = drawers_to_extract(palace.store, "heuristic", 16)
    first, _ = sweep.read_batch(unread, "heuristic", "first-sweep")
    palace.store.graph.apply_graph(first)
    second, _ = sweep.read_batch(unread, "heuristic", "second-sweep")
    palace.store.graph.apply_graph(second)

    links = palace.store.facts.links_of([a.id for a in first.assertions])
    assert sorted(lk.kind for lk in links) == ["confirms", "contradicts", "contradicts"]


def test_a_claim_repeated_in_many_drawers_links_each_copy_to_the_newest_few(palaces: Palaces) -> None:
    """A claim made in 30 drawers gives 30 facts; each confirms at most LINK_FANOUT earlier copies, so the links
    grow with the copies, not with their square, and every copy stays connected to the first through them."""
    palace = palaces.open(flags={"extraction.provider": "none"})
    for i in range(30):
        palace.services.drawers.save_note(f"Ana Lopez works on Atlas. Entry {i}.", wing="w")
    sweep = ExtractionSweep(
        palace.store, HeuristicProvider(), palace.services.policy, ExtractionLimits(0.3), batch_size=7
    )
    after = 0
    while True:
        drawers, after = palace.store.graph.next_to_extract("heuristic", 7, after_seq=after)
        if not drawers:
            break
        write, _ = sweep.read_batch(drawers, "heuristic", "job")
        palace.store.graph.apply_graph(write)
    facts = [f for f in palace.store.facts.find_assertions(predicate="works_on", limit=100)]
    assert len(facts) == 30
    links = palace.store.facts.links_of([f.id for f in facts])
    assert {lk.kind for lk in links} == {"confirms"}
    per_copy: dict[str | None, int] = {}
    for link in links:
        per_copy[link.evidence_drawer] = per_copy.get(link.evidence_drawer, 0) + 1
    assert max(per_copy.values()) == LINK_FANOUT
    assert len(links) == sum(min(i, LINK_FANOUT) for i in range(30))
    # Connected: from the newest copy, confirmations lead back to every other one.
    neighbours: dict[str, set[str]] = {}
    for link in links:
        neighbours.setdefault(link.from_id, set()).add(link.to_id)
        neighbours.setdefault(link.to_id, set()).add(link.from_id)
    reached, frontier = {facts[-1].id}, [facts[-1].id]
    while frontier:
        for other in neighbours.get(frontier.pop(), ()):
            if other not in reached:
                reached.add(other)
                frontier.append(other)
    assert reached == {f.id for f in facts}


# --- a batch is all or nothing --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "timeout", "error"),
    [
        (("--fail",), 10.0, "exited with status 3; stderr: model claims-v1 is not loaded"),
        (("--hang",), 0.5, "gave no answer within 0.5 s"),
        (("--short",), 10.0, "answered 1 results for 2 texts"),
    ],
    ids=["exits-non-zero", "hangs-past-the-timeout", "answers-fewer-results-than-texts"],
)
def test_a_provider_failure_writes_nothing_of_the_batch_and_fails_the_job_with_the_reason(
    palaces: Palaces, args: tuple[str, ...], timeout: float, error: str
) -> None:
    palace = palaces.open(flags=command_flags(*args, timeout=timeout), start=False)
    palace.services.drawers.save_note("ENTITY Ana Lopez|person\nCLAIM Ana Lopez|works_on|Atlas|0.9", wing="w")
    palace.services.drawers.save_note("ENTITY Ben Hart|person\nCLAIM Ben Hart|uses|Vim|0.9", wing="w")

    palace.start()
    job = failed_extraction(palace)

    assert job.error is not None and error in job.error and job.error.startswith("ProviderError")
    assert graph_of(palace.store) == GraphSnapshot(frozenset(), frozenset(), frozenset(), frozenset())
    status = client_of(palace).get("/api/status").json()
    assert status["extraction"]["pending"] == 2  # no read marker without its results
    assert any("the extraction provider failed" in w and error in w for w in status["warnings"])


def test_a_failed_batch_keeps_the_batches_before_it_and_is_read_again_later(palaces: Palaces) -> None:
    flags = {**command_flags("--fail-on", "BOOM"), "extraction.batch_size": 1}
    palace = palaces.open(flags=flags, start=False)
    palace.services.drawers.save_note("CLAIM Ana Lopez|works_on|Atlas|0.9", wing="w")
    palace.services.drawers.save_note("BOOM\nCLAIM Ben Hart|works_on|Orion|0.9", wing="w")
    palace.services.drawers.save_note("CLAIM Cy Diaz|uses|Vim|0.9", wing="w")

    palace.start()
    failed = failed_extraction(palace)

    assert failed.result is None
    assert [triple(f) for f in facts_named(palace)] == [("Ana Lopez", "works_on", "Atlas")]
    assert palace.services.status.extraction_status().pending == 2

    # The same extractor, fixed: only the drawers the failed batch left unread are read.
    palace = palaces.reopen(palace, flags={**command_flags(), "extraction.batch_size": 1})
    job = extracted(palace)

    assert job.result is not None and job.result["drawers"] == 2
    assert sorted(triple(f) for f in facts_named(palace)) == [
        ("Ana Lopez", "works_on", "Atlas"),
        ("Ben Hart", "works_on", "Orion"),
        ("Cy Diaz", "uses", "Vim"),
    ]


# --- context, not verdicts (ADR 048) ----------------------------------------------------------------


def _received(record: Path) -> dict[str, dict[str, Any]]:
    """Every text the recording provider was given, by drawer id."""
    texts: dict[str, dict[str, Any]] = {}
    for line in record.read_text(encoding="utf-8").splitlines():
        for text in json.loads(line)["texts"]:
            texts[text["id"]] = text
    return texts


def test_each_text_reaches_the_provider_with_its_provenance_and_effective_preference(
    palaces: Palaces, tmp_path: Path
) -> None:
    record = tmp_path / "requests.jsonl"
    palace = palaces.open(flags=command_flags("--record", str(record)), preferences=PREFERENCES)
    folder = write_notes(
        tmp_path / "notes",
        {
            "final.md": ({"date": "2024-05-01", "status": "final"}, "ENTITY Ana Lopez|person"),
            "plain.md": ({"date": "2024-05-03"}, "ENTITY Ben Hart|person"),
        },
    )
    mine(palace, "notes", folder, wing="w")
    manual = palace.services.drawers.save_note("ENTITY Kim Park|person", wing="w").drawer
    extracted(palace)

    drawers = {d.name: d for d in palace.services.drawers.list_drawers("w", None, 50, None).items}
    received = _received(record)

    assert received[drawers["final.md"].id]["provenance"] == {
        "connector": "notes",
        "document": "final.md",
        "uri": (folder / "final.md").resolve().as_uri(),
        "occurred_at": "2024-05-01T00:00:00.000000Z",
    }
    assert received[drawers["final.md"].id]["preference"] == {
        "level": "high",
        "connector": "notes",
        "criterion": {"path": "status", "equals": "final", "level": "high"},
    }
    assert received[drawers["plain.md"].id]["preference"] == {
        "level": "normal",
        "connector": "notes",
        "criterion": None,
    }
    # A manual write has no origin: no provenance to pass, and the policy's default applies.
    assert received[manual.id]["provenance"] == {"connector": None, "document": None, "uri": None, "occurred_at": None}
    assert received[manual.id]["preference"] == {"level": "normal", "connector": None, "criterion": None}
    assert received[manual.id]["text"] == "ENTITY Kim Park|person"


def test_the_floor_ignores_preference_and_confidence_is_kept_as_given(palaces: Palaces, tmp_path: Path) -> None:
    palace = palaces.open(flags=command_flags(), preferences=PREFERENCES)
    folder = write_notes(
        tmp_path / "notes",
        {
            # A trusted source's weak claim is still weak; a distrusted source's firm claim is still firm.
            "final.md": (
                {"status": "final"},
                "CLAIM Ana Lopez|located_in|Lisbon|0.2\nCLAIM Ana Lopez|member_of|Platform Guild|0.3",
            ),
            "draft.md": ({"status": "draft"}, "CLAIM Ana Lopez|works_on|Atlas|0.8123"),
        },
    )
    mine(palace, "notes", folder, wing="w")
    extracted(palace)

    drawers = {d.name: d for d in palace.services.drawers.list_drawers("w", None, 50, None).items}
    facts = {triple(f): f for f in facts_named(palace)}

    assert set(facts) == {("Ana Lopez", "works_on", "Atlas"), ("Ana Lopez", "member_of", "Platform Guild")}
    kept = facts["Ana Lopez", "works_on", "Atlas"]
    assert kept["confidence"] == 0.8123 and kept["provenance"]["drawer"] == drawers["draft.md"].id
    assert facts["Ana Lopez", "member_of", "Platform Guild"]["confidence"] == 0.3  # the floor itself is kept


@pytest.mark.parametrize("code", [False, True])
def test_source_code_is_read_for_facts_only_when_configured(palaces: Palaces, code: bool) -> None:
    """Over code the heuristic finds identifiers and keywords ('Return True member_of TypeError'): a third of a real
    palace in entities and mentions. Code and data files are marked read but not extracted, unless configured."""
    palace = palaces.open(flags={"extraction.code": code})
    project = palaces.root / "project"
    project.mkdir()
    (project / "handlers.py").write_text(
        "class RequestHandler(BaseHandler):\n    def handle(self):\n        return True  # Ana Lopez works on Atlas\n"
    )
    (project / "settings.yaml").write_text("owner: Kim Park\nservice: Orion\n")
    (project / "README.md").write_text("# Shop\n\nBen Hart works on Checkout. Checkout uses Postgres.\n")
    mine(palace, "directory", project, wing="project")
    extracted(palace)
    names = {e.name for e in all_entities(palace.store)}
    assert {"Ben Hart", "Checkout", "Postgres"} <= names
    assert ("RequestHandler" in names or "Ana Lopez" in names) is code
    assert palace.services.status.extraction_status().pending == 0  # every drawer was read, code or not
