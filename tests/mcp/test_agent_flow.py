"""An agent's session, through the official `mcp` client over both transports (streamable HTTP and the stdio
bridge): it wakes up, searches, reads one hit in full, checkpoints a decision, finds a wrong fact and a wrong note
and corrects them, and searches again to see the correction — with the answer sizes an agent pays for, and bad input
answered by a clear tool error, never a traceback."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent
from test_mcp_stdio import bridge

from memcastle.app import build
from memcastle.config import Settings
from memcastle.model import NewDrawer

NOTES = {
    "runbook.md": "# Staging\n\nThe staging database listens on port 5433.\nBackups run nightly at 02:00.\n",
    "deploys.md": "# Deploys\n\nWe deploy staging on Fridays after the test run passes.\n",
    "teams.md": "# Teams\n\nThe platform team owns the staging database and its backups.\n",
}


def run(scenario: Callable[[], Any]) -> None:
    try:
        anyio.run(scenario)
    except BaseExceptionGroup as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
            leaf = leaf.exceptions[0]
        raise leaf from None


async def call(client: Client, tool: str, **arguments: Any) -> tuple[dict[str, Any], int]:
    """A successful call's answer and its size in characters, as the agent reads it."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result.content}"
    [block] = result.content
    assert isinstance(block, TextContent)
    return json.loads(block.text), len(block.text)


async def refused(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A refused call's error shape; its text is the message, never a traceback."""
    result: CallToolResult = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} was not refused: {result.content}"
    text = result.content[0].text  # type: ignore[union-attr]
    assert "Traceback" not in text and "pydantic" not in text
    assert result.structured_content is not None
    return result.structured_content


