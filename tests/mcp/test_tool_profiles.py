"""Tool profiles (docs/mcp.md, "Tool profiles"): a session lists `core` by default, `full` or named tools when it
asks with the X-MemCastle-Tools header (the stdio bridge: `memcastle mcp --tools`), and never more than its token
allows; its instructions name only what it lists; a tool it does not list still answers by name."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from live_daemon import make_home
from mcp.shared.exceptions import MCPError
from served import Served, serve_palace
from test_mcp_http import call, connect, refused, run

from memcastle.mcp.profiles import CORE, HEADER
from memcastle.mcp.tools import TOOLS
from memcastle.mcp.tools.base import known_tools
from memcastle.runtime.tokens import TokenStore

TOOL_NAME = re.compile(r"\bmemcastle_[a-z_]+")


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, dict[str, str]]]:
    """A daemon that requires tokens: one for every tool, one limited to the core profile, one to two tools."""
    root = tmp_path_factory.mktemp("profiles")
    palace = root / "palace"
    store = TokenStore(palace)
    tokens = {
        "owner": store.create("owner"),
        "core": store.create("core-agent", tools=known_tools(["core"])),  # as `memcastle token create --tools core`
        "searcher": store.create("searcher", tools=["memcastle_search", "memcastle_get_drawer"]),
    }
    daemon = serve_palace(palace, make_home(root / "xdg"), extra_env={"MEMCASTLE_AUTH_ENABLED": "true"})
    yield daemon, tokens
    daemon.kill()


async def listing(address: str, headers: dict[str, str]) -> tuple[set[str], str, int]:
    """What a session with `headers` lists, the instructions it is given, and the list's size as sent."""
    async with connect(address, headers=headers) as client:
        listed = await client.list_tools()
        instructions = client.instructions or ""
    dumped = json.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))
    return {tool.name for tool in listed.tools}, instructions, len(dumped)


def bearer(token: str, **more: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **more}


def test_each_profile_lists_its_tools_and_says_how_to_list_the_rest(guarded: tuple[Served, dict[str, str]]) -> None:
    daemon, tokens = guarded

    async def scenario() -> None:
        core, told, size = await listing(daemon.address, bearer(tokens["owner"]))
        assert core == set(CORE) and size <= 8_000, size
        assert set(TOOL_NAME.findall(told)) <= core, "the instructions name only listed tools"
        assert f"{len(TOOLS) - len(CORE)} more tools" in told and f"{HEADER}: full" in told

        full, told, _ = await listing(daemon.address, bearer(tokens["owner"], **{HEADER: "full"}))
        assert full == set(TOOLS)
        assert "are listed with the header" not in told

        # A profile and tool names, with or without their prefix.
        asked = bearer(tokens["owner"], **{HEADER: "core, job_list,memcastle_mine"})
        mixed, told, _ = await listing(daemon.address, asked)
        assert mixed == set(CORE) | {"memcastle_job_list", "memcastle_mine"}

    run(scenario)


def test_an_unlisted_tool_still_answers_and_an_unknown_name_is_refused_by_name(
    guarded: tuple[Served, dict[str, str]], caplog: pytest.LogCaptureFixture
) -> None:
    daemon, tokens = guarded

    async def scenario() -> None:
        async with connect(daemon.address, headers=bearer(tokens["owner"])) as client:
            jobs = await call(client, "memcastle_job_list", limit=1)
            assert jobs == {"jobs": []}, "a profile never forbids"
        # A session asking for a tool there is not is refused at its start, naming it and what there is.
        try:
            async with connect(daemon.address, headers=bearer(tokens["owner"], **{HEADER: "core,memcastle_teleport"})):
                raise AssertionError("a session listing an unknown tool was opened")
        except (BaseExceptionGroup, MCPError) as exc:  # the SDK raises it from inside its task groups
            leaf: BaseException = exc
            while isinstance(leaf, BaseExceptionGroup):
                leaf = leaf.exceptions[0]
            assert isinstance(leaf, MCPError), leaf
            assert "no MCP tool or profile named 'memcastle_teleport'" in str(leaf) and "memcastle_search" in str(leaf)

    with caplog.at_level(logging.WARNING):
        run(scenario)
    # The client's mistake is a warning of one line in the daemon's log, not an error with a traceback.
    refusals = [r for r in caplog.records if "memcastle_teleport" in r.getMessage()]
    assert refusals and all(r.levelno == logging.WARNING and r.exc_info is None for r in refusals), refusals
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text[-2000:]


def test_a_token_tool_set_bounds_what_any_profile_lists(guarded: tuple[Served, dict[str, str]]) -> None:
    daemon, tokens = guarded

    async def scenario() -> None:
        core, told, _ = await listing(daemon.address, bearer(tokens["core"]))
        assert core == set(CORE), "a token given the core profile"
        widened, _, _ = await listing(daemon.address, bearer(tokens["core"], **{HEADER: "full"}))
        assert widened == set(CORE), "the header chooses what is listed, never more than the token allows"

        searcher, told, _ = await listing(daemon.address, bearer(tokens["searcher"]))
        assert searcher == {"memcastle_search", "memcastle_get_drawer"}
        assert set(TOOL_NAME.findall(told)) <= searcher
        asked, _, _ = await listing(daemon.address, bearer(tokens["searcher"], **{HEADER: "full"}))
        assert asked == searcher
        async with connect(daemon.address, headers=bearer(tokens["searcher"])) as client:
            denied = await refused(client, "memcastle_job_list")
            assert denied.structured_content is not None and denied.structured_content["code"] == "forbidden"

    run(scenario)


def test_the_daemon_default_is_a_setting(tmp_path: Path) -> None:
    daemon = serve_palace(tmp_path / "palace", make_home(tmp_path / "xdg"), extra_env={"MEMCASTLE_MCP_TOOLS": "full"})
    try:

        async def scenario() -> None:
            listed, told, _ = await listing(daemon.address, {})
            assert listed == set(TOOLS) and "are listed with the header" not in told

        run(scenario)
    finally:
        daemon.kill()
