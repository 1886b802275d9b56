"""The opencode connector against a stand-in `opencode` program that answers the three invocations the connector
makes — `db path`, `db --format json <query>` (run for real against an SQLite database holding OpenCode's
`session` table) and `export <id>` (OpenCode's export JSON) — placed first on PATH, as OpenCode would be."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from agent_logs import ASSISTANT, install_opencode

from memcastle.connectors.contract import Candidate, SkipDocument, SourceSpec
from memcastle.connectors.opencode import OpenCodeConnector
from memcastle.errors import InvalidRequest


@pytest.fixture
def opencode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    sessions = [("ses_a", "/home/me/app", 1_770_000_000_000), ("ses_b", "/home/me/other", 1_770_000_500_000),
                ("ses_c", "/home/me/app/", 1_700_000_000_000)]  # fmt: skip
    bin_dir = install_opencode(tmp_path, sessions, ASSISTANT)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return tmp_path / "opencode-data"


def test_sessions_are_listed_past_the_cursor_in_update_order(opencode: Path) -> None:
    connector = OpenCodeConnector()
    source = SourceSpec("")
    found = connector.discover(source, None)
    assert [c.external_id for c in found] == ["ses_c", "ses_a", "ses_b"]
    assert connector.discover(source, found[1].cursor_after) == [found[2]]
    assert connector.discover(source, found[2].cursor_after) == []
    assert connector.identify(source) == connector.identify(SourceSpec(str(opencode / "opencode.db")))
    narrowed = connector.discover(SourceSpec("", {"dir": "/home/me/app", "since": "2025-01-01"}), None)
    assert [c.external_id for c in narrowed] == ["ses_a"]


def test_a_session_is_read_from_its_export(opencode: Path) -> None:
    connector = OpenCodeConnector()
    raw = connector.read(SourceSpec(""), Candidate("ses_a"))
    assert "How do I rotate the keys?" in raw.body and "Run the rotation script." in raw.body
    assert "[tool: read — scripts/rotate.sh]" in raw.body and "[file: TODO.md]" in raw.body
    for left_out in ("INJECTED CONTEXT", "SECRET REASONING", "SECRET TOOL OUTPUT", "COMPACTION SUMMARY"):
        assert left_out not in raw.body
    assert raw.uri == "opencode://session/ses_a"
    assert raw.metadata["session_id"] == "ses_a" and raw.metadata["project_id"] == "prj_1"
    assert raw.metadata["cwd"] == "/home/me/app" and raw.metadata["version"] == "1.18.2"
    assert raw.occurred_at == raw.metadata["first_timestamp"] and raw.occurred_at.startswith("2026-02-02")
    assert connector.normalize(raw).room == "app"


def test_failures_are_skips_with_the_reason(opencode: Path) -> None:
    connector = OpenCodeConnector()
    with pytest.raises(SkipDocument, match="Session not found: ses_zz"):
        connector.read(SourceSpec(""), Candidate("ses_zz"))
    (opencode / "fail").write_text("")
    with pytest.raises(SkipDocument, match="database is locked"):
        connector.discover(SourceSpec(""), None)


def test_mining_is_incremental_on_the_update_time(opencode: Path, tmp_path: Path) -> None:
    from waiting import wait_until

    from memcastle.app import build
    from memcastle.config import load_settings
    from memcastle.model.requests import MineRequest

    flags = {"palace": str(tmp_path / "palace"), "embeddings.provider": "none", "extraction.provider": "none"}
    palace = build(load_settings(flags=flags, env={}, config_file=None))
    palace.start()
    try:

        def mine() -> dict[str, Any]:
            job = palace.services.mining.submit_mine(MineRequest("opencode", "")).job
            done = wait_until(lambda: (j := palace.services.jobs.get_job(job.id)).is_finished and j, what="a mine")
            assert done.status.value == "completed", done.error
            return dict(done.result or {})

        first = mine()
        assert (first["created"], first["wing"]) == (3, "opencode")
        db = sqlite3.connect(opencode / "opencode.db")
        db.execute("UPDATE session SET time_updated = 1780000000000 WHERE id = 'ses_b'")  # ses_b grew since
        db.commit()
        db.close()
        again = mine()
        assert again["documents"] == 1 and again["unchanged"] == 1  # only the updated one was asked for again
    finally:
        palace.stop()


def test_session_mines_one_session_whatever_the_cursor(opencode: Path) -> None:
    connector = OpenCodeConnector()
    one = SourceSpec("", {"session": "ses_c"})
    latest = connector.discover(SourceSpec(""), None)[-1].cursor_after
    assert connector.discover(one, latest) == [Candidate("ses_c")], "listed past the cursor, which it leaves alone"
    assert connector.discover(SourceSpec("", {"session": "ses_gone"}), None) == []
    assert connector.identify(one) == connector.identify(SourceSpec("")), "the same source as the whole history"
    with pytest.raises(InvalidRequest) as refused:
        connector.check(SourceSpec("", {"session": "x' OR 1=1 --"}))
    assert refused.value.field == "options.session"
