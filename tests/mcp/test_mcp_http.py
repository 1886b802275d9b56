"""MCP at /mcp: the official `mcp` client over streamable HTTP against a served palace (the tool list, profiles,
modes, sessions, hosts), and over the SDK's in-memory transport for what a tool does (`in_process`)."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, get_args

import anyio
import httpx
import httpx2
import pytest
from addresses import LOCAL
from fastapi.testclient import TestClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent
from waiting import CEILING

from memcastle.app import build
from memcastle.config import load_settings
from memcastle.daemon import http_app
from memcastle.mcp import server as mcp_server
from memcastle.mcp.profiles import CORE
from memcastle.mcp.profiles import HEADER as PROFILE_HEADER
from memcastle.mcp.tools import TOOLS
from memcastle.model import FACT_STATES, RANKINGS, SOURCE_KINDS, JobStatus, vocabulary
from memcastle.modes import MODES
from memcastle.services.facts import ENTITY_KINDS, PREDICATES

REQUIRED = {
    "memcastle_status",
    "memcastle_search",
    "memcastle_recall",
    "memcastle_wake_up",
    "memcastle_diary_write",
    "memcastle_diary_read",
    "memcastle_note",
    "memcastle_checkpoint",
    "memcastle_history",
    "memcastle_fact_list",
    "memcastle_fact_history",
    "memcastle_mine",
    "memcastle_job_list",
    "memcastle_job_get",
    "memcastle_set_mode",
}
WRITES = {
    "memcastle_note",
    "memcastle_checkpoint",
    "memcastle_diary_write",
    "memcastle_mine",
    "memcastle_forget",
    "memcastle_drawer_supersede",
    "memcastle_drawer_mark",
    "memcastle_fact_supersede",
    "memcastle_fact_invalidate",
    "memcastle_fact_link",
    "memcastle_job_control",
    "memcastle_miner_run",
    "memcastle_audit",
    "memcastle_repair",
}
DESTRUCTIVE = {"memcastle_forget", "memcastle_repair"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@asynccontextmanager
async def connect(
    address: str,
    *,
    mode: str = "legacy",
    headers: dict[str, str] | None = None,
) -> AsyncIterator[Client]:
    """An official MCP client on the daemon's /mcp; `legacy` (the initialize handshake) gives it a session."""
    async with httpx2.AsyncClient(headers=headers or {}, trust_env=False, timeout=15.0) as http:
        async with Client(streamable_http_client(address + "/mcp", http_client=http), mode=mode) as client:
            yield client


