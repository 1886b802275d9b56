"""The palace audit and its repair, on a real palace corrupted on purpose in each way the audit detects: FTS rows
deleted and left over, an orphaned vector, broken links, a drawer without vectors, a truncated vector file."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from knowledge.support import wait_for_job, wait_until

from memcastle.app import Palace, build
from memcastle.config import load_settings
from memcastle.errors import InvalidRequest
from memcastle.integrity.audit import REPAIR, PalaceAudit
from memcastle.jobs.context import JobContext
from memcastle.model import NewJob
from memcastle.search.ann import saved_problem
from memcastle.search.semantic import SemanticIndex
from memcastle.services import SearchRequest

EMBEDDER = str(Path(__file__).parents[1] / "search" / "embedder.py")
NOTES = 40


def settings_for(tmp_path: Path, **extra: Any) -> Any:
    flags = {
        "palace": str(tmp_path / "palace"),
        "embeddings.provider": "command",
        "embeddings.model": "bow",
        "embeddings.command": [sys.executable, EMBEDDER],
        "extraction.provider": "none",
        "search.ann_min_rows": 10,  # a graph, and its file, from a few dozen drawers
        **extra,
    }
    return load_settings(flags=flags, env={})


@pytest.fixture
def palace(tmp_path: Path) -> Iterator[Palace]:
    built = build(settings_for(tmp_path))
    built.start()
    for i in range(NOTES):
        built.services.drawers.save_note(f"ledger entry {i} about the word zephyr{i:02d}", wing="audit", tags=["t"])
    wait_until(lambda: built.services.status.embedding_status().pending == 0, timeout=60, what="embeddings")
    yield built
    built.stop()


def audit(palace: Palace) -> dict[str, dict[str, Any]]:
    job = wait_for_job(palace, palace.services.jobs.submit_audit().id, timeout=60)
    assert job.status.value == "completed", job.error
    return {f["check"]: f for f in (job.result or {})["findings"]}


def raw(palace: Palace) -> sqlite3.Connection:
    """A connection of our own, foreign keys off as any tool's would be: the way a palace gets damaged."""
    return sqlite3.connect(palace.settings.palace / "palace.sqlite3", isolation_level=None)


def lexically(palace: Palace, word: str) -> list[str]:
    hits = palace.services.search.search(SearchRequest(query=word, ranking="lexical", wing="audit")).hits
    return [h.drawer.id for h in hits]


def saved_graph(palace: Palace) -> SemanticIndex:
    leg = palace.services.search._engine.semantic_leg
    assert isinstance(leg, SemanticIndex)
    leg.maintain(budget=10_000)
    leg.save()
    return leg


def test_a_sound_palace_audits_clean(palace: Palace) -> None:
    saved_graph(palace)
    found = audit(palace)
    assert set(found) >= {
        "orphan_vectors",
        "orphan_tags",
        "dangling_supersession",
        "dangling_drawer_links",
        "dangling_fact_links",
        "fts_missing",
        "fts_extra",
        "missing_vectors",
        "vector_cache",
    }
    assert all(f["count"] == 0 for f in found.values()), [f for f in found.values() if f["count"]]


