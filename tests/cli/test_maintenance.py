"""`memcastle audit` and `memcastle repair` against a real daemon: exit codes, a dry run that changes nothing, a
repair that does, and a check that does not exist refused by name."""

from __future__ import annotations

import json
import sqlite3
from typing import Any


def test_audit_then_a_dry_run_then_a_repair(daemon: Any) -> None:
    served = daemon()
    for i in range(3):
        assert served.cli("note", f"ledger line {i}", "--wing", "books").returncode == 0
    clean = served.cli("audit")
    assert clean.returncode == 0, clean.stderr
    assert json.loads(clean.stdout)["job"]["result"]["ok"] is True

    db = sqlite3.connect(served.palace / "palace.sqlite3", isolation_level=None)
    db.execute("INSERT INTO drawer_tag(drawer_seq, tag) VALUES (424242, 'ghost')")
    db.close()

    found = served.cli("audit")
    assert found.returncode == 1, found.stderr
    findings = {f["check"]: f for f in json.loads(found.stdout)["job"]["result"]["findings"]}
    assert findings["orphan_tags"]["count"] == 1 and "ghost" in findings["orphan_tags"]["examples"][0]

    dry = served.cli("repair")
    assert dry.returncode == 1  # a dry run: still found, nothing changed
    assert json.loads(dry.stdout)["job"]["kind"] == "audit"
    assert served.cli("audit").returncode == 1

    refused = served.cli("repair", "--apply", "--check", "orphan_tags", "--check", "everything_else")
    assert refused.returncode == 1 and "checks" in refused.stderr and "everything_else" in refused.stderr
    assert "Traceback" not in refused.stderr

    applied = served.cli("repair", "--apply", "--check", "orphan_tags")
    assert applied.returncode == 0, applied.stderr
    result = json.loads(applied.stdout)["job"]["result"]
    assert result["repaired"] == {"orphan_tags": 1} and result["after"]["ok"] is True
    assert served.cli("audit").returncode == 0