@asynccontextmanager
async def in_process(served: Any, *, tools: str = "core") -> AsyncIterator[Client]:
    """The official MCP client on the served palace's MCP server through the SDK's in-memory transport: what a test of
    a tool's behaviour uses (the transports have their own tests); `tools` is the profile the session lists."""
    server = mcp_server.build_mcp_server(served.built.services, allowed_hosts=[], tools=tools)
    async with Client(server, mode="legacy") as client:  # a session, as a client that initializes has
        yield client


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    """Run an async scenario; a failure inside the client's task groups is reported as itself."""
    try:
        anyio.run(scenario)
    except BaseExceptionGroup as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
            leaf = leaf.exceptions[0]
        raise leaf from None


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """The answer of a tool call that must succeed: one text block of compact JSON, nothing else."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result.content}"
    assert result.structured_content is None, "the answer is sent once"
    [block] = result.content
    assert isinstance(block, TextContent) and ": " not in block.text[:200].replace('": "', "")
    answer: dict[str, Any] = json.loads(block.text)
    return answer


async def refused(client: Client, tool: str, **arguments: Any) -> CallToolResult:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} was not refused: {result.content}"
    return result


# --- the tool list --------------------------------------------------------------------------------


def test_tools_are_listed_with_hints_and_agent_descriptions(module_daemon: Any) -> None:
    async def scenario() -> None:
        async with connect(module_daemon.address) as client:
            core = await client.list_tools()
            # A tool the profile does not list still answers by name (a profile never forbids).
            await call(client, "memcastle_job_list", limit=1)
        async with connect(module_daemon.address, headers={PROFILE_HEADER: "full"}) as client:
            listed = await client.list_tools()
            tools = {tool.name: tool for tool in listed.tools}
        # Every agent reads the whole default list at every start: it stays within what a small context affords.
        dumped = json.dumps(core.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))
        assert len(dumped) <= 8_000, len(dumped)
        assert {tool.name for tool in core.tools} == set(CORE)
        assert REQUIRED <= set(tools)
        assert set(tools) == set(TOOLS)
        for name, tool in tools.items():
            # Hints are sent where they differ from MCP's defaults (read-only false, destructive true, idempotent
            # false): what a client reads is the hint or its default.
            hints = tool.annotations
            assert hints is not None, name
            read_only = bool(hints.read_only_hint)
            assert read_only is (name not in WRITES | {"memcastle_set_mode"}), name
            if not read_only:
                assert hints.destructive_hint is (name in DESTRUCTIVE), name
            assert tool.description and len(tool.description) > 20, name
            assert tool.output_schema is None, name  # one text answer, not a second structured copy
        assert tools["memcastle_checkpoint"].annotations.idempotent_hint is None  # type: ignore[union-attr]
        assert tools["memcastle_note"].annotations.idempotent_hint is True  # type: ignore[union-attr]
        assert "before answering" in (tools["memcastle_search"].description or "")
        assert "session's start" in (tools["memcastle_wake_up"].description or "")
        connector = tools["memcastle_mine"].input_schema["properties"]["connector"]
        assert "directory" in connector["description"]  # the connectors are listed
        schema = tools["memcastle_search"].input_schema["properties"]
        assert schema["limit"]["maximum"] == 200 and schema["limit"]["default"] == 5
        assert "ranking" in schema and "from" in schema and "since" not in schema
        assert tools["memcastle_set_mode"].input_schema["properties"]["mode"]["enum"] == list(MODES)

    run(scenario)


def test_tool_vocabularies_match_the_domain() -> None:
    assert get_args(vocabulary.SourceKind) == SOURCE_KINDS
    assert get_args(vocabulary.Ranking) == RANKINGS
    assert get_args(vocabulary.Predicate) == PREDICATES
    assert get_args(vocabulary.EntityKind) == ENTITY_KINDS
    assert get_args(vocabulary.FactState) == FACT_STATES
    assert get_args(vocabulary.JobState) == tuple(s.value for s in JobStatus)


# --- reading and writing --------------------------------------------------------------------------


def test_mined_evidence_is_found_with_origin_and_preference_signals(daemon: Callable[..., Any], tmp_path: Path) -> None:
    source = tmp_path / "project"
    source.mkdir()
    (source / "decisions.md").write_text("We picked zeppelin-storage because it survives power loss.\n")
    palace = tmp_path / "preferring-palace"
    palace.mkdir()
    (palace / "preferences.toml").write_text('[preferences.sources.directory]\nlevel = "high"\n')
    served = daemon(palace)

    async def scenario() -> None:
        async with connect(served.address) as client:
            queued = await call(client, "memcastle_mine", connector="directory", locator=str(source), wing="mcp-mine")
            job_id = queued["job"]["id"]
            with anyio.fail_after(15):
                while (job := await call(client, "memcastle_job_get", job_id=job_id))["status"] != "completed":
                    assert job["status"] in ("queued", "running"), job
                    await anyio.sleep(0.05)
            assert job["result"]["created"] >= 1 and job["requested_by"] == "mcp"
            listed = await call(client, "memcastle_job_list", kind="mine")
            assert job_id[:8] in {j["id"] for j in listed["jobs"]}, "listed by the 8 characters that stand for it"

            found = await call(client, "memcastle_search", query="zeppelin-storage power loss", wing="mcp-mine")
            hit = found["hits"][0]
            assert hit["origin"]["connector"] == "directory"
            assert hit["origin"]["document"].endswith("decisions.md")
            first, last = hit["origin"]["lines"]
            snippet = hit["snippet"]  # the best passage, instead of the verbatim drawer
            assert "content" not in hit and "zeppelin" in snippet["terms"]
            assert first <= snippet["lines"][0] <= snippet["lines"][1] <= last
            assert hit["preference"] == "high +0.080 (directory)"
            whole = await call(client, "memcastle_get_drawer", drawer_id=hit["id"][:8])
            assert snippet["text"] in whole["content"] and whole["lines"] == [first, last]
            assert whole["chars"] == hit["chars"] == len(whole["content"])
            full = await call(
                client, "memcastle_search", query="zeppelin-storage power loss", wing="mcp-mine", full=True
            )
            assert full["hits"][0]["content"] == whole["content"] and "snippet" not in full["hits"][0]
            recalled = await call(client, "memcastle_recall", query="zeppelin-storage", wing="mcp-mine")
            assert recalled["hits"][0]["id"] == hit["id"]
            trace = await call(client, "memcastle_explain_preference", drawer_id=hit["id"])
            assert trace["drawer_id"] == hit["id"] and trace["result"]["level"] == "high"

    run(scenario)


def test_note_search_checkpoint_history_wake_up_and_diary(module_daemon: Any) -> None:
    async def scenario() -> None:
        async with in_process(module_daemon) as client:
            saved = await call(
                client,
                "memcastle_note",
                content="The staging database is called heron-7.",
                wing="mcp-flow",
                tags=["infra"],
                agent="tester",
            )
            assert saved["created"] is True
            drawer = saved["drawer"]
            assert drawer["origin"]["agent"] == "tester" and drawer["origin"]["kind"] == "note"
            again = await call(
                client,
                "memcastle_note",
                content="The staging database is called heron-7.",
                wing="mcp-flow",
                agent="tester",
            )
            assert again["created"] is False and again["drawer"]["id"] == drawer["id"]

            found = await call(client, "memcastle_search", query="heron-7", wing="mcp-flow", tags=["infra"])
            assert [h["id"] for h in found["hits"]] == [drawer["id"]]
            assert "origin" in found["hits"][0] and found["hits"][0]["signals"]

            checkpoint = await call(
                client,
                "memcastle_checkpoint",
                agent="tester",
                items=[
                    {
                        "content": "Decided: deploy heron-7 on Fridays only.",
                        "wing": "mcp-flow",
                        "fact": {"subject": "heron-7", "predicate": "part_of", "object": "staging"},
                    }
                ],
            )
            [kept] = checkpoint["drawers"]
            assert "checkpoint" in kept["tags"] and kept["room"] == "checkpoints"
            history = await call(client, "memcastle_history", drawer_id=kept["id"])
            assert [v["id"] for v in history["versions"]] == [kept["id"]]
            facts = await call(client, "memcastle_fact_list", subject="heron-7")
            [fact] = facts["facts"]
            assert fact["state"] == "current" and fact["fact"] == "heron-7 part_of staging"
            assert (await call(client, "memcastle_fact_history", fact_id=fact["id"]))["facts"][0]["id"] == fact["id"]

            await call(
                client,
                "memcastle_diary_write",
                agent="tester",
                content="Set up heron-7; next: backups.",
                wing="mcp-flow",
            )
            woken = await call(client, "memcastle_wake_up", agent="tester", wing="mcp-flow")
            assert "backups" in woken["diary"][0]["content"]
            assert kept["id"] in {d["id"] for d in woken["checkpoints"]}
            diary = await call(client, "memcastle_diary_read", agent="tester", wing="mcp-flow")
            assert len(diary["entries"]) == 1
            duplicates = await call(client, "memcastle_duplicates", drawer_id=drawer["id"])
            assert duplicates["duplicates"] == []

    run(scenario)


def test_service_errors_become_tool_errors_with_message_and_help(module_daemon: Any) -> None:
    async def scenario() -> None:
        async with in_process(module_daemon) as client:
            missing = await refused(client, "memcastle_history", drawer_id="no-such-drawer")
            assert missing.structured_content is not None and missing.structured_content["code"] == "not_found"
            bad = await refused(client, "memcastle_search", query="x", as_of="yesterday-ish")
            assert bad.structured_content is not None and bad.structured_content["field"] == "as_of"
            assert "as_of" in bad.content[0].text  # type: ignore[union-attr]
            # Pydantic validates at the edge: out-of-range and unknown values never reach the services.
            # …and their errors have the same shape as every other error, never the validator's own text.
            too_many = await refused(client, "memcastle_search", query="x", limit=0)
            assert too_many.structured_content is not None
            assert too_many.structured_content["code"] == "invalid_request"
            assert too_many.structured_content["field"] == "limit"
            assert too_many.structured_content["help"]
            text = too_many.content[0].text  # type: ignore[union-attr]
            assert text.startswith("limit: ") and "pydantic" not in text
            nested = await refused(client, "memcastle_checkpoint", items=[{"content": "ok"}, {"tags": ["x"]}])
            assert nested.structured_content is not None
            assert nested.structured_content["field"] == "items[1].content"
            missing_arg = await refused(client, "memcastle_note")
            assert missing_arg.structured_content is not None
            assert missing_arg.structured_content["field"] == "content"
            ranking = await refused(client, "memcastle_search", query="x", ranking="psychic")
            assert ranking.structured_content is not None and ranking.structured_content["field"] == "ranking"

    run(scenario)


def test_mine_checks_the_path_it_would_read_not_the_locators_syntax(module_daemon: Any) -> None:
    """`<home>/.ssh/x://..` is `~/.ssh`; an empty locator is the daemon's working folder: both used to be mined."""
    keys = Path(module_daemon.env["HOME"]) / ".ssh"
    keys.mkdir(exist_ok=True)

    async def scenario() -> None:
        async with in_process(module_daemon) as client:
            before = (await call(client, "memcastle_job_list", kind="mine"))["jobs"]
            scheme = await refused(client, "memcastle_mine", connector="directory", locator=f"{keys}/x://..")
            assert scheme.structured_content is not None and scheme.structured_content["code"] == "forbidden"
            empty = await refused(client, "memcastle_mine", connector="directory", locator="")
            assert empty.structured_content is not None and empty.structured_content["field"] == "locator"
            assert (await call(client, "memcastle_job_list", kind="mine"))["jobs"] == before

    run(scenario)


