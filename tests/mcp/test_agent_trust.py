"""Memory an agent can trust, as an agent meets it: over the official SDK's default client, on a palace mined moments
before (its embeddings still being computed), on SQLite and PostgreSQL. No search fails during the backlog; a
contested fact's standing claim comes first with the conflict shown; after fact_invalidate and after
drawer_supersede the next search shows the correction first; editing and re-mining the source keeps the correction
current; a second agent's wake-up shows the first agent's decision."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from live_daemon import make_home
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from postgres_support import PostgresServer, as_url
from served import Served, serve_palace

SERVER_OLD = "The Harbor build server is located in Frankfurt. It runs the nightly builds and keeps the artifacts.\n"
SERVER_NEW = "Moved last week: the Harbor build server is located in Berlin now.\n"
PORT = "# Staging\n\nThe staging port is 8080 for the Harbor services.\n"
FILLER = ("argparse", "json", "logging", "pathlib", "subprocess", "threading", "email", "csv", "sqlite3", "zipfile")


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    env = {"MEMCASTLE_EMBEDDINGS_PROVIDER": "builtin"}
    conninfo = ""
    if request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        conninfo = server.create_database()
        env["MEMCASTLE_STORE_URL"] = as_url(conninfo)
    daemon = serve_palace(tmp_path / "palace", make_home(tmp_path / "xdg"), extra_env=env)
    try:
        yield daemon
    finally:
        daemon.kill()
        if conninfo:
            server.drop_database(conninfo)


def notes_folder(root: Path) -> Path:
    folder = root / "harbor-notes"
    folder.mkdir()
    (folder / "server-2025.md").write_text("---\ndate: 2025-03-01\n---\n" + SERVER_OLD, encoding="utf-8")
    (folder / "server-2026.md").write_text("---\ndate: 2026-11-20\n---\n" + SERVER_NEW, encoding="utf-8")
    (folder / "staging.md").write_text(PORT, encoding="utf-8")
    for name in FILLER:  # real prose, so the embed sweep lasts while the agent searches
        doc = importlib.import_module(name).__doc__ or name
        (folder / f"{name}.md").write_text(f"# {name}\n\n{doc}\n", encoding="utf-8")
    return folder


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result.content}"
    answer: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    return answer


async def completed(client: Client, job_id: str) -> None:
    with anyio.fail_after(120):
        while (job := await call(client, "memcastle_job_get", job_id=job_id))["status"] != "completed":
            assert job["status"] in ("queued", "running"), job
            await anyio.sleep(0.05)


def test_an_agent_can_trust_what_memory_says(served: Served, tmp_path: Path) -> None:
    folder = notes_folder(tmp_path)

    async def scenario() -> None:
        async with httpx2.AsyncClient(trust_env=False, timeout=60.0) as http:
            # The SDK's default negotiation: no `mode=` given.
            async with Client(streamable_http_client(served.address + "/mcp", http_client=http)) as client:
                mined = await call(client, "memcastle_mine", connector="notes", locator=str(folder), wing="harbor")
                await completed(client, mined["job"]["id"])

                # Searches during the backlog: none fails.
                failures = []
                for query in ("Harbor build server", "where is the build server", "staging port", "nightly builds",
                              "json", "logging handlers", "zip archive", "thread"):  # fmt: skip
                    result = await client.call_tool("memcastle_search", {"query": query, "wing": "harbor"})
                    if result.is_error:
                        failures.append((query, result.content))
                assert failures == []

                # Wait for the facts, then ask about the contested one.
                with anyio.fail_after(120):
                    while len((await call(client, "memcastle_fact_list", subject="Harbor build server"))["facts"]) < 2:
                        await anyio.sleep(0.1)
                found = await call(client, "memcastle_search", query="Harbor build server location", wing="harbor")
                first = found["hits"][0]
                assert first["origin"]["document"].endswith("server-2026.md"), found
                assert "contested" in first and "Berlin" in first["contested"]
                stale = next(h for h in found["hits"] if h["origin"]["document"].endswith("server-2025.md"))
                assert "stands: Harbor build server located_in Berlin" in stale["contested"]

                # The agent learns Berlin is wrong: invalidating it puts Frankfurt's evidence first.
                facts = (await call(client, "memcastle_fact_list", subject="Harbor build server"))["facts"]
                berlin = next(f for f in facts if f["fact"].endswith("Berlin"))
                await call(
                    client, "memcastle_fact_invalidate", fact_id=berlin["id"][:8], reason="the move was called off"
                )
                again = await call(client, "memcastle_search", query="Harbor build server location", wing="harbor")
                assert again["hits"][0]["origin"]["document"].endswith("server-2025.md"), again
                assert "invalidated" in next(
                    h["contested"] for h in again["hits"] if h["origin"]["document"].endswith("server-2026.md")
                )

                # A wrong note corrected: the correction comes first, and stays so when its source changes.
                port = await call(client, "memcastle_search", query="staging port", wing="harbor")
                hit = next(h for h in port["hits"] if h["origin"]["document"].endswith("staging.md"))
                fixed = await call(client, "memcastle_drawer_supersede", drawer_id=hit["id"][:8],
                                   content="# Staging\n\nThe staging port is 8443 since the TLS move.\n")  # fmt: skip
                after = await call(client, "memcastle_search", query="staging port", wing="harbor")
                assert after["hits"][0]["id"] == fixed["drawer"]["id"]
                (folder / "staging.md").write_text(PORT + "\nAsk Ines for the VPN key.\n", encoding="utf-8")
                remined = await call(client, "memcastle_mine", connector="notes", locator=str(folder), wing="harbor")
                await completed(client, remined["job"]["id"])
                kept = await call(client, "memcastle_search", query="staging port", wing="harbor")
                assert kept["hits"][0]["id"] == fixed["drawer"]["id"], kept

                # A decision one agent checkpoints reaches the next agent's wake-up in the wing.
                await call(client, "memcastle_checkpoint", agent="claude-code", items=[
                    {"content": "Keep the build server in Frankfurt: the move is off.", "wing": "harbor",
                     "tags": ["decision"]}])  # fmt: skip
                woken = await call(client, "memcastle_wake_up", agent="codex", wing="harbor")
                assert [d["content"] for d in woken["decisions"]] == [
                    "Keep the build server in Frankfurt: the move is off."
                ]

    anyio.run(scenario)
