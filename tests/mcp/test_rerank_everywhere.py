"""The second stage is asked for and explained the same way on every interface: REST, MCP (compact and full), the
CLI and the web page; an unknown value is refused naming `rerank`."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
from test_mcp_http import call, in_process

from memcastle.cli.render import explain_signals

NOTES = [
    "The lighthouse keeper logs the tide tables every morning at six.",
    "Tide tables: the keeper reads them, and the lighthouse log keeps the morning entries.",
    "A morning at the harbour: gulls, tides and a keeper with a log book near the lighthouse.",
]
QUERY = "lighthouse keeper tide tables morning log"


def test_rerank_is_asked_and_explained_on_every_interface(module_daemon: Any) -> None:
    wing = "rerank-everywhere"
    with httpx.Client(base_url=module_daemon.address, trust_env=False, timeout=30) as http:
        for text in NOTES:
            assert http.post("/api/notes", json={"content": text, "wing": wing}).status_code == 201
        body = {"query": QUERY, "wing": wing, "ranking": "lexical"}
        off = http.post("/api/search", json={**body, "rerank": "off"}).json()["hits"]
        on = http.post("/api/search", json={**body, "rerank": "on"}).json()["hits"]
        assert all("rerank" not in h["signals"] and "fused" not in h["signals"] for h in off)
        assert all({"rerank", "fused", "lexical"} <= set(h["signals"]) for h in on), "the original signals stay"
        assert on[0]["signals"]["rerank"]["coverage"] == 1.0
        compact = http.post("/api/search", json={**body, "rerank": "on", "full": False}).json()["hits"]
        assert compact[0]["signals"]["rerank"].startswith("+")
        refused = http.post("/api/search", json={**body, "rerank": "sometimes"})
        assert refused.status_code == 400 and "rerank" in refused.text

        page = http.get("/", params={"q": QUERY, "wing": wing, "ranking": "lexical", "rerank": "on"})
        assert page.status_code == 200 and "re-rank +" in page.text and "fused" in page.text
        plain = http.get("/", params={"q": QUERY, "wing": wing, "ranking": "lexical", "rerank": "off"})
        assert "re-rank +" not in plain.text
        default = http.post("/api/search", json=body).json()["hits"]
        assert default[0]["signals"]["rerank"]["skipped"].startswith("auto: short drawers"), default[0]["signals"]
        page = http.get("/", params={"q": QUERY, "wing": wing, "ranking": "lexical"})
        assert "re-rank off (auto: short drawers" in page.text

    shown = module_daemon.cli("search", QUERY, "--wing", wing, "--ranking", "lexical", "--rerank", "on")
    assert shown.returncode == 0, shown.stderr
    [first, *_] = json.loads(shown.stdout)["hits"]  # piped: JSON; on a terminal, the line below
    assert "re-rank +" in explain_signals(first) and "fused" in explain_signals(first)
    auto = json.loads(module_daemon.cli("search", QUERY, "--wing", wing, "--ranking", "lexical").stdout)["hits"]
    assert "re-rank off (auto: short drawers" in explain_signals(auto[0])
    bad = module_daemon.cli("search", QUERY, "--rerank", "sometimes")
    assert bad.returncode != 0 and "rerank" in bad.stderr

    async def scenario() -> None:
        async with in_process(module_daemon) as client:
            hits = (await call(client, "memcastle_search", query=QUERY, wing=wing, ranking="lexical", rerank="on"))[
                "hits"
            ]
            assert hits[0]["signals"]["rerank"].startswith("+")
            full = await call(client, "memcastle_search", query=QUERY, wing=wing, ranking="lexical", rerank="on",
                              full=True)  # fmt: skip
            assert full["hits"][0]["signals"]["rerank"].startswith("+")
            plain = await call(client, "memcastle_search", query=QUERY, wing=wing, ranking="lexical")
            # The palace's default, auto: short notes are left in the fusion's order, and each hit says why.
            assert plain["hits"][0]["signals"]["rerank"].startswith("off (auto: short drawers"), plain["hits"][0]

    anyio.run(scenario)