def test_a_retried_write_with_its_idempotency_key_is_answered_without_a_second_copy(module_daemon: Any) -> None:
    async def scenario() -> None:
        async with in_process(module_daemon) as client:
            items = [
                {
                    "content": "we retry writes with a key",
                    "fact": {"subject": "writes", "predicate": "uses", "object": "idempotency keys"},
                }
            ]
            first = await call(client, "memcastle_checkpoint", items=items, agent="mcp-test", idempotency_key="k-mcp-1")
            again = await call(client, "memcastle_checkpoint", items=items, agent="mcp-test", idempotency_key="k-mcp-1")
            assert first["replayed"] is False and again["replayed"] is True
            assert [d["id"] for d in again["drawers"]] == [d["id"] for d in first["drawers"]]
            other = await refused(
                client, "memcastle_checkpoint", items=[{"content": "else"}], agent="mcp-test", idempotency_key="k-mcp-1"
            )
            assert other.structured_content is not None and other.structured_content["code"] == "conflict"
            note = await call(client, "memcastle_note", content="keyed note", idempotency_key="k-mcp-2")
            note_again = await call(client, "memcastle_note", content="keyed note", idempotency_key="k-mcp-2")
            assert note_again["drawer"]["id"] == note["drawer"]["id"] and note_again["replayed"] is True

    run(scenario)