def test_each_corruption_is_found_and_repaired(palace: Palace) -> None:
    graph = saved_graph(palace)
    cache = Path(graph.cache_problem()[0]) if graph.cache_problem() else graph._ann_path
    assert cache is not None and cache.exists() and saved_problem(cache, last_row=10**9) is None
    db = raw(palace)
    rows = db.execute("SELECT seq, id, content FROM drawer ORDER BY seq").fetchall()
    (lost_seq, lost_id, lost_content), (_, linked_id, _), (bare_seq, bare_id, _) = rows[0], rows[1], rows[2]
    assert lexically(palace, "zephyr00")[0] == lost_id  # then its neighbour, holding it in its context
    # The full-text index loses a drawer, and keeps a row of one that never was.
    (context,) = db.execute("SELECT context FROM drawer_indexed WHERE seq = ?", (lost_seq,)).fetchone()
    db.execute(
        "INSERT INTO drawer_fts(drawer_fts, rowid, content, context) VALUES ('delete', ?, ?, ?)",
        (lost_seq, lost_content, context),
    )
    db.execute("INSERT INTO drawer_fts(rowid, content, context) VALUES (987654, 'ghost words', '')")
    # A vector (and its mark) outlive their drawer; another drawer loses its vectors.
    db.execute(
        "INSERT INTO embedding(model, drawer_seq, passage, vector, passages) "
        "SELECT model, 987654, passage, vector, passages FROM embedding WHERE drawer_seq = ?",
        (lost_seq,),
    )
    db.execute(
        "INSERT INTO embedded(model, drawer_seq, dimension) SELECT model, 987654, dimension FROM embedded LIMIT 1"
    )
    db.execute("DELETE FROM embedding WHERE drawer_seq = ?", (bare_seq,))
    db.execute("DELETE FROM embedded WHERE drawer_seq = ?", (bare_seq,))
    # Links to what is not there: a version, a near copy, a fact; a tag of no drawer.
    db.execute("UPDATE drawer SET superseded_by = 'no-such-drawer' WHERE id = ?", (linked_id,))
    db.execute(
        "INSERT INTO drawer_link(from_id, to_id, verdict, similarity, created_at) "
        "VALUES (?, 'gone', 'near', 0.95, 'x')",
        (linked_id,),
    )
    db.execute(
        "INSERT INTO fact_link(id, from_id, to_id, kind, origin, reason, at) "
        "VALUES ('fl-1', 'no-fact', 'nor-this', 'agrees', 'inferred', 'test', 'x')"
    )
    db.execute("INSERT INTO drawer_tag(drawer_seq, tag) VALUES (987654, 'ghost')")
    db.close()
    # The vector graph's file is cut short.
    with cache.open("r+b") as handle:
        handle.truncate(cache.stat().st_size // 2)

    assert lost_id not in lexically(palace, "zephyr00")  # what the damage costs a user
    found = audit(palace)
    counts = {name: f["count"] for name, f in found.items() if f["count"]}
    assert counts == {
        "fts_missing": 1,
        "fts_extra": 1,
        "orphan_vectors": 1,
        "orphan_vector_marks": 1,
        "missing_vectors": 1,
        "dangling_supersession": 1,
        "dangling_drawer_links": 1,
        "dangling_fact_links": 1,
        "orphan_tags": 1,
        "vector_cache": 1,
    }
    assert found["fts_missing"]["examples"] == [lost_id]
    assert found["missing_vectors"]["examples"] == [bare_id]
    assert found["dangling_supersession"]["examples"] == [linked_id]
    assert "unreadable" in found["vector_cache"]["examples"][0] and str(cache) in found["vector_cache"]["examples"][0]
    assert all(f["repair"] for name, f in found.items() if f["count"])

    job = wait_for_job(palace, palace.services.jobs.submit_repair().id, timeout=60)
    assert job.status.value == "completed", job.error
    result = job.result or {}
    assert set(result["repaired"]) == set(counts)
    wait_until(lambda: palace.services.status.embedding_status().pending == 0, timeout=60, what="the queued embed")
    assert all(f["count"] == 0 for f in audit(palace).values())
    assert lexically(palace, "zephyr00")[0] == lost_id  # found again
    assert lexically(palace, "ghost") == []
    assert saved_problem(cache, last_row=10**9) is None
    db = raw(palace)
    assert db.execute("SELECT superseded_by FROM drawer WHERE id = ?", (linked_id,)).fetchone() == (None,)
    assert db.execute("SELECT COUNT(*) FROM drawer").fetchone() == (NOTES,)  # no drawer was deleted
    db.close()


def test_unknown_checks_are_refused_by_name(palace: Palace) -> None:
    with pytest.raises(InvalidRequest) as refused:
        palace.services.jobs.submit_repair(checks=palace.services.jobs.known_checks(["orphan_tags", "fts_everything"]))
    assert refused.value.field == "checks" and "fts_everything" in refused.value.message


def test_a_repair_resumes_after_its_last_checkpoint(tmp_path: Path) -> None:
    palace = build(settings_for(tmp_path, **{"embeddings.provider": "none"}))  # no workers: the job is run here
    try:
        palace.services.drawers.save_note("a note", wing="audit")
        db = raw(palace)
        db.executemany("INSERT INTO drawer_tag(drawer_seq, tag) VALUES (?, 'ghost')", [(s,) for s in range(900, 905)])
        db.execute("UPDATE drawer SET supersedes = 'gone'")
        db.close()
        handler = PalaceAudit(palace.store.integrity)
        names = handler.names()
        jobs = palace.store.jobs
        job, _ = jobs.create_job(NewJob(REPAIR, {"batch": 2}))
        claimed = jobs.claim_next_job("test", 60, [REPAIR])
        assert claimed is not None and claimed.id == job.id
        # A crash after the tags were repaired (two of five, say, before an earlier run stopped) and every check
        # before `dangling_supersession` was done: the run that resumes starts there, keeping the counts so far.
        at = names.index("dangling_supersession")
        state = {"at": at, "repaired": {"orphan_tags": 2}}
        ctx = JobContext(jobs, claimed, "test", 60, lambda: False)
        ctx.checkpoint(state, current=at, total=len(names))
        result = handler.repair(JobContext(jobs, jobs.get_job(job.id), "test", 60, lambda: False))
        assert result["repaired"] == {"orphan_tags": 2, "dangling_supersession": 1}
        left = {f["check"]: f["count"] for f in result["after"]["findings"] if f["count"]}
        assert left == {"orphan_tags": 5}  # a check before the checkpoint is not run again
        # Resumed once more from its last checkpoint (past every check), it repairs nothing twice.
        rerun = handler.repair(JobContext(jobs, jobs.get_job(job.id), "test", 60, lambda: False))
        assert rerun["repaired"] == result["repaired"]
    finally:
        palace.stop()
