"""Export and import: a round trip SQLite → archive → PostgreSQL → archive → SQLite gives the same search results and
fact states; importing twice adds nothing; a conflicting record refuses the archive; a corrupt line is skipped."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from knowledge.support import wait_for_job, write_notes
from postgres_support import PostgresServer, as_url
from store.rankings import same_ranking
from store.test_palace_copy import hits, open_palace, settle

from memcastle.app import Palace
from memcastle.errors import Conflict, InvalidRequest
from memcastle.model import content_hash
from memcastle.model.requests import MineRequest
from memcastle.services import ForgetRequest, SearchRequest

QUERIES = ("moat eels", "drawbridge winch oil", "Ada Lovelace works on the Engine", "barley granary")


def run(palace: Palace, job_id: str) -> dict[str, Any]:
    done = wait_for_job(palace, job_id, timeout=120)
    assert done.status.value == "completed", done.error
    return dict(done.result or {})


def export(palace: Palace, path: Path) -> dict[str, Any]:
    return run(palace, palace.services.archives.export(str(path), vectors=True).id)


def import_(palace: Palace, path: Path) -> dict[str, Any]:
    result = run(palace, palace.services.archives.import_archive(str(path)).id)
    settle(palace)
    return result


def state(palace: Palace) -> dict[str, Any]:
    """What a user sees: rankings per leg, facts with their states, histories, tombstones."""
    out: dict[str, Any] = {}
    for query in QUERIES:
        for leg in ("lexical", "semantic", "hybrid"):
            out[f"{leg}:{query}"] = hits(palace, SearchRequest(query=query, ranking=leg, limit=10))
    facts = palace.services.facts.list_facts(limit=200)
    out["facts"] = sorted((f.id, f.state, f.fact.valid_from) for f in facts)
    out["links"] = sorted(
        (link.id, link.kind, link.from_id, link.to_id) for link in palace.store.facts.links_of([f.id for f in facts])
    )
    out["tombstones"] = [t.to_json() for t in palace.services.forgetting.tombstones(10)]
    return out


def same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if ":" in key:
            assert same_ranking(a[key], b[key]), (key, a[key], b[key])
        else:
            assert a[key] == b[key], key


def seed(palace: Palace, tmp_path: Path) -> None:
    notes = {
        "moat.md": ({"date": "2023-03-01"}, "The moat eels were fed sardines by Ada Lovelace."),
        "gate.md": ({}, "Ada Lovelace works on the Engine. The drawbridge winch needs oil."),
        "granary.md": ({}, "The granary stores barley and oats."),
        "engine.md": ({}, "Ada Lovelace works on the Engine, as the minutes say."),
    }
    write_notes(tmp_path / "notes", notes)
    job = palace.services.mining.submit_mine(MineRequest("notes", str(tmp_path / "notes"), {}, wing="castle")).job
    run(palace, job.id)
    note = palace.services.drawers.save_note("the first plan for the keep", wing="castle").drawer
    palace.services.drawers.supersede_drawer(note.id, "the second plan for the keep", reason="changed")
    secret = palace.services.drawers.save_note("a secret to forget", wing="castle").drawer
    palace.services.forgetting.forget(ForgetRequest(kind="drawer", drawer_id=secret.id))
    settle(palace)


def test_a_round_trip_through_postgresql_keeps_what_a_user_sees(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    first = open_palace(tmp_path / "first")
    conninfo = postgres_server.create_database()
    palaces: list[Palace] = [first]
    try:
        seed(first, tmp_path)
        before = state(first)
        assert before["facts"] and before["tombstones"] and before["links"], "facts, their links and a tombstone"
        exported = export(first, tmp_path / "one.zip")
        assert exported["counts"]["drawers"] == 6 and exported["counts"]["vectors"] == 6
        middle = open_palace(tmp_path / "middle", url=as_url(conninfo))
        palaces.append(middle)
        loaded = import_(middle, tmp_path / "one.zip")
        assert loaded["added"]["drawers"] == 6 and loaded["skipped"] == 0
        same(before, state(middle))
        export(middle, tmp_path / "two.zip")
        last = open_palace(tmp_path / "last")
        palaces.append(last)
        import_(last, tmp_path / "two.zip")
        same(before, state(last))
        (kept, _), *_ = hits(last, SearchRequest(query="second plan keep", ranking="lexical"))
        assert len(last.services.drawers.drawer_history(kept)) == 2, "the version history came along"
        again = import_(last, tmp_path / "one.zip")
        assert sum(again["added"].values()) == 0 and again["present"]["drawers"] == 6, "an import is idempotent"
        same(before, state(last))
    finally:
        for palace in palaces:
            palace.stop()
        postgres_server.drop_database(conninfo)


def rewrite(source: Path, target: Path, kind: str, change: Any) -> None:
    """A copy of the archive with one member's lines changed by `change(lines) -> lines`."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for name in old.namelist():
            data = old.read(name)
            if name == f"{kind}.jsonl":
                data = "\n".join(change(data.decode().splitlines())).encode() + b"\n"
            new.writestr(name, data)