# --- memory modes per session ---------------------------------------------------------------------


def test_set_mode_gates_only_the_calling_session(module_daemon: Any) -> None:
    async def scenario() -> None:
        async with connect(module_daemon.address) as client, connect(module_daemon.address) as other:
            assert (await call(client, "memcastle_status"))["mode"] == "full"
            changed = await call(client, "memcastle_set_mode", mode="read_only")
            assert changed == {"mode": "read_only", "previous": "full", "scope": "session"}
            note = await refused(client, "memcastle_note", content="refused in read_only", wing="mcp-modes")
            assert note.structured_content is not None and note.structured_content["code"] == "forbidden"
            assert "ceiling" in note.structured_content["help"]
            assert "full" not in note.structured_content["help"], "no refusal suggests widening"
            await refused(client, "memcastle_checkpoint", items=[{"content": "refused too"}])
            await call(client, "memcastle_search", query="anything")  # reads still work

            await call(client, "memcastle_set_mode", mode="disabled")
            search = await refused(client, "memcastle_search", query="anything")
            assert "disabled" in search.content[0].text  # type: ignore[union-attr]
            await refused(client, "memcastle_job_list")
            status = await call(client, "memcastle_status")
            assert (status["mode"], status["mode_source"]) == ("disabled", "session")

            # Another session keeps its own mode.
            await call(other, "memcastle_note", content="written by the other session", wing="mcp-modes")
            assert (await call(other, "memcastle_status"))["mode"] == "full"

            # Narrowing is one way: the session cannot widen itself again.
            for wider in ("read_only", "full"):
                widened = await refused(client, "memcastle_set_mode", mode=wider)
                assert widened.structured_content is not None and widened.structured_content["code"] == "forbidden"
                assert "never widen" in widened.content[0].text  # type: ignore[union-attr]
            assert (await call(client, "memcastle_status"))["mode"] == "disabled"

    run(scenario)


