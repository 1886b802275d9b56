"""One folder, one source: a folder whose files one connector mined is refused to another that reads files too
(every note would be filed twice, its facts doubled) — by name, the same on REST, MCP and the CLI."""

from __future__ import annotations

import json
from typing import Any

from test_agent_flow import refused, run
from test_mcp_http import in_process

from memcastle.errors import Conflict


def test_a_folder_mined_by_notes_is_refused_to_directory_everywhere(module_daemon: Any) -> None:
    folder = module_daemon.home.root / "harbor-notes"
    folder.mkdir(exist_ok=True)
    (folder / "server.md").write_text("# Server\n\nThe Harbor build server is in Frankfurt.\n", encoding="utf-8")
    done = module_daemon.cli("mine", "notes", str(folder), "--wing", "one-source", "--wait", "--json")
    assert done.returncode == 0, done.stderr
    with module_daemon.http() as http:
        source = next(s for s in http.get("/api/sources").json()["sources"] if s["locator"] == str(folder))
        rest = http.post("/api/mine", json={"connector": "directory", "locator": str(folder), "wing": "one-source"})
    assert rest.status_code == Conflict.status, rest.text
    body = rest.json()
    assert body["code"] == "conflict" and body["existing_id"] == source["id"]
    assert "'notes'" in body["error"] and "twice" in body["error"] and "'notes'" in body["help"]

    async def scenario() -> None:
        async with in_process(module_daemon) as client:  # the original's shape: a path, no connector
            error = await refused(client, "memcastle_mine", path=str(folder))
            assert error["code"] == "conflict" and "'notes'" in error["help"], error

    run(scenario)

    cli = module_daemon.cli("mine", "directory", str(folder), "--wing", "one-source")
    assert cli.returncode == Conflict.exit_code and "already mined by connector 'notes'" in cli.stderr, cli.stderr
    # The connector that mined it goes on mining it; forgetting that source frees the folder.
    again = module_daemon.cli("mine", "notes", str(folder), "--wing", "one-source", "--wait", "--json")
    assert again.returncode == 0, again.stderr
    forgot = module_daemon.cli("forget", "source", source["id"], "--yes", "--json")
    assert forgot.returncode == 0, forgot.stderr
    freed = module_daemon.cli("mine", "directory", str(folder), "--wing", "one-source", "--wait", "--json")
    assert freed.returncode == 0, freed.stderr
    assert json.loads(freed.stdout)["job"]["result"]["created"] == 1


def test_git_history_of_a_mined_folder_is_another_source() -> None:
    """Only connectors that read the folder's files clash: a repository's history is other evidence."""
    from memcastle.connectors.builtin import builtin_connectors

    connectors = builtin_connectors(max_file_bytes=1_000_000)
    readers = {name for name, c in connectors.items() if getattr(c, "reads_files", False)}
    assert readers == {"directory", "notes"}
