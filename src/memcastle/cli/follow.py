"""Following a job through the daemon's event stream (`GET /api/events`) instead of asking again and again.

The stream is opened first and the job read after, so no change falls between the two; each `job` event of the job
updates it, and while it is queued, any other job's event is a reason to ask again why it waits (at most once a
second). A dropped stream is reopened after the last event seen. httpx and httpx-sse are imported here only: a
command that follows nothing does not pay for them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from memcastle.cli.client import DaemonClient

FINISHED = frozenset({"completed", "failed", "cancelled", "paused"})
WHY_EVERY = 1.0  # seconds between two questions of why a queued job waits
READ_TIMEOUT = 45.0  # the daemon sends a comment every 15 s: a silent minute means the connection is gone

Job = dict[str, Any]


def follow_job(client: DaemonClient, job: Job, on_update: Callable[[Job], None]) -> Job:
    """Follow `job` until it finishes (or pauses); `on_update` sees every state it passes through, with `waiting`."""
    import httpx
    from httpx_sse import connect_sse

    headers = {k: v for k, v in client.headers.items() if k != "Accept"}
    timeout = httpx.Timeout(client.timeout, read=READ_TIMEOUT)
    last_id: str | None = None
    asked = 0.0
    with httpx.Client(base_url=client.address, headers=headers, timeout=timeout, trust_env=False) as http:
        while True:
            params = {"kinds": "job", **({"after": last_id} if last_id else {})}
            try:
                with connect_sse(http, "GET", "/api/events", params=params) as source:
                    if source.response.status_code != 200:
                        return _poll(client, job, on_update)  # a daemon without the stream, or one that refuses it
                    job = client.get(f"/jobs/{job['id']}")
                    asked = time.monotonic()
                    on_update(job)
                    if job["status"] in FINISHED:
                        return job
                    for event in source.iter_sse():
                        last_id = event.id or last_id
                        data = json.loads(event.data) if event.data else {}
                        if event.event == "job" and data.get("id") == job["id"]:
                            job = {**data, "waiting": None}
                            if job["status"] == "queued":
                                job = client.get(f"/jobs/{job['id']}")
                                asked = time.monotonic()
                        elif event.event == "reset" or (
                            job["status"] == "queued" and time.monotonic() - asked >= WHY_EVERY
                        ):
                            job = client.get(f"/jobs/{job['id']}")
                            asked = time.monotonic()
                        else:
                            continue
                        on_update(job)
                        if job["status"] in FINISHED:
                            return job
            except httpx.TransportError:
                time.sleep(0.2)  # the stream dropped (a slow reader, a restart): reopen it after the last event seen


def _poll(client: DaemonClient, job: Job, on_update: Callable[[Job], None]) -> Job:
    while job["status"] not in FINISHED:
        time.sleep(0.2)
        job = client.get(f"/jobs/{job['id']}")
        on_update(job)
    return job