def test_an_invalid_mode_is_a_tool_error_naming_mode(module_daemon: Any) -> None:
    async def scenario() -> None:
        async with connect(module_daemon.address) as client:
            result = await refused(client, "memcastle_set_mode", mode="sleepy")
            assert result.structured_content is not None
            assert result.structured_content["field"] == "mode"
            assert "full, read_only, disabled" in result.content[0].text  # type: ignore[union-attr]
            assert (await call(client, "memcastle_status"))["mode"] == "full"

    run(scenario)


def test_the_mode_header_applies_until_the_session_sets_one(module_daemon: Any) -> None:
    async def scenario() -> None:
        async with connect(module_daemon.address, headers={"X-MemCastle-Mode": "read_only"}) as client:
            status = await call(client, "memcastle_status")
            assert (status["mode"], status["mode_source"]) == ("read_only", "header")
            await refused(client, "memcastle_note", content="refused by the header")
            # The header is the ceiling (it is what `memcastle --mode read_only mcp` sends): no widening.
            widened = await refused(client, "memcastle_set_mode", mode="full")
            assert "never widen" in widened.content[0].text  # type: ignore[union-attr]
            await refused(client, "memcastle_note", content="still refused", wing="mcp-header")
            assert (await call(client, "memcastle_set_mode", mode="disabled"))["previous"] == "read_only"
            await refused(client, "memcastle_search", query="anything")

    run(scenario)


def test_an_unknown_mode_header_is_refused_until_the_session_sets_a_mode(module_daemon: Any) -> None:
    async def scenario() -> None:
        async with connect(module_daemon.address, headers={"X-MemCastle-Mode": "loud"}) as client:
            search = await refused(client, "memcastle_search", query="anything")
            assert search.structured_content is not None
            assert search.structured_content["field"] == "X-MemCastle-Mode"
            # Nothing can be assumed about a ceiling that cannot be read: only disabled may be chosen.
            await refused(client, "memcastle_set_mode", mode="read_only")
            assert (await call(client, "memcastle_set_mode", mode="disabled"))["previous"] == "disabled"

    run(scenario)


def test_a_sessionless_client_is_told_to_use_the_header(module_daemon: Any) -> None:
    async def scenario() -> None:
        async with connect(module_daemon.address, mode="auto") as client:  # 2026-07-28: no sessions
            listed = {tool.name for tool in (await client.list_tools()).tools}
            assert "memcastle_set_mode" not in listed and "memcastle_note" in listed, "offered only where it works"
            result = await refused(client, "memcastle_set_mode", mode="read_only")
            assert "X-MemCastle-Mode" in result.content[0].text  # type: ignore[union-attr]
        async with connect(module_daemon.address, mode="auto", headers={"X-MemCastle-Mode": "disabled"}) as client:
            search = await refused(client, "memcastle_search", query="anything")
            assert search.structured_content is not None
            assert "ceiling" in search.structured_content["help"]
            assert (await call(client, "memcastle_status"))["mode"] == "disabled"

    run(scenario)


