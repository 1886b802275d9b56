"""What a monitor scrapes (`GET /metrics`) and what ties an answer to its log lines (the request id): read through
the official parser, after searches on every interface, a mine and errors, from a served palace."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from live_daemon import make_home
from prometheus_client.parser import text_string_to_metric_families
from served import Served, serve_palace
from test_mcp_http import call, connect, run
from waiting import wait_until

from memcastle.runtime.logs import configure

WORDS = "the lighthouse keeper writes down every ship that passes the northern cape"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    roots = tmp_path / "roots"
    (roots / "notes").mkdir(parents=True)
    (roots / "notes" / "cape.md").write_text(f"# Cape\n\n{WORDS}.\n", encoding="utf-8")
    daemon = serve_palace(
        tmp_path / "palace", make_home(tmp_path / "xdg"), extra_env={"MEMCASTLE_MINING_ROOTS": json.dumps([str(roots)])}
    )
    yield daemon
    daemon.kill()


def samples(text: str) -> dict[str, list[Any]]:
    """Every sample of the exposition by its name (`…_count`, `…_total` included), parsed as a monitor does."""
    found: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append(sample)
    return found


def value(found: dict[str, list[Any]], name: str, **labels: str) -> float:
    matching = [s.value for s in found.get(name, []) if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(matching) == 1, (name, labels, found.get(name))
    return float(matching[0])


def test_a_monitor_reads_searches_by_interface_errors_jobs_and_the_palace(served: Served, tmp_path: Path) -> None:
    with served.http() as http:
        mined = http.post("/api/mine", json={"connector": "notes", "locator": str(tmp_path / "roots" / "notes")})
        job = mined.json()["job"]["id"]
        wait_until(lambda: http.get(f"/api/jobs/{job}").json()["status"] == "completed", what="the mine")
        assert http.post("/api/search", json={"query": "lighthouse", "ranking": "lexical"}).status_code == 200
        assert http.get("/", params={"query": "lighthouse", "ranking": "lexical"}).status_code == 200
        assert served.cli("search", "lighthouse", "--ranking", "lexical").returncode == 0

        async def agent() -> None:
            async with connect(served.address) as client:
                await call(client, "memcastle_search", query="lighthouse", ranking="lexical")
                refused = await client.call_tool("memcastle_get_drawer", {"drawer_id": "no-such-drawer"})
                assert refused.is_error

        run(agent)
        assert http.post("/api/search", json={"query": " "}).status_code == 400
        assert http.post("/api/search", json={"query": "x", "ranking": "psychic"}).status_code == 400
        scraped = http.get("/metrics")
    assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
    found = samples(scraped.text)
    assert not [name for name in found if name.endswith("_created")], "no creation-time series beside the counters"
    for interface in ("http", "web", "cli", "mcp"):
        count = value(found, "memcastle_search_seconds_count", ranking="lexical", interface=interface)
        assert count == 1, interface
    assert value(found, "memcastle_search_seconds_bucket", ranking="lexical", interface="mcp", le="+Inf") == 1
    assert value(found, "memcastle_errors_total", code="invalid_request", interface="http") == 2
    assert value(found, "memcastle_errors_total", code="not_found", interface="mcp") == 1
    assert value(found, "memcastle_jobs_finished_total", kind="mine", status="completed") == 1
    assert value(found, "memcastle_drawers") == 1 and value(found, "memcastle_drawer_versions") == 1
    assert value(found, "memcastle_jobs", status="completed") >= 1
    assert value(found, "memcastle_queue_depth") >= 0 and value(found, "memcastle_facts") >= 0
    assert value(found, "memcastle_embedding_backlog_drawers") == 0, "embeddings are off in this palace"
    for name in ("memcastle_embedding_backlog_passages", "memcastle_extraction_backlog_drawers",
                 "memcastle_mcp_sessions", "memcastle_audit_records"):  # fmt: skip
        assert value(found, name) >= 0, name


def test_a_requests_id_is_in_its_error_answer_its_header_and_every_log_line_it_wrote(served: Served) -> None:
    log = io.StringIO()
    root = logging.getLogger()
    kept = (list(root.handlers), root.level)
    configure("info", "json", stream=log)  # the daemon's own log configuration, read back below
    try:
        with served.http() as http:
            refused = http.post("/api/search", json={"query": " "}, headers={"X-Request-Id": "trace-42.a"})
            missing = http.get("/api/drawers/no-such-drawer", headers={"X-Request-Id": "not a valid id"})
            fine = http.get("/api/health")
            page = http.get("/no/such/page", headers={"Accept": "text/html", "X-Request-Id": "page-err-1"})

            async def agent() -> dict[str, Any]:
                async with connect(served.address, headers={"X-Request-Id": "agent-call-7"}) as client:
                    answer = await client.call_tool("memcastle_get_drawer", {"drawer_id": "no-such-drawer"})
                    return dict(answer.structured_content or {})

            told: dict[str, Any] = {}

            async def scenario() -> None:
                told.update(await agent())

            run(scenario)
    finally:
        root.handlers[:], _ = kept[0], root.setLevel(kept[1])
    assert refused.status_code == 400 and refused.headers["x-request-id"] == "trace-42.a"
    assert refused.json()["request_id"] == "trace-42.a" and refused.json()["field"] == "query"
    made = missing.headers["x-request-id"]
    assert made != "not a valid id" and len(made) == 32, "a malformed id is replaced by one of ours"
    assert missing.status_code == 404 and missing.json()["request_id"] == made
    assert fine.headers["x-request-id"] and "request_id" not in fine.json()
    assert page.status_code == 404 and "<code>page-err-1</code>" in page.text, "the web's error page shows it too"
    assert told["request_id"] == "agent-call-7" and told["code"] == "not_found"
    lines = [json.loads(line) for line in log.getvalue().splitlines()]
    for request_id, path in (("trace-42.a", "/api/search"), (made, "/api/drawers/no-such-drawer")):
        written = [line for line in lines if path in line["message"]]
        assert written, (path, lines)
        assert all(line.get("request_id") == request_id for line in written), written