def test_a_conflicting_record_refuses_the_archive_and_a_corrupt_line_is_skipped(tmp_path: Path) -> None:
    palace = open_palace(tmp_path / "palace")
    try:
        seed(palace, tmp_path)
        export(palace, tmp_path / "a.zip")

        def tamper(lines: list[str]) -> list[str]:
            record = json.loads(lines[0])
            record["content"] = "someone else's words"
            record["content_hash"] = content_hash(record["content"])
            return [json.dumps(record), *lines[1:]]

        rewrite(tmp_path / "a.zip", tmp_path / "tampered.zip", "drawers", tamper)
        before = palace.store.drawers.count_drawers()
        job = palace.services.archives.import_archive(str(tmp_path / "tampered.zip"))
        failed = wait_for_job(palace, job.id, timeout=60)
        assert failed.status.value == "failed" and "conflicts with this palace" in (failed.error or "")
        assert palace.store.drawers.count_drawers() == before, "nothing was imported"

        rewrite(tmp_path / "a.zip", tmp_path / "corrupt.zip", "drawers", lambda lines: ["{not json", *lines])
        fresh = open_palace(tmp_path / "fresh")
        try:
            result = import_(fresh, tmp_path / "corrupt.zip")
            assert result["skipped"] == 1 and result["skipped_records"][0]["line"] == 1
            assert "not JSON" in result["skipped_records"][0]["reason"] and result["added"]["drawers"] == 6
        finally:
            fresh.stop()

        with pytest.raises(Conflict):
            palace.services.archives.export(str(tmp_path / "a.zip"))
        with pytest.raises(InvalidRequest) as relative:
            palace.services.archives.export("relative.zip")
        assert relative.value.field == "path"
        (tmp_path / "not-an-archive.zip").write_text("hello")
        job = palace.services.archives.import_archive(str(tmp_path / "not-an-archive.zip"))
        refused = wait_for_job(palace, job.id, timeout=60)
        assert refused.status.value == "failed" and "not a MemCastle archive" in (refused.error or "")
    finally:
        palace.stop()


def test_an_import_into_a_palace_that_has_searched_ranks_as_the_source_at_once(tmp_path: Path) -> None:
    """Nothing a running palace holds in memory (the vectors by meaning, counts, statistics) is left stale by an
    import: every ranking equals the source palace's without a restart."""
    first = open_palace(tmp_path / "first")
    second = open_palace(tmp_path / "second")
    try:
        seed(first, tmp_path)
        before = state(first)
        export(first, tmp_path / "one.zip")
        state(second)  # every leg searched once, on the empty palace: whatever is kept in memory is loaded
        import_(second, tmp_path / "one.zip")
        same(before, state(second))
    finally:
        first.stop()
        second.stop()