@pytest.fixture
def seeded(settings: Settings, palace_dir: Path) -> Path:
    """A palace holding two drawers whose ids share their first 8 characters (an ambiguous prefix)."""
    palace = build(settings)
    palace.start()
    try:
        for suffix in ("aaaa", "bbbb"):
            palace.store.drawers.add_drawer(
                NewDrawer(wing="twins", room="r", content=f"twin {suffix}", id=f"0badcafe-{suffix}")
            )
    finally:
        palace.stop()
    return palace_dir


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_an_agent_wakes_searches_reads_corrects_and_sees_the_correction(
    transport: str, seeded: Path, daemon: Callable[..., Any], tmp_path: Path
) -> None:
    served = daemon(seeded)
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text)

    def connect() -> AbstractAsyncContextManager[Client]:
        if transport == "stdio":
            return bridge(served.palace, served.env, tmp_path / "bridge.log", "mcp")
        return over_http(served.address)

    async def scenario() -> None:
        async with connect() as client:
            # Set up: a mined notes folder, and an earlier session's diary and checkpoint.
            mined, _ = await call(client, "memcastle_mine", connector="notes", locator=str(notes), wing="ops")
            with anyio.fail_after(30):
                while (job := (await call(client, "memcastle_job_get", job_id=mined["job"]["id"][:8]))[0])[
                    "status"
                ] != "completed":
                    assert job["status"] in ("queued", "running"), job
                    await anyio.sleep(0.05)
            await call(client, "memcastle_diary_write", agent="flow", content="Next: check the staging port.")

            # Wake up within a budget.
            woken, size = await call(client, "memcastle_wake_up", agent="flow", max_chars=2000)
            assert size <= 2000 and "staging port" in woken["diary"][0]["content"]

            # Search: compact hits with their evidence.
            found, size = await call(client, "memcastle_search", query="staging database port", wing="ops")
            assert size <= 8000 and len(found["hits"]) <= 5
            hit = next(h for h in found["hits"] if h["origin"]["document"].endswith("runbook.md"))
            assert "5433" in hit["snippet"]["text"] and {"staging", "database", "port"} <= set(hit["snippet"]["terms"])
            assert "content" not in hit and "content_hash" not in json.dumps(found)

            # Read it in full, by the 8 characters a table shows.
            whole, _ = await call(client, "memcastle_get_drawer", drawer_id=hit["id"][:8])
            assert whole["id"] == hit["id"] and whole["content"].startswith("# Staging")
            part, _ = await call(client, "memcastle_get_drawer", id=hit["id"], lines=[3, 3])
            assert part["content"] == "The staging database listens on port 5433.\n" and part["lines"] == [3, 3]

            # Checkpoint what was found, with a fact; then learn it is wrong.
            kept, _ = await call(
                client,
                "memcastle_checkpoint",
                agent="flow",
                items=[
                    {
                        "content": "Staging DB port is 5433 (from the runbook).",
                        "wing": "ops",
                        "fact": {"subject": "staging-db", "predicate": "uses", "object": "port-5433"},
                    }
                ],
            )
            facts, size = await call(client, "memcastle_fact_list", subject="staging-db")
            [fact] = facts["facts"]
            # (the entity is named as the palace first met it: "Staging DB", in the mined notes)
            assert fact["fact"].endswith(" uses port-5433") and fact["state"] == "current" and size < 1000
            corrected, _ = await call(
                client,
                "memcastle_fact_supersede",
                fact_id=fact["id"][:8],
                object="port-5432",
                reason="the runbook was out of date",
            )
            assert corrected["fact"]["fact"] == fact["fact"].replace("5433", "5432")
            assert corrected["superseded"]["state"] == "superseded"
            fixed, _ = await call(
                client,
                "memcastle_drawer_supersede",
                drawer_id=hit["id"][:8],
                content="# Staging\n\nThe staging database listens on port 5432.\nBackups run nightly at 02:00.\n",
                reason="the port moved",
            )

            # Search again: the correction is what is found, the old version is history.
            again, _ = await call(client, "memcastle_search", query="staging database port", wing="ops")
            now_found = {h["id"]: h for h in again["hits"]}
            assert "5432" in now_found[fixed["drawer"]["id"]]["snippet"]["text"]
            assert hit["id"] not in now_found, "the wrong version is history, not a current hit"
            history, _ = await call(client, "memcastle_history", drawer_id=fixed["drawer"]["id"])
            assert [v["id"] for v in history["versions"]] == [hit["id"], fixed["drawer"]["id"]]
            now, _ = await call(client, "memcastle_fact_list", subject="staging-db", state="current")
            assert [f["fact"] for f in now["facts"]] == [corrected["fact"]["fact"]]

            # A budget the answer keeps to, cut at whole hits, saying what was left out.
            capped, size = await call(client, "memcastle_search", query="staging", wing="ops", limit=10, max_chars=600)
            assert size <= 600 and capped["omitted"] >= 1 and "max_chars" in capped["note"]

            # Bad input: a clear tool error each.
            unknown = await refused(client, "memcastle_search", query="x", sinse="2025-01-01")
            assert unknown["field"] == "sinse" and "query" in unknown["error"] and "from" in unknown["error"]
            nothing = await refused(client, "memcastle_get_drawer", drawer_id="ffffffff")
            assert nothing["code"] == "not_found"
            several = await refused(client, "memcastle_get_drawer", drawer_id="0badcafe")
            assert several["code"] == "ambiguous_id"
            assert several["candidates"] == ["0badcafe-aaaa", "0badcafe-bbbb"]
            zero = await refused(client, "memcastle_search", query="x", max_chars=0)
            assert zero["field"] == "max_chars"
            await call(client, "memcastle_forget", scope="drawer", drawer_id=kept["drawers"][0]["id"])
            gone = await refused(client, "memcastle_get_drawer", drawer_id=kept["drawers"][0]["id"])
            assert gone["code"] == "not_found"

    run(scenario)


@asynccontextmanager
async def over_http(address: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(trust_env=False, timeout=30.0) as http:
        async with Client(streamable_http_client(address + "/mcp", http_client=http)) as client:
            yield client
