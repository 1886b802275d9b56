"""Agent session logs the tests write in each agent's own format: Pi's session files (version 3 header, message
entries) and a stand-in `opencode` program answering the invocations the opencode connector makes — `db path`,
`db --format json <query>` (run for real against an SQLite database holding OpenCode's `session` table) and `export
<id>` (OpenCode's export JSON)."""

from __future__ import annotations

import json
import sqlite3
import stat
import sys
from pathlib import Path
from typing import Any

from memcastle.connectors.pi import session_folder_name


def write_session(root: Path, cwd: str, session_id: str, entries: list[dict[str, Any]], stamp: str) -> Path:
    folder = root / session_folder_name(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"
    header = {"type": "session", "version": 3, "id": session_id, "timestamp": stamp, "cwd": cwd}
    path.write_text("\n".join(json.dumps(e) for e in [header, *entries]) + "\n", encoding="utf-8")
    return path


def entry(kind: str, n: int, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "id": f"e{n:03d}", "parentId": f"e{n - 1:03d}" if n else None,
            "timestamp": f"2026-03-02T09:{n:02d}:00.000Z", **fields}  # fmt: skip


CONVERSATION = [
    entry("model_change", 0, provider="anthropic", modelId="claude-sonnet-4-5"),
    entry("message", 1, message={"role": "user", "content": [{"type": "text", "text": "Why does the deploy fail?"}]}),
    entry(
        "message",
        2,
        message={
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "private reasoning that must not be filed"},
                {"type": "text", "text": "Let me read the deploy script."},
                {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "scripts/deploy.sh"}},
            ],
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
        },
    ),
    entry(
        "message",
        3,
        message={
            "role": "toolResult",
            "toolCallId": "call_1",
            "toolName": "read",
            "content": [{"type": "text", "text": "#!/bin/sh\nsecret tool output"}],
        },
    ),  # fmt: skip
    entry("message", 4, message={"role": "bashExecution", "command": "git status", "output": "clean", "exitCode": 0}),
    entry("thinking_level_change", 5, thinkingLevel="high"),
    entry("message", 6, message={"role": "user", "content": "And the staging host?"}),
    entry(
        "message", 7, message={"role": "custom", "customType": "ext", "content": "extension chatter", "display": False}
    ),
    entry(
        "message", 8, message={"role": "assistant", "content": [{"type": "text", "text": "Staging uses port 8443."}]}
    ),
]


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


ASSISTANT = [
    {"type": "step-start"},
    {"type": "reasoning", "text": "SECRET REASONING"},
    {"type": "text", "text": "Run the rotation script."},
    {"type": "tool", "tool": "read", "state": {"status": "completed", "input": {"filePath": "x"},
                                               "output": "SECRET TOOL OUTPUT", "title": "scripts/rotate.sh"}},
    {"type": "patch", "hash": "abc", "files": ["a"]},
    {"type": "step-finish", "reason": "stop"},
]  # fmt: skip


def install_opencode(root: Path, sessions: list[tuple[str, str, int]], assistant: list[dict[str, Any]]) -> Path:
    """An OpenCode history under `root` holding `sessions` (id, directory, last update in ms), each exported with
    `assistant` as its answer; returns the folder of the stand-in `opencode` program, to put first on PATH."""
    data = root / "opencode-data"
    (data / "export").mkdir(parents=True)
    db = sqlite3.connect(data / "opencode.db")
    db.execute("CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, time_updated INTEGER)")
    for sid, directory, updated in sessions:
        db.execute("INSERT INTO session VALUES (?, ?, ?)", (sid, directory, updated))
        (data / "export" / f"{sid}.json").write_text(
            json.dumps(session_export(sid, directory, updated - 60_000, assistant))
        )
    db.commit()
    db.close()
    bin_dir = root / "bin"
    bin_dir.mkdir()
    program = bin_dir / "opencode"
    program.write_text(STAND_IN.format(python=sys.executable, data=str(data)), encoding="utf-8")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return bin_dir
