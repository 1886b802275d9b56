"""Waiting in tests: on readiness, with generous ceilings, never for a fixed time."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import pytest

# Ceilings, never waits: every wait returns as soon as its condition holds, so a generous ceiling costs nothing on
# an idle machine and keeps a loaded one (two cores, other work beside the suite) from failing a test on time alone.
CEILING = float(os.environ.get("MEMCASTLE_TEST_CEILING", "180"))


def wait_until(
    predicate: Callable[[], Any], *, timeout: float = 10.0, interval: float = 0.01, what: str = "condition"
) -> Any:
    """Poll `predicate` until it returns something truthy; fail the test once `timeout` seconds have passed — or
    `CEILING`, when that is longer (`timeout` says how long the condition should take, not how long to allow)."""
    timeout = max(timeout, CEILING)
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
