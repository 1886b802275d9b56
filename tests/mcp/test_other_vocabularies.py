"""Clients written for the original MemCastle work: its argument names (`agent_identity`, `payload`, `path`/`source`,
`relationship_id`, `id`, `from`, a nested `filter`) and its tool names (`memcastle_job_pause`, …) are accepted as
documented other names; an argument no tool name covers is refused by name with the ones the tool takes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from test_agent_flow import call as call_sized
from test_agent_flow import refused, run
from test_mcp_http import in_process


async def call(client: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    answer, _ = await call_sized(client, tool, **arguments)
    return answer


def test_the_original_memcastles_calls_are_understood(module_daemon: Any, tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "plan.md").write_text("The drawbridge is raised at dusk by the night watch.\n")
    vault = tmp_path / "vault"  # one folder, one source: the notes connector mines a folder of its own
    vault.mkdir()
    (vault / "watch.md").write_text("The night watch keeps the lantern lit.\n")

    async def scenario() -> None:
        async with in_process(module_daemon) as client:
            written = await call(
                client,
                "memcastle_checkpoint",
                payload={
                    "items": [
                        {
                            "destination": "project",
                            "wing": "orig",
                            "name": None,
                            "content": "Raise the drawbridge at dusk.",
                            "tags": ["castle"],
                            "source": {"kind": "manual", "uri": None, "agent": "orig-agent"},
                            "fact": None,
                        }
                    ]
                },
                emergency=False,
            )
            [kept] = written["drawers"]
            assert kept["room"] == "project" and kept["origin"]["agent"] == "orig-agent" and "castle" in kept["tags"]
            # The payload sent as a JSON string, as some models do, is the same request.
            as_text = {"items": [{"destination": "general", "content": "Feed the moat fish.", "tags": []}]}
            again = await call(client, "memcastle_checkpoint", payload=json.dumps(as_text), agent="orig-agent")
            assert again["drawers"][0]["room"] == "general"

            await call(client, "memcastle_diary_write", agent_identity="orig-agent", wing="orig", content="Dusk: done.")
            diary = await call(client, "memcastle_diary_read", agent_identity="orig-agent", wing="orig", limit=5)
            assert diary["entries"][0]["content"] == "Dusk: done."
            woken = await call(client, "memcastle_wake_up", agent_identity="orig-agent", wing="orig", max_bytes=4096)
            assert woken["diary"] and kept["id"] in {d["id"] for d in woken["checkpoints"]}

            by_path = await call(client, "memcastle_mine", path=str(folder), wing="orig-mined")
            twice = await refused(client, "memcastle_mine", source="notes", locator=str(folder), wing="orig-notes")
            assert twice["code"] == "conflict" and "directory" in twice["error"], "a folder being mined is its own"
            by_source = await call(client, "memcastle_mine", source="notes", locator=str(vault), wing="orig-notes")
            for queued in (by_path, by_source):
                with anyio.fail_after(30):
                    while (await call(client, "memcastle_job_get", id=queued["job"]["id"]))["status"] != "completed":
                        await anyio.sleep(0.05)
            assert (await call(client, "memcastle_job_get", id=by_path["job"]["id"]))["params"]["connector"] == (
                "directory"
            )

            window = await call(
                client,
                "memcastle_search",
                query="drawbridge dusk",
                filter={"wing": "orig-mined"},
                **{"from": "2000-01-01T00:00:00Z", "until": "2100-01-01T00:00:00Z"},
            )
            assert window["hits"] and window["hits"][0]["origin"]["document"].endswith("plan.md")
            old_name = await call(
                client, "memcastle_search", query="drawbridge", since="2000-01-01", until="2100-01-01"
            )
            assert old_name["hits"], "MemCastle's own earlier `since` still works"
            recalled = await call(client, "memcastle_recall", query="drawbridge", wing="orig-mined", ranking="lexical")
            assert recalled["hits"]
            history = await call(client, "memcastle_history", drawer_id=kept["id"])
            assert history["versions"][0]["id"] == kept["id"]
            rooms = await call(client, "memcastle_room_list", wing="orig")
            assert {"room": "project", "drawers": 1} in rooms["rooms"]

            fact = (
                await call(
                    client,
                    "memcastle_checkpoint",
                    items=[
                        {
                            "content": "The watch uses horns.",
                            "fact": {"subject": "watch", "predicate": "uses", "object": "horns"},
                        }
                    ],  # fmt: skip
                )
            )["drawers"][0]
            [listed] = (await call(client, "memcastle_fact_list", subject="watch"))["facts"]
            assert listed["evidence"] == fact["id"]
            closed = await call(client, "memcastle_fact_invalidate", relationship_id=listed["id"], reason="bells now")
            assert closed["fact"]["state"] == "invalidated"

            # The original's memcastle_job_pause is memcastle_job_control with action pause: a finished job says so.
            paused = await refused(client, "memcastle_job_pause", id=by_path["job"]["id"])
            assert paused["code"] == "illegal_transition" and "completed to paused" in paused["error"]

    run(scenario)


def test_arguments_no_name_covers_are_refused_by_name_never_dropped(module_daemon: Any) -> None:
    async def scenario() -> None:
        async with in_process(module_daemon) as client:
            unknown = await refused(client, "memcastle_search", query="x", wing_name="w")
            assert unknown["field"] == "wing_name"
            assert "wing_name" in unknown["error"] and "wing" in unknown["error"] and "max_chars" in unknown["error"]
            twice = await refused(client, "memcastle_wake_up", agent="a", agent_identity="b")
            assert twice["field"] in ("agent", "agent_identity") and "give one" in twice["error"]
            nested = await refused(client, "memcastle_search", query="x", wing="a", filter={"wing": "b"})
            assert nested["field"] == "wing"
            bad_filter = await refused(client, "memcastle_search", query="x", filter={"colour": "red"})
            assert bad_filter["field"] == "colour"
            op = await refused(
                client,
                "memcastle_checkpoint",
                payload={
                    "items": [{"destination": "general", "content": "c", "tags": [], "fact": {"op": "supersede"}}]
                },
            )
            assert op["field"] == "payload.items[0].fact.op" and "memcastle_fact_supersede" in op["error"]
            file_source = await refused(
                client,
                "memcastle_checkpoint",
                payload={"items": [{"content": "c", "source": {"kind": "file", "uri": "/etc/passwd"}}]},
            )
            assert file_source["field"] == "payload.items[0].source.uri"
            both = await refused(client, "memcastle_mine", path="/tmp", connector="directory")
            assert both["field"] == "path"

    run(scenario)


def test_an_agent_lists_reads_and_runs_miners(module_daemon: Any, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nThe armoury holds forty spears.\n")
    with module_daemon.http() as http:
        defined = http.post("/api/miners", json={"name": "mcp-vault", "connector": "notes", "locator": str(vault)})
        assert defined.status_code == 201, defined.text

    async def scenario() -> None:
        async with in_process(module_daemon) as client:
            listed = await call(client, "memcastle_miner_list")
            mine = next(m for m in listed["miners"] if m["name"] == "mcp-vault")
            assert mine["source"] == f"notes {vault}" and mine["state"] == "enabled" and "locator" not in mine
            whole = await call(client, "memcastle_miner_get", name="mcp-vault")
            assert whole["locator"] == str(vault) and whole["last_run"] is None
            ran = await call(client, "memcastle_miner_run", id="mcp-vault")
            with anyio.fail_after(30):
                while (await call(client, "memcastle_job_get", job_id=ran["job"]["id"]))["status"] != "completed":
                    await anyio.sleep(0.05)
            again = await call(client, "memcastle_miner_get", name="mcp-vault")
            assert again["last_run"]["job_id"] == ran["job"]["id"]
            missing = await refused(client, "memcastle_miner_get", name="nope")
            assert missing["code"] == "not_found"

    run(scenario)
