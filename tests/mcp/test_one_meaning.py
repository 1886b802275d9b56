"""One failure, one meaning on every interface: the same failing operation through REST, MCP, the web page and the
CLI answers the status (or exit code) and the code its error class carries (`memcastle.errors`)."""

from __future__ import annotations

import re
import time
from typing import Any

from test_agent_flow import refused, run
from test_mcp_http import in_process

from memcastle.errors import IllegalTransition, MemCastleError, NotFound, from_answer


def test_pausing_a_finished_job_and_reading_a_missing_drawer_mean_the_same_everywhere(module_daemon: Any) -> None:
    with module_daemon.http() as http:
        job = http.post("/api/extract", json={}).json()["job"]
        deadline = time.monotonic() + 60
        while http.get(f"/api/jobs/{job['id']}").json()["status"] != "completed":
            assert time.monotonic() < deadline, "the extract sweep did not finish"
            time.sleep(0.05)
        job_id, drawer_id = job["id"], "no-such-drawer"
        pause = {"job_id": job_id, "action": "pause"}
        cases = [
            (IllegalTransition, ("POST", f"/api/jobs/{job_id}/pause"), ("memcastle_job_control", pause),
             ("POST", f"/jobs/{job_id}/pause"), ("job", "pause", job_id)),
            (NotFound, ("GET", f"/api/drawers/{drawer_id}"), ("memcastle_get_drawer", {"drawer_id": drawer_id}),
             ("GET", f"/drawer/{drawer_id}"), ("drawer", "show", drawer_id)),
        ]  # fmt: skip
        page = http.get("/")
        token = re.search(r'X-CSRF-Token": "([^"]+)"', page.text)
        assert token is not None
        for kind, (method, path), (tool, arguments), (web_method, web_path), command in cases:
            rest = http.request(method, path, json={} if method == "POST" else None)
            assert rest.status_code == kind.status and rest.json()["code"] == kind.code, rest.text

            web = http.request(web_method, web_path, data={"csrf": token.group(1)} if web_method == "POST" else None)
            assert web.status_code == kind.status, (web_path, web.status_code)
            assert rest.json()["error"] in web.text.replace("&#39;", "'")

            cli = module_daemon.cli(*command)
            assert cli.returncode == kind.exit_code and rest.json()["error"] in cli.stderr, cli.stderr

            async def scenario(tool: str = tool, arguments: dict[str, Any] = arguments, code: str = kind.code) -> None:
                async with in_process(module_daemon) as client:
                    error = await refused(client, tool, **arguments)
                    assert error["code"] == code, error

            run(scenario)

            # The CLI raises what the daemon raised: the class, by its code.
            raised = from_answer(rest.status_code, rest.json())
            assert isinstance(raised, kind) and isinstance(raised, MemCastleError)
