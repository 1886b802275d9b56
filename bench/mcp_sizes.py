"""What an agent pays to use MemCastle over MCP: the characters of each answer, measured as an agent receives them.

On a palace of real data — this machine's standard library (a palace kept by `bench.code_questions --keep`) plus a
real repository's history mined into it by an agent's `memcastle_mine` — a real daemon is asked through the official
`mcp` SDK client over streamable HTTP: the tool list, searches with the questions of `bench.code_questions` and
`bench.history_questions` (default 5 hits, and 10), a one-drawer read, the job list, the facts of 5 conflicts and a
wake-up. Each figure is the text an agent reads (the one text block of compact JSON); beside it, the same request
through REST's complete shape. The ranking is checked to be the one REST gives (same ids, same order) for every
question: the compact answer is a view, not another search.

    python -m bench.mcp_sizes --palace /tmp/cq_base --repo /tmp/sqlite-utils [--write]

Targets (the agent's-interface issue): a default search ≤ 8,000 characters, 10 hits ≤ 12,000, `job_list` ≤ 3,000,
`fact_list` of 5 conflicts ≤ 3,000, the whole `tools/list` ≤ 14,000.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from bench.code_questions import QUESTIONS as CODE_QUESTIONS
from bench.common import command_line, machine, median, write_section
from bench.history_questions import QUESTIONS as HISTORY_QUESTIONS
from bench.search import copy_palace_files, start_daemon

TARGETS = {"search": 8_000, "search10": 12_000, "job_list": 3_000, "fact_list": 3_000, "tools": 14_000}
COMPACT = {"ensure_ascii": False, "separators": (",", ":")}


def size(data: Any) -> int:
    return len(json.dumps(data, **COMPACT))  # type: ignore[arg-type]


async def text_of(client: Client, tool: str, **arguments: Any) -> tuple[dict[str, Any], int]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}: {result.content}"
    [block] = result.content
    assert isinstance(block, TextContent)
    return json.loads(block.text), len(block.text)


def wait_idle(http: httpx.Client, timeout: float = 3600) -> None:
    """Until no job is queued or running and no drawer waits for its vectors."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = http.get("/api/status").json()
        busy = sum(status["jobs"].get(s, 0) for s in ("queued", "running"))
        if not busy and not status["embeddings"]["pending"]:
            return
        time.sleep(1)
    raise TimeoutError("the palace did not settle")


def conflicts(http: httpx.Client, count: int = 5) -> None:
    """`count` conflicts: two explicit facts each that cannot both hold (a single-valued predicate)."""
    for n in range(count):
        first = http.post(
            "/api/facts", json={"subject": f"service-{n}", "predicate": "located_in", "object": "eu-west"}
        )
        second = http.post(
            "/api/facts", json={"subject": f"service-{n}", "predicate": "located_in", "object": "us-east"}
        )
        first.raise_for_status()
        second.raise_for_status()
        facts = http.get("/api/facts", params={"subject": f"service-{n}", "state": "conflicting"}).json()["facts"]
        if len(facts) < 2:
            link = {"to": second.json()["id"], "kind": "contradicts", "reason": "one region"}
            http.post(f"/api/facts/{first.json()['id']}/link", json=link).raise_for_status()


async def measure(address: str, http: httpx.Client, repo: Path) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    async with httpx2.AsyncClient(trust_env=False, timeout=600.0) as transport:
        async with Client(streamable_http_client(address + "/mcp", http_client=transport)) as client:
            mined, _ = await text_of(client, "memcastle_mine", connector="git", locator=str(repo), wing="history")
            while (await text_of(client, "memcastle_job_get", job_id=mined["job"]["id"]))[0]["status"] != "completed":
                await anyio.sleep(0.5)
            await anyio.to_thread.run_sync(wait_idle, http)
            await anyio.to_thread.run_sync(conflicts, http)

            listed = await client.list_tools()
            figures["tools"] = size(listed.model_dump(mode="json", by_alias=True, exclude_none=True))
            figures["tool_count"] = len(listed.tools)

            questions = [q for q, _ in CODE_QUESTIONS] + [q for q, _ in HISTORY_QUESTIONS]
            searches, tens, reads, same, rest_tens = [], [], [], 0, []
            for question in questions:
                five, chars = await text_of(client, "memcastle_search", query=question)
                searches.append(chars)
                ten, chars10 = await text_of(client, "memcastle_search", query=question, limit=10)
                tens.append(chars10)
                rest = http.post("/api/search", json={"query": question, "limit": 10})
                rest_tens.append(len(rest.content))
                same += [h["id"] for h in ten["hits"]] == [h["drawer"]["id"] for h in rest.json()["hits"]]
                if five["hits"]:
                    _, read = await text_of(client, "memcastle_get_drawer", drawer_id=five["hits"][0]["id"][:8])
                    reads.append(read)
            figures.update(
                questions=len(questions),
                search=searches,
                search10=tens,
                rest10=rest_tens,
                same_ranking=same,
                get_drawer=reads,
            )
            _, figures["job_list"] = await text_of(client, "memcastle_job_list")
            figures["rest_jobs"] = len(http.get("/api/jobs").content)
            facts, figures["fact_list"] = await text_of(client, "memcastle_fact_list", state="conflicting")
            figures["conflicting"] = len(facts["facts"])
            figures["rest_facts"] = len(http.get("/api/facts", params={"state": "conflicting"}).content)
            await text_of(client, "memcastle_diary_write", agent="bench", content="Measured the answers; next: trim.")
            items = [{"content": f"Decision {n}: keep answers compact because contexts are small."} for n in range(3)]
            await text_of(client, "memcastle_checkpoint", agent="bench", items=items)
            _, figures["wake_up"] = await text_of(client, "memcastle_wake_up", agent="bench")
    return figures


