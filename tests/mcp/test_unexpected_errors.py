"""A bug inside a tool is still answered in the documented shape (`{error, code, help}`, docs/mcp.md), with the
traceback in the daemon's log — never the SDK's bare "Error executing tool"."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import TextContent

from memcastle.app import Palace
from memcastle.mcp.server import build_mcp_server


def test_an_exception_inside_a_tool_answers_the_error_shape(
    palace: Palace, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_: Any, **__: Any) -> Any:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(palace.services.search, "search", broken)
    server = build_mcp_server(palace.services, allowed_hosts=[])
    answers: dict[str, Any] = {}

    async def scenario() -> None:
        async with Client(server) as client:
            result = await client.call_tool("memcastle_search", {"query": "anything"})
            answers["search"] = result
            answers["status"] = await client.call_tool("memcastle_status", {})

    with caplog.at_level(logging.ERROR, logger="memcastle.mcp.server"):
        anyio.run(scenario)
    result = answers["search"]
    assert result.is_error
    assert result.structured_content == {
        "error": "internal error: ZeroDivisionError",
        "code": "internal",
        "help": "this is a bug; the daemon log has the details",
    }
    [block] = result.content
    assert isinstance(block, TextContent) and block.text.startswith("internal error: ZeroDivisionError")
    assert "Error executing tool" not in block.text
    assert any("memcastle_search" in r.getMessage() and r.exc_info for r in caplog.records), "the log has it"
    assert not answers["status"].is_error, "the server goes on answering"
    assert json.loads(answers["status"].content[0].text)["mode"] == "full"
