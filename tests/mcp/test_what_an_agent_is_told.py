"""What an agent is told when it gets something slightly wrong: the argument by its name, an id by 8 characters in
any case (and why fewer do not do), the best hit cut to a small budget instead of nothing, the nearest tools to a
misspelt one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from waiting import wait_until

from memcastle.app import Palace
from memcastle.errors import Conflict, InvalidRequest, MemCastleError
from memcastle.mcp.server import build_mcp_server, tool_error
from memcastle.model.requests import MineRequest
from memcastle.services import ForgetRequest


def calls(palace: Palace, *requests: tuple[str, dict[str, Any]]) -> list[Any]:
    server = build_mcp_server(palace.services, allowed_hosts=[])
    answers: list[Any] = []

    async def scenario() -> None:
        async with Client(server) as client:
            for tool, arguments in requests:
                answers.append(await client.call_tool(tool, arguments))

    anyio.run(scenario)
    return answers


def test_an_agent_is_told_what_it_got_wrong_by_name(palace: Palace) -> None:
    note = palace.services.drawers.save_note("The staging port is 8443 since the TLS move.", wing="w", name="staging")
    missing, wrong_type, upper, short, tight, misspelt = calls(
        palace,
        ("memcastle_search", {}),
        ("memcastle_search", {"query": 5}),
        ("memcastle_get_drawer", {"drawer_id": note.drawer.id[:8].upper()}),
        ("memcastle_get_drawer", {"drawer_id": note.drawer.id[:5]}),
        ("memcastle_search", {"query": "staging port", "max_chars": 200}),
        ("memcastle_serch", {"query": "staging"}),
    )
    assert missing.structured_content["field"] == "query" and "query: required" in missing.content[0].text
    assert wrong_type.structured_content["field"] == "query"
    read = json.loads(upper.content[0].text)
    assert not upper.is_error and read["id"] == note.drawer.id and read["name"] == "staging"
    assert short.is_error and short.structured_content["field"] == "drawer_id"
    assert "at least its first 8 characters" in short.structured_content["error"]
    answer = tight.content[0].text
    assert len(answer) <= 200 and json.loads(answer)["hits"][0]["cut"] is True
    assert json.loads(answer)["hits"][0]["id"] == note.drawer.id[:8]
    assert misspelt.is_error and "memcastle_search" in misspelt.structured_content["help"]
    for refused in (missing, wrong_type, short, misspelt):  # every tool error says what to do about it
        assert "\nhint: " in refused.content[0].text and refused.structured_content["help"], refused


def test_an_error_raised_without_a_hint_gets_its_codes() -> None:
    for error in (InvalidRequest("x must be y", field="x"), Conflict("taken"), MemCastleError("odd")):
        shown = tool_error(error)
        assert shown.structured_content is not None and shown.structured_content["help"], error
        assert shown.content[0].text.startswith(error.message + "\nhint: ")  # type: ignore[union-attr]


def test_a_source_is_named_by_eight_characters(palace: Palace, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nAlpha.\n", encoding="utf-8")
    job = palace.services.mining.submit_mine(MineRequest("notes", str(folder), {}, wing="w")).job
    wait_until(lambda: palace.services.jobs.get_job(job.id).is_finished, what="the mine")
    [source] = palace.services.places.list_sources()
    report = palace.services.forgetting.forget(
        ForgetRequest(kind="source", source_id=source["id"][:8].upper()), dry_run=True
    )
    assert report.to_json()["counts"]["drawers"] == 1


def test_a_transcript_hit_names_the_lines_to_read(palace: Palace, tmp_path: Path) -> None:
    """A transcript has no document lines; its hits used to carry none, so an agent could only read it whole."""
    projects = tmp_path / "projects"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "claude" / "projects", projects)
    job = palace.services.mining.submit_mine(MineRequest("claude", str(projects), {}, wing="shop")).job
    wait_until(lambda: palace.services.jobs.get_job(job.id).is_finished, what="the mine")
    (found,) = calls(palace, ("memcastle_search", {"query": "rounding", "ranking": "lexical", "limit": 1}))
    (hit,) = json.loads(found.content[0].text)["hits"]
    first, last = hit["snippet"]["lines"]
    assert hit["origin"]["connector"] == "claude" and 1 <= first <= last, hit
    (read,) = calls(palace, ("memcastle_get_drawer", {"drawer_id": hit["id"], "lines": [first, last]}))
    part = json.loads(read.content[0].text)
    assert part["lines"] == [first, last] and hit["snippet"]["text"].splitlines()[0] in part["content"]