def test_a_sessionless_client_with_a_token_sets_its_mode(tmp_path: Path) -> None:
    """The SDK's default negotiation (sessionless) with a bearer token: the choice is kept for the token."""
    from live_daemon import make_home
    from served import serve_palace

    from memcastle.runtime.tokens import TokenStore

    palace = tmp_path / "palace"
    secret = TokenStore(palace).create("agent-token")
    daemon = serve_palace(palace, make_home(tmp_path / "xdg"), extra_env={"MEMCASTLE_AUTH_ENABLED": "true"})
    bearer = {"Authorization": f"Bearer {secret}"}
    try:

        async def scenario() -> None:
            async with connect(daemon.address, mode="auto", headers=bearer) as client:
                listed = {tool.name for tool in (await client.list_tools()).tools}
                assert "memcastle_set_mode" in listed
                await call(client, "memcastle_note", content="written before the mode", wing="token-mode")
                changed = await call(client, "memcastle_set_mode", mode="read_only")
                assert changed == {"mode": "read_only", "previous": "full", "scope": "token"}
                note = await refused(client, "memcastle_note", content="refused now", wing="token-mode")
                assert note.structured_content is not None and note.structured_content["code"] == "forbidden"
                status = await call(client, "memcastle_status")
                assert (status["mode"], status["mode_source"]) == ("read_only", "token")
            async with connect(daemon.address, mode="auto", headers=bearer) as again:  # the next connection too
                await refused(again, "memcastle_note", content="still refused", wing="token-mode")

        run(scenario)
    finally:
        daemon.kill()


# --- DNS-rebinding defence ------------------------------------------------------------------------


def test_a_rebinding_host_is_refused_on_mcp(module_daemon: Any) -> None:
    with httpx.Client(base_url=module_daemon.address, trust_env=False, timeout=10) as http:
        evil = http.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Host": "evil.example"})
        assert evil.status_code == 403 and evil.json()["code"] == "forbidden_host"
        hostile_page = http.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "http://evil.example"})
        assert hostile_page.status_code == 403
        local = http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert local.status_code == 200 and local.headers["mcp-session-id"]
        assert http.get("/api/health").status_code == 200


def test_configured_hosts_are_allowed(tmp_path: Path) -> None:
    settings = load_settings(
        flags={
            "palace": str(tmp_path / "palace"),
            "embeddings.provider": "none",
            "jobs.drain_seconds": 3.0,
            "mcp.allowed_hosts": ["memory.lan:*"],
        },
        env={},
        config_file=None,
    )
    palace = build(settings)
    palace.start()
    try:
        with TestClient(
            http_app(palace), base_url=LOCAL
        ) as http:  # as a context manager: the lifespan runs the MCP sessions
            allowed = http.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Host": "memory.lan:8420"})
            assert allowed.status_code == 200, allowed.text
            other = http.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Host": "elsewhere.lan:8420"})
            assert other.status_code == 403 and other.json()["code"] == "forbidden_host"
    finally:
        palace.stop()


@pytest.mark.parametrize("mode", ["full", "read_only"])
def test_rest_modes_still_follow_the_shared_rule(client: TestClient, mode: str) -> None:
    answer = client.post("/api/notes", json={"content": f"rest in {mode}"}, headers={"X-MemCastle-Mode": mode})
    assert answer.status_code == (201 if mode == "full" else 403)
    if mode == "read_only":
        assert "ceiling" in answer.json()["help"]
    assert client.post("/api/notes", json={"content": "x"}, headers={"X-MemCastle-Mode": "loud"}).status_code == 400


