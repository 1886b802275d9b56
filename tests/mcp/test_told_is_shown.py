"""What MemCastle tells an agent to use is what the agent's session lists: the skill, the server's instructions, the
wake-up text and the descriptions of the listed tools name only tools of the `core` profile — the profile the
integrations ask for — and that list stays within what a small context affords."""

from __future__ import annotations

import json
import re

import anyio
from mcp import Client

from memcastle.app import Palace
from memcastle.hooks.dispatch import REMINDER, WAKE_UP_HEAD
from memcastle.integrations import render
from memcastle.mcp.instructions import INSTRUCTIONS
from memcastle.mcp.profiles import CORE
from memcastle.mcp.server import build_mcp_server
from memcastle.mcp.tools import TOOLS
from memcastle.services import Services

NAMED = re.compile(r"\bmemcastle_[a-z][a-z_]*\b")


def listed(services: Services) -> tuple[dict[str, str], int]:
    """The default session's tools with their descriptions, and the size of the list as sent."""
    server = build_mcp_server(services, allowed_hosts=[])

    async def scenario() -> tuple[dict[str, str], int]:
        async with Client(server) as client:
            tools = await client.list_tools()
        dumped = json.dumps(tools.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))
        return {tool.name: json.dumps(tool.model_dump(mode="json")) for tool in tools.tools}, len(dumped)

    return anyio.run(scenario)


def test_every_text_an_agent_reads_names_only_tools_its_session_lists(palace: Palace) -> None:
    shown, size = listed(palace.services)
    assert set(shown) == set(CORE) and size <= 8_000, size
    texts = {
        "the skill": render("claude", "skill"),
        "the checkpoint command": render("claude", "command"),
        "the instructions": INSTRUCTIONS,
        "the wake-up text": WAKE_UP_HEAD,
        "the per-turn reminder": REMINDER,
        **{f"{name}'s listing": listing for name, listing in shown.items()},
    }
    for where, text in texts.items():
        named = set(NAMED.findall(text)) - {"memcastle_token"}
        assert named <= set(shown), f"{where} names {sorted(named - set(shown))}, which the session does not list"
    assert "memcastle_history" in texts["the skill"], "the check reads the skill's tool names"


def test_the_check_catches_a_tool_the_session_does_not_list() -> None:
    unlisted = sorted(set(TOOLS) - set(CORE))[0]
    assert set(NAMED.findall(f"use {unlisted} next")) - set(CORE) == {unlisted}