def report(figures: dict[str, Any], palace: Path, repo: Path) -> str:
    def verdict(key: str, value: float) -> str:
        return "yes" if value <= TARGETS[key] else "**no**"

    rows = [
        ("`tools/list` (whole)", figures["tools"], figures["tools"], "tools", f"{figures['tool_count']} tools"),
        ("`memcastle_search`, default (5 hits)", median(figures["search"]), max(figures["search"]), "search", ""),
        (
            "`memcastle_search`, `limit: 10`",
            median(figures["search10"]),
            max(figures["search10"]),
            "search10",
            f"REST's complete shape: median {median(figures['rest10']):,.0f}, max {max(figures['rest10']):,}",
        ),
        ("`memcastle_get_drawer` (the first hit)", median(figures["get_drawer"]), max(figures["get_drawer"]), None, ""),
        (
            "`memcastle_job_list`",
            figures["job_list"],
            figures["job_list"],
            "job_list",
            f"REST `GET /api/jobs`: {figures['rest_jobs']:,}",
        ),  # fmt: skip
        (
            f"`memcastle_fact_list`, 5 conflicts ({figures['conflicting']} facts)",
            figures["fact_list"],
            figures["fact_list"],
            "fact_list",
            f"REST: {figures['rest_facts']:,}",
        ),
        ("`memcastle_wake_up` (a diary entry, 3 checkpoints)", figures["wake_up"], figures["wake_up"], None, ""),
    ]
    lines = [
        "## What an agent receives over MCP",
        "",
        f"Command: `{command_line()}`  ",
        f"Palace: this machine's standard library as `bench.code_questions` kept it (`{palace}`), and the git history "
        f"of `{repo}` mined into it through `memcastle_mine`; a real daemon, the official `mcp` SDK client over "
        f"streamable HTTP. Searches: the {figures['questions']} questions of `bench.code_questions` and "
        "`bench.history_questions`. Characters of the text an agent reads (one block of compact JSON).",
        "",
        "| answer | median chars | max chars | target | met | beside it |",
        "|---|---|---|---|---|---|",
    ]
    for label, med, top, key, beside in rows:
        target = f"≤ {TARGETS[key]:,}" if key else "—"
        met = verdict(key, top) if key else "—"
        lines.append(f"| {label} | {med:,.0f} | {top:,} | {target} | {met} | {beside} |")
    lines += [
        "",
        f"Ranking: the 10 hits of `memcastle_search` are REST's 10 hits, in the same order, for "
        f"{figures['same_ranking']} of {figures['questions']} questions (the compact answer is a view of the same "
        "search, so the judged set's recall is the search's own).",
        "",
        f"_Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}._",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--palace", type=Path, required=True, help="a palace kept by bench.code_questions --keep")
    parser.add_argument("--repo", type=Path, required=True, help="a git repository under the temp folder")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memcastle-mcp-sizes-") as work:
        palace = Path(work) / "palace"
        copy_palace_files(args.palace, palace)
        proc, address = start_daemon(palace, Path(work) / "home")
        try:
            with httpx.Client(base_url=address, timeout=600, trust_env=False) as http:
                figures = anyio.run(measure, address, http, args.repo.resolve())
        finally:
            proc.terminate()
            proc.wait(timeout=600)
    text = report(figures, args.palace, args.repo)
    print(text)
    if args.write:
        write_section("mcp-sizes", text)


if __name__ == "__main__":
    main()
