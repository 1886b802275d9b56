"""The opencode connector against a stand-in `opencode` program that answers the three invocations the connector
makes — `db path`, `db --format json <query>` (run for real against an SQLite database holding OpenCode's
`session` table) and `export <id>` (OpenCode's export JSON) — placed first on PATH, as OpenCode would be."""

from __future__ import annotations

import json
import sqlite3
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from memcastle.connectors.contract import Candidate, SkipDocument, SourceSpec
from memcastle.connectors.opencode import OpenCodeConnector

STAND_IN = """#!{python}
import json, sqlite3, sys
from pathlib import Path
data = Path({data!r})
args = sys.argv[1:]
if (data / "fail").exists():
    print("database is locked", file=sys.stderr); sys.exit(3)
if args[:2] == ["db", "path"]:
    print(data / "opencode.db"); sys.exit(0)
if args[:3] == ["db", "--format", "json"]:
    rows = sqlite3.connect(data / "opencode.db").execute(args[3]).fetchall()
    print(json.dumps([{{"id": r[0], "time_updated": r[1]}} for r in rows], indent=2)); sys.exit(0)
if args[0] == "export":
    print("Exporting session: " + args[1], file=sys.stderr)
    path = data / "export" / (args[1] + ".json")
    if not path.exists():
        print("Session not found: " + args[1], file=sys.stderr); sys.exit(1)
    print(path.read_text()); sys.exit(0)
print("unsupported: " + " ".join(args), file=sys.stderr); sys.exit(2)
"""


def session_export(session_id: str, directory: str, created: int, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "info": {
            "id": session_id,
            "slug": "quiet-lake",
            "projectID": "prj_1",
            "directory": directory,
            "title": f"Session {session_id}",
            "version": "1.18.2",
            "time": {"created": created, "updated": created + 60_000},
        },  # fmt: skip
        "messages": [
            {
                "info": {"id": "msg_1", "role": "user", "time": {"created": created}},
                "parts": [
                    {"type": "text", "text": "How do I rotate the keys?"},
                    {"type": "text", "text": "INJECTED CONTEXT", "synthetic": True},
                    {"type": "file", "filename": "TODO.md", "mime": "text/markdown"},
                ],
            },  # fmt: skip
            {"info": {"id": "msg_2", "role": "assistant", "time": {"created": created + 1000}}, "parts": parts},
            {
                "info": {"id": "msg_3", "role": "assistant", "summary": True, "time": {"created": created + 2000}},
                "parts": [{"type": "text", "text": "COMPACTION SUMMARY"}],
            },  # fmt: skip
        ],
    }


@pytest.fixture
def opencode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "opencode-data"
    (data / "export").mkdir(parents=True)
    db = sqlite3.connect(data / "opencode.db")
    db.execute("CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, time_updated INTEGER)")
    assistant = [
        {"type": "step-start"},
        {"type": "reasoning", "text": "SECRET REASONING"},
        {"type": "text", "text": "Run the rotation script."},
        {"type": "tool", "tool": "read", "state": {"status": "completed", "input": {"filePath": "x"},
                                                   "output": "SECRET TOOL OUTPUT", "title": "scripts/rotate.sh"}},
        {"type": "patch", "hash": "abc", "files": ["a"]},
        {"type": "step-finish", "reason": "stop"},
    ]  # fmt: skip
    for sid, directory, updated in (("ses_a", "/home/me/app", 1_770_000_000_000),
                                    ("ses_b", "/home/me/other", 1_770_000_500_000),
                                    ("ses_c", "/home/me/app/", 1_700_000_000_000)):  # fmt: skip
        db.execute("INSERT INTO session VALUES (?, ?, ?)", (sid, directory, updated))
        (data / "export" / f"{sid}.json").write_text(
            json.dumps(session_export(sid, directory, updated - 60_000, assistant))
        )
    db.commit()
    db.close()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "opencode"
    program.write_text(STAND_IN.format(python=sys.executable, data=str(data)), encoding="utf-8")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    return data


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
