"""The OpenAPI schema is honest: a property-based fuzzer driven by it (schemathesis, seeded, bounded in time) finds no
server error, no answer with an undeclared status, and no answer that breaks its declared model, against a real
daemon.

Checked: everything schemathesis checks except three that misread rules kept on purpose. `positive_data_acceptance`
expects every schema-valid request to succeed, but a few rules span fields or the palace's state (subject and object
must differ, a fact cannot be linked to itself, `recall` takes no room, a connector must be installed, a locator must
exist inside `mining.roots`) and are 400s or 404s. `ensure_resource_availability` reads a 404 about the *other* fact
of a link (`to`) as the created fact gone missing. `use_after_free` reads any 2xx DELETE as a deletion, but
`DELETE /api/drawers/{id}?dry_run=true` is a preview that removes nothing, so the drawer's history is still there
(tests/api/test_api.py checks that a real DELETE leaves a 404 and a dry run does not). A schema-violating body too
large for `server.max_body_bytes` is refused with the documented 413 before it is read, so 413 counts as a
rejection. Left out: `/api/events`, a stream
that does not end (tests/api/test_events.py), and `/api/shutdown`, which ends the run (tests/api/test_guard.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


# The default run fuzzes for 10 s: on an idle machine its fuzzing phase reaches all 78 operations (about 600 cases;
# the coverage phase reached a dozen in 15 s), fewer under load — schemathesis bounds the phase by time, not by
# examples, so how many is not asserted. The slow run adds the example, coverage and stateful phases within 90 s.
@pytest.mark.skipif(not SCHEMATHESIS.exists() and shutil.which("schemathesis") is None, reason="schemathesis")
@pytest.mark.parametrize(
    ("budget", "examples", "phases"),
    [(10, 1, "fuzzing"), pytest.param(90, 100, "examples,coverage,fuzzing,stateful", marks=pytest.mark.slow)],
    ids=["quick", "thorough"],
)
def test_a_schema_driven_fuzzer_finds_no_server_error_and_no_undeclared_answer(
    daemon: Callable[..., Any], tmp_path: Path, budget: int, examples: int, phases: str
) -> None:
    roots = tmp_path / "minable"
    (roots / "notes").mkdir(parents=True)
    (roots / "notes" / "a.md").write_text("# A\nAlice works on Checkout.\n", encoding="utf-8")
    running = daemon(
        extra_env={
            "MEMCASTLE_EMBEDDINGS_PROVIDER": "none",
            "MEMCASTLE_MINING_ROOTS": json.dumps([str(roots)]),
        }
    )
    config = tmp_path / "schemathesis.toml"
    config.write_text(
        "[checks.negative_data_rejection]\n"
        'expected-statuses = ["400", "401", "403", "404", "405", "409", "413", "415"]\n',
        encoding="utf-8",
    )
    command = [
        str(SCHEMATHESIS if SCHEMATHESIS.exists() else shutil.which("schemathesis")),
        "--config-file",
        str(config),
        "run",
        f"{running.address}/openapi.json",
        "--checks",
        "all",
        "--exclude-checks",
        "positive_data_acceptance,ensure_resource_availability,use_after_free",
        "--exclude-path",
        "/api/shutdown",
        "--exclude-path",
        "/api/events",
        "--seed",
        "20261201",
        "--phases",
        phases,
        "--max-examples",
        str(examples),
        "--max-time",
        str(budget),
        "--workers",
        "1",
        "--no-color",
    ]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=budget * 4 + 120)
    assert result.returncode == 0, result.stdout[-20_000:] + result.stderr[-5_000:]
    assert "operations" in result.stdout.lower()
    # The daemon is still serving after the run.
    with running.http() as http:
        assert http.get("/api/health").status_code == 200
