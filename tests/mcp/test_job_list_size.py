"""`memcastle_job_list` for 20 jobs fits an agent's glance (≤ 3,000 characters as sent): 8-character ids, one
instant each, the folder the listed sources share said once; `memcastle_job_get` takes the short id."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from test_agent_flow import call as call_sized
from test_mcp_http import call, in_process, run

CEILING = 60.0


def test_twenty_jobs_fit_three_thousand_characters(module_daemon: Any, tmp_path: Path) -> None:
    root = tmp_path / "a-rather-long-workspace-folder" / "projects-of-the-team" / "services"
    folders = []
    for i in range(10):
        folder = root / f"service-{i:02d}-with-a-descriptive-name"
        folder.mkdir(parents=True)
        (folder / "README.md").write_text(f"Service {i} answers on port {8000 + i}.\n", encoding="utf-8")
        folders.append(folder)

    async def scenario() -> None:
        async with in_process(module_daemon) as client:
            for folder in folders:  # one after the other: each mine and the extraction it asks for, twenty jobs
                await call(client, "memcastle_mine", connector="directory", locator=str(folder), wing="jobs-size")
                deadline = time.monotonic() + CEILING
                while (await call(client, "memcastle_job_list", status="queued"))["jobs"] or (
                    await call(client, "memcastle_job_list", status="running")
                )["jobs"]:
                    assert time.monotonic() < deadline, "the mines did not finish"
                    time.sleep(0.02)
            listed, size = await call_sized(client, "memcastle_job_list", limit=20)
            assert len(listed["jobs"]) == 20, listed  # ten mines and the jobs they queued after them
            assert size <= 3_000, size
            assert str(root) not in str(listed["jobs"]), "the shared folder is said once, as `under`"
            assert listed["under"].startswith(str(tmp_path))
            first = listed["jobs"][0]
            assert len(first["id"]) == 8 and first["at"].endswith("Z") and "created_at" not in first
            whole = await call(client, "memcastle_job_get", job_id=first["id"])
            assert whole["id"].startswith(first["id"])

    run(scenario)