def test_the_rest_answers_while_the_mcp_server_is_still_being_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP SDK loads off the start-up path: health answers at once, and an MCP request that comes before the
    server is ready waits for it instead of failing."""
    settings = load_settings(flags={"palace": str(tmp_path / "p"), "embeddings.provider": "none"}, env={})
    palace = build(settings)
    gate = threading.Event()
    real_build = mcp_server.build_mcp_server

    def slow_build(*args: Any, **kwargs: Any) -> Any:
        assert gate.wait(CEILING), "the test never let the build finish"
        return real_build(*args, **kwargs)

    monkeypatch.setattr(mcp_server, "build_mcp_server", slow_build)
    try:
        with TestClient(http_app(palace), base_url=LOCAL) as http:
            assert http.get("/api/health").status_code == 200, "health does not wait for the MCP server"
            answers: dict[str, httpx.Response] = {}
            early = threading.Thread(
                target=lambda: answers.update(mcp=http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS))
            )
            early.start()
            early.join(timeout=0.5)
            assert early.is_alive() and not answers, "the MCP request waits while the server is built"
            gate.set()
            early.join(timeout=CEILING)
            assert answers["mcp"].status_code == 200, answers["mcp"].text
            assert answers["mcp"].json()["result"]["serverInfo"]["name"]
    finally:
        gate.set()
        palace.stop()


def test_forget_is_a_destructive_tool_that_previews_broad_scopes(module_daemon: Any) -> None:
    async def scenario() -> None:
        async with connect(
            module_daemon.address, headers={PROFILE_HEADER: "full"}
        ) as client:  # set_mode: per HTTP session
            tools = {t.name: t for t in (await client.list_tools()).tools}
            hints = tools["memcastle_forget"].annotations
            assert hints is not None and hints.destructive_hint is True and not hints.read_only_hint
            saved = await call(client, "memcastle_note", content="the quartermaster's keys are in the cellar",
                               wing="mcp-forget")  # fmt: skip
            preview = await call(client, "memcastle_forget", scope="search", query="quartermaster keys")
            assert preview["dry_run"] is True and [d["id"] for d in preview["drawers"]] == [saved["drawer"]["id"]]
            bad = await refused(client, "memcastle_forget", scope="drawer")
            assert bad.structured_content is not None and bad.structured_content["field"] == "drawer_id"
            await call(client, "memcastle_set_mode", mode="read_only")
            denied = await refused(client, "memcastle_forget", scope="drawer", drawer_id=saved["drawer"]["id"])
            assert denied.structured_content is not None and denied.structured_content["code"] == "forbidden"

        async with in_process(module_daemon) as client:
            done = await call(client, "memcastle_forget", scope="drawer", drawer_id=saved["drawer"]["id"])
            assert done["dry_run"] is False and done["tombstone"]["requested_by"] == "mcp"
            missing = await refused(client, "memcastle_history", drawer_id=saved["drawer"]["id"])
            assert missing.structured_content is not None and missing.structured_content["code"] == "not_found"

    run(scenario)


def test_an_agent_and_a_person_pin_and_hide_drawers(module_daemon: Any) -> None:
    async def scenario() -> None:
        async with in_process(module_daemon) as client:
            secret = await call(client, "memcastle_note", content="the vault code is written on the mirror",
                                wing="mcp-marks")  # fmt: skip
            rule = await call(client, "memcastle_note", content="always sign the visitor book", wing="mcp-marks")
            marked = await call(client, "memcastle_drawer_mark", drawer_id=secret["drawer"]["id"][:8], hidden=True)
            assert marked["drawer"]["hidden"] is True
            found = await call(client, "memcastle_search", query="vault code mirror", wing="mcp-marks")
            assert found["hits"] == [], "no MCP search reaches a hidden drawer"
            read = await call(client, "memcastle_get_drawer", drawer_id=secret["drawer"]["id"])
            assert read["hidden"] is True, "read by its id, it says so"
            await call(client, "memcastle_drawer_mark", id=rule["drawer"]["id"], pinned=True)
            wake = await call(client, "memcastle_wake_up", agent="mcp-marker", wing="mcp-marks")
            assert [d["id"] for d in wake["pinned"]] == [rule["drawer"]["id"]]
            recall = await call(client, "memcastle_recall", query="vault code", wing="mcp-marks")
            assert recall["hits"] == [] and [d["id"] for d in recall["pinned"]] == [rule["drawer"]["id"]]
            bad = await refused(client, "memcastle_drawer_mark", drawer_id=rule["drawer"]["id"])
            assert bad.structured_content is not None and bad.structured_content["field"] == "pinned"

        # A person sees it again, from the command line.
        shown = module_daemon.cli("search", "vault code mirror", "--wing", "mcp-marks", "--include-hidden", "--json")
        assert shown.returncode == 0 and secret["drawer"]["id"] in shown.stdout, shown.stderr
        unhidden = module_daemon.cli("drawer", "unhide", secret["drawer"]["id"][:8])
        assert unhidden.returncode == 0 and "hidden" not in unhidden.stdout.split("\n")[0]
        plain = module_daemon.cli("search", "vault code mirror", "--wing", "mcp-marks", "--json")
        assert secret["drawer"]["id"] in plain.stdout
        pinned = module_daemon.cli("drawer", "show", rule["drawer"]["id"])
        assert "pinned" in pinned.stdout

    run(scenario)
